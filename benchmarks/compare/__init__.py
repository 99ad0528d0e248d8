"""Competitors (`python -m benchmarks --compare`, the `bench` extra): other libraries' MCP tool
wrappers and tool lists, measured in the dispatch, catalogue and router benchmarks."""
