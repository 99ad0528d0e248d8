"""The MCPx gateway under load: the benchmark (`gateway`), its server and load-generator processes,
the storm of a topic filled at once, and the event-loop lag probes they share."""
