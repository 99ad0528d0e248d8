"""What the model sees and sends.

Schema conversion (per output format, `strict/` mode, JSON-string parameters), the tool budget,
`arguments/` parsed, repaired and validated, `calls/` and their shapes, result and media
conversion, and what the model is told of a name no tool answers to (`_unknown`, `_suggest`). Pure,
synchronous functions with no I/O; this package imports nothing of `peers`, `mcpx` or `cli`,
and from the core only `_errors` and `_naming`.
"""
