"""One-click install: the wheel built from this tree runs with `uvx` (also exactly as the ACP Registry
entry tells an editor to run it) and with `pipx run`, offline.

The wheel is built with ``python -m build --wheel --no-isolation`` from a clean copy of the sources
(setuptools' ``build/`` directory would otherwise carry files from earlier builds). Each runner
installs it from the wheel file plus ``.ci/wheelhouse`` — the runtime dependencies as wheels, which
``.ci/run`` prepares while the network is allowed — with its index switched off, then answers
``--version`` and a real ACP ``initialize`` over stdio, driven by the SDK's client. Commands run in
a network namespace of their own where ``unshare`` can make one, and always with every proxy
variable pointing at a closed loopback port, so a download attempt fails instead of leaving the
machine.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from acp import PROTOCOL_VERSION, default_environment
from acp.schema import AuthCapabilities, ClientCapabilities, Implementation

import acp_hermes
from tests.support import REPO_ROOT
from tests.support.acp_harness import running_agent

pytestmark = pytest.mark.slow

WHEELHOUSE = REPO_ROOT / ".ci" / "wheelhouse"
# Installed name → the folder it is built from: nothing generic (tools, memory) lands in site-packages.
PACKAGES = {"acp_hermes": "acp_hermes", "acp_hermes_tools": "tools", "acp_hermes_memory": "memory"}
SOURCES = ("pyproject.toml", "README.md", "LICENSE", *PACKAGES.values())  # what the wheel is built from
VERSION = acp_hermes.__version__
Runner = Callable[[Path, Path], tuple[list[str], dict[str, str]]]


def _tool(name: str) -> str:
    """A command from this virtualenv (the [test] extras install uv and pipx) or from PATH."""
    found = shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    if found is None:
        pytest.skip(f"{name} is not installed (it comes with the [test] extras)")
    return found


def _no_network_prefix() -> list[str]:
    """``unshare`` arguments that start a command without network, or [] where that is not allowed."""
    for prefix in (["unshare", "--net", "--"], ["unshare", "--net", "--map-root-user", "--"]):
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            return []
    return []


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (REPO_ROOT / "pyproject.toml").is_file():
        pytest.skip("not a source checkout")
    try:
        import build  # noqa: F401  (only checked for: it runs as `python -m build`)
    except ImportError:
        pytest.skip("the `build` package is not installed (it comes with the [test] extras)")
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        origin = REPO_ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, source / name)
    dist = tmp_path_factory.mktemp("dist")
    result = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist),
                             str(source)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = dist.glob("*.whl")
    return built


@pytest.fixture
def dead_proxy() -> Iterator[str]:
    """A loopback address where nothing listens: the port is held but never accepts."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}"


def _wheelhouse() -> Path:
    if not any(WHEELHOUSE.glob("*.whl")):
        pytest.skip(f"no wheelhouse of the runtime dependencies at {WHEELHOUSE} (.ci/run builds it)")
    return WHEELHOUSE


def uvx(wheel: Path, scratch: Path) -> tuple[list[str], dict[str, str]]:
    command = [_tool("uvx"), "--no-config", "--offline", "--no-index", "--find-links", str(_wheelhouse()),
               "--python", sys.executable, "--from", str(wheel), "acp-hermes"]
    env = {"UV_CACHE_DIR": str(scratch / "uv-cache"), "UV_TOOL_DIR": str(scratch / "uv-tools"),
           "UV_PYTHON_DOWNLOADS": "never"}
    return command, env


def registry_uvx(wheel: Path, scratch: Path) -> tuple[list[str], dict[str, str]]:
    """What an ACP Registry client (JetBrains AI Assistant and Air, Zed) runs for our entry:
    `uvx <package> <args>` as `editor-configs/acp-registry/acp-hermes/agent.json` gives them, the
    package found beside the wheelhouse instead of on PyPI."""
    entry = json.loads((REPO_ROOT / "editor-configs" / "acp-registry" / "acp-hermes" / "agent.json").read_text())
    distribution = entry["distribution"]["uvx"]
    command = [_tool("uvx"), "--no-config", "--offline", "--no-index", "--find-links", str(_wheelhouse()),
               "--find-links", str(wheel.parent), "--python", sys.executable,
               distribution["package"], *distribution.get("args", [])]
    env = {"UV_CACHE_DIR": str(scratch / "uv-cache"), "UV_TOOL_DIR": str(scratch / "uv-tools"),
           "UV_PYTHON_DOWNLOADS": "never", **distribution.get("env", {})}
    return command, env


def pipx(wheel: Path, scratch: Path) -> tuple[list[str], dict[str, str]]:
    # pipx's pip backend: the uv path is what uvx covers.
    command = [_tool("pipx"), "run", "--backend", "pip", "--python", sys.executable,
               "--pip-args", f"--no-index --find-links {shlex.quote(str(_wheelhouse()))}",
               "--spec", str(wheel), "acp-hermes"]
    env = {"PIPX_HOME": str(scratch / "pipx-home"), "PIPX_BIN_DIR": str(scratch / "pipx-bin"),
           "PIP_CONFIG_FILE": os.devnull}  # this machine's pip settings stay out of it
    return command, env


