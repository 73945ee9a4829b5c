"""Import a big SDK's packages lazily: a package's ``__init__`` runs only when a name needs it.

The anthropic SDK's ``__init__.py`` files re-export every type of the API (``anthropic.types`` and
its beta trees: ~3,000 modules and their pydantic classes), so ``import anthropic`` costs ~0.8 s of
CPU and ~30 MB, although a streamed Messages call needs a third of that. ``lazy_packages(root)``
installs an import hook under which every package of ``root`` (``root`` itself included) starts
empty: each name its ``__init__`` imports from a submodule (``from .x import Name as Name``,
``from . import x``) is resolved on first access (PEP 562 ``__getattr__``), importing only that
submodule. A name the ``__init__`` makes some other way (a star import, an assignment, a call) runs
the real ``__init__`` once in the same module object, so every name the package has stays
reachable. What is imported is the SDK's own code, unchanged; what is skipped is only the eager
re-exporting.

What an ``__init__`` does besides binding names happens only if it runs: for the anthropic root
that is ``_setup_logging()`` (``ANTHROPIC_LOG``; ``model.provider.load_sdk`` calls it) and giving
the exported classes ``__module__ = "anthropic"`` (cosmetic: their reprs name ``anthropic._exceptions``).

Reading an ``__init__`` (parsing its source, listing its folder) costs ~20 ms for the anthropic
packages a first prompt opens, every start. An ``InitIndex`` keeps what was read in a JSON file, each
package's entry trusted only while its ``__init__`` and folders are as they were (inode, size and
modification time): an SDK upgraded, or a file edited, is read again.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from acp_hermes_memory.fs import atomic_write_text

__all__ = ["Init", "InitIndex", "lazy_packages", "reexports"]

INDEX_FORMAT = 2

log = logging.getLogger(__name__)

_installed: set[str] = set()
_install_lock = threading.Lock()


def lazy_packages(root: str, index: InitIndex | None = None) -> bool:
    """Make ``root`` and its subpackages lazy from now on, their ``__init__`` files read through
    ``index`` (kept in memory only, without one); False (and nothing done) when ``root`` is already
    imported, the normal way or this one."""
    with _install_lock:
        if root in _installed or root in sys.modules:
            return False
        _installed.add(root)
        sys.meta_path.insert(0, _LazyFinder(root, index or InitIndex(None)))
        return True


@dataclass
class Init:
    """What a package's ``__init__`` does, read from its source."""

    names: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # name: (submodule, attribute or None)
    all: list[str] | None = None  # a literal ``__all__``
    other: bool = False  # anything else (star imports, assignments, calls): it must run to make its other names


def reexports(source: str, submodules: frozenset[str] = frozenset()) -> Init:
    """The names an ``__init__`` binds by importing from its submodules, its literal ``__all__``,
    and whether it does anything else.

    Relative imports in an ``if`` count (``if not TYPE_CHECKING: from .x import y``), and the
    ``if`` counts as something else. Like the real ``__init__``, ``from .x.y import Name`` also binds
    ``x``, the submodule. A name that is also a submodule's stands for the submodule: the import
    system binds it so whenever that submodule is imported, whatever the ``__init__`` says.
    """
    init = Init()
    for node in ast.parse(source).body:
        statements = [*node.body, *node.orelse] if isinstance(node, ast.If) else [node]
        init.other = init.other or isinstance(node, ast.If)
        for statement in statements:
            if isinstance(statement, ast.ImportFrom) and statement.level == 1:
                if statement.module is not None:
                    first = statement.module.split(".")[0]
                    init.names.setdefault(first, (first, None))
                for alias in statement.names:
                    name = alias.asname or alias.name
                    if alias.name == "*":
                        init.other = True
                    elif statement.module is None or name in submodules:
                        init.names[name] = (name if name in submodules else alias.name, None)
                    else:
                        init.names[name] = (statement.module, alias.name)
            elif (literal := _literal_all(statement)) is not None:
                init.all = literal
            elif not _docstring_or_future(statement):
                init.other = True
    return init


