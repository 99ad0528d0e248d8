"""Peers: one stdio peer's huge answer beside ordinary peers (`hostile`)."""
