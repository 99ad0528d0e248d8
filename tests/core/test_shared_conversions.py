"""Peers listing the same schema share one conversion and one outbound check, and that never
changes what is published: every tool comes out exactly as it would in a catalogue of its own.

Schemas of any draft and junk (`test_outbound`'s strategies) are listed by several peers of one
catalogue in every form that has the same JSON text, or an equal value, as another: fresh copies,
tuples for lists, mappings that are not dicts, non-string keys, and subtrees met twice.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import mcp_types as mt
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from mcpx_router._catalogue import Catalogue
from mcpx_router.model._listing import plain_key
from mcpx_router.model._schema import convert_for_openai
from mcpx_router.model._shape import schema_shape, survives_conversion

from ..model.test_outbound import deep, junk, roots, schemas


class Tree(dict[str, Any]):
    """A dict subclass: encodes and compares like a dict, converts as a mapping that is not one."""


def _map(node: Any, on_dict: Callable[[dict[Any, Any]], Any], on_list: Callable[[list[Any]], Any]) -> Any:
    if isinstance(node, dict):
        return on_dict({key: _map(value, on_dict, on_list) for key, value in node.items()})
    if isinstance(node, list):
        return on_list([_map(value, on_dict, on_list) for value in node])
    return node


def fresh(node: Any) -> Any:
    return _map(node, dict, list)


def tuples(node: Any) -> Any:
    return _map(node, dict, tuple)


def subclassed(node: Any) -> Any:
    return _map(node, Tree, list)


def int_keys(node: Any) -> Any:
    """Keys written with digits become ints (the JSON text stays the same)."""
    return _map(node, lambda d: {int(k) if k.isascii() and k.isdigit() else k: v for k, v in d.items()}, list)


def reordered(node: Any) -> Any:
    return _map(node, lambda d: dict(reversed(d.items())), list)


def shared(node: Any) -> Any:
    """The same tree with every property the same object as the first (JSON repeats it)."""
    node = fresh(node)
    properties = node.get("properties")
    if isinstance(properties, dict) and properties:
        first = next(iter(properties.values()))
        node["properties"] = dict.fromkeys(properties, first)
    return node


VARIANTS = {
    "copy": fresh,
    "tuples": tuples,
    "subclass": subclassed,
    "int keys": int_keys,
    "reordered": reordered,
    "shared": shared,
    "shared, written out": lambda node: fresh(shared(node)),  # the same JSON text, nothing met twice
    "deep copy": copy.deepcopy,
}


def outcome(catalogue: Catalogue, peer: str, listed: mt.Tool) -> tuple[Any, ...]:
    """What a catalogue made of `peer`'s one tool, written so that any difference shows."""
    tools = catalogue.tools_of(peer)
    if not tools:
        return ("rejected", catalogue.rejected(peer)["t"])
    (tool,) = tools
    checked_against = "listed" if tool.input_schema is listed.input_schema else repr(tool.input_schema)
    return (
        "published",
        repr(tool.parameters),
        tool.strict,
        tool.description,
        checked_against if tool.input_schema is not tool.parameters else "parameters",
        None if tool.strict_outcome is None else tool.strict_outcome.reasons,
        None if tool.string_plan is None else repr(tool.string_plan),
    )


def assert_same_outcome(shared: tuple[Any, ...], alone: tuple[Any, ...], listed: mt.Tool) -> bool:
    """Outcomes are the same; except that arguments may be checked against the conversion of a schema
    whose containers are met twice: it keeps every constraint (the tree, without sharing, does)."""
    if shared[0] == alone[0] == "published" and shared[4] != alone[4]:
        assert (alone[4], shared[4]) == ("listed", "parameters")
        assert not survives_conversion(listed.input_schema)
        assert survives_conversion(fresh(listed.input_schema))
        assert shared[:4] + shared[5:] == alone[:4] + alone[5:]
        return True
    assert shared == alone
    return False


def alone(listed: mt.Tool, peer: str, options: dict[str, Any]) -> tuple[Any, ...]:
    catalogue = Catalogue(**options)
    catalogue.set_peer(peer, [listed])
    return outcome(catalogue, peer, listed)


