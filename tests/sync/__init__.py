"""Tests of mcpx_router.sync: the blocking facade."""
