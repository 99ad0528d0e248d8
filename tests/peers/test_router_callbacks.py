"""What peers ask of the Router: sampling with the host's model, elicitation, roots and logging.

Real servers ask: in-process `MCPServer`s, the HTTP and stdio test servers. Sampling goes through
the real `openai` SDK to a loopback endpoint playing the Chat Completions API.
"""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import mcp
import mcp_types as mt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.client.session import ClientRequestContext
from mcp.server.mcpserver import Context, MCPServer, Resolve
from mcp.server.mcpserver.resolve import Elicit
from openai import AsyncOpenAI
from pydantic import BaseModel

from mcpx_router import (
    HealthChanged,
    HttpPeer,
    InProcessPeer,
    OpenAISampler,
    PeerCallbacks,
    Reconnect,
    Router,
    StdioPeer,
    UsageError,
)
from mcpx_router.peers._callbacks import client_options, merge_callbacks

from ..support._openai_replay import CHAT, Replay, chat_completion, replay_openai
from ..support.router_support import ABANDONED_HTTP_STREAMS, HERE, http_server, next_event

sys.path.insert(0, str(HERE))
from http_peer_server import build  # the test servers' own module (they run as scripts too)

pytestmark = pytest.mark.anyio

DEPRECATED = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
FAST = Reconnect(initial_delay=0.1, max_delay=0.5, jitter=0)


@asynccontextmanager
async def sampler(script: list[Any], **options: Any) -> AsyncIterator[tuple[OpenAISampler, Replay]]:
    with replay_openai(script) as replay:
        async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
            yield OpenAISampler(client, **{"model": "host-model", **options}), replay


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_sampling_is_answered_with_the_host_model(mode: str) -> None:
    """Before 2026-07-28 the server sends `sampling/createMessage`; at 2026-07-28 it answers the
    call with an `InputRequiredResult` and the SDK retries it with our answer."""
    async with (
        sampler([chat_completion({"content": "Paris"}, model="host-model-2026")]) as (sample, replay),
        Router(callbacks=PeerCallbacks(sampling=sample)) as router,
    ):
        await router.join("p", InProcessPeer(build(None), mode=mode))
        outcome = await router.call("p__ask", {"question": "Capital of France?"})
        assert (outcome.text, outcome.is_error) == ("Paris", False)
    assert replay.bodies(CHAT) == [
        {
            "model": "host-model",
            "messages": [
                {"role": "system", "content": "Answer in one word."},
                {"role": "user", "content": "Capital of France?"},
            ],
            "max_completion_tokens": 50,
        }
    ]


def asking_server() -> MCPServer:
    """A server whose `sample(...)` asks for a message with everything a request can carry and
    says what came back: the text and model, or the error's code and message."""
    server = MCPServer("asker")

    @server.tool()
    async def sample(
        ctx: Context, hints: list[str], temperature: float | None = None, stops: list[str] | None = None
    ) -> str:
        messages = [
            mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text="Look:")),
            mt.SamplingMessage(
                role="user",
                content=[
                    mt.TextContent(type="text", text="this"),
                    mt.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
                ],
            ),
            mt.SamplingMessage(role="assistant", content=mt.TextContent(type="text", text="Nice.")),
        ]
        preferences = mt.ModelPreferences(hints=[mt.ModelHint(name=hint) for hint in hints])
        try:
            result = await ctx.session.create_message(
                messages,
                max_tokens=20,
                system_prompt="Be kind.",
                temperature=temperature,
                stop_sequences=stops,
                model_preferences=preferences,
            )
        except mcp.MCPError as exc:
            return f"error {exc.code}: {exc.message}"
        content = result.content
        assert isinstance(content, mt.TextContent)
        return f"{content.text} ({result.model}, {result.stop_reason})"

    return server


