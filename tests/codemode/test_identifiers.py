"""Python identifiers for any peer, tool or parameter name; signatures and argument binding."""

from __future__ import annotations

import keyword
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx_router.codemode import ToolFunction, identifier
from mcpx_router.codemode._identifiers import RESERVED, Identifiers, is_identifier
from mcpx_router.codemode._signatures import annotation

NAMES = st.one_of(
    st.text(max_size=40),
    st.sampled_from([*keyword.kwlist, *keyword.softkwlist, "print", "find_tools", "len", "_", "__init__"]),
    st.from_regex(r"[0-9][a-z0-9_.-]{0,10}", fullmatch=True),
    st.text(alphabet="ßéあ中_-. 0123", max_size=12),
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("git_log", "git_log"),
        ("git-log", "git_log"),
        ("class", "class_"),
        ("match", "match_"),
        ("print", "print_"),
        ("find_tools", "find_tools_"),
        ("3d.render", "n3d_render"),
        ("Café", "Cafe"),
        ("搜索", "tool"),
        ("", "tool"),
        ("__init__", "init"),
        ("a..b", "a_b"),
    ],
)
def test_identifier_table(name: str, expected: str) -> None:
    assert identifier(name) == expected


@given(NAMES)
def test_every_name_becomes_a_valid_identifier_that_shadows_nothing(name: str) -> None:
    made = identifier(name)
    assert made.isidentifier() and made.isascii()
    assert is_identifier(made)
    assert not keyword.iskeyword(made) and not keyword.issoftkeyword(made)
    assert made not in RESERVED


@given(st.lists(NAMES, unique=True, max_size=30))
def test_a_scope_never_gives_two_keys_one_identifier(names: list[str]) -> None:
    ids = Identifiers[str]()
    ids.update(names)
    made = [ids.of(name) for name in names]
    assert len(set(made)) == len(names)
    assert all(is_identifier(m) and m not in RESERVED for m in made)
    assert all(ids.key(m) == name for m, name in zip(made, names, strict=True))


@given(st.lists(NAMES, unique=True, min_size=1, max_size=20), st.data())
def test_an_identifier_is_kept_while_its_key_stays(names: list[str], data: st.DataObject) -> None:
    ids = Identifiers[str]()
    ids.update(names)
    before = {name: ids.of(name) for name in names}
    kept = data.draw(st.lists(st.sampled_from(names), unique=True))
    newcomers = data.draw(st.lists(NAMES.filter(lambda n: n not in names), unique=True, max_size=10))
    ids.update([*newcomers, *kept])
    assert {name: ids.of(name) for name in kept} == {name: before[name] for name in kept}
    made = [ids.of(n) for n in [*newcomers, *kept]]
    assert len(set(made)) == len(made)
    for gone in set(names) - set(kept):
        with pytest.raises(KeyError):
            ids.of(gone)


def test_colliding_names_take_numbered_identifiers_in_order() -> None:
    ids = Identifiers[str]()
    ids.update(["git-log", "git_log", "git.log", "git_log_2"])
    assert [ids.of(n) for n in ["git-log", "git_log", "git.log", "git_log_2"]] == [
        "git_log",
        "git_log_2",
        "git_log_3",
        "git_log_2_2",
    ]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "str"),
        ({"type": ["integer", "null"]}, "int | None"),
        ({"type": "array", "items": {"type": "number"}}, "list[float]"),
        ({"type": "object"}, "dict[str, Any]"),
        ({"type": "object", "additionalProperties": {"type": "boolean"}}, "dict[str, bool]"),
        ({"enum": ["a", "b"]}, "Literal['a', 'b']"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "str | int"),
        ({"anyOf": [{"type": "string"}, {}]}, "Any"),
        ({}, "Any"),
        ("not a schema", "Any"),
    ],
)
def test_annotation_table(schema: object, expected: str) -> None:
    assert annotation(schema) == expected


SCHEMA = {
    "type": "object",
    "properties": {
        "max-count": {"type": "integer", "default": 10, "description": "How many"},
        "repo_path": {"type": "string", "description": "Path to the repository"},
        "class": {"type": ["string", "null"]},
    },
    "required": ["repo_path"],
}


