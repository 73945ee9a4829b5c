"""What setup accepts as a base URL, and how doctor writes configuration values."""

from __future__ import annotations

import pytest

from acp_hermes.app.doctor import human
from acp_hermes.app.setup import url_problem


@pytest.mark.parametrize("url", ["https://api.anthropic.com", "http://127.0.0.1:8080", "https://proxy.example/anthropic"])
def test_http_urls_with_a_host_are_base_urls(url: str) -> None:
    assert url_problem(url) is None


@pytest.mark.parametrize("url", ["api.anthropic.com", "ftp://example.com", "https://", "http://host:port", "file:///x"])
def test_anything_else_is_refused_with_the_reason(url: str) -> None:
    assert url in (url_problem(url) or "")


def test_values_read_as_a_person_writes_them() -> None:
    assert human(None) == "(not set)" and human([]) == "(none)" and human({}) == "(none)"
    assert human(True) == "yes" and human(600.0) == "600" and human(0.5) == "0.5"
    prices = {"my-model": {"input": 1.0, "output": 2.5, "cache_read": None}}
    assert human(prices) == "my-model: {input: 1, output: 2.5}"


def test_doctor_says_whether_bypass_is_offered_without_a_sandbox() -> None:
    from acp_hermes.app.doctor import _sandbox_status
    from acp_hermes.config import Settings
    from acp_hermes.permissions.modes import Mode

    problems: list[str] = []
    line = _sandbox_status(Settings(sandbox="off", default_mode=Mode.BYPASS), problems)
    assert line.startswith("command sandbox: turned off in the configuration (sandbox: off)")
    assert "bypass is not offered (allow_unsandboxed_bypass: true would allow it" in line
    assert problems == ["default_mode is bypass, but no sandbox can run commands here: sessions start in default "
                        "mode (set allow_unsandboxed_bypass: true to allow bypass without a sandbox)"]
    problems.clear()
    line = _sandbox_status(Settings(sandbox="off", default_mode=Mode.BYPASS, allow_unsandboxed_bypass=True), problems)
    assert "bypass is allowed without it (allow_unsandboxed_bypass): there every command runs with your rights, " \
           "unasked" in line and problems == []
