"""Tests of mcpx_router.peers.wire: hostile stdio, HTTP and SSE peers."""