def _docstring_or_future(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return True
    return isinstance(statement, ast.ImportFrom) and statement.module == "__future__"


def _literal_all(statement: ast.stmt) -> list[str] | None:
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    if not (isinstance(target, ast.Name) and target.id == "__all__"):
        return None
    try:
        value = ast.literal_eval(statement.value)
    except ValueError:
        return None
    return list(value) if isinstance(value, (list, tuple)) else None


def _submodules(locations: Sequence[str]) -> frozenset[str]:
    """Names of the modules and packages in a package's folders (what ``from pkg import name`` could import)."""
    found: set[str] = set()
    for folder in locations:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            stem, dot, suffix = entry.partition(".")
            if dot and suffix.startswith(("py", "cpython", "abi3", "so", "pyd")) and stem.isidentifier():
                found.add(stem)
            elif not dot and entry.isidentifier() and os.path.isdir(os.path.join(folder, entry)):
                found.add(entry)
    return frozenset(found)


class InitIndex:
    """What each lazy package's ``__init__`` and folders held, kept in ``path`` (a JSON file) between
    starts: ``read`` gives an entry whose files are unchanged, ``save`` writes what changed."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._entries: dict[str, Any] = {}
        self._changed = False
        if path is not None:
            with contextlib.suppress(OSError, ValueError):  # none yet, or unreadable: read afresh
                data = json.loads(path.read_text(encoding="utf-8"))
                packages = data.get("packages") if isinstance(data, dict) else None
                if isinstance(packages, dict) and data.get("format") == INDEX_FORMAT:
                    self._entries = packages

    def read(self, init_file: str, folders: Sequence[str], source: Callable[[], str]) -> tuple[Init, frozenset[str]]:
        """``init_file``'s re-exports and its package's submodules (``source()`` gives its text)."""
        stamps = _stamps([init_file, *folders])
        with self._lock:
            kept = self._entries.get(init_file)
        if stamps is not None and isinstance(kept, dict) and kept.get("stamps") == stamps:
            with contextlib.suppress(AttributeError, KeyError, TypeError, ValueError):  # damaged: read afresh
                return _decoded(kept)
        submodules = _submodules(folders)
        init = reexports(source(), submodules)
        with self._lock:
            self._entries[init_file] = {"stamps": stamps, **_encoded(init, submodules)}
            self._changed = True
        return init, submodules

    def save(self) -> None:
        """Write the entries read since the last save (nothing, when none was), less those of files
        that are gone (an SDK installed elsewhere since): best effort, as a missing index only costs
        the reading again."""
        with self._lock:
            if self._path is None or not self._changed:
                return
            self._entries = {name: entry for name, entry in self._entries.items() if os.path.exists(name)}
            text = json.dumps({"format": INDEX_FORMAT, "packages": self._entries}, separators=(",", ":"))
            self._changed = False
        try:
            atomic_write_text(self._path, text, private=True)
        except OSError as exc:
            log.debug("import index not saved: %s", exc)


def _stamps(paths: Sequence[str]) -> list[list[int]] | None:
    try:
        return [[found.st_ino, found.st_size, found.st_mtime_ns] for found in map(os.stat, paths)]
    except OSError:
        return None


def _encoded(init: Init, submodules: frozenset[str]) -> dict[str, Any]:
    """An entry with as few strings as it takes (the file's reading is what a start pays for it):
    ``name`` from ``.sub`` as itself, by submodule; a submodule bound under its own name; the rest."""
    imported: dict[str, list[str]] = {}
    bound: list[str] = []
    other: list[list[str | None]] = []
    for name, (submodule, attribute) in init.names.items():
        if attribute == name:
            imported.setdefault(submodule, []).append(name)
        elif attribute is None and submodule == name:
            bound.append(name)
        else:
            other.append([name, submodule, attribute])
    return {"imported": imported, "bound": bound, "other_names": other, "all": init.all, "other": init.other,
            "submodules": sorted(submodules)}


def _decoded(entry: dict[str, Any]) -> tuple[Init, frozenset[str]]:
    names: dict[str, tuple[str, str | None]] = {
        name: (submodule, name) for submodule, imported in entry["imported"].items() for name in imported}
    names.update({name: (name, None) for name in entry["bound"]})
    names.update({name: (submodule, attribute) for name, submodule, attribute in entry["other_names"]})
    listed = entry["all"]
    return Init(names, None if listed is None else list(listed), bool(entry["other"])), frozenset(entry["submodules"])


class _LazyFinder(importlib.abc.MetaPathFinder):
    def __init__(self, root: str, index: InitIndex) -> None:
        self._root = root
        self._index = index

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self._root and not fullname.startswith(self._root + "."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.submodule_search_locations is None or spec.origin is None:
            return spec  # a module, or a namespace package (no __init__): nothing to defer
        real = spec.loader
        if not isinstance(real, importlib.machinery.SourceFileLoader):
            return spec
        spec.loader = _LazyLoader(real, self._index)
        return spec


class _LazyLoader(importlib.abc.Loader):
    """Runs none of the ``__init__``: gives the module a ``__getattr__`` that does it name by name."""

    def __init__(self, real: importlib.machinery.SourceFileLoader, index: InitIndex) -> None:
        self._real = real
        self._index = index

    def __getattr__(self, name: str) -> Any:  # get_source, get_resource_reader, …: the real loader's
        return getattr(self._real, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        def source() -> str:
            return self._real.get_source(module.__name__) or ""

        init, submodules = self._index.read(self._real.path, list(module.__path__), source)
        _install(module, self._real, init, submodules)


def _install(module: ModuleType, real: importlib.machinery.SourceFileLoader, init: Init,
             submodules: frozenset[str]) -> None:
    package, names = module.__name__, init.names
    if init.all is not None:
        module.__all__ = list(init.all)  # type: ignore[attr-defined]
    lock = threading.RLock()
    state = {"complete": False, "completing": False}

    def complete() -> None:
        """Run the real ``__init__`` in this module once (names it makes beyond the re-exports)."""
        with lock:
            if state["complete"] or state["completing"]:
                return
            state["completing"] = True
            try:
                real.exec_module(module)
                state["complete"] = True
            finally:
                state["completing"] = False

    def __getattr__(name: str) -> Any:
        target = names.get(name)
        if target is not None:
            submodule, attribute = target
            found = importlib.import_module(f"{package}.{submodule}")
            value = found if attribute is None else getattr(found, attribute)
            setattr(module, name, value)
            return value
        if name in submodules or (name.startswith("__") and name != "__all__"):  # not bound by the __init__
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if init.other or name == "__all__":  # without __all__, ``import *`` takes the names the __init__ made
            complete()
            if name in module.__dict__:
                return module.__dict__[name]
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*module.__dict__, *names})

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = __dir__  # type: ignore[method-assign]
