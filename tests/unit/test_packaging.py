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


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project


def test_the_pypi_description_names_every_command_and_subcommand() -> None:
    """The PyPI page is written apart from the README (its links must be absolute): a command added to the
    CLI must reach it too."""
    from acp_hermes.app.cli import build_parser

    readme = _project()["readme"]
    assert isinstance(readme, dict) and readme["content-type"] == "text/markdown"
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert commands
    for name, parser in commands.items():
        line = next((line for line in readme["text"].splitlines() if f"`acp-hermes {name}" in line), None)
        assert line is not None, name
        actions = next((a.choices for a in parser._actions if a.dest == "action"), None) or {}
        for action in actions:
            assert f"|{action}" in line or f" {action}|" in line, (name, action)


def test_the_package_metadata_is_honest() -> None:
    """Who made it as the ACP Registry entry says, the licence file shipped, and no address that does not exist
    yet (there is no public repository: a made-up URL would send people nowhere)."""
    import json

    project = _project()
    entry = json.loads((REPO_ROOT / "editor-configs" / "acp-registry" / "acp-hermes" / "agent.json").read_text())
    assert [author["name"] for author in project["authors"]] == entry["authors"]  # type: ignore[attr-defined]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (REPO_ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    classifiers = project["classifiers"]
    assert isinstance(classifiers, list) and "Typing :: Typed" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)  # the licence expression says it (PEP 639)
    assert "urls" not in project
