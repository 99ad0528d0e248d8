"""Other gateways' rate limits: a per-topic send budget, learning from rate-limit errors of any
shape (slowing down, sending the dropped frame again), and calls that cannot go out in time."""

from __future__ import annotations

import json
import math
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from mcpx_router import Router
from mcpx_router.mcpx import (
    Gateway,
    GatewayConfig,
    GatewayErrorEvent,
    TopicClient,
    run_gateway,
    serve_participant,
)
from mcpx_router.mcpx._topic_options import parse_rate
from mcpx_router.mcpx.client._pace import MIN_SEND_RATE, Pacer
from mcpx_router.mcpx.client._ratelimit import RateLimited, rate_limit_error

from ...support.mcpx_gateways import SilentLimitGateway
from ...support.mcpx_support import eventually, make_server

TOPIC = "room"


# -- recognising rate-limit errors --------------------------------------------------------------

REAL_SHAPES: list[tuple[dict[str, Any], str | None, RateLimited | None]] = [
    # our own gateway: a system envelope's payload, the dropped envelope's id as correlation id
    (
        {
            "event": "error",
            "error": "rate_limited",
            "message": "...",
            "retry_after": 0.25,
            "limit": {"frames": 5, "per_seconds": 1, "burst": 5},
        },
        "env-1",
        RateLimited(0.25, 5.0, "env-1"),
    ),
    ({"error": "rate_limited", "retry_after": 2}, None, RateLimited(2.0, None, None)),
    ({"error": "rate_limited", "details": "slow down a little"}, None, RateLimited()),
    ({"code": 429, "error": "Rate limit exceeded"}, None, RateLimited()),
    (
        {"errcode": "M_LIMIT_EXCEEDED", "error": "Too many requests", "retry_after_ms": 2000},
        None,
        RateLimited(2.0),
    ),
    (
        {"type": "error", "code": "RATE_LIMITED", "retryAfter": 1.5, "ref": "env-9"},
        None,
        RateLimited(1.5, None, "env-9"),
    ),
    (
        {"status": 429, "error": "gateway:too.many.requests", "message": "Please try again"},
        None,
        RateLimited(),
    ),
    ({"error": {"code": 429, "message": "Too Many Requests", "retry_after": "3"}}, None, RateLimited(3.0)),
    (
        {"error": "throttled", "limit": 60, "window": 60, "details": {"envelope_id": "env-4"}},
        None,
        RateLimited(None, 1.0, "env-4"),
    ),
    # not rate limits
    ({"error": "from_mismatch", "message": "`from` must be your participant id"}, None, None),
    ({"event": "error", "error": "too_large", "message": "frame exceeds the size limit"}, None, None),
    ({"error": "unauthorized"}, None, None),
    ({"error": 500, "status": 500}, None, None),
]


@pytest.mark.parametrize(("frame", "correlation_id", "expected"), REAL_SHAPES)
def test_rate_limit_errors_of_real_shapes(
    frame: dict[str, Any], correlation_id: str | None, expected: RateLimited | None
) -> None:
    assert rate_limit_error(frame, correlation_id) == expected


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)


@settings(max_examples=500, deadline=None)
@given(obj=st.dictionaries(st.text(max_size=12), JSON, max_size=6), corr=st.none() | st.text(max_size=5))
def test_any_frame_is_read_without_error(obj: dict[str, Any], corr: str | None) -> None:
    info = rate_limit_error(obj, corr)
    if info is not None:
        assert info.retry_after is None or 0 <= info.retry_after <= 300
        assert info.limit is None or (info.limit > 0 and math.isfinite(info.limit))


CODE_KEYS = st.sampled_from(["error", "code", "errcode", "type", "reason"])
CODES = st.sampled_from(
    [
        "rate_limited",
        "RATE_LIMITED",
        "rate limit exceeded",
        "M_LIMIT_EXCEEDED",
        "Too Many Requests",
        "throttled",
        "ratelimit",
        "too_many_frames",
    ]
)
RETRY = st.one_of(
    st.tuples(st.sampled_from(["retry_after", "retryAfter", "retry_after_seconds"]), st.floats(0, 300)),
    st.tuples(st.sampled_from(["retry_after_ms", "retryAfterMs"]), st.floats(0, 300_000)),
)


@settings(max_examples=500, deadline=None)
@given(
    code_key=CODE_KEYS,
    code=CODES,
    retry=st.none() | RETRY,
    nest=st.sampled_from([None, "error", "details", "data"]),
    as_text=st.booleans(),
    ref_key=st.none() | st.sampled_from(["ref", "envelope_id", "correlation_id", "messageId"]),
    noise=st.dictionaries(st.sampled_from(["message", "hint", "ts", "extra"]), JSON, max_size=2),
)
def test_rate_limit_errors_of_any_shape_are_recognised(
    code_key: str,
    code: str,
    retry: tuple[str, float] | None,
    nest: str | None,
    as_text: bool,
    ref_key: str | None,
    noise: dict[str, Any],
) -> None:
    body: dict[str, Any] = {**noise, code_key: code}
    if isinstance(body.get("message"), str):
        body["message"] = "please wait"
    if retry is not None:
        body[retry[0]] = str(retry[1]) if as_text else retry[1]
    if ref_key is not None:
        body[ref_key] = "env-42"
    frame = body if nest is None or code_key == nest else {nest: body, "error": "error"}
    if nest == "error" and code_key != nest:
        frame = {"error": body}
    info = rate_limit_error(frame)
    assert info is not None, frame
    if retry is not None:
        seconds = retry[1] / 1000 if retry[0].endswith(("ms", "Ms")) else retry[1]
        assert info.retry_after == pytest.approx(min(seconds, 300.0))
    if ref_key is not None and nest is not None and code_key != nest:
        assert info.ref == "env-42"


