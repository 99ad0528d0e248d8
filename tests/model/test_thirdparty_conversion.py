"""Every tool of real third-party MCP servers, converted through the adapter: no `default` survives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from mcpx_router import OpenAIPeerToolAdapter, is_legal_name
from mcpx_router.model._outbound_rules import check_parameters

from ..support import _servers

pytestmark = [pytest.mark.anyio, pytest.mark.thirdparty, pytest.mark.timeout(600, func_only=True)]


def _subschemas(schema: Any) -> Iterator[dict[str, Any]]:
    """Every subschema of a JSON Schema, by keyword (a property named `default` is no keyword)."""
    if not isinstance(schema, dict):
        return
    yield schema
    for key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
        if isinstance(schema.get(key), dict):
            for sub in schema[key].values():
                yield from _subschemas(sub)
    for key in ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"):
        yield from _subschemas(schema.get(key))
    for key in ("anyOf", "oneOf", "allOf", "prefixItems", "items"):
        if isinstance(schema.get(key), list):
            for sub in schema[key]:
                yield from _subschemas(sub)


def _defaults(schema: Any) -> list[Any]:
    return [node["default"] for node in _subschemas(schema) if "default" in node]


def _descriptions(schema: Any) -> str:
    return "\n".join(str(node.get("description", "")) for node in _subschemas(schema))


def _params(name: str, tmp_path: Path) -> StdioServerParameters:
    if name == "time":
        return _servers.time_server_params()
    if name == "fetch":
        return _servers.fetch_server_params()
    if name == "git":
        return _servers.git_server_params(_servers.init_git_repo(tmp_path / "repo"))
    return _servers.everything_stdio_params()


@pytest.mark.parametrize("server", ["time", "fetch", "git", "everything"])
async def test_all_tools_of_a_real_server_convert_without_defaults(server: str, tmp_path: Path) -> None:
    async with Client(_params(server, tmp_path)) as client, OpenAIPeerToolAdapter() as adapter:
        listed = (await client.list_tools()).tools
        names = await adapter.add_peer(server, client)
        originals = {tool.name: tool.model_dump(by_alias=True)["inputSchema"] for tool in listed}
        before = [tool.model_dump(by_alias=True) for tool in listed]

        assert adapter.rejected_tools(server) == {}
        assert len(names) == len(listed) > 0
        chat, responses, functions = (
            adapter.get_openai_tools(),
            adapter.get_responses_tools(),
            adapter.get_openai_functions(),
        )
        assert len(chat) == len(responses) == len(functions) == len(listed)
        for tool in chat:
            assert tool["type"] == "function"
            function = tool["function"]
            assert is_legal_name(function["name"])
            assert function["description"].endswith(f"(via {server})")
            assert function["parameters"]["type"] == "object"
            assert check_parameters(function["parameters"]) == ()
            assert _defaults(function["parameters"]) == []
            original = originals[adapter.resolve(function["name"]).tool]
            # Every default the peer declared is still told to the model, in a description.
            told = _descriptions(function["parameters"])
            for value in _defaults(original):
                assert f"Default: {json.dumps(value, ensure_ascii=False)}." in told
        # The peer's own definitions were not touched.
        assert [tool.model_dump(by_alias=True) for tool in listed] == before


async def test_the_fetch_server_declares_defaults_that_the_conversion_moves() -> None:
    """Guards the test above: at least one real server really has defaults to remove."""
    async with Client(_servers.fetch_server_params()) as client:
        listed = (await client.list_tools()).tools
    declared = [d for tool in listed for d in _defaults(tool.input_schema)]
    assert declared, "mcp-server-fetch no longer declares defaults; pick another server for this test"
