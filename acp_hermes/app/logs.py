"""Logging to stderr and a rotating file; never to stdout (the protocol stream)."""

from __future__ import annotations

import logging
import logging.handlers
import sys
import warnings
from io import TextIOWrapper
from pathlib import Path

from acp_hermes.config_base import Paths
from acp_hermes_memory.fs import private_directory, private_file

LOG_FILE_NAME = "acp-hermes.log"
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log whose every file only its owner can read: logs quote prompts and file contents."""

    def __init__(self, path: Path, *, directories: tuple[Path, ...] = (), delay: bool = False) -> None:
        self._directories = directories  # made private on first open (a command may never log)
        super().__init__(path, maxBytes=5 * 1024 * 1024, backupCount=3, encoding="utf-8", delay=delay)

    def _open(self) -> TextIOWrapper:
        for directory in self._directories:
            private_directory(directory)
        private_file(Path(self.baseFilename))
        return super()._open()

    def handleError(self, record: logging.LogRecord) -> None:
        """A log that cannot be written must not put a traceback on the terminal (doctor names the cause)."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handleError(record)


def console_level(level: str) -> int:
    """What reaches stderr at log ``level``: warnings and errors, unless DEBUG asks for everything.

    Editors show an agent's stderr to the user (agent-shell as a "Notice" each time, Zed in its log
    pane), so the routine INFO lines of every turn stay in the log file.
    """
    threshold = logging.getLevelName(level.upper())
    if not isinstance(threshold, int):
        threshold = logging.INFO
    return threshold if threshold <= logging.DEBUG else max(logging.WARNING, threshold)


def configure_logging(paths: Paths, level: str, *, console: bool = True) -> None:
    """Send every log record at ``level`` to the log file, and warnings and errors to stderr when
    ``console`` (everything with DEBUG: see ``console_level``).

    Python warnings (a model SDK's deprecation notice, say) go to the log file only: stderr is an
    editor's log pane or the user's terminal. The server (``console``) makes its directories at
    once so a problem shows at start; a command makes them only if it ever logs.
    """
    root = logging.getLogger()
    root.handlers.clear()
    root.setLevel(level)
    formatter = logging.Formatter(_FORMAT)
    if console:
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(formatter)
        stream.setLevel(console_level(level))
        root.addHandler(stream)
    directories = (paths.own, paths.logs)
    handler: PrivateRotatingFileHandler | None = None
    try:
        if console:
            for directory in directories:
                private_directory(directory)
        handler = PrivateRotatingFileHandler(paths.logs / LOG_FILE_NAME, directories=directories, delay=not console)
    except OSError as exc:
        root.warning("cannot write logs under %s (%s); logging to stderr only", paths.logs, exc)
    else:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    _route_warnings(handler)
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2", "anthropic", "asyncio"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def _route_warnings(log_file: logging.Handler | None) -> None:
    """Python warnings become log records that reach the log file alone (stderr when there is none)."""
    logging.captureWarnings(True)
    warnings.simplefilter("default")
    captured = logging.getLogger("py.warnings")
    captured.handlers.clear()
    if log_file is not None:
        captured.addHandler(log_file)
    captured.propagate = log_file is None
