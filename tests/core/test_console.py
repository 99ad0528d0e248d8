"""The pieces every command shares: its log handler and its `--connect-timeout` values."""

from __future__ import annotations

import argparse
import logging
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router._console import console_logging, positive_seconds


def _log_all(exc: BaseException) -> None:
    logging.getLogger("mcp.client.stdio").error("Failed to parse JSONRPC message", exc_info=exc)
    logging.getLogger("mcpx_router.peers").info("a peer joined")
    logging.getLogger("mcpx_router.peers").debug("a stray line")
    logging.getLogger("mcpx_router").warning("config: ignoring unknown keys", exc_info=exc)
    logging.getLogger("httpx").warning("HTTP trouble")


@pytest.mark.parametrize(
    ("verbosity", "shown", "hidden"),
    [
        (0, ["mcpx-router: config: ignoring unknown keys\n"], ["mcp.client", "Traceback", "httpx", "joined"]),
        (
            1,
            ["ERROR mcp.client.stdio: Failed", "Traceback", "WARNING httpx", "INFO mcpx_router.peers"],
            ["DEBUG"],
        ),
        (2, ["DEBUG mcpx_router.peers: a stray line", "Traceback"], []),
    ],
)
def test_what_each_verbosity_shows(
    verbosity: int, shown: list[str], hidden: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        raise ValueError("garbage")
    except ValueError as exc:
        with console_logging(verbosity):
            _log_all(exc)
    err = capsys.readouterr().err
    for text in shown:
        assert text in err
    for text in hidden:
        assert text not in err
    if verbosity == 0:
        assert err == shown[0]  # our warning alone, in one line
    assert (root.level, root.handlers) == (level, handlers)  # the block leaves logging as it was


@settings(max_examples=300)
@given(st.floats() | st.integers(-(10**6), 10**6))
def test_connect_timeout_values(value: float) -> None:
    text = repr(value)
    if 0 < value < math.inf:
        assert positive_seconds(text) == float(value)
    else:
        with pytest.raises(argparse.ArgumentTypeError, match="positive number of seconds"):
            positive_seconds(text)


@pytest.mark.parametrize("text", ["", "soon", "1s", "0x10"])
def test_connect_timeout_must_be_a_number(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected a number of seconds"):
        positive_seconds(text)
