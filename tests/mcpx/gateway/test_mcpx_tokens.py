"""Signed tokens: a gateway restarted with the same key, or another instance, accepts them;
a client whose token went stale fetches a fresh one; misdirected tokens are refused."""

from __future__ import annotations

import base64
import hmac
import json
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import jwt
import pytest
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mcp import Client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpx_router import Reconnect
from mcpx_router.mcpx import (
    ConnectionEvent,
    ConnectionState,
    Gateway,
    GatewayConfig,
    JWTIssuer,
    JWTVerifier,
    MCPxAuthError,
    PresenceEvent,
    TokenGrant,
    TopicClient,
    TopicEvent,
    gateway_cli,
    run_bridge,
    run_gateway,
    static_token,
    token_endpoint,
    websocket_url,
)
from mcpx_router.mcpx._ws import WebSocketClosed, connect_websocket
from mcpx_router.mcpx.gateway._gateway_state import valid_id
from mcpx_router.mcpx.gateway._serve import serve_asgi
from mcpx_router.mcpx.gateway._tokens import verifier_from_file

from ...support.mcpx_support import eventually
from ..bridge.test_mcpx_bridge import SERVER as BRIDGED
from ..client.test_mcpx_topic import next_event

pytestmark = pytest.mark.anyio

TOPIC = "room"
SECRET = "s3cret-shared-by-every-gateway-instance"
AUD = "mcpx:test"
FAST = Reconnect(initial_delay=0.05, max_delay=0.2, jitter=0.0)


def signed_config(**overrides: Any) -> GatewayConfig:
    return GatewayConfig(dev_tokens=False, verifier=JWTVerifier(SECRET, audience=AUD), **overrides)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class AdvancingVerifier(JWTVerifier):
    """The gateway's verifier with a clock the test moves ahead (`ahead` seconds): a token expires
    when the test says, not when a wall-clock second has passed on a machine that may be busy."""

    def __init__(self) -> None:
        super().__init__(SECRET, audience=AUD)
        self.ahead = 0.0

    def verify(self, token: str) -> TokenGrant | None:
        claims = jwt.decode(token, options={"verify_signature": False})
        if claims.get("exp", 0) <= time.time() + self.ahead:
            return None
        return super().verify(token)


SHORT_TTL = 60
"""The first token's lifetime in the stale-token tests; the clock is then moved past it."""


class CountingProvider:
    def __init__(self, issuer: JWTIssuer, participant_id: str, ttl: float | None = None) -> None:
        self.issuer, self.participant_id, self.ttl = issuer, participant_id, ttl
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        return self.issuer.issue(self.participant_id, TOPIC, ttl=self.ttl)


@asynccontextmanager
async def client_in_background(
    url: str, participant_id: str, provider: Any
) -> AsyncIterator[tuple[TopicClient, MemoryObjectReceiveStream[TopicEvent]]]:
    """A reconnecting client that outlives the gateways the test starts and stops meanwhile."""
    done = anyio.Event()

    async def hold(*, task_status: TaskStatus[Any]) -> None:
        async with (
            TopicClient(url, TOPIC, participant_id, token_provider=provider, reconnect=FAST) as client,
            client.subscribe() as events,
        ):
            task_status.started((client, events))
            await done.wait()

    async with anyio.create_task_group() as tg:
        yield await tg.start(hold)
        done.set()


async def presence(events: MemoryObjectReceiveStream[TopicEvent], kind: str, pid: str) -> None:
    with anyio.fail_after(10):
        while True:
            event = await next_event(events, PresenceEvent)
            if (event.event, event.participant.id) == (kind, pid):
                return


async def reconnected(events: MemoryObjectReceiveStream[TopicEvent], pid: str) -> None:
    """`pid` came back on a new connection: a leave then a join (presence told one by one), or
    a join marked `rejoined` (a batch that holds both, what our client asks for)."""
    with anyio.fail_after(10):
        left = False
        while True:
            event = await next_event(events, PresenceEvent)
            if event.participant.id != pid:
                continue
            if event.event == "leave":
                left = True
            elif event.event == "join" and (left or event.rejoined):
                return


