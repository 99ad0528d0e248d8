"""What a peer sends, read and checked before the `mcp` SDK's session sees it: the stdio transport
(`_stdio`: the server's lines read as they arrive), each line parsed in time linear in its size and
in steps when large (`_lines`), every message checked against the requests in flight (`_answers`),
and the same checks wrapped around the SDK's HTTP and SSE transports (`_checked`)."""
