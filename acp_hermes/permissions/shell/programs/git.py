"""git: what it writes and runs, which of its options a grant covers, and when it only reads.

One place for all git knowledge. The risk rules find what writes the repository's ``.git`` (which
the sandbox keeps read-only, so such a command leaves it), what discards work (``reset --hard``,
``clean -f``, ``checkout -- .``), and what git is told to run (``-c core.pager=…``, ``rebase --exec``,
``bisect run``, ``submodule foreach``). The grant table lists, per subcommand, the options a
remembered grant covers; the read-only verdict allows the subcommands that only look.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from acp_hermes.permissions.shell.arguments import has_flag, names, operands_of, subcommand
from acp_hermes.permissions.shell.options import Line, OperandCheck, Spec, ValueCheck, scan, spec
from acp_hermes.permissions.shell.parse import Word
from acp_hermes.permissions.shell.programs.base import SIMPLE, Family, key_shape, network_subcommands
from acp_hermes.permissions.shell.rating import Call

# ---------------------------------------------------------------------------------------------
# Risk
# ---------------------------------------------------------------------------------------------

_GIT_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"})
# Configuration keys whose value git runs (or that point it at code to run): as ``-c`` they turn
# any git command, even ``git status``, into running something else.
_GIT_CODE_KEYS = re.compile(
    r"core\.(?:fsmonitor|sshcommand|pager|editor|hookspath|gitproxy|askpass|alternaterefscommand)|alias\..*"
    r"|(?:diff|merge|filter)\..*\.(?:command|textconv|driver|clean|smudge|process)|pager\..*|credential\..*"
    r"|sequence\.editor|gpg\.(?:.*\.)?program|protocol\..*\.allow|uploadpack\.packobjectshook|remote\..*\.(?:uploadpack|receivepack|proxy)"
    r"|include\..*|includeif\..*|http\..*\.proxy|core\.sshcommand|ssh\.variant|difftool\..*|mergetool\..*|web\.browser|browser\..*",
    re.I,
)


def git_global_options(args: Sequence[str]) -> list[tuple[str, str]]:
    """The options given before a git subcommand, with their values (``-c k=v`` → ``("-c", "k=v")``)."""
    found = []
    index = 0
    while index < len(args) and args[index].startswith("-"):
        option, has_value, value = args[index].partition("=")
        if option in _GIT_OPTIONS and not has_value:
            value = args[index + 1] if index + 1 < len(args) else ""
            index += 1
        found.append((option, value))
        index += 1
    return found


# Git subcommands that write the repository (its ``.git``), always or unless only listing.
_GIT_WRITES = names(
    "add commit checkout switch reset merge rebase cherry-pick revert fetch pull push mv rm am gc prune repack "
    "update-index update-ref replace commit-tree read-tree filter-branch filter-repo fast-import maintenance "
    "pack-refs mktag mktree"
)
# Subcommands whose first operand is a verb: the verbs that only look, and what no verb does.
_GIT_VERBS: dict[str, tuple[frozenset[str], bool]] = {
    "stash": (names("list show"), True),  # a bare ``git stash`` stashes
    "remote": (names("-v --verbose show get-url"), False),
    "worktree": (names("list"), False),
    "submodule": (names("status summary foreach"), False),
    "notes": (names("list show"), False),
    "sparse-checkout": (names("list"), False),
    "reflog": (names("show"), False),
    "bisect": (names("log visualize view"), False),
    "lfs": (names("ls-files status env version"), False),
}
# Subcommands that list unless given a name: the options that keep them listing.
_GIT_LISTS = {
    "branch": names("-a --all -r --remotes -v -vv --verbose --list -l --show-current --merged --no-merged --contains"),
    "tag": names("-l --list -n --contains --points-at --merged --no-merged"),
}
_GIT_CONFIG_WRITES = names("--add --unset --unset-all --replace-all --rename-section --remove-section -e --edit "
                           "set unset rename-section remove-section edit")
_GIT_FILTERS = names("--tree-filter --index-filter --msg-filter --env-filter --commit-filter --parent-filter "
                     "--tag-name-filter")
REPOSITORY = "the repository's .git"


def _git_writes_repository(sub: str, rest: list[str]) -> bool:
    """Whether ``git sub rest`` writes the repository, which the sandbox keeps read-only."""
    if sub in _GIT_WRITES:
        return True
    if sub == "restore":
        return has_flag(rest, "S", "--staged")
    if sub == "apply":
        return has_flag(rest, "3", "--index", "--cached", "--3way")
    if sub in _GIT_VERBS:
        looks, bare_writes = _GIT_VERBS[sub]
        return rest[0] not in looks if rest else bare_writes
    if sub in _GIT_LISTS:
        return bool(rest) and not any(arg in _GIT_LISTS[sub] for arg in rest)
    if sub == "config":
        return (any(arg in _GIT_CONFIG_WRITES for arg in rest)
                or len(operands_of(rest, frozenset({"-f", "--file"}))) >= 2)
    return False


def _check_git(call: Call) -> None:
    for option, value in git_global_options(call.args):
        if option == "-c" and _GIT_CODE_KEYS.match(value.partition("=")[0]):
            call.findings.dangerous(f"git -c {value.partition('=')[0]} makes git run a program")
        elif option == "--config-env":
            call.findings.dangerous("git --config-env sets configuration from the environment")
        elif option.startswith("--exec-path") and (value or "=" in option):
            call.findings.dangerous("git --exec-path runs git programs from another directory")
        elif option in ("--git-dir", "--work-tree"):
            call.findings.dangerous(f"git {option} points git at another repository's configuration")
    sub, rest = subcommand(call.args, _GIT_OPTIONS)
    found = call.findings
    operands = operands_of(rest)
    if _git_writes_repository(sub, rest):
        found.protected_writes.append(REPOSITORY)
    _check_git_programs(call, sub, rest)
    if sub == "push":
        if has_flag(rest, "f", "--force", "--force-with-lease", "--mirror") or any(
            op.startswith("+") for op in operands
        ):
            found.dangerous("force push")
        if has_flag(rest, "d", "--delete") or any(op.startswith(":") and len(op) > 1 for op in operands):
            found.dangerous("deletes a remote branch")
    elif sub == "reset" and has_flag(rest, "", "--hard"):
        found.dangerous("git reset --hard (discards changes)")
    elif sub == "clean" and has_flag(rest, "f", "--force") and not has_flag(rest, "n", "--dry-run"):
        found.dangerous("git clean (deletes untracked files)")
    elif sub == "checkout" and (
        ("--" in rest and rest.index("--") < len(rest) - 1) or "." in operands or has_flag(rest, "f", "--force")
    ):
        found.dangerous("discards uncommitted changes (git checkout)")
    elif sub == "restore":
        paths = operands_of(rest, frozenset({"-s", "--source"}))
        staged_only = has_flag(rest, "S", "--staged") and not has_flag(rest, "W", "--worktree")
        if paths and not staged_only:
            found.dangerous("discards uncommitted changes (git restore)")
    elif sub == "branch" and (
        has_flag(rest, "D") or (has_flag(rest, "d", "--delete") and has_flag(rest, "f", "--force"))
    ):
        found.dangerous("force-deletes a branch")
    elif sub == "stash" and operands[:1] in (["drop"], ["clear"]):
        found.dangerous("drops stashed changes")
    elif sub in ("filter-branch", "filter-repo"):
        found.dangerous("rewrites repository history")


def _check_git_programs(call: Call, sub: str, rest: list[str]) -> None:
    """What git is told to run or write besides itself: ``rebase --exec``, ``submodule foreach``,
    ``bisect run``, ``filter-branch`` filters, ``difftool --extcmd``, configuration that names
    programs, ``--output`` files."""
    payloads = []
    for index, arg in enumerate(rest):
        option, has_value, value = arg.partition("=")
        takes = (
            (sub == "rebase" and option in ("-x", "--exec"))
            or (sub == "filter-branch" and option in _GIT_FILTERS)
            or (sub in ("difftool", "mergetool") and option in ("-x", "--extcmd"))
        )
        if takes:
            payloads.append(value if has_value else (rest[index + 1] if index + 1 < len(rest) else ""))
        if option in ("--output", "-o") and sub in ("log", "show", "diff", "format-patch", "whatchanged"):
            target = value if has_value else (rest[index + 1] if index + 1 < len(rest) else "")
            if target:
                call.writes(target)
    if sub == "submodule" and rest[:1] == ["foreach"]:
        payloads.append(" ".join(arg for arg in rest[1:] if arg not in ("--recursive", "-q", "--quiet")))
    if sub == "bisect" and rest[:1] == ["run"] and len(rest) > 1:
        call.rate_words([Word(arg) for arg in rest[1:]])
    for payload in payloads:
        call.rate_line(payload)
    if sub == "config" and _git_writes_repository(sub, rest):
        keys = [arg for arg in operands_of(rest, frozenset({"-f", "--file", "--blob", "--type"})) if arg != "set"]
        if keys and _GIT_CODE_KEYS.match(keys[0]):
            call.findings.dangerous(f"git config {keys[0]} makes git run a program")


# ---------------------------------------------------------------------------------------------
# The options a grant covers
# ---------------------------------------------------------------------------------------------

_GIT_CONFIG_READS = names("--get --get-all --get-regexp --get-urlmatch --get-color --get-colorbool --list -l")


def _git_config_writes(line: Line) -> Iterable[str]:
    """Only reading forms: ``--get``…/``--list``, ``get``/``list``, or a single ``section.key``."""
    if line.options & _GIT_CONFIG_READS or not line.operands:
        return ()
    first = line.operands[0]
    if first in ("get", "list") or (len(line.operands) == 1 and "." in first):
        return ()
    return (first,)


def _git_checkout_paths(line: Line) -> Iterable[str]:
    """Checking out paths discards their changes: ``--`` and operands that can only be paths."""
    paths = [
        word
        for word in line.operands
        if word in (".", "..") or word.startswith(("./", "../", "/", ":")) or any(c in word for c in "*?[")
    ]
    return ["--", *paths] if line.dashdash else paths


def _git_restore_worktree(line: Line) -> Iterable[str]:
    """Without ``--staged`` restore overwrites the working tree."""
    return () if line.options & {"-S", "--staged"} else line.operands[:1]


def _git_rm_recursive(line: Line) -> Iterable[str]:
    """``git rm -r`` deletes directories unless it only touches the index (``--cached``)."""
    return ("-r",) if "-r" in line.options and "--cached" not in line.options else ()


def _git_push_refspecs(line: Line) -> Iterable[str]:
    """``+ref`` force-pushes, ``:ref`` deletes the remote ref."""
    return [word for word in line.operands if word.startswith(("+", ":"))]


_MERGE_STRATEGIES = names("ort recursive resolve octopus ours subtree")  # others run git-merge-NAME


def _builtin_strategy(value: str) -> bool:
    return value in _MERGE_STRATEGIES


_GIT_DIFF_FLAGS = (  # not --output, --ext-diff, --textconv
    "-p -u --patch -s --no-patch --raw --patch-with-raw --stat --numstat --shortstat --dirstat "
    "--dirstat-by-file --summary --name-only --name-status --compact-summary --cumulative --patch-with-stat -z "
    "--full-index --binary --abbrev --no-abbrev -R --relative --no-relative -a --text --ignore-space-at-eol -b "
    "--ignore-space-change -w --ignore-all-space --ignore-blank-lines --ignore-cr-at-eol --minimal --patience "
    "--histogram --color --no-color --color-words --color-moved --no-color-moved --no-color-moved-ws "
    "--word-diff --check --find-renames --find-copies --find-copies-harder -D --irreversible-delete "
    "--break-rewrites --no-renames --rename-empty --no-rename-empty --pickaxe-all --pickaxe-regex "
    "--ignore-submodules --submodule --no-prefix --default-prefix --ita-invisible-in-index "
    "--ita-visible-in-index -W --function-context --exit-code --quiet --no-ext-diff --no-textconv --unified "
    "--indent-heuristic --no-indent-heuristic"
)
_GIT_DIFF_VALUED = (
    "--diff-filter -S -G -O --skip-to --rotate-to --src-prefix --dst-prefix --line-prefix --inter-hunk-context "
    "-l --diff-algorithm --anchored --word-diff-regex --ws-error-highlight --color-moved-ws --stat-width "
    "--stat-name-width --stat-graph-width --stat-count --find-object -I --ignore-matching-lines"
)
_GIT_DIFF_ATTACHED = "-U -M -C -B"
_GIT_LOG_FLAGS = (  # not --show-signature (runs gpg)
    "--all-match --invert-grep -i --regexp-ignore-case --basic-regexp -E --extended-regexp -F --fixed-strings "
    "-P --perl-regexp --merges --no-merges --min-parents --max-parents --no-min-parents --no-max-parents "
    "--first-parent --exclude-first-parent-only --not --all --branches --tags --remotes --glob --reflog "
    "--single-worktree --ignore-missing --bisect --stdin --cherry-mark --cherry-pick --left-only --right-only "
    "--cherry --walk-reflogs -g --merge --boundary --simplify-by-decoration --show-pulls --full-history --dense "
    "--sparse --simplify-merges --ancestry-path --date-order --author-date-order --topo-order --reverse "
    "--no-walk --do-walk --pretty --format --abbrev-commit --no-abbrev-commit --oneline --encoding "
    "--expand-tabs --no-expand-tabs --notes --no-notes --show-notes --relative-date --date --parents --children "
    "--left-right --graph --no-graph --show-linear-break --decorate --no-decorate --clear-decorations --source "
    "--use-mailmap --mailmap --no-mailmap --no-use-mailmap --full-diff --log-size --follow --no-follow -m --cc "
    "--dd -c -t -r --combined-all-paths --remerge-diff --no-diff-merges --count"
)
_GIT_LOG_VALUED = (
    "-n --max-count --skip --since --after --until --before --max-age --min-age --author --committer --grep "
    "--grep-reflog --exclude --decorate-refs --decorate-refs-exclude -L --diff-merges"
)


def _git(
    flags: str = "",
    valued: str = "",
    *,
    attached: str = "",
    checks: Mapping[str, ValueCheck] | None = None,
    operands: OperandCheck | None = None,
    numeric: bool = False,
) -> Spec:
    return spec(flags, valued, attached=attached, checks=checks, operands=operands, numeric=numeric)


def _git_group(flags: str = "", **actions: Spec) -> Spec:
    """A git command whose first operand names an action; only the listed actions are covered."""
    return spec(flags, subcommands={name.replace("_", "-"): spec for name, spec in actions.items()}, strict=True)


_GIT_DIFF = _git(
    f"{_GIT_DIFF_FLAGS} --cached --staged --merge-base --no-index -0 -1 -2 -3 --base --ours --theirs",
    _GIT_DIFF_VALUED,
    attached=_GIT_DIFF_ATTACHED,
)
_GIT_LOG = _git(
    f"{_GIT_DIFF_FLAGS} {_GIT_LOG_FLAGS}",
    f"{_GIT_DIFF_VALUED} {_GIT_LOG_VALUED}",
    attached=_GIT_DIFF_ATTACHED,
    numeric=True,
)
_STRATEGY = {"-s": _builtin_strategy, "--strategy": _builtin_strategy}
_GIT_REBASE_MODES = names("true false yes no on off 1 0 merges m")
_GIT_FETCH = (  # not --upload-pack, -f/--force, -u/--update-head-ok, -P/--prune-tags (deletes local tags)
    "-q --quiet -v --verbose --tags --no-tags --prune -p --all --multiple --dry-run --unshallow "
    "--progress --no-progress --atomic --set-upstream --recurse-submodules --no-recurse-submodules -4 -6 "
    "--ipv4 --ipv6 --no-write-fetch-head --write-fetch-head --auto-gc --no-auto-gc --auto-maintenance "
    "--no-auto-maintenance --porcelain --show-forced-updates --no-show-forced-updates -k --keep --refetch"
)
_GIT_FETCH_VALUED = "--depth --shallow-since --shallow-exclude --deepen -j --jobs --filter --negotiation-tip"
_GIT_MERGE = (  # not -S/--gpg-sign, --verify-signatures (run gpg)
    "--no-ff --ff --ff-only --squash --no-squash --commit --no-commit --no-edit --stat -n --no-stat --summary "
    "--no-summary --log --no-log -q --quiet -v --verbose --progress --no-progress --allow-unrelated-histories "
    "--autostash --no-autostash --signoff --no-signoff --no-verify --verify --rerere-autoupdate "
    "--no-rerere-autoupdate --no-gpg-sign"
)
_GIT_SUBCOMMANDS: dict[str, Spec] = {
    "status": _git(
        "-s --short -b --branch --show-stash --porcelain --long -v --verbose --untracked-files --ignore-submodules "
        "--ignored -z --column --no-column --ahead-behind --no-ahead-behind --renames --no-renames "
        "--find-renames",
        attached="-u",
    ),
    "diff": _GIT_DIFF,
    "log": _GIT_LOG,
    "show": _GIT_LOG,
    "whatchanged": _GIT_LOG,
    "rev-list": _git(
        f"{_GIT_LOG_FLAGS} --objects --objects-edge --use-bitmap-index --timestamp --header --disk-usage "
        "--missing --quiet",
        _GIT_LOG_VALUED,
        numeric=True,
    ),
    "shortlog": _git(  # its -n and --committer take no value (flags win over log's valued ones)
        f"{_GIT_LOG_FLAGS} -n --numbered -s --summary -e --email --committer",
        f"{_GIT_LOG_VALUED} --group",
        attached="-w",
        numeric=True,
    ),
    "branch": _git(  # listing and plain creation; not -d -D -m -M -c -C -f, nor --edit-description
        "-a --all -r --remotes -v --verbose -l --list --show-current --column --no-column --color --no-color "
        "-i --ignore-case --abbrev --no-abbrev -q --quiet --omit-empty -t --track --no-track --unset-upstream "
        "--create-reflog",
        "--merged --no-merged --contains --no-contains --points-at --sort --format -u --set-upstream-to",
    ),
    "blame": _git(  # -f here is --show-name
        "-b --root --show-stats -l -t --reverse --first-parent -p --porcelain --line-porcelain --incremental "
        "--encoding --progress --no-progress --color-lines --color-by-age -e --show-email -w -s -n --show-number "
        "-f --show-name -c --score-debug --abbrev",
        "-L -S --contents --date --ignore-rev --ignore-revs-file",
        attached="-M -C",
    ),
    "ls-files": _git(
        "-c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -u --unmerged -k --killed -z -t "
        "-v -f --directory --no-empty-directory --eol --full-name --recurse-submodules --error-unmatch "
        "--exclude-standard --exclude-per-directory --abbrev --debug --deduplicate --sparse",
        "-x --exclude -X --exclude-from --format --with-tree",
    ),
    "ls-tree": _git(
        "-r -t -d -l --long -z --name-only --name-status --object-only --full-name --full-tree --abbrev", "--format"
    ),
    "cat-file": _git(  # not --textconv, --filters (run configured programs)
        "-p -t -s -e --batch --batch-check --batch-all-objects --buffer --follow-symlinks --unordered -Z "
        "--allow-unknown-type --mailmap --use-mailmap --no-mailmap"
    ),
    "rev-parse": _git(
        "--abbrev-ref --short --verify -q --quiet --show-toplevel --show-prefix --show-cdup --git-dir "
        "--git-common-dir --absolute-git-dir --is-inside-work-tree --is-inside-git-dir --is-bare-repository "
        "--is-shallow-repository --symbolic --symbolic-full-name --all --branches --tags --remotes --glob "
        "--show-object-format --show-ref-format --local-env-vars --path-format --shared-index-path --revs-only "
        "--no-revs --flags --no-flags --sq --sq-quote --parseopt --keep-dashdash --stop-at-non-option "
        "--stuck-long --not --since --until --after --before --show-superproject-working-tree --disambiguate "
        "--exclude",
        "--git-path --default --prefix --resolve-git-dir",
    ),
    "describe": _git(
        "--all --tags --contains --abbrev --candidates --exact-match --debug --long --always --first-parent "
        "--dirty --broken",
        "--match --exclude",
    ),
    "merge-base": _git("-a --all --octopus --independent --is-ancestor --fork-point"),
    "show-ref": _git(
        "--head --heads --tags --branches -d --dereference -s --hash --abbrev --verify --exists -q --quiet "
        "--exclude-existing"
    ),
    "ls-remote": _git(  # not --upload-pack
        "--heads --tags --branches -h -t --refs -q --quiet --exit-code --get-url --symref", "--sort"
    ),
    "count-objects": _git("-v --verbose -H --human-readable"),
    "check-ignore": _git("-q --quiet -v --verbose -n --non-matching --no-index --stdin -z"),
    "grep": _git(  # not -O/--open-files-in-pager (runs a pager), --textconv
        "--cached --untracked --no-index --no-exclude-standard --exclude-standard --recurse-submodules -a --text "
        "-i --ignore-case -I -r --recursive --no-recursive -w --word-regexp -v --invert-match -h -H --full-name -E "
        "--extended-regexp -G --basic-regexp -F --fixed-strings -P --perl-regexp -n --line-number --column -l "
        "--files-with-matches --name-only -L --files-without-match -z --null -o --only-matching -c --count "
        "--color --no-color --break --heading -p --show-function -W --function-context --and --or --not "
        "--all-match -q --quiet",
        "--max-depth -A -B -C --after-context --before-context --context --threads -f -e -m --max-count",
        numeric=True,
    ),
    "tag": _git(  # listing and creation; not -d, -f, -s/-u (gpg), -F, -e
        "-l --list --column --no-column -i --ignore-case --color --omit-empty -a --annotate --create-reflog --no-sign",
        "--sort --contains --no-contains --merged --no-merged --points-at --format -m --message",
        attached="-n",
    ),
    "stash": _git_group(
        list=_GIT_LOG,
        show=_git(
            f"{_GIT_DIFF_FLAGS} -u --include-untracked --no-include-untracked --only-untracked",
            _GIT_DIFF_VALUED,
            attached=_GIT_DIFF_ATTACHED,
        ),
    ),
    "remote": _git_group("-v --verbose", show=_git("-n"), get_url=_git("--push --all")),
    "worktree": _git_group(list=_git("--porcelain -v --verbose -z")),
    "bisect": _git_group(  # not run (runs a command per step), visualize, replay
        start=_git("--no-checkout --first-parent --term-old --term-new --term-good --term-bad"),
        bad=_git(),
        good=_git(),
        new=_git(),
        old=_git(),
        skip=_git(),
        reset=_git(),
        log=_git(),
        terms=_git("--term-good --term-bad --term-old --term-new"),
        help=_git(),
    ),
    "reflog": spec(  # showing only: not expire or delete
        f"{_GIT_DIFF_FLAGS} {_GIT_LOG_FLAGS}",
        f"{_GIT_DIFF_VALUED} {_GIT_LOG_VALUED}",
        attached=_GIT_DIFF_ATTACHED,
        numeric=True,
        subcommands={"show": _GIT_LOG, "exists": _git()},
        strict=True,
    ),
    "config": _git(  # reading only
        "--get --get-all --get-regexp --get-urlmatch --get-color --get-colorbool --list -l --show-origin "
        "--show-scope --local --global --system --worktree --name-only --null -z --bool --int --bool-or-int --path "
        "--expiry-date --includes --no-includes --all --regexp --fixed-value --show-names",
        "--type -t --default --value --url -f --file --blob",  # -f: read (write forms are caught below)
        operands=_git_config_writes,
    ),
    "add": _git(  # not -f/--force (adds ignored files)
        "-A --all --no-all -u --update -p --patch -i --interactive -N --intent-to-add -v --verbose -n --dry-run "
        "--ignore-errors --ignore-missing --renormalize --sparse --refresh --pathspec-file-nul",
        "--chmod --pathspec-from-file",
    ),
    "commit": _git(  # not -S/--gpg-sign, -e/--edit (an editor)
        "-a --all -v --verbose -q --quiet --amend --no-edit --allow-empty --allow-empty-message -s "
        "--signoff --no-signoff --no-verify -n --verify --reset-author --status --no-status --untracked-files "
        "--dry-run --short --branch --porcelain --long -z --null -o --only -i --include -p --patch "
        "--pathspec-file-nul --no-gpg-sign --no-post-rewrite",
        "-m --message -F --file -t --template -c --reedit-message -C --reuse-message --fixup --squash --author "
        "--date --cleanup --pathspec-from-file --trailer",
        attached="-u",
    ),
    "checkout": _git(  # switching branches; not -f, -B, -m, -p, --ours/--theirs, nor paths (discards changes)
        "-t --track --no-track -q --quiet --detach --guess --no-guess --progress --no-progress -l "
        "--ignore-other-worktrees --no-overwrite-ignore",
        "-b --orphan",
        operands=_git_checkout_paths,
    ),
    "switch": _git(  # not -C/--force-create, -f/--force/--discard-changes, -m/--merge
        "-d --detach --guess --no-guess -t --track --no-track -q --quiet --progress --no-progress "
        "--ignore-other-worktrees",
        "-c --create --orphan",
    ),
    "restore": _git(  # unstaging only
        "-S --staged -q --quiet --progress --no-progress --pathspec-file-nul",
        "-s --source --pathspec-from-file",
        operands=_git_restore_worktree,
    ),
    "fetch": _git(_GIT_FETCH, _GIT_FETCH_VALUED),
    "pull": _git(
        f"{_GIT_FETCH} {_GIT_MERGE} -r --rebase --no-rebase",
        f"{_GIT_FETCH_VALUED} -X --strategy-option",
        checks={**_STRATEGY, "--rebase": _GIT_REBASE_MODES.__contains__},  # not --rebase=interactive
    ),
    "push": _git(  # not -f/--force…, --mirror, -d/--delete, --prune, --receive-pack/--exec, --all, --signed
        "-u --set-upstream --tags --follow-tags --no-follow-tags -q --quiet -v --verbose -n --dry-run --porcelain "
        "--progress --no-progress --no-verify --verify --atomic --no-atomic --thin --no-thin -4 -6 --ipv4 --ipv6",
        "-o --push-option",
        operands=_git_push_refspecs,
    ),
    "merge": _git(  # not -e/--edit (an editor)
        f"{_GIT_MERGE} --abort --continue --quit",
        "-m -F --file -X --strategy-option --into-name --cleanup",
        checks=_STRATEGY,
    ),
    "rebase": _git(  # not -x/--exec, -i/--interactive, --edit-todo, -S/--gpg-sign
        "--continue --abort --skip --quit --show-current-patch --keep-base -q --quiet -v --verbose --stat -n "
        "--no-stat --autostash --no-autostash --autosquash --no-autosquash --update-refs --no-update-refs "
        "--rebase-merges --no-rebase-merges -r --root --fork-point --no-fork-point "
        "--committer-date-is-author-date --ignore-date --reset-author-date --signoff --keep-empty --no-keep-empty "
        "--empty --apply --merge -m --no-verify --verify --reapply-cherry-picks --no-reapply-cherry-picks "
        "--allow-empty-message --ignore-whitespace --whitespace --no-ff --no-gpg-sign",
        "--onto -X --strategy-option",
        attached="-C",
        checks=_STRATEGY,
    ),
    **dict.fromkeys(
        ("cherry-pick", "revert"),
        _git(  # not -e/--edit, -S/--gpg-sign
            "-n --no-commit -x --continue --abort --skip --quit --no-edit -s --signoff --ff --allow-empty "
            "--allow-empty-message --keep-redundant-commits --empty --rerere-autoupdate --no-rerere-autoupdate "
            "--no-gpg-sign",
            "-m --mainline -X --strategy-option --cleanup",
            checks={"--strategy": _builtin_strategy},
        ),
    ),
    "clone": _git(  # not -u/--upload-pack, --template, -c/--config, --separate-git-dir, --reference, --recurse…
        "--single-branch --no-single-branch -q --quiet -v --verbose --progress --no-tags",
        "--depth -b --branch --filter -o --origin",
    ),
    "mv": _git("-k -n --dry-run -v --verbose --sparse"),  # not -f (overwrites)
    "rm": _git(  # not -f; -r only with --cached
        "--cached -r -q --quiet -n --dry-run --ignore-unmatch --sparse --pathspec-file-nul",
        "--pathspec-from-file",
        operands=_git_rm_recursive,
    ),
    "reset": _git(  # not --hard, --merge, --keep
        "--soft --mixed -q --quiet -N --intent-to-add --no-refresh --refresh -p --patch --pathspec-file-nul",
        "--pathspec-from-file",
    ),
}
_GIT = spec(  # not -C, -c, --git-dir, --work-tree, --exec-path, --namespace, --config-env, -p/--paginate, --bare
    "--no-pager -P --no-optional-locks --literal-pathspecs --glob-pathspecs --noglob-pathspecs "
    "--icase-pathspecs --no-replace-objects --no-lazy-fetch --no-advice -v -h --html-path --man-path --info-path",
    skipped="-C -c --git-dir --work-tree --namespace --super-prefix --config-env --attr-source",
    subcommands=_GIT_SUBCOMMANDS,
)


def _unlisted(args: Sequence[str]) -> list[str]:
    bad: list[str] = []
    scan(_GIT, args, bad)
    return bad


# ---------------------------------------------------------------------------------------------
# When it only reads
# ---------------------------------------------------------------------------------------------

# Git subcommands that read, some only in their listing forms (``_git_writes_repository`` tells those apart).
_GIT_READS = names(
    "status log diff show whatchanged shortlog rev-list rev-parse ls-files ls-tree cat-file blame grep describe "
    "merge-base show-ref ls-remote count-objects check-ignore branch tag stash remote worktree config reflog"
)
# ``git branch``/``git tag`` list when given no name, or any of these (they imply ``--list``).
_GIT_LIST_MODE = names("-l --list --contains --no-contains --merged --no-merged --points-at")
_GIT_LIST_VALUES = names("--contains --no-contains --merged --no-merged --points-at --sort --format")
_GIT_LIST_OPTIONS = _GIT_LIST_VALUES | names(
    "-a --all -r --remotes -v --verbose -l --list --show-current --column --no-column --color --no-color -i "
    "--ignore-case --abbrev --no-abbrev -q --quiet --omit-empty -n"
)


# Interpreters and tools given exactly one of these words only print their version.
def _git_reads_only(args: list[str]) -> bool:
    sub, rest = subcommand(args, _GIT_OPTIONS)
    if sub and sub not in _GIT_READS:
        return False
    if _unlisted(args) or _git_writes_repository(sub, rest):
        return False
    return sub not in ("branch", "tag") or _git_lists(rest)


def _git_lists(rest: list[str]) -> bool:
    """``git branch``/``git tag`` only list: listing options, and a name only where they imply ``--list``."""
    options = [word.partition("=")[0] for word in rest if word.startswith("-") and word != "-"]
    for option in options:
        letters = option[1:] if not option.startswith("--") else ""
        if option not in _GIT_LIST_OPTIONS and not (
            letters and all("-" + letter in _GIT_LIST_OPTIONS or letter.isdigit() for letter in letters)
        ):
            return False
    return not operands_of(rest, _GIT_LIST_VALUES) or any(option in _GIT_LIST_MODE for option in options)


FAMILY = Family(
    checks={"git": _check_git},
    options={"git": _GIT},
    shapes={"git": key_shape(options=" ".join(_GIT_OPTIONS)), **dict.fromkeys(("svn", "hg", "jj"), SIMPLE)},
    reads={"git": _git_reads_only},
    network={"git": network_subcommands("clone fetch pull push ls-remote submodule", _GIT_OPTIONS)},
    network_programs=names("git-lfs"),
)