async def connected(events: MemoryObjectReceiveStream[TopicEvent]) -> None:
    with anyio.fail_after(5):
        state = None
        while state is not ConnectionState.CONNECTED:
            state = (await next_event(events, ConnectionEvent)).state


async def test_a_restarted_gateway_accepts_the_tokens_signed_before() -> None:
    port = free_port()
    token = JWTIssuer(SECRET, audience=AUD).issue("agent-a", TOPIC)
    url = f"http://127.0.0.1:{port}"
    async with anyio.create_task_group() as tg:
        stop_first, first_done = anyio.Event(), anyio.Event()

        async def first_gateway(*, task_status: TaskStatus[None]) -> None:
            async with run_gateway(config=signed_config(), port=port):
                task_status.started()
                await stop_first.wait()
            first_done.set()

        await tg.start(first_gateway)
        async with client_in_background(url, "agent-a", static_token(token)) as (a, events):
            await connected(events)
            stop_first.set()  # the gateway process ends
            assert (await next_event(events, ConnectionEvent)).state is ConnectionState.LOST
            await first_done.wait()
            async with run_gateway(config=signed_config(), port=port):  # restarted, same key
                await connected(events)  # the token it had is good
                assert a.participant_id == "agent-a"


async def test_a_stale_token_is_replaced_at_once_when_reconnecting() -> None:
    issuer = JWTIssuer(SECRET, audience=AUD)
    short_lived = CountingProvider(issuer, "agent-b", ttl=SHORT_TTL)
    verifier = AdvancingVerifier()
    gw = Gateway(GatewayConfig(dev_tokens=False, verifier=verifier))
    async with run_gateway(gw) as url, client_in_background(url, "agent-b", short_lived) as (b, events):
        await connected(events)
        assert short_lived.calls == 1
        verifier.ahead = 2 * SHORT_TTL  # its token has expired meanwhile; the next one lasts an hour
        short_lived.ttl = None
        gw._rooms[TOPIC].members["agent-b"].shut(1011, "internal error")  # a connection lost
        assert (await next_event(events, ConnectionEvent)).state is ConnectionState.LOST
        await connected(events)  # the held token was refused: a new one, and in again
        assert short_lived.calls == 2 and b.state is ConnectionState.CONNECTED


async def test_two_gateway_instances_share_the_key() -> None:
    token = JWTIssuer(SECRET, audience=AUD).issue("agent-a", TOPIC)
    async with run_gateway(config=signed_config()) as one, run_gateway(config=signed_config()) as two:
        for url in (one, two):
            async with TopicClient(url, TOPIC, "agent-a", token_provider=static_token(token)) as client:
                assert client.participant_id == "agent-a"


def misdirected_tokens() -> dict[str, str]:
    issuer = JWTIssuer(SECRET, audience=AUD)
    now = int(time.time())
    base = {"sub": "agent-a", "topic": TOPIC, "aud": AUD, "exp": now + 60}
    return {
        "another audience": JWTIssuer(SECRET, audience="mcpx:other").issue("agent-a", TOPIC),
        "another topic": issuer.issue("agent-a", "elsewhere"),
        "a participant id the gateway reserves": jwt.encode({**base, "sub": "system:gateway"}, SECRET),
        "no participant": jwt.encode({k: v for k, v in base.items() if k != "sub"}, SECRET),
        "expired": jwt.encode({**base, "exp": now - 5}, SECRET),
        "no expiry": jwt.encode({k: v for k, v in base.items() if k != "exp"}, SECRET),
        "another key": jwt.encode(base, "not-the-secret-but-long-enough-for-hs256"),
        "unsigned": jwt.encode(base, None, algorithm="none"),
    }


@pytest.mark.parametrize("case", sorted(misdirected_tokens()))
async def test_misdirected_tokens_are_refused(case: str) -> None:
    token = misdirected_tokens()[case]
    async with run_gateway(config=signed_config()) as url:
        with pytest.raises(MCPxAuthError, match="invalid or expired token"):
            async with TopicClient(url, TOPIC, "agent-a", token_provider=static_token(token)) as client:
                raise AssertionError(f"joined as {client.participant_id!r} with a misdirected token")


