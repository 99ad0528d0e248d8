"""tests/support/http_peer_server.py's MCPServer over stdio: it negotiates 2026-07-28 with `mode="auto"`.

python tests/support/stdio_peer_server.py
"""

from __future__ import annotations

from http_peer_server import build  # this file runs as a script, beside it

if __name__ == "__main__":
    build(None).run("stdio")