@DEPRECATED
async def test_a_sampling_request_is_converted_whole_and_hints_choose_an_allowed_model() -> None:
    answer = chat_completion({"content": "Lovely"}, model="host-mini-0601")
    async with (
        sampler([answer], models=["host-large", "host-mini"]) as (sample, replay),
        Router(callbacks=PeerCallbacks(sampling=sample)) as router,
    ):
        await router.join("p", InProcessPeer(asking_server(), mode="legacy"))
        arguments = {"hints": ["claude", "MINI"], "temperature": 0.5, "stops": ["\n\n"]}
        outcome = await router.call("p__sample", arguments)
    assert outcome.text == "Lovely (host-mini-0601, endTurn)"
    (body,) = replay.bodies(CHAT)
    assert body == {
        "model": "host-mini",
        "messages": [
            {"role": "system", "content": "Be kind."},
            {"role": "user", "content": "Look:"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "this"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                ],
            },
            {"role": "assistant", "content": "Nice."},
        ],
        "max_completion_tokens": 20,
        "temperature": 0.5,
        "stop": ["\n\n"],
    }


@DEPRECATED
async def test_what_cannot_be_asked_and_a_failing_model_are_errors_the_server_reads() -> None:
    async with (
        sampler([]) as (sample, replay),  # an empty script answers 500
        Router(callbacks=PeerCallbacks(sampling=sample)) as router,
    ):
        await router.join("p", InProcessPeer(asking_server(), mode="legacy"))
        too_hot = await router.call("p__sample", {"hints": [], "temperature": 3})
        assert too_hot.text == f"error {mt.INVALID_PARAMS}: temperature must be between 0 and 2, not 3.0"
        stops = await router.call("p__sample", {"hints": [], "stops": list("abcde")})
        assert stops.text == f"error {mt.INVALID_PARAMS}: at most 4 stop sequences can be sent, not 5"
        assert replay.requests == []  # neither was sent
        failed = await router.call("p__sample", {"hints": []})
        assert (
            failed.text == f"error {mt.INTERNAL_ERROR}: the model API answered 500: replay script exhausted"
        )


class Person(BaseModel):
    name: str


def ask_name() -> Elicit[Person]:
    return Elicit("Who are you?", Person)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_elicitation_and_roots_are_answered_by_the_callbacks(mode: str) -> None:
    server = build(None)

    @server.tool()
    def greet(person: Annotated[Person, Resolve(ask_name)]) -> str:
        return f"Hello {person.name}"

    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        return mt.ElicitResult(action="accept", content={"name": "Ada"})

    async def roots(context: ClientRequestContext) -> mt.ListRootsResult:
        return mt.ListRootsResult(roots=[mt.Root(uri="file:///work/project")])

    async with Router(callbacks=PeerCallbacks(elicitation=elicit, list_roots=roots)) as router:
        await router.join("p", InProcessPeer(server, mode=mode))
        assert (await router.call("p__greet", {})).text == "Hello Ada"
        assert (await router.call("p__roots", {})).text == "file:///work/project"
    assert asked == ["Who are you?"]


@DEPRECATED
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_log_records_reach_the_logging_callback(mode: str) -> None:
    """At 2026-07-28 a server sends records only for requests that opt in: `log_level` does."""
    server = MCPServer("chatty")

    @server.tool()
    async def work(ctx: Context) -> str:
        await ctx.log("warning", {"step": 1}, logger_name="worker")
        return "done"

    records: list[mt.LoggingMessageNotificationParams] = []

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        records.append(params)

    async with Router(callbacks=PeerCallbacks(logging=on_log, log_level="info")) as router:
        await router.join("p", InProcessPeer(server, mode=mode))
        assert (await router.call("p__work", {})).text == "done"
    assert [(r.level, r.logger, r.data) for r in records] == [("warning", "worker", {"step": 1})]


