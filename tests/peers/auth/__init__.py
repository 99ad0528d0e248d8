"""Tests of mcpx_router.peers.auth."""
