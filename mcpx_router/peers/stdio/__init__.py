"""The stdio transport of the Router's peers: the server's lines read as they arrive (`_stdio`),
each parsed in time linear in its size and in steps when large (`_lines`), and checked before the
`mcp` SDK's session sees it (`_answers`)."""
