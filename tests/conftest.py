"""Shared fixtures: async tests run on asyncio (the ACP SDK's event loop); the fake model server."""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.support.fake_anthropic"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
