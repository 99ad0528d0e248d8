"""Tests of mcpx_router.groups: groups of equivalent tools, member choice, statistics, failover."""
