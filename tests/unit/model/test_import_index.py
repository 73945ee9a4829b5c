"""The import index (``model.lazy_packages.InitIndex``): what a lazy package's ``__init__`` and folder
held is kept in a file between starts, and read again as soon as either changed."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from acp_hermes.model.lazy_packages import Init, InitIndex, reexports

INIT = textwrap.dedent("""
    from .core import Core as Core
    from .core import helper as assist
    from . import plain
    from .sub.leaf import Leaf
    __all__ = ["Core", "plain"]
""")


@pytest.fixture
def package(tmp_path: Path) -> Path:
    folder = tmp_path / "pkg"
    for name in ("core.py", "plain.py", "sub/__init__.py", "sub/leaf.py"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("", encoding="utf-8")
    (folder / "__init__.py").write_text(INIT, encoding="utf-8")
    return folder


def _read(index: InitIndex, folder: Path, reads: list[str]) -> tuple[Init, frozenset[str]]:
    init_file = folder / "__init__.py"

    def source() -> str:
        reads.append(str(init_file))
        return init_file.read_text(encoding="utf-8")

    return index.read(str(init_file), [str(folder)], source)


def test_what_was_read_is_kept_and_given_back_the_same_without_reading_again(package: Path, tmp_path: Path) -> None:
    path = tmp_path / "home" / "import-index.json"
    reads: list[str] = []
    first = _read(InitIndex(path), package, reads)
    assert reads == [str(package / "__init__.py")]
    assert first == (reexports(INIT, first[1]), frozenset({"core", "plain", "sub", "__init__"}))
    assert not path.exists()  # nothing is written until saved

    index = InitIndex(path)
    _read(index, package, reads)
    index.save()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    again = _read(InitIndex(path), package, reads)
    assert len(reads) == 2  # the saved entry answered: the source was not read
    assert again == first
    assert again[0].names["assist"] == ("core", "helper") and again[0].names["sub"] == ("sub", None)


def test_an_entry_is_read_afresh_when_the_init_or_its_folder_changed(package: Path, tmp_path: Path) -> None:
    path = tmp_path / "import-index.json"
    index = InitIndex(path)
    _read(index, package, [])
    index.save()

    init_file = package / "__init__.py"
    init_file.write_text(INIT + "from .extra import Extra as Extra\n", encoding="utf-8")
    reads: list[str] = []
    init, _ = _read(InitIndex(path), package, reads)
    assert reads and init.names["Extra"] == ("extra", "Extra")

    index = InitIndex(path)
    _read(index, package, [])
    index.save()
    (package / "extra.py").write_text("", encoding="utf-8")  # the folder changed: a new submodule
    reads.clear()
    _, submodules = _read(InitIndex(path), package, reads)
    assert reads and "extra" in submodules


@pytest.mark.parametrize("text", ["not json", "[]", '{"format": 2, "packages": []}', '{"format": 1, "packages": {}}'])
def test_an_unreadable_or_foreign_index_is_read_afresh_and_replaced(package: Path, tmp_path: Path, text: str) -> None:
    path = tmp_path / "import-index.json"
    path.write_text(text, encoding="utf-8")
    reads: list[str] = []
    index = InitIndex(path)
    _read(index, package, reads)
    index.save()
    assert reads and json.loads(path.read_text(encoding="utf-8"))["format"] == 2
    _read(InitIndex(path), package, reads)
    assert len(reads) == 1


def test_a_damaged_entry_is_read_afresh(package: Path, tmp_path: Path) -> None:
    path = tmp_path / "import-index.json"
    index = InitIndex(path)
    _read(index, package, [])
    index.save()
    data = json.loads(path.read_text(encoding="utf-8"))
    (entry,) = data["packages"].values()
    del entry["imported"]
    path.write_text(json.dumps(data), encoding="utf-8")
    reads: list[str] = []
    init, _ = _read(InitIndex(path), package, reads)
    assert reads and init.names["Core"] == ("core", "Core")


def test_saving_where_it_cannot_be_written_loses_nothing_but_the_time(package: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    index = InitIndex(blocker / "import-index.json")  # its folder is a file
    init, _ = _read(index, package, [])
    index.save()  # logged, not raised
    assert init.names["Core"] == ("core", "Core") and not os.path.isdir(blocker)


def test_an_index_without_a_file_keeps_nothing(package: Path) -> None:
    index = InitIndex(None)
    reads: list[str] = []
    _read(index, package, reads)
    index.save()
    _read(index, package, reads)  # the same index: its entry stands
    _read(InitIndex(None), package, reads)
    assert len(reads) == 2


def test_entries_of_packages_gone_are_dropped_when_it_is_saved(package: Path, tmp_path: Path) -> None:
    path = tmp_path / "import-index.json"
    gone = tmp_path / "old" / "pkg"
    gone.mkdir(parents=True)
    (gone / "__init__.py").write_text(INIT, encoding="utf-8")
    index = InitIndex(path)
    _read(index, gone, [])
    index.save()
    (gone / "__init__.py").unlink()  # that install is gone (an SDK upgraded into another folder)
    index = InitIndex(path)
    _read(index, package, [])
    index.save()
    assert list(json.loads(path.read_text(encoding="utf-8"))["packages"]) == [str(package / "__init__.py")]
