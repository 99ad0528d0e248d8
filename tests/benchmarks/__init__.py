"""Tests of the benchmarks' entry point (benchmarks/__main__.py)."""
