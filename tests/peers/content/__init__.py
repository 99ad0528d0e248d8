"""Tests of mcpx_router.peers.content."""
