"""Any stdio MCP server as a topic participant: the bridge, its one session per requester, and
`mcpx-router bridge`. Public names: `mcpx_router.mcpx`."""
