"""`ContentStore`: public names of resources, templates and prompts over any sequence of listings."""

from __future__ import annotations

import re
from typing import Any

import mcp_types as mt
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router.peers.content._content import ContentStore, PeerListing

LEGAL = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_TEXT = st.text(st.sampled_from("ab_-:/. é\x00"), min_size=1, max_size=8)
PEERS = st.sampled_from(["a", "a__b", "x y", "a_"])

listing = st.builds(
    lambda resources, templates, prompts: PeerListing(
        tuple(mt.Resource(uri=u, name=n, description=d) for u, n, d in resources),
        tuple(mt.ResourceTemplate(uri_template=u, name=n) for u, n in templates),
        tuple(mt.Prompt(name=n) for n in prompts),
    ),
    st.lists(st.tuples(_TEXT, _TEXT, st.sampled_from(["", "d"])), max_size=4),
    st.lists(st.tuples(_TEXT, _TEXT), max_size=2),
    st.lists(_TEXT, max_size=3),
)
operation = st.one_of(
    st.tuples(st.just("publish"), PEERS, listing),
    st.tuples(st.just("withdraw"), PEERS, st.none()),
    st.tuples(st.just("remove"), PEERS, st.none()),
)


def _visible(store: ContentStore) -> dict[tuple[str, str, str], str]:
    """(kind, peer, key on the peer) -> public name, for everything the store shows."""
    shown: dict[tuple[str, str, str], str] = {}
    for r in store.resources():
        shown["resources", r.peer, r.uri] = r.name
    for t in store.templates():
        shown["resource_templates", t.peer, t.uri_template] = t.name
    for p in store.prompts():
        shown["prompts", p.peer, p.prompt.name] = p.name
    return shown


@settings(max_examples=300, deadline=None)
@given(operations=st.lists(operation, max_size=12))
def test_names_are_legal_unique_and_kept_while_offered(operations: list[tuple[str, str, Any]]) -> None:
    store = ContentStore()
    names: dict[tuple[str, str, str], str] = {}  # every name given out and not yet freed
    listings: dict[str, PeerListing] = {}
    hidden: set[str] = set()
    for op, peer, new in operations:
        if op == "publish":
            before = {k: v for k, v in _visible(store).items() if k[1] == peer}
            first, returning = peer not in listings, peer in hidden
            changes = store.publish(peer, new)
            listings[peer] = new
            hidden.discard(peer)
            after = {k: v for k, v in _visible(store).items() if k[1] == peer}
            if first or returning:
                assert changes == []
            else:
                for change in changes:
                    was = {v for k, v in before.items() if k[0] == change.kind}
                    now = {v for k, v in after.items() if k[0] == change.kind}
                    assert set(change.added) == now - was
                    assert set(change.removed) == was - now
                    assert set(change.updated) <= now & was
                kinds_changed = {k[0] for k, _name in set(before.items()) ^ set(after.items())}
                assert kinds_changed <= {c.kind for c in changes}
            # A name is kept while its item is offered, even across a withdrawal.
            for key, name in after.items():
                assert names.setdefault(key, name) == name
            for key in [k for k in names if k[1] == peer and k not in after]:
                del names[key]
        elif op == "withdraw":
            store.withdraw(peer)
            if peer in listings:
                hidden.add(peer)
        else:
            store.remove(peer)
            listings.pop(peer, None)
            hidden.discard(peer)
            for key in [k for k in names if k[1] == peer]:
                del names[key]
        shown = _visible(store)
        assert {k[1] for k in shown} <= set(listings) - hidden
        for kind in ("resources", "resource_templates", "prompts"):
            of_kind = [v for k, v in shown.items() if k[0] == kind]
            assert len(of_kind) == len(set(of_kind))
            assert all(LEGAL.match(name) for name in of_kind)
        for (kind, peer_id, key), name in shown.items():
            resolved = store.resolve(kind, name)  # type: ignore[arg-type]
            assert resolved is not None and (resolved.peer, resolved.tool) == (peer_id, key)
        for peer_id in hidden:
            assert store.listing(peer_id) == PeerListing()
            for (kind, p, _), name in names.items():
                if p == peer_id:
                    assert store.resolve(kind, name) is None  # type: ignore[arg-type]
