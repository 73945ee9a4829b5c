"""Shared fixtures: async tests run on asyncio (the ACP SDK's event loop); the fake model server."""

from __future__ import annotations

import pytest

from acp_hermes.model.provider import load_sdk

# The anthropic SDK is imported the way the server imports it (its packages lazily): the code the
# server runs, at a third of the import's cost in every test process (each worker collects every file).
load_sdk()

pytest_plugins = ["tests.support.fake_anthropic"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
