"""The environment a sandboxed command sees: an allowlist."""

from __future__ import annotations

from acp_hermes_tools.command_env import command_environment

ENVIRON = {
    "PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "LC_TIME": "C", "VIRTUAL_ENV": "/w/.venv",
    "GITHUB_TOKEN": "ghp_x", "AWS_SECRET_ACCESS_KEY": "s", "NPM_TOKEN": "n", "SSH_AUTH_SOCK": "/run/agent",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/bus", "DISPLAY": ":0", "XDG_RUNTIME_DIR": "/run/user/1",
    "HTTPS_PROXY": "http://p", "no_proxy": "localhost", "MY_TOOL_HOME": "/opt/tool",
}


def test_only_what_commands_need_passes() -> None:
    assert command_environment(ENVIRON, network=False) == {
        "PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "LC_TIME": "C", "VIRTUAL_ENV": "/w/.venv",
        "no_proxy": "localhost",
    }


def test_proxies_pass_with_the_network_and_the_user_adds_names() -> None:
    seen = command_environment(ENVIRON, network=True, extra=("MY_TOOL_HOME",))
    assert seen["HTTPS_PROXY"] == "http://p" and seen["MY_TOOL_HOME"] == "/opt/tool"
    assert "GITHUB_TOKEN" not in seen and "SSH_AUTH_SOCK" not in seen
