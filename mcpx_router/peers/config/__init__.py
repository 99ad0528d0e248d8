"""Peers from a config file in the `mcpServers` convention: its entries, its `"aliases"` object,
and the environment variables in its values."""
