"""What the model sees and sends.

Schema conversion (per output format, strict mode, JSON-string parameters), the tool budget,
argument parsing, repair and validation, call shapes, and result and media conversion. Pure,
synchronous functions with no I/O; this package imports nothing of `peers`, `mcpx` or `cli`,
and from the core only `_errors` and `_naming`.
"""
