"""The `"aliases"` object of an `mcpServers` config: groups of equivalent tools (pure, no I/O but the read).

{"mcpServers": {...}, "aliases": {"search": ["web/search", "docs/search"]}}
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..._errors import ConfigError, UsageError
from ...groups._spec import parse_aliases

__all__ = ["config_aliases", "load_aliases"]


def config_aliases(data: Any, *, source: str = "the peer config") -> dict[str, Any]:
    """The groups a parsed config asks for, checked (none when it has no `"aliases"`).

    Raises:
        ConfigError: `"aliases"` is not an object of group names to lists of "peer/tool".
    """
    aliases = data.get("aliases") if isinstance(data, dict) else None
    if aliases is None:
        return {}
    try:
        parse_aliases(aliases)
    except UsageError as exc:
        raise ConfigError(f'{source}: "aliases": {exc}', peer="") from None
    return dict(aliases)


def load_aliases(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The `"aliases"` of a config file (see `config_aliases`); ConfigError if it cannot be read."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the peer config {str(file)!r}: {exc}", peer="") from exc
    return config_aliases(data, source=str(file))
