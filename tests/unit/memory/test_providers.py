"""Finding memory providers: the user's plugin folders, the two ways a plugin offers its provider, and
what is wrong with one that cannot be used."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_hermes_memory.providers import MemoryProvider, ProviderError, available, find

HEADER = "from acp_hermes_memory.providers import MemoryProvider\n\n"


def plugin(plugins: Path, name: str, body: str) -> None:
    folder = plugins / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(HEADER + body, encoding="utf-8")


def test_every_method_has_a_default_that_does_nothing() -> None:
    provider = MemoryProvider()
    provider.initialize("s", hermes_home="/h", cwd="/w", platform="acp")
    assert provider.is_available() and provider.system_prompt_block() == "" and provider.prefetch("q") == ""
    assert provider.get_tool_schemas() == [] and provider.on_pre_compress([]) == ""
    with pytest.raises(NotImplementedError):
        provider.handle_tool_call("x", {})


def test_a_subclass_or_a_register_function_offers_the_provider(tmp_path: Path) -> None:
    plugin(tmp_path, "by_class", "class Mine(MemoryProvider):\n    name = 'by_class'\n")
    plugin(tmp_path, "by_function", "class _P(MemoryProvider):\n    name = 'by_function'\n\n\n"
                                    "def register_memory_provider():\n    return _P()\n")
    assert find("by_class", tmp_path).make().name == "by_class"
    assert find("by_function", tmp_path).make().name == "by_function"
    assert [info.name for info in available(tmp_path)] == ["facts", "by_class", "by_function"]  # built in first


@pytest.mark.parametrize(("body", "problem"), [
    ("raise ImportError('no client')\n", "ImportError: no client"),
    ("x = 1\n", "defines 0 MemoryProvider subclasses"),
    ("class A(MemoryProvider):\n    pass\n\n\nclass B(MemoryProvider):\n    pass\n", "defines 2"),
])
def test_a_plugin_that_cannot_be_used_says_why_and_is_not_offered(tmp_path: Path, body: str, problem: str) -> None:
    plugin(tmp_path, "bad", body)
    with pytest.raises(ProviderError, match=problem):
        find("bad", tmp_path)
    assert [info.name for info in available(tmp_path)] == ["facts"]


def test_a_register_function_must_return_a_provider(tmp_path: Path) -> None:
    plugin(tmp_path, "wrong", "def register_memory_provider():\n    return object()\n")
    with pytest.raises(ProviderError, match="not a MemoryProvider"):
        find("wrong", tmp_path).make()


def test_an_unknown_name_names_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match=f"no {tmp_path / 'missing'}/__init__.py"):
        find("missing", tmp_path)
