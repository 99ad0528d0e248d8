"""The `mcpx-router` command and its subcommands.

`main` is the console entry point (`mcpx_router.cli:main`). Nothing outside this package
imports it; it may import everything else.
"""

from ._main import build_parser, main

__all__ = ["build_parser", "main"]
