"""Tests of mcpx_router.model.calls."""
