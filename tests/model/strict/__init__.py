"""Tests of mcpx_router.model.strict."""