async def test_a_token_names_the_participant_whatever_id_is_asked_for() -> None:
    token = JWTIssuer(SECRET, audience=AUD).issue("alice", TOPIC)
    async with run_gateway(config=signed_config()) as url:
        async with TopicClient(url, TOPIC, "mallory", token_provider=static_token(token)) as client:
            assert client.participant_id == "alice"


async def test_tokens_in_the_query_string_only_when_enabled() -> None:
    token = JWTIssuer(SECRET, audience=AUD).issue("agent-a", TOPIC)
    for enabled in (False, True):
        async with run_gateway(config=signed_config(query_tokens=enabled)) as url:
            async with connect_websocket(f"{websocket_url(url, TOPIC)}&token={token}") as ws:
                if enabled:
                    assert "welcome" in await ws.receive_text()
                else:
                    with pytest.raises(WebSocketClosed) as info:
                        await ws.receive_text()
                    assert info.value.code == 1008


def rsa_keys() -> tuple[bytes, bytes]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


async def test_rs256_tokens_verified_with_the_public_key() -> None:
    private, public = rsa_keys()
    verifier = JWTVerifier(public, audience=AUD, algorithms=["RS256"])
    token = JWTIssuer(private, audience=AUD, algorithm="RS256").issue("agent-a", TOPIC)
    assert verifier.verify(token) == TokenGrant("agent-a", frozenset({TOPIC}))
    # the public key used as an HS256 secret (algorithm confusion) is refused
    forged = jwt.encode(
        {"sub": "agent-a", "topic": TOPIC, "aud": AUD, "exp": int(time.time()) + 60}, "x" * 32
    )
    assert verifier.verify(forged) is None
    config = GatewayConfig(dev_tokens=False, verifier=verifier)
    async with run_gateway(config=config) as url:
        async with TopicClient(url, TOPIC, "agent-a", token_provider=static_token(token)) as client:
            assert client.participant_id == "agent-a"


# -- claims of any shape ------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
CLAIM_NAMES = st.sampled_from(["sub", "topic", "topics", "aud", "exp", "iat", "nbf", "iss"]) | st.text(
    max_size=6
)
VERIFIER = JWTVerifier(SECRET, audience=AUD)


def sign_any(claims: dict[str, Any], secret: str = SECRET) -> str:
    """An HS256 JWT over any JSON claims (PyJWT's encoder refuses some shapes; senders need not)."""

    def b64(data: bytes) -> bytes:
        return base64.urlsafe_b64encode(data).rstrip(b"=")

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    signature = b64(hmac.digest(secret.encode(), header + b"." + body, "sha256"))
    return (header + b"." + body + b"." + signature).decode()


def good_claims() -> dict[str, Any]:
    return {"sub": "agent-a", "topic": TOPIC, "aud": AUD, "exp": int(time.time()) + 600}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    claims=st.dictionaries(CLAIM_NAMES, JSON, max_size=8),
    keep=st.sets(st.sampled_from(sorted(good_claims()))),
)
def test_claims_of_any_shape_never_break_the_verifier(claims: dict[str, Any], keep: set[str]) -> None:
    claims = {**claims, **{k: v for k, v in good_claims().items() if k in keep}}
    grant = VERIFIER.verify(sign_any(claims))
    event("accepted" if grant is not None else "refused")
    if grant is None:
        return
    # only a token that names a usable participant, topic(s), our audience and an expiry passes
    assert valid_id(claims["sub"]) and grant.participant_id == claims["sub"]
    assert claims["aud"] == AUD or (isinstance(claims["aud"], list) and AUD in claims["aud"])
    assert "exp" in claims and grant.topics
    topics = [claims["topic"]] if "topic" in claims else claims["topics"]
    assert grant.topics == frozenset(topics)


