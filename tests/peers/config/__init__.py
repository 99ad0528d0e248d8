"""Tests of mcpx_router.peers.config."""
