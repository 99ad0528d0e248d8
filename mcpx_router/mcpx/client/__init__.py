"""The participant's side of a topic: `TopicClient` (one WebSocket per topic, presence, sending
paced within a gateway's rate limit), the channels that carry MCP to each participant, and
`serve_participant`, which answers the requests addressed to us. Public names: `mcpx_router.mcpx`."""
