"""Tests of mcpx_router.cli."""
