"""How the store runs git: one shadow repository, its own index, the workspace as its work tree.

Every call is built by ``safe_git.git_command`` (no hooks, no fsmonitor, no configured programs,
the user's global and system configuration off), so nothing outside the store changes what a
snapshot holds or runs a program. The store has its own ``GIT_DIR``, so the workspace repository's
configuration (and whatever it includes) is never read, and the store's ``info/attributes``, which
outranks every ``.gitattributes``, switches off the filters a workspace's attributes name. The
settings that matter for exact snapshots are given on every command line, which wins over any file:
no line-ending conversion, raw (unquoted) paths, no automatic gc (the store packs itself when it
chooses to). Every command runs in the workspace root, so paths in and
out are relative to it whatever the caller's working directory is.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

from acp_hermes_tools.checkpoints.records import CheckpointsUnavailable
from acp_hermes_tools.safe_git import GitCommand, git_command

IDENTITY = "acp-hermes"
EMAIL = "acp-hermes@localhost"
_SETTINGS = (
    "core.autocrlf=false",
    "core.quotepath=false",
    "core.symlinks=true",
    "core.fileMode=true",
    "core.excludesFile=/dev/null",  # the workspace's own .gitignore files only: snapshots do not depend on ~
    "core.logAllRefUpdates=false",
    "gc.auto=0",
    "maintenance.auto=false",
)
# glibc hands blocks over 128 KB back to the kernel on every free; fast-import's zlib state per blob
# is such a block, and the page faults of getting it back took half of a big first snapshot.
_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024), "MALLOC_TRIM_THRESHOLD_": str(256 * 1024 * 1024)}
# Highest-precedence attributes: snapshots store files' raw bytes (hashed by the store itself), so git's
# own hashing of workspace files (comparing them with the index) must not convert line endings or run
# filters a workspace's .gitattributes asks for, or no file with such attributes would ever compare equal.
ATTRIBUTES = "* -text -filter -ident -working-tree-encoding\n"


# What git creates in a store (objects, packs, refs, the index) is the user's alone, like every file
# of acp-hermes: the workspace's content is in there.
PRIVATE_UMASK = 0o077


class Git:
    """git for one store: the store's own repository and index, failures turned into ``CheckpointsUnavailable``."""

    def __init__(self, executable: str, git_dir: Path, work_tree: Path, index_file: Path) -> None:
        self.executable = executable
        self.git_dir = git_dir
        self.work_tree = work_tree  # also the working directory: git reads paths from the root, never from a cwd
        self._environment = {
            "GIT_DIR": str(git_dir),
            "GIT_WORK_TREE": str(work_tree),
            "GIT_INDEX_FILE": str(index_file),
            "GIT_LITERAL_PATHSPECS": "1",  # a path is a path, never a glob
            "GIT_AUTHOR_NAME": IDENTITY,
            "GIT_AUTHOR_EMAIL": EMAIL,
            "GIT_COMMITTER_NAME": IDENTITY,
            "GIT_COMMITTER_EMAIL": EMAIL,
            **_MALLOC,
        }

    def _command(self, args: tuple[str, ...]) -> GitCommand:
        return git_command(self.executable, *args, config=_SETTINGS, environment=self._environment)

    def _cwd(self) -> Path:
        """Where git runs: the workspace, or the store itself once the workspace is gone (its checkpoints
        are still listed, pruned and checked)."""
        return self.work_tree if self.work_tree.is_dir() else self.git_dir

    def run(self, *args: str, stdin: bytes = b"") -> bytes:
        """Run ``git args`` to the end; its output, or ``CheckpointsUnavailable`` with git's own words."""
        command = self._command(args)
        try:
            result = subprocess.run(command.argv, input=stdin, capture_output=True, check=False,
                                    cwd=self._cwd(), env=command.env, umask=PRIVATE_UMASK)
        except OSError as exc:
            raise self._unavailable(exc) from exc
        if result.returncode != 0:
            raise CheckpointsUnavailable(_failure(args, result.stderr))
        return result.stdout

    def feed(self, *args: str, chunks: Iterable[bytes]) -> bytes:
        """Run ``git args`` with ``chunks`` streamed to its stdin (nothing held whole in memory); its output."""
        process = self._start(args, stderr=subprocess.PIPE)
        assert process.stdin is not None
        try:
            with contextlib.suppress(BrokenPipeError):  # git stopped early: its stderr says why
                for chunk in chunks:
                    process.stdin.write(chunk)
            output, errors = process.communicate()  # closes stdin; reads both pipes to their end
        except BaseException:
            process.kill()
            raise
        finally:
            _close(process)
        if process.returncode != 0:
            raise CheckpointsUnavailable(_failure(args, errors))
        return output

    @contextlib.contextmanager
    def batch(self, *args: str) -> Iterator[subprocess.Popen[bytes]]:
        """A long-running git (``cat-file --batch``) to talk to through its pipes; ended on the way out."""
        process = self._start(args, stderr=subprocess.DEVNULL)
        try:
            yield process
        finally:
            _close(process)

    def _start(self, args: tuple[str, ...], *, stderr: int) -> subprocess.Popen[bytes]:
        command = self._command(args)
        try:
            return subprocess.Popen(command.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=stderr, cwd=self._cwd(), env=command.env, umask=PRIVATE_UMASK)
        except OSError as exc:
            raise self._unavailable(exc) from exc

    def _unavailable(self, exc: OSError) -> CheckpointsUnavailable:
        if not self.work_tree.is_dir():  # git runs in the workspace: its absence is what failed
            return CheckpointsUnavailable(f"the workspace {self.work_tree} is not a directory (any more)")
        return CheckpointsUnavailable(f"cannot run git ({self.executable}): {exc.strerror or exc}")


def _close(process: subprocess.Popen[bytes]) -> None:
    """Close every pipe to ``process`` (one git left with data unread must not fail the close) and reap it."""
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    process.wait()


def init_repository(executable: str, git_dir: Path) -> None:
    """Create the store's bare repository with no template (no sample hooks, nothing to run)."""
    command = git_command(executable, "init", "--bare", "--quiet", "--template=", "--object-format=sha1", str(git_dir))
    try:
        result = subprocess.run(command.argv, capture_output=True, check=False, env=command.env, umask=PRIVATE_UMASK)
    except OSError as exc:
        raise CheckpointsUnavailable(f"cannot run git ({executable}): {exc.strerror or exc}") from exc
    if result.returncode != 0:
        raise CheckpointsUnavailable(_failure(("init",), result.stderr))


def _failure(args: tuple[str, ...], stderr: bytes) -> str:
    command = next((arg for arg in args if not arg.startswith("-") and "=" not in arg), "")
    detail = stderr.decode("utf-8", "replace").strip() or "no message"
    return f"git {command} failed: {detail}"
