"""Tests of mcpx_router.model.arguments."""
