"""The permission policy for reads, as a table.

The workspace is free to read; secrets ask every time in every mode (no "always" offered);
other paths outside the workspace ask in default mode, where "always" covers the directory for
the session; the old text an edit reads is covered by the edit's own question, secrets excepted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_hermes.permissions.modes import Mode
from acp_hermes.permissions.policy import Grants, Verdict, decide
from acp_hermes_tools.contracts import Read, ReadPurpose, Surroundings

HOME = Path("/home/dev")
WHERE = Surroundings(home=HOME, hermes_home=HOME / ".hermes", roots=(HOME / "project", Path("/srv/extra")))


def verdict(path: str, mode: Mode, purpose: ReadPurpose = "file", grants: Grants | None = None) -> Verdict:
    return decide(Read((Path(path),), purpose), mode, grants or Grants(), WHERE)


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("path", ["/home/dev/project/src/app.py", "/srv/extra/notes.md", "/home/dev/project"])
def test_the_workspace_is_free_to_read_in_every_mode(path: str, mode: Mode) -> None:
    assert verdict(path, mode).outcome == "allow"


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("purpose", ["file", "directory", "edit"])
@pytest.mark.parametrize(
    "path",
    [
        "/home/dev/.ssh/id_rsa",
        "/home/dev/.aws/credentials",
        "/home/dev/project/.env",
        "/home/dev/project/.env.production",
        "/home/dev/project/certs/server.pem",
        "/home/dev/.hermes/acp-hermes/config.yaml",
        "/home/dev/.hermes/acp-hermes/permissions.yaml",
        "/home/dev/.netrc",
    ],
)
def test_secrets_ask_every_time_in_every_mode_with_no_always(path: str, mode: Mode, purpose: ReadPurpose) -> None:
    found = verdict(path, mode, purpose)
    assert found.outcome == "ask" and found.offer is None
    assert found.reasons and str(Path(path)) not in found.reasons[0]  # the title shows the path already


def test_a_directory_grant_does_not_cover_a_secret_in_it() -> None:
    grants = Grants(readable_dirs=frozenset({HOME / ".ssh"}))
    assert verdict("/home/dev/.ssh/id_ed25519", Mode.DEFAULT, grants=grants).outcome == "ask"


def test_env_templates_are_not_secrets() -> None:
    assert verdict("/home/dev/project/.env.example", Mode.DEFAULT).outcome == "allow"


@pytest.mark.parametrize(("mode", "outcome"), [(Mode.DEFAULT, "ask"), (Mode.ACCEPT_EDITS, "allow"),
                                               (Mode.BYPASS, "allow"), (Mode.PLAN, "allow")])
def test_outside_the_workspace_asks_only_in_default_mode(mode: Mode, outcome: str) -> None:
    assert verdict("/usr/share/doc/readme.txt", mode).outcome == outcome


def test_always_covers_the_files_directory_for_the_session() -> None:
    found = verdict("/usr/share/doc/readme.txt", Mode.DEFAULT)
    assert found.offer is not None and found.offer.scope == "reads"
    assert found.offer.keys == ("/usr/share/doc",)
    assert "/usr/share/doc" in found.offer.allow_label and "this session" in found.offer.allow_label
    granted = Grants(readable_dirs=frozenset({Path("/usr/share/doc")}))
    assert verdict("/usr/share/doc/sub/other.txt", Mode.DEFAULT, grants=granted).outcome == "allow"
    assert verdict("/usr/share/man/page.1", Mode.DEFAULT, grants=granted).outcome == "ask"


def test_a_directory_search_offers_that_directory() -> None:
    found = verdict("/opt/lib", Mode.DEFAULT, "directory")
    assert found.offer is not None and found.offer.keys == ("/opt/lib",)


def test_a_rejected_directory_is_refused_for_the_session() -> None:
    grants = Grants(unreadable_dirs=frozenset({Path("/usr/share/doc")}))
    found = verdict("/usr/share/doc/readme.txt", Mode.DEFAULT, grants=grants)
    assert found.outcome == "refuse" and "did not run" in found.message


def test_an_edit_reading_its_old_text_is_covered_by_the_edit_question() -> None:
    assert verdict("/usr/share/doc/readme.txt", Mode.DEFAULT, "edit").outcome == "allow"