def test_the_wheel_holds_the_packages_typing_markers_and_entry_point(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        dist_info = f"acp_hermes-{VERSION}.dist-info"
        entry_points = archive.read(f"{dist_info}/entry_points.txt").decode()
        metadata = archive.read(f"{dist_info}/METADATA").decode()
    assert {name.split("/")[0] for name in names} == {*PACKAGES, dist_info}
    assert {f"{package}/py.typed" for package in PACKAGES} <= names
    shipped = {f"{package}/{path.relative_to(REPO_ROOT / folder)}" for package, folder in PACKAGES.items()
               for path in (REPO_ROOT / folder).rglob("*")
               if path.is_file() and "__pycache__" not in path.parts and not path.name.startswith(".")}
    assert shipped - names == set()  # every module and data file, in every subpackage
    assert f"{dist_info}/licenses/LICENSE" in names
    assert "acp-hermes = acp_hermes.app.cli:main" in entry_points.splitlines()
    assert f"Name: acp-hermes\nVersion: {VERSION}\n" in metadata


def test_the_pypi_page_names_every_editor_and_its_links_work_off_the_repository(wheel: Path) -> None:
    from email.parser import HeaderParser

    from tests.unit.test_docs import relative_links

    with zipfile.ZipFile(wheel) as archive:
        metadata = HeaderParser().parsestr(archive.read(f"acp_hermes-{VERSION}.dist-info/METADATA").decode())
    summary, page = metadata["Summary"], metadata.get_payload()
    assert all(editor in summary for editor in ("Zed", "JetBrains", "Neovim", "Emacs", "Toad", "VS Code"))
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert page.lstrip().startswith("# acp-hermes") and "uvx acp-hermes" in page
    assert relative_links(page) == []  # a repository-relative link leads nowhere on PyPI
    assert "](https://agentclientprotocol.com)" in page  # (the check sees links: there is one)
    assert "Project-URL" not in metadata  # none invented: there is no public repository yet


@pytest.mark.anyio
@pytest.mark.parametrize("runner", [uvx, registry_uvx, pipx], ids=["uvx", "registry-entry", "pipx-run"])
async def test_the_wheel_runs_offline_and_answers_initialize(runner: Runner, wheel: Path, tmp_path: Path,
                                                             dead_proxy: str) -> None:
    command, env = runner(wheel, tmp_path)
    command = [*_no_network_prefix(), *command]
    home = tmp_path / "home"
    home.mkdir()
    env |= {"HOME": str(home), "HERMES_HOME": str(tmp_path / "hermes-home"), "NO_PROXY": "", "no_proxy": "",
            **{name: dead_proxy for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                             "http_proxy", "https_proxy", "all_proxy")}}

    with anyio.fail_after(120):
        version = await anyio.run_process([*command, "--version"], env={**default_environment(), **env},
                                          check=False)
    assert version.returncode == 0, version.stderr.decode(errors="replace")
    assert version.stdout.decode().strip() == f"acp-hermes {VERSION}"

    # The second run reuses the environment the first one installed, so it only starts the server.
    async with running_agent(tmp_path, None, command=tuple(command), env=env, initialize=False) as agent:
        with anyio.fail_after(60):
            answer = await agent.conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(auth=AuthCapabilities(terminal=True)),
                client_info=Implementation(name="install-test", version="1"),
            )
    assert answer.agent_info is not None
    assert (answer.agent_info.name, answer.agent_info.version) == ("acp-hermes", VERSION)
    methods = [method.model_dump(by_alias=True) for method in answer.auth_methods]
    assert methods and all(method.get("type") in (None, "agent", "terminal") for method in methods)
    assert any(method.get("type") == "terminal" and method.get("args") == ["setup"] for method in methods)


def test_the_wheel_installs_beside_other_packages_named_tools_and_memory(wheel: Path, tmp_path: Path) -> None:
    """Another distribution's ``tools`` and ``memory`` packages stay as they were, and ours runs."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    for name in ("tools", "memory"):  # what another distribution installed first
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(f"OWNER = 'another distribution ({name})'\n")
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-index", "--find-links",
                              str(_wheelhouse()), str(wheel)], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    assert install.returncode == 0, install.stderr
    for name in ("tools", "memory"):
        assert (site / name / "__init__.py").read_text() == f"OWNER = 'another distribution ({name})'\n"
        assert sorted(path.name for path in (site / name).iterdir() if path.name != "__pycache__") == ["__init__.py"]
    version = subprocess.run([str(venv / "bin" / "acp-hermes"), "--version"], capture_output=True, text=True,
                             timeout=60, check=False)
    assert version.returncode == 0 and version.stdout.strip() == f"acp-hermes {VERSION}", version.stderr
    imports = subprocess.run([str(python), "-c", "import tools, memory, acp_hermes.app.cli, acp_hermes_tools.sandbox; "
                              "print(tools.OWNER, memory.OWNER)"], capture_output=True, text=True, check=False,
                             cwd=tmp_path)  # not this checkout, whose own tools/ would be found first
    assert imports.returncode == 0, imports.stderr
    assert imports.stdout.strip() == "another distribution (tools) another distribution (memory)"
