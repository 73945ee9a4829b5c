"""External memory providers (Hermes's L1.5): the interface a memory backend implements, and how one is found.

A provider sits beside MEMORY.md and USER.md (the built-in memory, which is always there) and adds
recall of its own: a block for the frozen system prompt, text recalled for each user message, tools
of its own, and hooks that tell it what happened. The method names and meanings are Hermes's
(``agent/memory_provider.py``), so a Hermes plugin ports by changing its import to this module.
Every method is optional: the defaults do nothing. Methods are called on worker threads with a time
budget (``acp_hermes.core.memory_providers``), so a slow or failing provider never breaks a turn.

Providers are found by name: built into the package (``BUILT_IN``), or installed by the user as a
folder ``$HERMES_HOME/plugins/<name>/`` whose ``__init__.py`` defines a ``MemoryProvider`` subclass or a
``register_memory_provider()`` function returning one (Hermes's layout). A built-in name wins.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_hermes_memory.values import value

# The fence a provider's recall rides in, inside the user's message (``acp_hermes.core.memory_fence``):
# part of the contract, so a provider can leave recall out of what it reads as the conversation.
FENCE_NAME = "memory-context"
FENCE_OPEN = f"<{FENCE_NAME}>"
FENCE_CLOSE = f"</{FENCE_NAME}>"


class MemoryProvider:
    """A memory backend. Subclass it, set ``name``, and override what your backend does."""

    name = "provider"

    def is_available(self) -> bool:
        """Whether it can work here (its service reachable, its key set); checked before it is used."""
        return True

    def initialize(self, session_id: str, **context: Any) -> None:
        """A session begins; ``context`` has ``hermes_home``, ``cwd`` and ``platform`` (``"acp"``)."""

    def system_prompt_block(self) -> str:
        """Text for the session's frozen system prompt (asked once, when the session is built)."""
        return ""

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """What it recalls for the user's message ``query``: added to that message, fenced."""
        return ""

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        """Warm up the next ``prefetch`` in the background (called after each turn)."""

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "") -> None:
        """A turn is over: what the user said and what the agent answered."""

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """Its tools: ``{"name", "description", "parameters"}`` (JSON Schema), as Hermes has them."""
        return []

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run one of its tools; the text goes back to the model."""
        raise NotImplementedError(f"{self.name} has no tool {tool_name}")

    def shutdown(self) -> None:
        """The agent is stopping."""

    # Optional hooks
    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        """A turn begins with the user's ``message``."""

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """A session closes; ``messages`` is its conversation as the model saw it."""

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        """The conversation is about to be summarised: a last look at ``messages``; text returned is kept."""
        return ""

    def on_delegation(self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any) -> None:
        """A subagent finished ``task`` with ``result``."""

    def on_memory_write(self, action: str, target: str, content: str) -> None:
        """The built-in memory changed (``action`` add/replace/remove on ``target`` memory/user)."""

    # acp-hermes's additions (Hermes has no counterpart; a ported plugin can ignore them)
    def use_model(self, complete: Callable[[str, str], str]) -> None:
        """``complete(system, prompt)`` asks the auxiliary model (blocking; charged to the session the
        call is made for): given once, before ``initialize``."""

    def summary(self) -> list[str]:
        """Lines for ``/memory``: what it holds."""
        return []


_CALLER = threading.local()


def current_session_id() -> str:
    """The session a provider method is being called for ("" when none): a hook whose arguments do not
    say it (``on_session_end``, ``on_pre_compress``) can read it here."""
    return str(getattr(_CALLER, "session_id", ""))


def calling_for(session_id: str) -> None:
    """Set by whoever calls a provider method on this thread (the manager)."""
    _CALLER.session_id = session_id


@value
class ProviderInfo:
    """A provider that can be selected with ``memory.provider``."""

    name: str
    source: str  # "built-in" or the plugin folder
    make: Callable[[], MemoryProvider]


# The providers shipped in the package, by name: "module:class" (imported when chosen; they import this module).
BUILT_IN: dict[str, str] = {"facts": "acp_hermes_memory.fact_provider:FactsProvider"}


def _built_in(name: str) -> Callable[[], MemoryProvider]:
    module, _, cls = BUILT_IN[name].partition(":")
    made: Callable[[], MemoryProvider] = getattr(importlib.import_module(module), cls)
    return made


class ProviderError(Exception):
    """A provider could not be found or loaded; the message says which and why."""


def plugin_dirs(plugins: Path) -> list[Path]:
    return sorted(p for p in plugins.iterdir() if (p / "__init__.py").is_file()) if plugins.is_dir() else []


def available(plugins: Path) -> list[ProviderInfo]:
    """Every provider there is: the built-in ones, then the user's plugins (loading each)."""
    found = [ProviderInfo(name, "built-in", _built_in(name)) for name in sorted(BUILT_IN)]
    for folder in plugin_dirs(plugins):
        if folder.name not in BUILT_IN:
            try:
                found.append(ProviderInfo(folder.name, str(folder), _load_plugin(folder)))
            except ProviderError:
                continue
    return found


def find(name: str, plugins: Path) -> ProviderInfo:
    """The provider called ``name`` (a built-in one first); raises ProviderError."""
    if name in BUILT_IN:
        return ProviderInfo(name, "built-in", _built_in(name))
    folder = plugins / name
    if not (folder / "__init__.py").is_file():
        raise ProviderError(f"no memory provider named {name!r}: not built in, and no {folder}/__init__.py")
    return ProviderInfo(name, str(folder), _load_plugin(folder))


def _load_plugin(folder: Path) -> Callable[[], MemoryProvider]:
    """Import a plugin folder; how to make its provider."""
    module_name = f"hermes_plugins.{folder.name}"
    spec = importlib.util.spec_from_file_location(module_name, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    if spec is None or spec.loader is None:
        raise ProviderError(f"{folder}: not an importable package")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's code: any failure is reported, never raised through
        sys.modules.pop(module_name, None)
        raise ProviderError(f"{folder}: {type(error).__name__}: {error}") from error
    register = getattr(module, "register_memory_provider", None)
    if callable(register):
        return lambda: _checked(register(), folder)
    classes = [item for item in vars(module).values() if inspect.isclass(item) and issubclass(item, MemoryProvider)
               and item is not MemoryProvider and item.__module__ == module_name]
    if len(classes) != 1:
        raise ProviderError(f"{folder}: defines {len(classes)} MemoryProvider subclasses and no "
                            "register_memory_provider(); it needs exactly one of them")
    return classes[0]


def _checked(provider: Any, folder: Path) -> MemoryProvider:
    if not isinstance(provider, MemoryProvider):
        raise ProviderError(f"{folder}: register_memory_provider() returned {type(provider).__name__}, "
                            "not a MemoryProvider")
    return provider
