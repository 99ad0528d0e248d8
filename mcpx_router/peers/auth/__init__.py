"""Credentials for HTTP peers: bearer tokens and OAuth (the `mcp` SDK's provider, tokens kept in a
file), the `"auth"` key of a config entry, and why a handshake failed when authorization is the reason."""