SCHEMA = roots(schemas(junk) | deep(schemas(junk)))
OPTIONS = st.fixed_dictionaries(
    {"strict": st.sampled_from([False, None, True]), "json_strings": st.booleans()}
)


@settings(max_examples=300, deadline=None)
@given(
    schema=SCHEMA,
    other=SCHEMA,
    order=st.permutations(sorted(VARIANTS)),
    options=OPTIONS,
    digits=st.booleans(),
)
def test_peers_listing_the_same_schema_get_what_each_would_get_alone(
    schema: dict[str, Any], other: dict[str, Any], order: list[str], options: dict[str, Any], digits: bool
) -> None:
    if digits:  # names the "int keys" form writes as ints
        schema = {"type": "object", "properties": {"1": schema, "2": {"type": "integer", "default": 1}}}
    catalogue = Catalogue(**options)
    listings = [("other", mt.Tool(name="t", input_schema=other))]
    listings += [
        (f"p{i}", mt.Tool(name="t", input_schema=VARIANTS[kind](schema))) for i, kind in enumerate(order)
    ]
    listings.append(("again", mt.Tool(name="t", input_schema=fresh(schema))))
    for peer, listed in listings:
        catalogue.set_peer(peer, [listed])
    for peer, listed in listings:
        if assert_same_outcome(outcome(catalogue, peer, listed), alone(listed, peer, options), listed):
            event("a tree with containers met twice, checked against its conversion")
    event(f"published {sum(bool(catalogue.tools_of(peer)) for peer, _ in listings)} of {len(listings)}")


@settings(max_examples=150, deadline=None)
@given(schema=SCHEMA, options=OPTIONS)
def test_a_shared_conversion_is_one_tree_and_its_users_are_unchanged(
    schema: dict[str, Any], options: dict[str, Any]
) -> None:
    catalogue = Catalogue(**options)
    listed = [mt.Tool(name="t", input_schema=fresh(schema)) for _ in range(3)]
    snapshots = [repr(tool.input_schema) for tool in listed]
    for index, tool in enumerate(listed):
        catalogue.set_peer(f"p{index}", [tool])
    assert [repr(tool.input_schema) for tool in listed] == snapshots  # no peer's schema is touched
    published = [t for i in range(3) for t in catalogue.tools_of(f"p{i}")]
    assert len(published) in (0, 3)
    if published and not options["json_strings"] and not any(t.strict for t in published):
        # The model's view of each is one and the same read-only tree.
        assert published[0].parameters is published[1].parameters is published[2].parameters
        event("one tree")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"type": "object", "properties": {"1": {"type": "string", "default": "a"}}}, "int keys"),
        ({"type": "object", "properties": {"a": {"type": "array", "default": []}}}, "tuples"),
        ({"type": "object", "properties": {"a": {"type": "integer", "default": 1}}}, "subclass"),
        (
            {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
            "shared",
        ),
    ],
)
@pytest.mark.parametrize("swap", [False, True])
def test_the_same_json_text_in_another_form_is_converted_on_its_own(
    first: dict[str, Any], second: str, swap: bool
) -> None:
    """The forms the JSON text alone cannot tell apart each get their own conversion."""
    tools = [
        mt.Tool(name="t", input_schema=fresh(first)),
        mt.Tool(name="t", input_schema=VARIANTS[second](first)),
    ]
    assert json.dumps(tools[0].input_schema) == json.dumps(tools[1].input_schema)
    if swap:
        tools.reverse()
    catalogue = Catalogue()
    for index, tool in enumerate(tools):
        catalogue.set_peer(f"p{index}", [tool])
    for index, tool in enumerate(tools):
        assert_same_outcome(outcome(catalogue, f"p{index}", tool), alone(tool, f"p{index}", {}), tool)


def test_a_recurring_schema_is_converted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcpx_router._catalogue as catalogue_module

    calls: list[Any] = []
    convert = catalogue_module.convert_for_openai
    monkeypatch.setattr(catalogue_module, "convert_for_openai", lambda s: calls.append(s) or convert(s))
    schema = {"type": "object", "properties": {"q": {"type": "string", "title": "Q"}}, "required": ["q"]}
    catalogue = Catalogue()
    for index in range(50):
        catalogue.set_peer(f"p{index}", [mt.Tool(name="t", input_schema=fresh(schema))])
    assert len(calls) == 1
    assert len(catalogue.all_tools()) == 50