# -- the pacer learns -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_pacer_slows_down_to_what_it_is_told() -> None:
    pacer = Pacer(50)
    pacer.slow_down(None, 2.0, 0)
    assert (pacer.rate, pacer.learned) == (2.0, True)
    pacer.slow_down(0.1, None, 0)  # no limit named: half
    assert pacer.rate == 1.0
    for _ in range(20):
        pacer.slow_down(None, None, 0)
    assert pacer.rate == MIN_SEND_RATE
    unlimited = Pacer(None)
    unlimited.slow_down(0.05, None, 40)  # it was sending 40 a second: 20 now
    assert unlimited.rate == 20.0
    started = anyio.current_time()
    await unlimited.wait()  # the pause the gateway asked for comes first
    assert anyio.current_time() - started >= 0.04


@pytest.mark.parametrize(
    ("text", "rate"), [("50", 50.0), ("50/s", 50.0), ("60/min", 1.0), ("7200/h", 2.0), ("none", None)]
)
def test_send_rates_on_the_command_line(text: str, rate: float | None) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["", "0", "-1", "fast", "10/week", "nan", "inf/s"])
def test_bad_send_rates_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="expected a send rate like"):
        parse_rate(text)


# -- against gateways ---------------------------------------------------------------------------


async def calls(client: Client, count: int) -> list[int]:
    results: list[int] = [0] * count

    async def one(i: int) -> None:
        result = await client.call_tool("add", {"a": i, "b": 1000})
        assert result.structured_content is not None
        results[i] = result.structured_content["result"]

    async with anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(one, i)
    return results


@pytest.mark.anyio
async def test_our_gateway_says_when_it_drops_and_the_client_learns_and_sends_again() -> None:
    gw = Gateway(GatewayConfig(rate_per_second=5.0, rate_burst=5))
    async with (
        run_gateway(gw) as url,
        TopicClient(url, TOPIC, "agent-b", send_rate=None) as b,
        serve_participant(b, make_server()),
        TopicClient(url, TOPIC, "agent-a", send_rate=None) as a,  # no budget: it must learn one
        a.subscribe() as events,
        Client(a.participant_transport("agent-b"), mode="legacy") as client,
    ):
        with anyio.fail_after(20):
            assert await calls(client, 12) == [i + 1000 for i in range(12)]  # nothing lost
        errors = []
        while True:
            try:
                event = events.receive_nowait()
            except anyio.WouldBlock:
                break
            if isinstance(event, GatewayErrorEvent):
                errors.append(event)
        assert errors and all(e.error == "rate_limited" for e in errors)
        assert errors[0].message is not None and "at most 5 frames a second" in errors[0].message
        assert a._budget.pacer.learned and a._budget.pacer.rate is not None and a._budget.pacer.rate <= 5


@pytest.mark.anyio
async def test_a_gateway_that_drops_silently_is_kept_within_its_budget() -> None:
    gw = SilentLimitGateway(rate_per_second=3.0, burst=6)
    async with (
        run_gateway(gw) as url,
        TopicClient(url, TOPIC, "agent-b", send_rate=3.0) as b,
        serve_participant(b, make_server()),
        TopicClient(url, TOPIC, "agent-a", send_rate=3.0) as a,  # its budget, given per topic
        Client(a.participant_transport("agent-b"), mode="legacy") as client,
    ):
        with anyio.fail_after(20):
            assert await calls(client, 6) == [i + 1000 for i in range(6)]
        assert gw.dropped == 0
        # over budget, the same gateway loses frames without a word: what the budget is for
        async with TopicClient(url, TOPIC, "unpaced", send_rate=None) as fast:
            for _ in range(12):
                await fast.notify("notifications/message", {"level": "info", "data": "x"}, to=("agent-b",))
            await eventually(lambda: gw.dropped > 0)


@pytest.mark.anyio
async def test_calls_that_cannot_be_sent_in_time_say_so() -> None:
    gw = SilentLimitGateway(rate_per_second=1.0, burst=2)
    async with (
        run_gateway(gw) as url,
        TopicClient(url, TOPIC, "agent-b", send_rate=1.0) as b,
        serve_participant(b, make_server()),
        Router() as router,
    ):
        topic = await router.join_topic(url, TOPIC, "host", send_rate=1.0, send_timeout=3.5)
        assert topic.peers == ("agent-b",)
        batch = [
            {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": "agent-b__add", "arguments": json.dumps({"a": i, "b": 1})},
            }
            for i in range(6)
        ]
        answers = await router.dispatch(batch)
        texts = [str(a["content"]) for a in answers]
        refused = [t for t in texts if "could not be sent within 3.5 s" in t]
        assert refused and all("the topic's send budget (1 frame a second)" in t for t in refused)
        answered = [t for i, t in enumerate(texts) if t == str(i + 1)]
        assert answered  # what fits in the budget goes out and is answered
        assert len(answered) + len(refused) == len(texts)
