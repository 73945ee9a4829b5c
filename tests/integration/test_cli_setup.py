"""`acp-hermes setup` checks what it saves: the base URL's shape, and the key with one GET /v1/models."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import yaml

from tests.integration.test_cli import SCRIPT, cli_env, run_cli
from tests.support.fake_anthropic import FakeAnthropic

GOOD_KEY = "sk-ant-setup-good-0123456789abcdef"
BAD_KEY = "sk-ant-setup-wrong-0123456789abcdef"


def closed_port_url() -> str:
    """A 127.0.0.1 URL nothing listens on (the port was just released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def saved(home: Path) -> dict[str, object] | None:
    path = home / "acp-hermes" / "config.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None


def test_a_rejected_key_or_unreachable_endpoint_is_not_saved_unless_asked(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    fake_anthropic.api_key = GOOD_KEY

    rejected = run_cli("setup", home=home, stdin=f"{BAD_KEY}\n{fake_anthropic.base_url}\n\n")
    assert rejected.returncode == 1
    assert "rejected the API key (401" in rejected.stderr and "--no-check" in rejected.stderr
    assert saved(home) is None

    unreachable = run_cli("setup", home=home, stdin=f"{GOOD_KEY}\n{closed_port_url()}\n\n")
    assert unreachable.returncode == 1
    assert "Could not reach" in unreachable.stderr and saved(home) is None

    anyway = run_cli("setup", "--no-check", home=home, stdin=f"{BAD_KEY}\n{fake_anthropic.base_url}\n\n")
    assert anyway.returncode == 0, anyway.stderr
    assert saved(home) == {"api_key": BAD_KEY, "model": "claude-sonnet-5-5", "base_url": fake_anthropic.base_url}

    accepted = run_cli("setup", "--log-level", "debug", home=home, stdin=f"{GOOD_KEY}\n\n\n")  # keeps the URL
    assert accepted.returncode == 0, accepted.stderr
    assert "The key works." in accepted.stdout
    assert saved(home) == {"api_key": GOOD_KEY, "model": "claude-sonnet-5-5", "base_url": fake_anthropic.base_url}
    checks = [(r.method, r.path.partition("?")[0]) for r in fake_anthropic.server.requests]
    assert checks == [("GET", "/v1/models")] * 2  # one check per checked run; none with --no-check


def test_a_base_url_without_scheme_or_host_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    for url in ("api.anthropic.com", "ftp://example.com", "https://", "http://example.com:port"):
        refused = run_cli("setup", "--no-check", home=home, stdin=f"{GOOD_KEY}\n{url}\n\n")
        assert refused.returncode == 1, url
        assert "Not a base URL" in refused.stderr and "Nothing written" in refused.stderr
    assert saved(home) is None


QUESTION = "Anthropic API key"


def test_setup_that_cannot_succeed_says_so_before_asking_anything(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    config = home / "acp-hermes" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("max_iterations: 0\nmodle: claude-opus-5-5\n", encoding="utf-8")
    invalid = run_cli("setup", "--no-check", home=home, stdin=f"{GOOD_KEY}\n\n\n")
    assert invalid.returncode == 1 and QUESTION not in invalid.stdout
    assert invalid.stderr == (f"Cannot update the configuration: {config}: `max_iterations`: Input should be greater "
                              "than or equal to 1; `modle`: unknown key\n")
    assert config.read_text(encoding="utf-8") == "max_iterations: 0\nmodle: claude-opus-5-5\n"

    no_terminal = run_cli("setup", home=tmp_path / "fresh-home")  # stdin is /dev/null: no answer can come
    assert no_terminal.returncode == 1 and QUESTION not in no_terminal.stdout
    assert "there is no terminal to ask on" in no_terminal.stderr and "ANTHROPIC_API_KEY" in no_terminal.stderr

    if Path("/proc/self").is_dir():  # a HERMES_HOME nobody can create, root included
        nowhere = Path("/proc/acp-hermes-no-such-home")
        unwritable = subprocess.run([SCRIPT, "setup", "--no-check"], input=f"{GOOD_KEY}\n\n\n", capture_output=True,
                                    text=True, env=cli_env(nowhere), timeout=120)
        assert unwritable.returncode == 1 and QUESTION not in unwritable.stdout
        assert unwritable.stderr.startswith(f"Cannot save the configuration in {nowhere / 'acp-hermes'}: ")
        assert "Traceback" not in unwritable.stderr


def test_setup_does_not_offer_to_keep_a_variable_name_saved_as_the_key(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    config = home / "acp-hermes" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("api_key: ${ANTHROPIC_API_KEY}\n", encoding="utf-8")
    kept = run_cli("setup", "--no-check", home=home, stdin="\n\n\n")  # Enter would keep a real key
    assert kept.returncode == 1 and "Enter keeps it" not in kept.stdout
    assert "is the name of a variable, not a key" in kept.stdout and "No API key given" in kept.stderr
    assert saved(home) == {"api_key": "${ANTHROPIC_API_KEY}"}  # nothing written
