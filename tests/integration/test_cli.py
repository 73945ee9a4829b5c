"""The command line: entry points, setup and authentication, doctor, logging, and the offline demo.

Commands run as real subprocesses of the installed console script, in a throwaway HERMES_HOME and
with no Anthropic credentials from the test runner's environment.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import yaml
from acp import RequestError

import acp_hermes
from tests.support.acp_harness import running_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, text_reply

SCRIPT = str(Path(sys.executable).with_name("acp-hermes"))
AUTH_REQUIRED = -32000
SETUP_KEY = "sk-ant-from-setup-0123456789abcdef"


def cli_env(home: Path) -> dict[str, str]:
    """The runner's environment without any model credentials or acp-hermes settings, in ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "HERMES_", "ACP_HERMES_"))}
    env["HERMES_HOME"] = str(home)
    env["NO_COLOR"] = "1"
    return env


def run_cli(*args: str, home: Path, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SCRIPT, *args], input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True, text=True, env=cli_env(home), cwd=str(home.parent), timeout=timeout,
    )


def test_version_help_and_module_entry_point(tmp_path: Path) -> None:
    home = tmp_path / "home"
    version = run_cli("--version", home=home)
    assert version.returncode == 0
    assert version.stdout.strip() == f"acp-hermes {acp_hermes.__version__}"

    module = subprocess.run([sys.executable, "-m", "acp_hermes", "--version"], capture_output=True, text=True,
                            env=cli_env(home), timeout=60)
    assert module.returncode == 0
    assert module.stdout.strip() == version.stdout.strip()

    usage = run_cli("--help", home=home)
    assert usage.returncode == 0
    for word in ("serve", "setup", "doctor", "demo", "checkpoints", "--log-level", "--version"):
        assert word in usage.stdout, word

    wrong = run_cli("--log-level", "LOUD", home=home)
    assert wrong.returncode == 2
    assert "--log-level" in wrong.stderr


