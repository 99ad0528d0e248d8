"""Where MCP hosts keep their `mcpServers` config, for commands given no `--config`.

The first of these files that exists is used (a file that only may hold servers, among other
settings, counts when it has an `"mcpServers"` object):

| file | host |
| --- | --- |
| `./mcp.json` | this command's own default |
| `./.mcp.json` | Claude Code (project) |
| `./.vscode/mcp.json` | VS Code (workspace) |
| `./.cursor/mcp.json` | Cursor (project) |
| `~/.cursor/mcp.json` | Cursor (user) |
| `~/.claude.json` | Claude Code (user), when it has `mcpServers` |
| `claude_desktop_config.json` in `~/Library/Application Support/Claude/` (macOS), | Claude Desktop |
| `%APPDATA%\\Claude\\` (Windows), `$XDG_CONFIG_HOME/Claude/` (else `~/.config/Claude/`) | |
| `~/.codeium/windsurf/mcp_config.json` | Windsurf |
| `~/.gemini/settings.json` | Gemini CLI, when it has `mcpServers` |
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Candidate", "candidates", "discover", "here"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A place a host keeps its servers."""

    path: Path
    host: str
    shared: bool = False
    """The file holds other settings too: it counts only when it has an `mcpServers` object."""


def candidates(cwd: Path, home: Path, platform: str, env: Mapping[str, str]) -> list[Candidate]:
    """The places looked at, in order (pure: the directories and platform are given)."""
    if platform == "darwin":
        desktop = home / "Library" / "Application Support" / "Claude"
    elif platform == "win32":
        desktop = Path(env.get("APPDATA") or home / "AppData" / "Roaming") / "Claude"
    else:
        desktop = Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "Claude"
    places = [
        Candidate(cwd / "mcp.json", "mcp.json"),
        Candidate(cwd / ".mcp.json", "Claude Code, project"),
        Candidate(cwd / ".vscode" / "mcp.json", "VS Code, workspace"),
        Candidate(cwd / ".cursor" / "mcp.json", "Cursor, project"),
        Candidate(home / ".cursor" / "mcp.json", "Cursor, user"),
        Candidate(home / ".claude.json", "Claude Code, user", shared=True),
        Candidate(desktop / "claude_desktop_config.json", "Claude Desktop"),
        Candidate(home / ".codeium" / "windsurf" / "mcp_config.json", "Windsurf"),
        Candidate(home / ".gemini" / "settings.json", "Gemini CLI", shared=True),
    ]
    unique: dict[Path, Candidate] = {}
    for place in places:  # the working directory may be the home directory
        unique.setdefault(place.path, place)
    return list(unique.values())


def discover(places: list[Candidate]) -> Candidate | None:
    """The first place whose file exists (and, for a shared file, has an `mcpServers` object)."""
    for place in places:
        if not place.path.is_file():
            continue
        if not place.shared or _has_servers(place.path):
            return place
    return None


def _has_servers(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("mcpServers"), dict)


def here() -> list[Candidate]:
    """The places looked at from this process's directory, home and platform."""
    return candidates(Path.cwd(), Path.home(), sys.platform, os.environ)
