"""Benchmarks for mcpx_router: the adapter measured as ratios against the plain `mcp` client.

Run them with `python3 dev.py bench` (or `.venv/bin/python -m benchmarks`); see
`benchmarks/__main__.py` for the options and docs/benchmarks.md for recorded figures.
They are not tests: the test suite never runs them.
"""
