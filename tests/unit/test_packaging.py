"""The package list in pyproject.toml is the source tree: every folder with an ``__init__.py`` ships,
under its installed name (``tools`` → ``acp_hermes_tools``, ``memory`` → ``acp_hermes_memory``)."""

from __future__ import annotations

import pytest

from tests.support import REPO_ROOT

tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later


def test_every_package_folder_is_listed_under_its_installed_name() -> None:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {"acp_hermes": "acp_hermes", **config["package-dir"]}
    found = {
        ".".join([package, *init.parent.relative_to(REPO_ROOT / folder).parts])
        for package, folder in folders.items() for init in (REPO_ROOT / folder).rglob("__init__.py")
    }
    assert sorted(config["packages"]) == sorted(found)
    assert set(config["package-dir"]) == {"acp_hermes_tools", "acp_hermes_memory"}  # nothing generic installed
