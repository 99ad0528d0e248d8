"""Connection options a topic client takes beyond its address, and their command-line flags.

The same flags on `mcpx-router bridge` (and the gateway's keepalive flags on `gateway`):
`--send-rate 60/min`, `--ping-interval 20`, `--ping-timeout 20`.
"""

from __future__ import annotations

import argparse
import math
from typing import TypedDict

from .client._auth import TokenProvider, token_endpoint

__all__ = [
    "ConnectionOptions",
    "TopicOptions",
    "add_keepalive_flags",
    "add_topic_flags",
    "parse_rate",
    "send_rate",
    "topic_options",
]

_PER = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hour": 3600.0}


class ConnectionOptions(TypedDict, total=False):
    """How a topic client keeps its connection: `TopicClient`'s keyword arguments of that name."""

    send_timeout: float | None
    ping_interval: float | None
    ping_timeout: float


class TopicOptions(ConnectionOptions, total=False):
    """Keyword arguments passed on to `TopicClient` (see its docstring)."""

    token_provider: TokenProvider | None
    send_rate: float | None


def parse_rate(text: str) -> float | None:
    """Frames a second from `N`, `N/s`, `N/min` or `N/h`; `none` for no limit.

    >>> parse_rate("60/min"), parse_rate("2"), parse_rate("none")
    (1.0, 2.0, None)
    """
    value = text.strip().lower()
    if value in ("none", "off", "unlimited"):
        return None
    count, _, per = value.partition("/")
    seconds = _PER.get(per.strip() or "s")
    try:
        frames = float(count)
    except ValueError:
        frames = math.nan
    if seconds is None or not math.isfinite(frames) or frames <= 0:
        raise ValueError(f"expected a send rate like 50, 50/s, 60/min or none; got {text!r}")
    return frames / seconds


def send_rate(text: str) -> float | None:
    """An argparse type for `parse_rate`."""
    try:
        return parse_rate(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds_or_off(text: str) -> float | None:
    if text.strip().lower() in ("none", "off", "0"):
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected positive seconds or off; got {text!r}")
    return value


def _seconds(text: str) -> float:
    value = _seconds_or_off(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected positive seconds; got {text!r}")
    return value


def add_keepalive_flags(parser: argparse.ArgumentParser, who: str) -> None:
    """`--ping-interval SECONDS|off` and `--ping-timeout SECONDS` (20 s each by default)."""
    parser.add_argument(
        "--ping-interval",
        type=_seconds_or_off,
        default=20.0,
        metavar="SECONDS",
        help=f"seconds between WebSocket pings to {who} (default: 20; off: never ping)",
    )
    parser.add_argument(
        "--ping-timeout",
        type=_seconds,
        default=20.0,
        metavar="SECONDS",
        help=f"seconds {who} may stay silent after a ping before the connection is dropped (default: 20)",
    )


def add_topic_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of a command that joins a topic: token service, send rate and keepalive."""
    parser.add_argument(
        "--token-url",
        metavar="URL",
        help="a token service: POST {participantId, topic} -> {token}; asked again whenever the "
        "gateway refuses the token held (expired, or a restarted gateway)",
    )
    add_send_rate_flag(parser)
    add_keepalive_flags(parser, "the gateway")


def add_send_rate_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """`--send-rate RATE`: the topic's send budget (50 frames a second by default)."""
    parser.add_argument(
        "--send-rate",
        type=send_rate,
        default=50.0,
        metavar="RATE",
        help="frames we send at most: N a second, or N/min, N/h (default: 50; none: no limit); "
        "match the gateway's per-participant rate limit",
    )


def topic_options(args: argparse.Namespace) -> TopicOptions:
    """The `TopicClient` options given by `add_topic_flags`' flags (and `--topic`, `--id`)."""
    options = TopicOptions(
        send_rate=args.send_rate, ping_interval=args.ping_interval, ping_timeout=args.ping_timeout
    )
    if args.token_url:
        options["token_provider"] = token_endpoint(args.token_url, args.participant_id, args.topic)
    return options
