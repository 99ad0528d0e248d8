"""Tests of mcpx_router's core modules."""