def test_a_signature_puts_required_parameters_first_and_names_odd_ones() -> None:
    function = ToolFunction.of("git__git_log", "git", "git_log", "Shows the commit logs.", SCHEMA)
    assert function.signature() == (
        "git.git_log(repo_path: str, max_count: int = 10, class_: str | None = None) -> Any"
    )
    doc = function.docstring()
    assert 'max_count (sent as "max-count"): How many' in doc
    assert "repo_path: Path to the repository" in doc
    structured = ToolFunction.of("x", "git", "x", "", SCHEMA, {"type": "object"})
    assert structured.signature().endswith("-> dict[str, Any]")


def test_binding_maps_positional_and_python_names_back_to_the_schema() -> None:
    function = ToolFunction.of("git__git_log", "git", "git_log", "", SCHEMA)
    assert function.bind(("/srv",), {"max_count": 3}) == {"repo_path": "/srv", "max-count": 3}
    assert function.bind((), {"repo_path": "/srv", "class_": None, "other": 1}) == {
        "repo_path": "/srv",
        "other": 1,
    }
    with pytest.raises(TypeError, match="multiple values"):
        function.bind(("/srv",), {"repo_path": "/x"})
    with pytest.raises(TypeError, match="takes 3 positional arguments but 4"):
        function.bind((1, 2, 3, 4), {})


PEER_IDS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,12}", fullmatch=True)
TOOL_NAMES = st.one_of(
    # Printable names without surrounding whitespace, drawn so rather than filtered (few are kept).
    st.text(
        st.characters(categories=("L", "M", "N", "P", "S"), include_characters=" "), min_size=1, max_size=20
    ).filter(lambda s: s.strip() == s),
    st.sampled_from(["class", "print", "find_tools", "git-log", "git_log", "3d", "Café", "搜索", "__init__"]),
)


def _catalogue_api(peers: dict[str, list[str]]) -> tuple[Any, Any]:
    import mcp_types as mt

    from mcpx_router import OpenAIPeerToolAdapter
    from mcpx_router.codemode._api import SandboxApi

    adapter = OpenAIPeerToolAdapter()
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    for peer, names in peers.items():
        adapter._catalogue.set_peer(peer, [mt.Tool(name=n, input_schema=schema) for n in names])
    return adapter, SandboxApi(adapter)


@given(st.dictionaries(PEER_IDS, st.lists(TOOL_NAMES, unique=True, max_size=8), max_size=6))
def test_every_published_tool_is_one_function_of_its_peers_namespace(peers: dict[str, list[str]]) -> None:
    adapter, api = _catalogue_api(peers)
    namespaces = api.namespaces()
    published = {tool.name: tool for tool in adapter.tools}
    seen: dict[str, str] = {}
    for namespace, functions in namespaces.items():
        assert is_identifier(namespace) and namespace not in RESERVED
        for ident, function in functions.items():
            assert is_identifier(ident) and ident == function.function and function.namespace == namespace
            assert function.public_name not in seen, "two functions for one tool"
            seen[function.public_name] = function.qualified
            tool = published[function.public_name]
            # The namespace is its peer's: every function of a namespace belongs to one peer.
            assert {published[f.public_name].peer for f in functions.values()} == {tool.peer}
    assert set(seen) == set(published)
    assert len(set(seen.values())) == len(seen)


@given(
    st.dictionaries(
        PEER_IDS, st.lists(TOOL_NAMES, unique=True, min_size=1, max_size=6), min_size=1, max_size=4
    ),
    st.data(),
)
def test_a_function_keeps_its_name_while_its_tool_exists(
    peers: dict[str, list[str]], data: st.DataObject
) -> None:
    import mcp_types as mt

    adapter, api = _catalogue_api(peers)
    before = {f.public_name: f.qualified for fs in api.namespaces().values() for f in fs.values()}
    peer = data.draw(st.sampled_from(sorted(peers)))
    kept = data.draw(st.lists(st.sampled_from(peers[peer]), unique=True))
    added = data.draw(st.lists(TOOL_NAMES.filter(lambda n: n not in peers[peer]), unique=True, max_size=4))
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    adapter._catalogue.set_peer(peer, [mt.Tool(name=n, input_schema=schema) for n in [*added, *kept]])
    after = {f.public_name: f.qualified for fs in api.namespaces().values() for f in fs.values()}
    for name, qualified in before.items():
        if name in after:
            assert after[name] == qualified
    assert len(set(after.values())) == len(after)