@settings(max_examples=300, deadline=None)
@given(extra=st.dictionaries(st.text(max_size=6).filter(lambda k: k not in good_claims()), JSON, max_size=5))
def test_extra_claims_do_not_change_a_good_token(extra: dict[str, Any]) -> None:
    if "topics" in extra or "iat" in extra or "nbf" in extra:
        return  # claims with meanings of their own: covered above
    grant = VERIFIER.verify(sign_any({**extra, **good_claims()}))
    assert grant == TokenGrant("agent-a", frozenset({TOPIC}))


@settings(max_examples=300, deadline=None)
@given(token=st.text(max_size=200) | st.binary(max_size=100).map(lambda b: b.decode("latin-1")))
def test_any_string_as_a_token_is_refused_without_error(token: str) -> None:
    assert VERIFIER.verify(token) is None


def test_the_signing_helper_makes_tokens_the_verifier_accepts() -> None:
    assert VERIFIER.verify(sign_any(good_claims())) == TokenGrant("agent-a", frozenset({TOPIC}))
    assert VERIFIER.verify(sign_any(good_claims(), "another-secret")) is None


async def test_the_bridge_asks_its_token_service_again_when_its_token_went_stale() -> None:
    issuer = JWTIssuer(SECRET, audience=AUD)
    asked: list[dict[str, Any]] = []

    async def issue(request: Request) -> JSONResponse:
        body = await request.json()
        asked.append(body)
        ttl = SHORT_TTL if len(asked) == 1 else None  # the first lasts a minute, later ones an hour
        return JSONResponse({"token": issuer.issue(body["participantId"], body["topic"], ttl=ttl)})

    service = Starlette(routes=[Route("/token", issue, methods=["POST"])])
    verifier = AdvancingVerifier()
    gw = Gateway(GatewayConfig(dev_tokens=False, verifier=verifier))
    watcher = static_token(issuer.issue("agent-a", TOPIC))
    async with (
        serve_asgi(service) as service_url,
        run_gateway(gw) as url,
        anyio.create_task_group() as tg,
        TopicClient(url, TOPIC, "agent-a", token_provider=watcher) as a,
        a.subscribe() as events,
    ):
        provider = token_endpoint(f"{service_url}/token", "tools", TOPIC)
        tg.start_soon(
            lambda: run_bridge(url, TOPIC, "tools", BRIDGED, reconnect=FAST, token_provider=provider)
        )
        await eventually(lambda: "tools" in a.participants, 20)
        verifier.ahead = 2 * SHORT_TTL  # the bridge's token has expired meanwhile
        gw._rooms[TOPIC].members["tools"].shut(1011, "internal error")  # its connection is lost
        await reconnected(events, "tools")
        async with Client(a.participant_transport("tools"), mode="legacy") as client:
            result = await client.call_tool("echo", {"text": "hello"})
            assert result.structured_content == {"result": "hello"}
        assert asked == [{"participantId": "tools", "topic": TOPIC}] * 2  # joining, and once refused
        tg.cancel_scope.cancel()


def test_a_verifier_from_a_key_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text(SECRET + "\n")
    token = JWTIssuer(SECRET, audience=AUD).issue("agent-a", TOPIC)
    assert verifier_from_file(secret, AUD).verify(token) == TokenGrant("agent-a", frozenset({TOPIC}))
    assert verifier_from_file(secret, "another").verify(token) is None
    private, public = rsa_keys()
    pem = tmp_path / "public.pem"
    pem.write_bytes(public)
    signed = JWTIssuer(private, audience=AUD, algorithm="RS256").issue("agent-a", TOPIC)
    assert verifier_from_file(pem, AUD).verify(signed) == TokenGrant("agent-a", frozenset({TOPIC}))
    assert verifier_from_file(pem, AUD).verify(token) is None
    (tmp_path / "empty").write_text("  \n")
    for bad in (tmp_path / "empty", tmp_path / "missing"):
        with pytest.raises(ValueError, match="token key"):
            verifier_from_file(bad, AUD)
        with pytest.raises(SystemExit) as info:  # the command says so before serving anything
            gateway_cli(["--port", "0", "--jwt-key", str(bad)])
        assert info.value.code == 2
