"""The gateway's side: one port for WebSocket upgrades and the ASGI app (`_front`), the rooms of a
topic and their presence, the write path (`_wspeer`), tokens, and the command (`_serve`); `cluster/`
shares topics between gateways through NATS. Public names: `mcpx_router.mcpx`."""
