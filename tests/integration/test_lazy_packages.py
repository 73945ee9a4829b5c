"""Lazy packages (``acp_hermes.model.lazy_packages``): an ``__init__`` that only re-exports runs name
by name; one that does more runs whole when one of its other names is asked for; the anthropic SDK
loaded this way streams, sorts its errors, and leaves its unused trees unimported; the server keeps
what it read of those ``__init__`` files for its next start (``import-index.json``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp import text_block

from acp_hermes.model.lazy_packages import _LazyFinder, lazy_packages, reexports
from tests.support.acp_harness import running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply


def test_reexports_reads_the_relative_imports_the_literal_all_and_whether_anything_else_happens() -> None:
    source = textwrap.dedent('''
        """Docstring."""
        from __future__ import annotations
        import typing as _t
        from .client import Client as Client, Stream
        from . import types
        from .shadow import shadow
        if not _t.TYPE_CHECKING:
            from ._proxy import proxy as proxy
        __all__ = ["Client", "Stream", "types"]
    ''')
    init = reexports(source, frozenset({"client", "types", "shadow", "_proxy"}))
    assert init.names == {
        "Client": ("client", "Client"), "Stream": ("client", "Stream"), "proxy": ("_proxy", "proxy"),
        # submodules the __init__ binds: those it imports from, and a name that is a submodule's too
        "client": ("client", None), "types": ("types", None), "shadow": ("shadow", None), "_proxy": ("_proxy", None),
    }
    assert init.all == ["Client", "Stream", "types"]
    assert init.other  # ``import typing``, the ``if``


@pytest.mark.parametrize(("line", "other"), [
    ("from .a import *", True),
    ("VALUE = 1", True),
    ("setup()", True),
    ("__all__ = ['x']", False),
    ("from .a import x as y", False),
    ("from .a.b import x", False),
    ("if TYPE_CHECKING:\n    from .a import x", True),
])
def test_what_makes_an_init_more_than_reexports(line: str, other: bool) -> None:
    assert reexports(line + "\n", frozenset({"a"})).other is other


@pytest.fixture
def package(tmp_path: Path) -> Iterator[str]:
    """A package ``lazypkg_<n>`` whose heavy parts log their import into ``lazypkg_<n>._log``."""
    name = f"lazypkg_{tmp_path.name.replace('-', '_')}"
    files = {
        "__init__.py": """
            from .core import Core as Core
            from .heavy import Heavy as Heavy
            from . import plain
            from .extras import *
            SETUP = [1]
            __all__ = ["Core", "Heavy", "plain", "EXTRA"]
        """,
        "_log.py": "imported = []\n",
        "core.py": "from ._log import imported\nimported.append('core')\nclass Core: ...\n",
        "heavy.py": "from ._log import imported\nimported.append('heavy')\nclass Heavy: ...\n",
        "plain.py": "from ._log import imported\nimported.append('plain')\n",
        "extras.py": "from ._log import imported\nimported.append('extras')\nEXTRA = 'extra'\n",
        "sub/__init__.py": "from .leaf import Leaf as Leaf\n",
        "sub/leaf.py": "from .._log import imported\nimported.append('leaf')\nclass Leaf: ...\n",
    }
    for path, text in files.items():
        (tmp_path / name / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name / path).write_text(textwrap.dedent(text))
    sys.path.insert(0, str(tmp_path))
    try:
        yield name
    finally:
        sys.path.remove(str(tmp_path))
        sys.meta_path[:] = [f for f in sys.meta_path if not (isinstance(f, _LazyFinder) and f._root == name)]
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]


def test_a_lazy_package_imports_only_what_is_asked_for(package: str) -> None:
    import importlib

    assert lazy_packages(package) is True
    assert lazy_packages(package) is False  # once
    root = importlib.import_module(package)
    log = importlib.import_module(f"{package}._log").imported
    assert log == []  # the __init__ ran nothing
    assert root.Core.__name__ == "Core" and log == ["core"]
    assert root.core.Core is root.Core  # the submodule is bound, as ``from .core import Core`` binds it
    leaf = importlib.import_module(f"{package}.sub").Leaf
    assert leaf.__name__ == "Leaf" and log == ["core", "leaf"]  # the subpackage is lazy too
    assert "Heavy" in dir(root) and root.SETUP == [1]
    assert sorted(log) == ["core", "extras", "heavy", "leaf", "plain"]
    assert root.EXTRA == "extra"
    with pytest.raises(AttributeError):
        root.nothing_here  # noqa: B018


def test_a_star_import_of_a_lazy_package_gets_every_name(package: str) -> None:
    lazy_packages(package)
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)
    assert {"Core", "Heavy", "plain", "EXTRA"} <= set(namespace)


def test_an_imported_package_is_left_alone(package: str) -> None:
    import importlib

    importlib.import_module(package)
    assert lazy_packages(package) is False
    assert importlib.import_module(f"{package}._log").imported == ["core", "heavy", "plain", "extras"]


SDK_CHECK = """
import sys
from acp_hermes.config import Settings
from acp_hermes.model.provider import AnthropicProvider, describe_failure, load_sdk
from acp_hermes.model.messages import Message, Text
from acp_hermes.model.types import ModelRequest, TextDelta
from acp_hermes.testing.scripted_model import HttpError, MessageReply, ScriptedModelServer, TextBlock
import anyio

replies = [MessageReply([TextBlock("Hello there", chunks=3)]), HttpError(401)]

async def main(url):
    provider = AnthropicProvider(Settings(api_key="sk-ant-lazy", base_url=url, max_retries=0))
    request = ModelRequest("claude-test", "sys", [Message("user", (Text("hi"),))])
    text = "".join([e.text async for e in provider.stream(request) if isinstance(e, TextDelta)])
    assert text == "Hello there", text
    try:
        async for _ in provider.stream(request):
            pass
    except Exception as error:
        assert "rejected the API key (401)" in str(error), error
    else:
        raise AssertionError("no 401")
    await provider.aclose()

with ScriptedModelServer(lambda request: replies.pop(0)) as server:
    anyio.run(main, server.base_url)
import anthropic
assert "anthropic.lib.vertex" not in sys.modules and "anthropic.resources.beta" not in sys.modules
assert "AnthropicVertex" not in vars(anthropic)
assert anthropic.AuthenticationError.__module__ == "anthropic._exceptions"
assert anthropic.AnthropicVertex.__name__ == "AnthropicVertex"  # a star-imported name: the __init__ runs
assert "anthropic.lib.vertex" in sys.modules
"""


def test_the_sdk_loaded_lazily_streams_and_sorts_errors_without_its_unused_trees() -> None:
    result = subprocess.run([sys.executable, "-c", SDK_CHECK], capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.anyio
async def test_the_server_keeps_what_the_sdks_import_read_and_the_next_start_reads_it_back(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    home = tmp_path / "hermes-home"
    index = home / "acp-hermes" / "import-index.json"
    for number in range(2):
        fake_anthropic.script(text_reply(f"Answer {number}."))
        async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
            session_id = await agent.new_session()
            response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Hi.")])
            assert response.stop_reason == "end_turn"
        kept = index.stat()
        if number == 0:
            first = (kept.st_ino, kept.st_mtime_ns)
            packages = json.loads(index.read_text(encoding="utf-8"))["packages"]
            assert any(name.endswith(f"{os.sep}anthropic{os.sep}types{os.sep}__init__.py") for name in packages)
    # The second start found every package it opened in the index: nothing read afresh, nothing written.
    assert (kept.st_ino, kept.st_mtime_ns) == first