def roots_of(*uris: str) -> Any:
    async def roots(context: ClientRequestContext) -> mt.ListRootsResult:
        return mt.ListRootsResult(roots=[mt.Root(uri=uri) for uri in uris])

    return roots


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_peers_own_callbacks_override_the_routers_and_survive_a_reconnect(mode: str) -> None:
    """Over HTTP (server-to-client requests on the response stream, or an `InputRequiredResult`)
    and stdio; the HTTP server is stopped and started again, and asks again."""
    own = PeerCallbacks(list_roots=roots_of("file:///own"))
    stdio = StdioPeer(sys.executable, [str(HERE / "stdio_peer_server.py")], mode=mode)
    async with (
        http_server() as server,
        Router(
            callbacks=PeerCallbacks(list_roots=roots_of("file:///shared")),
            reconnect=FAST,
            health_interval=0.2,
        ) as router,
    ):
        await router.join("web", HttpPeer(server.url, mode=mode, callbacks=own))
        await router.join("local", stdio)
        assert (await router.call("web__roots", {})).text == "file:///own"
        assert (await router.call("local__roots", {})).text == "file:///shared"
        with router.events() as events:
            await server.kill()
            await next_event(events, HealthChanged, lambda e: not e.healthy)
            await server.start()
            await next_event(events, HealthChanged, lambda e: e.healthy)
        assert (await router.call("web__roots", {})).text == "file:///own"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_sampling_over_stdio(mode: str) -> None:
    async with (
        sampler([chat_completion({"content": "Blue"})]) as (sample, replay),
        Router(callbacks=PeerCallbacks(sampling=sample)) as router,
    ):
        await router.join("local", StdioPeer(sys.executable, [str(HERE / "stdio_peer_server.py")], mode=mode))
        assert (await router.call("local__ask", {"question": "Sky?"})).text == "Blue"
    assert [body["messages"][-1] for body in replay.bodies(CHAT)] == [{"role": "user", "content": "Sky?"}]


for _marker in ABANDONED_HTTP_STREAMS:
    test_a_peers_own_callbacks_override_the_routers_and_survive_a_reconnect = _marker(
        test_a_peers_own_callbacks_override_the_routers_and_survive_a_reconnect
    )


async def _sampling(context: ClientRequestContext, params: mt.CreateMessageRequestParams) -> mt.ErrorData:
    return mt.ErrorData(code=0, message="")


async def _other_sampling(
    context: ClientRequestContext, params: mt.CreateMessageRequestParams
) -> mt.ErrorData:
    return mt.ErrorData(code=1, message="")


_FIELDS: dict[str, list[Any]] = {
    "sampling": [_sampling, _other_sampling],
    "sampling_capabilities": [mt.SamplingCapability()],
    "elicitation": [_sampling],
    "list_roots": [roots_of("file:///a"), roots_of("file:///b")],
    "logging": [_sampling],
    "log_level": ["debug", "error"],
}
_CALLBACKS = st.fixed_dictionaries({}, optional={k: st.sampled_from(v) for k, v in _FIELDS.items()})


@settings(max_examples=200)
@given(own=st.one_of(st.none(), _CALLBACKS), default=st.one_of(st.none(), _CALLBACKS))
def test_a_peers_callbacks_override_the_routers_field_by_field(
    own: dict[str, Any] | None, default: dict[str, Any] | None
) -> None:
    merged = merge_callbacks(
        None if own is None else PeerCallbacks(**own), None if default is None else PeerCallbacks(**default)
    )
    if own is None and default is None:
        assert merged is None
        return
    assert merged is not None
    for name in _FIELDS:
        expected = (own or {}).get(name, (default or {}).get(name))
        assert getattr(merged, name) is expected
    sdk = client_options(merged)
    assert sdk.get("list_roots_callback") is merged.list_roots and sdk.get("log_level") == merged.log_level
    assert None not in sdk.values()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: PeerCallbacks(sampling="model"), "PeerCallbacks(sampling=...) must be an async callable"),  # type: ignore[arg-type]
        (lambda: PeerCallbacks(log_level="loud"), "log_level must be one of debug, info"),  # type: ignore[arg-type]
        (
            lambda: StdioPeer("x", callbacks=_sampling),
            "callbacks must be a PeerCallbacks or None, not function",
        ),  # type: ignore[arg-type]
        (
            lambda: Router(callbacks={"sampling": _sampling}),
            "callbacks must be a PeerCallbacks or None, not dict",
        ),  # type: ignore[arg-type]
        (lambda: Router(resource_tools="yes"), "resource_tools must be True or False"),  # type: ignore[arg-type]
    ],
)
def test_bad_callback_options_are_refused_at_once(make: Any, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        make()