@pytest.mark.anyio
async def test_log_level_flag_wins_and_logs_land_in_the_log_file(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    async with running_agent(tmp_path, fake_anthropic, command=(SCRIPT, "--log-level", "DEBUG"),
                             env={"ACP_HERMES_LOG_LEVEL": "ERROR"}) as agent:
        sid = await agent.new_session()
    log_file = home / "acp-hermes" / "logs" / "acp-hermes.log"
    assert log_file.is_file()
    logged = log_file.read_text(encoding="utf-8")
    # INFO lines despite ACP_HERMES_LOG_LEVEL=ERROR: the flag was applied
    assert " INFO " in logged and "serving ACP on stdio" in logged
    assert sid in logged


@pytest.mark.anyio
async def test_python_warnings_go_to_the_log_file_not_the_terminal(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    """The anthropic SDK warns about a deprecated model on every request: the log keeps it, stderr stays clean."""
    fake_anthropic.script(text_reply("Still answering."))
    fake_anthropic.script_auxiliary(text_reply("Old model"))
    async with running_agent(tmp_path, fake_anthropic, env={"HERMES_MODEL": "claude-sonnet-4-5"}) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "hello") == "end_turn"
    logged = (tmp_path / "hermes-home" / "acp-hermes" / "logs" / "acp-hermes.log").read_text(encoding="utf-8")
    assert "WARNING py.warnings" in logged and "'claude-sonnet-4-5' is deprecated" in logged
    stderr = "".join(path.read_text(encoding="utf-8") for path in tmp_path.glob("agent-stderr-*.log"))
    assert "serving ACP on stdio" in stderr  # the harness did capture the server's stderr
    assert "deprecated" not in stderr and "Warning" not in stderr


@pytest.mark.anyio
async def test_setup_saves_a_key_that_authenticates_the_running_server(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    config = write_config(home, "max_iterations: 7\nmodels: [claude-opus-5-5]\n")
    fake_anthropic.script(text_reply("Configured by setup."))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    fake_anthropic.api_key = SETUP_KEY  # the key setup checks with GET /v1/models
    async with running_agent(tmp_path, None, home=home) as agent:  # no ANTHROPIC_* in its environment
        with pytest.raises(RequestError) as no_key:
            await agent.new_session()
        assert no_key.value.code == AUTH_REQUIRED
        with pytest.raises(RequestError) as still_no_key:
            await agent.conn.authenticate(method_id="anthropic-api-key")
        assert still_no_key.value.code == AUTH_REQUIRED

        answers = f"{SETUP_KEY}\n{fake_anthropic.base_url}\nclaude-opus-5-5\n"
        setup = await anyio.run_process([SCRIPT, "setup"], input=answers.encode(), env=cli_env(home), check=False)
        assert setup.returncode == 0, setup.stderr

        await agent.conn.authenticate(method_id="anthropic-api-key")  # same process, no restart
        sid = await agent.new_session()
        assert await agent.prompt(sid, "hello") == "end_turn"
        assert agent.agent_text(sid) == "Configured by setup."
    async with running_agent(tmp_path, None, home=home) as fresh:  # a new server reads the saved key at start
        assert await fresh.new_session()

    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    saved = yaml.safe_load(config.read_text(encoding="utf-8"))
    assert saved["api_key"] == SETUP_KEY
    assert saved["base_url"] == fake_anthropic.base_url
    assert saved["model"] == "claude-opus-5-5"
    assert saved["max_iterations"] == 7 and saved["models"] == ["claude-opus-5-5"]  # other keys kept
    check, request = fake_anthropic.server.requests[:2]
    assert (check.method, check.path.partition("?")[0]) == ("GET", "/v1/models")  # setup's one check
    sent_key = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
    assert sent_key == SETUP_KEY
    assert request.body["model"] == "claude-opus-5-5"


@pytest.mark.anyio
async def test_invalid_config_is_named_by_doctor_and_session_new(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    write_config(home, "max_iterations: lots\nbogus_setting: 1\n")
    doctor = await anyio.run_process([SCRIPT, "doctor"], env=cli_env(home), check=False)
    report = doctor.stdout.decode()
    assert doctor.returncode != 0
    assert "max_iterations" in report and "bogus_setting" in report and "unknown key" in report

    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        with pytest.raises(RequestError) as error:
            await agent.new_session()
    assert "max_iterations" in str(error.value)
    assert "bogus_setting" in str(error.value)


def test_doctor_masks_the_key_and_lists_file_locations(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    file_key = "sk-ant-api03-FILESECRET-abcdefghijklmnop-WXYZ"
    write_config(home, f"api_key: {file_key}\n")
    doctor = run_cli("doctor", home=home)
    report = doctor.stdout + doctor.stderr
    assert doctor.returncode == 0, report
    assert file_key not in report and "FILESECRET" not in report
    assert "sk-ant-…WXYZ" in report  # recognisable, not usable
    for path in (home / "acp-hermes" / "config.yaml", home / "acp-hermes" / "logs",
                 home / "acp-hermes" / "state.db"):
        assert str(path) in report
    configuration = report.split("Configuration")[1].split("Permission grants")[0]
    values = [line.split(None, 1)[1] for line in configuration.splitlines()[1:] if len(line.split(None, 1)) == 2]
    assert not {"None", "[]", "{}", "True", "False"} & set(values)  # written as a person writes them
    assert "  models                  (none)" in configuration and "memory_flush            yes" in configuration


@pytest.mark.parametrize(
    ("flags", "approval"), [((), "(non-interactive"), (("--yes",), "(--yes)")], ids=["no-tty", "yes"]
)
def test_offline_demo_runs_end_to_end_without_a_key(tmp_path: Path, flags: tuple[str, ...], approval: str) -> None:
    demo = run_cli("demo", *flags, home=tmp_path / "hermes-home", timeout=180)  # stdin is not a TTY
    output = demo.stdout
    assert demo.returncode == 0, output + demo.stderr
    assert "OFFLINE" in output
    assert "-    return sum(values) / (len(values) + 1)" in output  # the diff of the fix
    assert "+    return sum(values) / len(values)" in output
    assert "? permission:" in output and approval in output
    assert "all tests passed" in output
    assert "turn ended: end_turn" in output
    assert "context: " in output and not re.search(r"\$\d", output)  # the free scripted model costs nothing
    assert output.count("[ ] Run the tests") == 1 and "Plan (0/3 done)" not in output  # the plan shown once,
    assert "plan: [x] Run the tests" in output  # then only the steps that changed


@pytest.mark.parametrize("command", [("doctor",), ("sessions", "list"), ("sessions",), ("memory", "providers"),
                                     ("demo",), ("serve",), ("setup",)])
def test_version_after_a_subcommand_prints_the_version_and_runs_nothing(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    home = tmp_path / "hermes-home"
    result = run_cli(*command, "--version", home=home)
    assert (result.returncode, result.stdout.strip(), result.stderr) == (0, f"acp-hermes {acp_hermes.__version__}", "")
    assert not home.exists()  # the command itself did not run


@pytest.mark.anyio
async def test_a_variable_name_as_the_saved_key_is_no_key_and_doctor_says_why_in_one_line(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    write_config(home, "api_key: ${ANTHROPIC_API_KEY}\n")
    doctor = run_cli("doctor", home=home)
    problems = doctor.stdout.split("\nProblems\n")[1].splitlines()
    assert doctor.returncode == 1
    about_the_key = [line for line in problems if "API key" in line or "api_key" in line]
    assert about_the_key == ["  - config.yaml's api_key is '${ANTHROPIC_API_KEY}', the name of a variable, not a key: "
                             "config.yaml does not expand variables. Set ANTHROPIC_API_KEY in the environment (an "
                             "editor's `env`), or run `acp-hermes setup` to save the key itself"]
    async with running_agent(tmp_path, None, home=home) as agent:  # as if none were saved: the editor offers setup
        with pytest.raises(RequestError) as no_key:
            await agent.new_session()
        assert no_key.value.code == AUTH_REQUIRED

    env_key = subprocess.run([SCRIPT, "doctor"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                             env={**cli_env(home), "ANTHROPIC_API_KEY": "sk-ant-from-the-env-0123456789"}, timeout=120)
    assert env_key.returncode == 0, env_key.stdout  # the environment's key is used: nothing is wrong
    assert "note: config.yaml's api_key '${ANTHROPIC_API_KEY}' is a variable's name" in env_key.stdout


def test_log_level_in_any_case_and_an_empty_model_in_the_config(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    write_config(home, "api_key: sk-ant-doctor-0123456789abcdef\nlog_level: debug\n")
    lower = run_cli("doctor", home=home)
    assert lower.returncode == 0, lower.stdout
    assert "  log_level               DEBUG" in lower.stdout
    write_config(home, "api_key: sk-ant-doctor-0123456789abcdef\nmodel: ''\n")
    empty = run_cli("doctor", home=home)
    assert empty.returncode == 1
    assert "`model`: a model name cannot be empty (the default is claude-sonnet-5-5)" in empty.stdout
    write_config(home, "api_key: sk-ant-doctor-0123456789abcdef\n")
    variable = subprocess.run([SCRIPT, "doctor"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              env={**cli_env(home), "ACP_HERMES_LOG_LEVEL": "Debug"}, timeout=120)
    assert variable.returncode == 0 and "  log_level               DEBUG" in variable.stdout
    wrong = subprocess.run([SCRIPT, "doctor"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                           env={**cli_env(home), "ACP_HERMES_LOG_LEVEL": "loud"}, timeout=120)
    assert "environment: ACP_HERMES_LOG_LEVEL='loud': Input should be" in wrong.stdout  # named by its variable


def _read_until(fd: int, marker: bytes, deadline: float = 60.0) -> bytes:
    import select
    import time

    seen = b""
    end = time.monotonic() + deadline
    while marker not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        if not ready:
            raise AssertionError(f"no {marker!r} in {seen!r}")
        chunk = os.read(fd, 65536)
        if not chunk:
            raise AssertionError(f"closed before {marker!r}: {seen!r}")
        seen += chunk
    return seen


def test_on_a_terminal_the_server_says_what_it_is_and_keeps_serving(tmp_path: Path) -> None:
    import json
    import pty

    primary, terminal = pty.openpty()
    server = subprocess.Popen([SCRIPT], stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=cli_env(tmp_path / "hermes-home"), cwd=str(tmp_path))
    os.close(terminal)
    try:
        assert server.stderr is not None and server.stdout is not None
        hint = _read_until(server.stderr.fileno(), b"\n").decode()
        assert hint.startswith("acp-hermes: this is an Agent Client Protocol server")
        assert "`acp-hermes demo`" in hint and "`acp-hermes --help`" in hint and hint.count("\n") == 1
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        os.write(primary, json.dumps(request).encode() + b"\n")  # typed or pasted: still served
        answer = json.loads(_read_until(server.stdout.fileno(), b"\n"))
        assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1
        os.write(primary, b"\x04")  # Ctrl-D
        assert server.wait(timeout=60) == 0
    finally:
        os.close(primary)
        if server.poll() is None:
            server.kill()
            server.wait()

    piped = subprocess.run([SCRIPT], input="", capture_output=True, text=True,
                           env=cli_env(tmp_path / "hermes-home"), timeout=60)  # how editors start it
    assert piped.returncode == 0 and "this is an Agent Client Protocol server" not in piped.stderr
