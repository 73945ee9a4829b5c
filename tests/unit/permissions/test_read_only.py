"""Which command lines provably change no file (no checkpoint before them): a table both ways."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from acp_hermes.permissions.gate import PermissionGate, PermissionQuestion
from acp_hermes.permissions.modes import Mode
from acp_hermes.permissions.shell.analysis import Where, analyse
from acp_hermes_memory.grants import GrantStore
from acp_hermes_tools.contracts import Command
from tests.support.tools import make_context

HOME = Path("/home/dev")
PROJECT = Path("/work/proj")

READ_ONLY = [
    # plain looks
    "ls",
    "ls -la",
    "ls -la src/ | head",
    "cat README.md",
    "cat a > /dev/null",
    "cat a 2>/dev/null",
    "cat a &>/dev/null",
    "ls missing 2>&1 | head",
    "echo oops >&2",
    "head -n 20 a && tail -5 b",
    "wc -l src/*.py",
    "grep -rn TODO src",
    "grep -r foo . 2>/dev/null || true",
    "rg foo src | head",
    "rg -n 'a|b' -g '*.py' src",
    "find . -name '*.py' -type f",
    "find . -maxdepth 2 -newer setup.cfg -print",
    "fd lexer",
    "tree -L 2",
    "stat a",
    "file a",
    "du -sh .",
    "df -h",
    "pwd",
    "echo hello",
    "echo $HOME ${HOME}",
    "echo $((1 + 2)) ${x:-a}",
    "echo ${x:-$(ls)}",  # what runs inside ${…} is seen: here it only reads
    "(( n > 1 )) && ls",
    "printf '%s\\n' a b",
    "which python",
    "type ls",
    "command -v git",
    "env",
    "env | grep PATH",
    "printenv HOME",
    "diff a b",
    "diff <(ls a) <(ls b)",
    "cmp a b",
    "sed -n '1,10p' a",
    "sort a | uniq -c | sort -rn | head",
    "jq .name package.json",
    "date +%s",
    "[ -f a ] && cat a",
    "true",
    "python --version",
    "python3 -V",
    "node --version",
    "git --version",
    # git that only reads
    "git status",
    "git status --short",
    "git --no-pager log -5",
    "git log --oneline -n 20 | head",
    "git diff --stat HEAD~1",
    "git diff --cached -- src",
    "git show HEAD:README.md",
    "git branch",
    "git branch -a",
    "git branch -vv",
    "git branch --show-current",
    "git branch --contains HEAD",
    "git tag -l 'v*'",
    "git rev-parse --show-toplevel",
    "git ls-files -z",
    "git blame -L 1,10 a.py",
    "git grep -n foo",
    "git stash list",
    "git remote -v",
    "git config --get user.name",
    "git config user.name",
    # lists, subshells, substitutions, wrappers
    "wc -l $(git ls-files)",
    "echo $(ls)",
    "cat `git ls-files`",
    "cd src && ls",
    "(cd src; ls -la)",
    "ls; echo done",
    "ls &",
    "ls # rm -rf x",
    "LC_ALL=C sort a",
    "timeout 10 rg foo",
    "nice -n 5 grep -r foo .",
    "find . -name '*.py' | xargs grep -n foo",
    "find . -print0 | xargs -0 wc -l",
    "git ls-files | xargs -I{} wc -l {}",
    "bash -c 'ls | head'",
    "sh -ec 'git status && git diff'",
    "for f in a b; do wc -l $f; done",
    "cat <<'EOF'\nhello $(rm x)\nEOF",
    "cat <<EOF\nhello $(date)\nEOF",
]

CHANGES = [
    # writes by redirection
    "echo x > f",
    "cat a >> log",
    "ls > out.txt",
    "ls >| out",
    "cat a 1<>f",
    "> f",
    "{ ls; } > f",
    "cat a > $target",
    "ls > >(cat)",
    # programs that write, or may
    "rm f",
    "touch f",
    "mkdir d",
    "cp a b",
    "mv a b",
    "ln -s a b",
    "tee f",
    "cat a | tee b",
    "dd if=a of=b",
    "tar xf a.tar",
    "make",
    "npm test",
    "pytest -q",
    "python script.py",
    "python -c 'print(1)'",
    "node -e 'x'",
    "curl https://example.com",
    "vim a",
    "less a",
    "cargo --version",
    "yarn --version",
    # options that write or run
    "sed -i s/a/b/ f",
    "sed -i.bak 's/a/b/' f",
    "sed 's/a/b/w out' f",
    "sed '1e ls' f",
    "sort -o out a",
    "uniq a b",
    "tree -o out",
    "date -s now",
    "printf -v PATH x",
    "find . -delete",
    "find . -name '*.pyc' -exec rm {} \\;",
    "find . -fprint out",
    "rg --pre sh foo",
    "fd -x rm",
    "diff -l a b",
    "file -C -m magic",
    # git that writes, or could be told to run something
    "git commit -m x",
    "git add .",
    "git stash",
    "git branch new",
    "git branch -d old",
    "git branch -a --unset-upstream",
    "git tag v1",
    "git config user.name x",
    "git checkout main",
    "git reset --hard",
    "git -c core.pager=x log",
    "git -C other status",
    "git --git-dir=x status",
    "git log --output=f",
    "git diff --ext-diff",
    "git remote add origin url",
    "git reflog expire --all",
    # assignments, wrappers, shells
    "PATH=. ls",
    "LD_PRELOAD=x ls",
    "X=1 ls",
    "x=1",
    "timeout 5 env LD_PRELOAD=x ls",
    "sudo ls",
    "nohup ls",
    "time -o f ls",
    "exec ls",
    "source env.sh",
    "eval ls",
    "bash script.sh",
    "bash -lc ls",
    "zsh -c ls",
    "bash -c 'rm f'",
    "sh -c \"$x\"",
    "echo 'rm f' | sh",
    "bash <<EOF\nls\nEOF",
    # programs named at run time, words the shell fills in
    "./ls",
    "bin/cat a",
    "$CMD",
    "$(curl x)",
    "`echo ls`",
    "{ls,-la}",
    "rg foo $dir",
    "sort $f",
    "git log $opts",
    "rg foo *",
    "sort {-o,out} a",
    "timeout $T ls",
    # substitutions that run something else
    "ls $(rm x)",
    "echo \"$(touch x)\"",
    "cat <<EOF\n$(touch x)\nEOF",
    "echo ${x:-$(rm -rf ~)}",
    "echo $(( $(rm f) + 1 ))",
    "(( $(rm f) ))",
    "for x in ${a:-$(rm f)}; do echo $x; done",
    "echo ${x:-`rm f`}",
    "echo ${a:-${b:-$(rm f)}}",
    "echo \"${x:-'$(rm f)'}\"",
    "(( '$(rm f)' ))",
    "echo $((rm f) | wc -l)",
    "((rm f) ; ls)",
    # xargs adds words no table saw
    "find . -name '*.py' | xargs rm",
    "find . | xargs -I{} sh -c 'cat {}'",
    "xargs rg foo",
    "ls | xargs -n1 git log",
    # lines that cannot be read, or hide what runs
    "ls && rm f",
    "f() { ls; }; f",
    "cat 'unterminated",
    "case x in a) ls;; esac",
    "while read l; do echo $l; done < f",
    "tmux new 'ls'",
    "watch ls",
]


def judge(command: str) -> bool:
    return analyse(command, Where(HOME, (PROJECT,), PROJECT)).read_only


@pytest.mark.parametrize("command", READ_ONLY)
def test_reads_only(command: str) -> None:
    assert judge(command)


@pytest.mark.parametrize("command", CHANGES)
def test_may_change_files(command: str) -> None:
    assert not judge(command)


def test_a_nested_shell_beyond_the_limit_counts_as_a_change() -> None:
    line = "ls"
    for depth in range(1, 7):
        line = f"sh -c {shlex.quote(line)}"
        assert judge(line) is (depth <= 4)


class Allow:
    """Answers every question with "allow once"."""

    async def ask(self, question: PermissionQuestion) -> str:
        return "allow_once"


@pytest.mark.anyio
async def test_the_gate_marks_permits_of_commands_that_only_read(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    gate = PermissionGate(asker=Allow(), mode=Mode.DEFAULT, home=tmp_path / "home", hermes_home=tmp_path / "hermes",
                          project=workspace, store=GrantStore(tmp_path / "permissions.yaml"))
    ctx = make_context(workspace, gate=gate)
    assert not (await gate.authorize(ctx, Command("git status && rg foo | head", workspace))).writes_files
    assert (await gate.authorize(ctx, Command("rg foo | tee out", workspace))).writes_files
