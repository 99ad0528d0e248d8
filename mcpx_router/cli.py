"""The `mcpx-router` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcpx-router", description="Use the tools of many MCP peers through OpenAI function calling."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="publish the tools of a few bundled peers and answer a batch of tool calls",
        description="Start bundled in-process peers, print the merged OpenAI tool catalogue and answer "
        "a batch of parallel tool calls. With OPENAI_API_KEY set (and optionally OPENAI_BASE_URL, "
        "OPENAI_MODEL), run a real conversation with these tools instead.",
    )
    demo.add_argument("--offline", action="store_true", help="never contact a model, even if a key is set")
    demo.add_argument("--prompt", default=None, help="what to ask the model (with OPENAI_API_KEY)")
    demo.set_defaults(run=_run_demo)
    return parser


def _run_demo(args: argparse.Namespace) -> int:
    from ._demo import run_demo

    return run_demo(offline=args.offline, prompt=args.prompt)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `mcpx-router` command."""
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
