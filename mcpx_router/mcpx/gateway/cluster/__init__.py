"""Many gateways serving the same topics through NATS: the shared roster, frames addressed to a
participant on another gateway, and their hand-over while a participant moves."""
