"""Logging to stderr and a rotating file; never to stdout (the protocol stream)."""

from __future__ import annotations

import logging
import logging.handlers
import sys
import warnings
from io import TextIOWrapper
from pathlib import Path

from acp_hermes.config import Paths
from memory.fs import private_directory, private_file

LOG_FILE_NAME = "acp-hermes.log"
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log whose every file only its owner can read: logs quote prompts and file contents."""

    def _open(self) -> TextIOWrapper:
        private_file(Path(self.baseFilename))
        return super()._open()


def configure_logging(paths: Paths, level: str) -> None:
    """Send every log record (and Python warnings) to stderr and to the log file."""
    root = logging.getLogger()
    root.handlers.clear()
    root.setLevel(level)
    formatter = logging.Formatter(_FORMAT)
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(formatter)
    root.addHandler(console)
    try:
        private_directory(paths.own)
        private_directory(paths.logs)
        handler = PrivateRotatingFileHandler(
            paths.logs / LOG_FILE_NAME, maxBytes=5 * 1024 * 1024, backupCount=3, encoding="utf-8"
        )
    except OSError as exc:
        root.warning("cannot write logs under %s (%s); logging to stderr only", paths.logs, exc)
    else:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    logging.captureWarnings(True)
    warnings.simplefilter("default")
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2", "anthropic", "asyncio"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