# -- the walk that says whether a conversion may be shared ----------------------------------------


def reference_survives(schema: object) -> bool:
    """The definition: no container deeper than 64 levels or met twice (cycles included)."""
    seen: set[int] = set()

    def walk(node: object, depth: int) -> bool:
        if not isinstance(node, dict | list | tuple | Tree):
            return True
        if depth > 64 or id(node) in seen:
            return False
        seen.add(id(node))
        children = node.values() if isinstance(node, dict) else node
        return all(walk(child, depth + 1) for child in children)

    return walk(schema, 0)


def reference_plain(schema: object) -> bool:
    if type(schema) is dict:
        return all(reference_plain(v) for v in schema.values())
    if type(schema) is list:
        return all(reference_plain(v) for v in schema)
    return type(schema) in (str, int, float, bool, type(None))


@st.composite
def trees(draw: st.DrawFn) -> Any:
    """Schemas in any of the forms above, sometimes deeper than the conversion keeps or cyclic."""
    tree = VARIANTS[draw(st.sampled_from(sorted(VARIANTS)))](draw(SCHEMA))
    if draw(st.booleans()):
        tree = {
            "type": "object",
            "properties": {"x": tree, "y": draw(st.sampled_from([1, 1.5, True, "s", None]))},
        }
    if draw(st.integers(0, 9)) == 0:
        tree["properties"] = {"self": tree}  # a cycle
    return tree


@settings(max_examples=500, deadline=None)
@given(schema=trees())
def test_schema_shape_says_what_the_definitions_say(schema: Any) -> None:
    survives, plain = schema_shape(schema)
    assert survives == reference_survives(schema) == survives_conversion(schema)
    assert plain == (survives and reference_plain(schema))
    event(f"survives={survives} plain={plain}")


def test_a_peer_changing_its_own_tree_later_changes_no_shared_conversion() -> None:
    """The catalogue keeps its own copy of a converted schema, not the peer's tree."""
    schema: dict[Any, Any] = {"type": "object", "properties": {"1": {"type": "string", "default": "a"}}}
    catalogue = Catalogue()
    catalogue.set_peer("p0", [mt.Tool(name="t", input_schema=schema)])
    listed = catalogue.tools_of("p0")[0]
    schema["properties"] = {1: {"type": "integer"}}  # now equal to what "int keys" sends
    twin = mt.Tool(
        name="t", input_schema=int_keys({"type": "object", "properties": {"1": {"type": "string"}}})
    )
    twin.input_schema["properties"][1]["default"] = "a"
    catalogue.set_peer("p1", [twin])
    assert_same_outcome(outcome(catalogue, "p1", twin), alone(twin, "p1", {}), twin)
    assert repr(listed.parameters) == repr(convert_for_openai(fresh(listed.input_schema)).parameters)


def has_json_text(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        return False
    return True


def typed(node: Any) -> Any:
    """`node` with the exact type of every value and the order of every key made visible."""
    if isinstance(node, dict):
        return (type(node), [(typed(key), typed(value)) for key, value in node.items()])
    if isinstance(node, list | tuple):
        return (type(node), [typed(value) for value in node])
    return (type(node), repr(node))


@settings(max_examples=300, deadline=None)
@given(base=SCHEMA, kind=st.sampled_from(sorted(VARIANTS)), different=trees())
def test_the_same_plain_key_means_the_same_tree(base: Any, kind: str, different: Any) -> None:
    """Bytes that stand for a tree are shared only by trees of the same types, values and key
    order (so the same JSON text); cycles, subtrees met twice and deep trees cost no blow-up."""
    plain = fresh(base)
    key = plain_key(plain)
    for candidate in (VARIANTS[kind](base), fresh(base), different, plain):
        other = plain_key(candidate)
        if other is None or key is None:
            event("no key")
            continue
        same = other == key
        if same:
            assert typed(candidate) == typed(plain)
            assert json.dumps(candidate, allow_nan=True) == json.dumps(plain, allow_nan=True)
        event(f"same key={same}")
