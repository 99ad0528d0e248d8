"""The Router's joining of many peers at once: a mapping of specs, or an `mcpServers` config file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

from .._errors import DuplicatePeerError
from ._specs import PeerSpec, as_peer_spec
from .config._alias_config import load_aliases
from .config._config import load_config

if TYPE_CHECKING:
    from ._member import Member

__all__ = ["JoinMany"]


class JoinMany:
    """`join_all` and `join_config`, all or nothing, over the Router's own `join` and `leave`."""

    _members: dict[str, Member]

    if TYPE_CHECKING:  # the Router's own

        async def join(self, peer_id: str, peer: PeerSpec | object) -> tuple[str, ...]: ...

        async def leave(self, peer_id: str) -> None: ...

        def set_aliases(self, aliases: Mapping[str, Any]) -> None: ...

    async def join_all(self, peers: Mapping[str, PeerSpec | object]) -> dict[str, tuple[str, ...]]:
        """Join several peers concurrently; return the public names of each.

        All or nothing: if one cannot join, those that did leave again and its error is raised.
        """
        for peer_id, peer in peers.items():
            as_peer_spec(peer)  # fail on a bad spec before connecting anything
            if peer_id in self._members:
                raise DuplicatePeerError(f"a peer named {peer_id!r} is already registered", peer=peer_id)
        joined: dict[str, tuple[str, ...]] = {}
        failures: list[BaseException] = []

        async def one(peer_id: str, peer: object) -> None:
            try:
                joined[peer_id] = await self.join(peer_id, peer)
            except Exception as exc:
                failures.append(exc)

        async with anyio.create_task_group() as tg:
            for peer_id, peer in peers.items():
                tg.start_soon(one, peer_id, peer)
        if failures:
            with anyio.CancelScope(shield=True):
                for peer_id in joined:
                    await self.leave(peer_id)
            raise failures[0]
        return {peer_id: joined[peer_id] for peer_id in peers}

    async def join_config(self, path: str | os.PathLike[str]) -> dict[str, tuple[str, ...]]:
        """Join every enabled server of an `mcpServers` JSON file (see `load_config`), all or nothing.

        Its `"aliases"` object, if any, adds groups of equivalent tools first (see `set_aliases`).
        """
        peers, aliases = load_config(path), load_aliases(path)
        if aliases:
            self.set_aliases(aliases)
        return await self.join_all(peers)
