"""The server turns the cyclic GC on once, after start-up (``app.cli.collect_from_now_on``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from acp_hermes.app.cli import collect_from_now_on


@pytest.fixture
def gc_off() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    yield
    gc.unfreeze()
    if was_enabled:
        gc.enable()


def test_the_first_call_freezes_what_is_loaded_and_turns_collection_on(gc_off: None) -> None:
    frozen = gc.get_freeze_count()
    collect_from_now_on()
    assert gc.isenabled() and gc.get_freeze_count() > frozen


def test_later_calls_freeze_nothing_more(gc_off: None) -> None:
    collect_from_now_on()
    frozen = gc.get_freeze_count()
    garbage = [[]]
    garbage[0].append(garbage)  # a cycle waiting for its collection: it must not become permanent
    collect_from_now_on()
    assert gc.get_freeze_count() == frozen
