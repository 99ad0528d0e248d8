"""Tests of mcpx_router.peers.stdio."""
