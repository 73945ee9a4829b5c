"""The model client over TLS (``model.tls``): its context, built on a thread of its own, is the one the
SDK's HTTP client would build for itself — certificates verified, ``SSL_CERT_FILE`` honoured — in the
provider and through the real stdio server."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_hermes.config import Settings
from acp_hermes.model.messages import Message, Text
from acp_hermes.model.provider import AnthropicProvider
from acp_hermes.model.types import ModelError, ModelRequest, TextDelta
from acp_hermes.testing.scripted_model import MessageReply, ScriptedModelServer, TextBlock
from tests.support.acp_harness import running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")]

REQUEST = ModelRequest("claude-test", "sys", [Message("user", (Text("hi"),))])


@pytest.fixture
def certificate(tmp_path: Path) -> Path:
    """A self-signed certificate for 127.0.0.1 (its key beside it, ``key.pem``)."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "key.pem"),
                    "-out", str(tmp_path / "cert.pem")], check=True, capture_output=True, timeout=60)
    return tmp_path / "cert.pem"


def _server_context(certificate: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, certificate.with_name("key.pem"))
    return context


@pytest.fixture
def https_model(certificate: Path) -> Iterator[ScriptedModelServer]:
    context = _server_context(certificate)
    with ScriptedModelServer(lambda request: MessageReply([TextBlock("Hello over TLS", chunks=2)]),
                             tls=context) as server:
        yield server


async def _streamed_text(url: str) -> str:
    provider = AnthropicProvider(Settings(api_key="sk-ant-tls", base_url=url, max_retries=0))
    try:
        return "".join([event.text async for event in provider.stream(REQUEST) if isinstance(event, TextDelta)])
    finally:
        await provider.aclose()


async def test_a_certificate_named_by_ssl_cert_file_is_trusted(https_model: ScriptedModelServer, certificate: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))
    assert https_model.base_url.startswith("https://")
    assert await _streamed_text(https_model.base_url) == "Hello over TLS"
    assert len(https_model.requests) == 1


async def test_a_certificate_nobody_vouches_for_is_refused(https_model: ScriptedModelServer,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(ModelError, match=r"(?i)certificate|connect"):
        await _streamed_text(https_model.base_url)
    assert https_model.requests == []


async def test_the_server_talks_to_an_https_endpoint_its_environment_vouches_for(tmp_path: Path,
                                                                                 certificate: Path) -> None:
    with FakeAnthropic(tls=_server_context(certificate)) as fake:
        fake.script(text_reply("Hello from an HTTPS endpoint."))
        assert fake.base_url.startswith("https://")
        async with running_agent(tmp_path, fake, env={"SSL_CERT_FILE": str(certificate)}) as agent:
            session_id = await agent.new_session()
            assert await agent.prompt(session_id, "Hi.") == "end_turn"
            assert agent.agent_text(session_id) == "Hello from an HTTPS endpoint."
