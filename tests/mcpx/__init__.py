"""Tests of mcpx_router.mcpx."""
