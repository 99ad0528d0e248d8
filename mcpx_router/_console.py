"""What every `mcpx-router` command shares: its parser, options, messages, log output and how Ctrl-C stops it.

- Every message for a person starts with `mcpx-router: ` and goes to standard error, argparse's
  usage errors included (`CommandParser`); help texts show each option's default.

- `-v/--verbose`: by default only mcpx_router's own warnings reach standard error, one line
  each; the records of the libraries underneath (the `mcp` SDK reports every line a server
  writes that is not JSON-RPC with a traceback) stay off the terminal. `-v` shows every
  library's records from INFO up with their tracebacks, `-vv` from DEBUG up.
- Nothing a command writes on standard error shows a secret: its messages and every log record
  (tracebacks included, whichever library wrote them) are masked (`_errors.redact`).
- `--connect-timeout SECONDS` for the commands that open peers.
- SIGINT (Ctrl-C) or SIGTERM cancels the command's work, which stops its child servers, and
  the command exits without a traceback: 130 after Ctrl-C; 143 after SIGTERM, except for the
  services (gateway, bridge), for which SIGTERM is the normal way to stop: 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import anyio

from ._errors import redact

__all__ = [
    "PREFIX",
    "CommandParser",
    "DefaultsFormatter",
    "add_connect_timeout",
    "add_verbose",
    "console_logging",
    "fail",
    "run_command",
    "say",
    "until_signalled",
]

INTERRUPTED = 128 + signal.SIGINT
"""The exit status of a command stopped by Ctrl-C."""
_OURS = "mcpx_router"
PREFIX = "mcpx-router: "
"""What every message of the command to a person starts with."""
USAGE = 2
"""The exit status of a command given unusable options or arguments."""


def say(message: str) -> None:
    """Tell the person at the terminal something, on standard error: `mcpx-router: message`."""
    sys.stderr.write(f"{PREFIX}{redact(message)}\n")
    sys.stderr.flush()


def fail(message: str, status: int) -> int:
    """`say(message)` and return `status`, the command's exit status."""
    say(message)
    return status


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that ends each option's text with its default, when it has one worth saying."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default in (None, False, argparse.SUPPRESS, [], "")
            or (not action.option_strings and action.nargs not in ("?", "*"))
        ):
            return text
        return f"{text} (default: %(default)s)"


class CommandParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors read `mcpx-router: ...` like every other error."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        say(f"{message} (see '{self.prog} --help')")
        sys.exit(USAGE)


def add_verbose(parser: argparse.ArgumentParser) -> None:
    """Add `-v/--verbose` (repeatable) to a command."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="show the log records of the libraries underneath too (-v: from INFO up, -vv: DEBUG)",
    )


def add_connect_timeout(parser: argparse.ArgumentParser, default: float, what: str) -> None:
    """Add `--connect-timeout SECONDS` to a command that opens peers."""
    parser.add_argument(
        "--connect-timeout",
        type=positive_seconds,
        default=default,
        metavar="SECONDS",
        help=f"seconds {what} may take",
    )


def positive_seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {text!r}")
    return value


class _OneLine(logging.Formatter):
    """`mcpx-router: message`, without the traceback a record may carry."""

    def format(self, record: logging.LogRecord) -> str:
        return f"mcpx-router: {redact(record.getMessage())}"


class _Masked(logging.Formatter):
    """`LEVEL name: message` and the traceback, every secret masked, whichever library logged it."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def _ours(record: logging.LogRecord) -> bool:
    return record.name == _OURS or record.name.startswith(_OURS + ".")


@contextmanager
def console_logging(verbosity: int) -> Iterator[None]:
    """Send log records to standard error for the block, as `-v` asks (see the module docstring).

    Installed on the root logger before any server is made, so that `logging.basicConfig`
    calls elsewhere (the `mcp` SDK's `MCPServer` makes one) find it and change nothing.
    """
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    if verbosity <= 0:
        handler.setLevel(logging.WARNING)
        handler.addFilter(_ours)
        handler.setFormatter(_OneLine())
        level = logging.WARNING
    else:
        level = logging.INFO if verbosity == 1 else logging.DEBUG
        handler.setFormatter(_Masked("%(levelname)s %(name)s: %(message)s"))
    saved = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(saved)


async def until_signalled(
    main: Callable[[], Awaitable[int]], *, on_sigterm: int = 128 + signal.SIGTERM
) -> int:
    """`await main()`, unless SIGINT or SIGTERM arrives first: then cancel it (its cleanup runs)
    and return 130 (SIGINT) or `on_sigterm`. An exception of `main` is raised as is."""
    outcome: list[int] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    outcome.append(INTERRUPTED if signum == signal.SIGINT else on_sigterm)
                    tg.cancel_scope.cancel()
                    return

        async def run() -> None:
            try:
                outcome.append(await main())
            except Exception as exc:  # re-raised below, outside the task group's exception group
                failure.append(exc)
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        tg.start_soon(run)
    if failure:
        raise failure[0]
    return outcome[0]


def run_command(
    main: Callable[[], Awaitable[int]], *, backend: str = "asyncio", on_sigterm: int = 128 + signal.SIGTERM
) -> int:
    """Run a command's coroutine to its exit status; SIGINT/SIGTERM stop it (see `until_signalled`).

    A Ctrl-C that lands outside the coroutine (while the event loop starts or ends) gives the
    same status, without a traceback.
    """
    try:
        return anyio.run(lambda: until_signalled(main, on_sigterm=on_sigterm), backend=backend)
    except KeyboardInterrupt:
        return INTERRUPTED
