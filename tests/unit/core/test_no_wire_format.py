"""The core speaks typed messages (``model.messages``): the Messages API's JSON is ``model.provider``'s.

No module of ``acp_hermes/core`` reads a dict's ``"type"`` (``.get("type")``, ``["type"]``, ``"type" in``)
or builds a content block of the API (a dict whose ``"type"`` names one). The only dicts with a
``"type"`` the core reads or writes are its own stored records: the prompt parts and display items
kept in the SessionDB rows' ``display`` (their format predates this rule and rows stay readable).
"""

from __future__ import annotations

import ast
from pathlib import Path

import acp_hermes.core

CORE = Path(acp_hermes.core.__file__).parent

# The core's own stored records (not the model's content), keyed by "type" in the rows since schema 4.
RECORD_CODECS = {
    ("user_prompt.py", "to_record"),
    ("user_prompt.py", "from_record"),
    ("transcript.py", "encode_display"),
    ("transcript.py", "decode_display"),
}
# Kinds of content block of the Messages API (and of what they carry).
BLOCK_KINDS = frozenset({
    "text", "image", "document", "thinking", "redacted_thinking", "tool_use", "tool_result", "server_tool_use",
    "web_search_tool_result", "web_fetch_tool_result", "web_search_result", "web_fetch_result", "base64", "url",
})


def _is_type(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "type"


def _offences(tree: ast.AST, name: str) -> list[str]:
    """Where ``tree`` reads a ``"type"`` key or builds an API content block, outside the record codecs."""
    found: list[str] = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if (name, function) not in RECORD_CODECS:
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                    and node.args and _is_type(node.args[0])):
                found.append(f"{name}:{node.lineno} .get(\"type\")")
            elif isinstance(node, ast.Subscript) and _is_type(node.slice):
                found.append(f"{name}:{node.lineno} [\"type\"]")
            elif (isinstance(node, ast.Compare) and _is_type(node.left)
                  and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)):
                found.append(f"{name}:{node.lineno} \"type\" in")
            elif isinstance(node, ast.Dict):
                for key, item in zip(node.keys, node.values, strict=True):
                    if (key is not None and _is_type(key) and isinstance(item, ast.Constant)
                            and item.value in BLOCK_KINDS):
                        found.append(f"{name}:{node.lineno} a {item.value!r} block")
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "")
    return found


def test_no_module_of_the_core_reads_or_builds_the_wire_format() -> None:
    offences = [offence for path in sorted(CORE.rglob("*.py"))
                for offence in _offences(ast.parse(path.read_text(encoding="utf-8")), path.name)]
    assert offences == [], "content dicts are model.provider's: use model.messages in the core"


def test_the_check_finds_what_it_forbids() -> None:
    source = '''
def f(block, message):
    if block.get("type") == "tool_use" or message["content"][0]["type"] == "text" or "type" in block:
        return {"type": "tool_result", "tool_use_id": "x", "content": ""}
def encode_display(items):
    return [{"type": "text", "text": item} for item in items if item.get("type")]
'''
    assert [offence.split(" ", 1)[1] for offence in _offences(ast.parse(source), "transcript.py")] == [
        '.get("type")', '["type"]', '"type" in', "a 'tool_result' block"]
