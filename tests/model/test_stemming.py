"""Words compared by their stems in the lexical ranking: the budget and the tool search find a
tool whose description says "commit" for a request that says "commits", in English and in the
other languages Snowball stems."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp
import pytest

from mcpx_router import InProcessPeer, OpenAIPeerToolAdapter, ToolSearch, UsageError, sync
from mcpx_router.model._budget import rank, terms, tokens, tool_text
from mcpx_router.model._stemming import check_language

from ..support._model_peers import RecordingPeer
from ..support.big_catalogue import real_peers

pytestmark = pytest.mark.anyio

GIT = Path(__file__).parents[1] / "support" / "fixtures" / "tool_schemas" / "mcp-server-git.json"
LAST_COMMITS = "show the last 3 commits"


@asynccontextmanager
async def adapter_with(
    peers: dict[str, RecordingPeer], **options: Any
) -> AsyncIterator[OpenAIPeerToolAdapter]:
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter(**options))
        for name, peer in peers.items():
            await adapter.add_peer(name, await stack.enter_async_context(mcp.Client(peer.server())))
        yield adapter


def offered(adapter: OpenAIPeerToolAdapter, request: str) -> list[str]:
    return [tool["function"]["name"] for tool in adapter.get_openai_tools(relevant_to=request)]


def test_words_of_any_script_and_their_stems() -> None:
    assert tokens("Zeigt die Änderungen von getÄnderungen, 3Äpfel") == [
        "zeigt", "die", "änderungen", "von", "get", "änderungen", "3", "äpfel",
    ]  # fmt: skip
    assert tokens("Shows the commit logs") == ["shows", "the", "commit", "logs"]  # ASCII as before
    assert terms("Shows the commit logs") == ["show", "commit", "log"]
    assert terms("Shows the commit logs", None) == ["shows", "commit", "logs"]
    assert terms("Zeigt die Änderungen", "german") == terms("zeigt die Änderung", "german")


def test_the_last_commits_rank_git_log_among_the_first_8_of_the_git_server() -> None:
    tools = json.loads(GIT.read_text(encoding="utf-8"))["tools"]
    docs = [tool_text(t["name"], t.get("description", ""), t["inputSchema"]) for t in tools]
    names = [tools[i]["name"] for i in rank(docs, LAST_COMMITS)]
    assert "git_log" in names[:8]
    unstemmed = [tools[i]["name"] for i in rank(docs, LAST_COMMITS, None)]
    assert "git_log" not in unstemmed[:8]  # "commits" is not "commit", "show" is not "shows"


async def test_a_budget_of_8_over_the_real_servers_offers_git_log() -> None:
    async with adapter_with(real_peers(), max_tools=8) as adapter:
        assert "git__git_log" in offered(adapter, LAST_COMMITS)
        assert "git__git_log" in offered(adapter, "display the logged history")
    async with adapter_with(real_peers(), max_tools=8, stemmer=None) as adapter:
        # git_log's parameters are described with "commits" as the request writes it; "logged"
        # is only "logs" by its stem.
        assert "git__git_log" in offered(adapter, LAST_COMMITS)
        assert "git__git_log" not in offered(adapter, "display the logged history")


async def test_the_tool_search_finds_git_log_for_the_last_commits() -> None:
    async with adapter_with(real_peers(), max_tools=8) as adapter:
        found = await ToolSearch(adapter, per_search=5).find("last commits")
        assert "git__git_log" in [tool.name for tool in found]


def _peer(name: str, tools: dict[str, str]) -> RecordingPeer:
    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    peer = RecordingPeer(name)
    for tool, description in tools.items():
        peer = peer.tool(tool, schema, description=description)
    return peer


GERMAN = {
    "konto": {
        "buchung_listen": "Listet jede Buchung eines Kontos mit Datum und Betrag.",
        "ueberweisung_senden": "Sendet eine Überweisung an ein anderes Konto.",
        "rechnung_stornieren": "Storniert eine offene Rechnung.",
    }
}
SPANISH = {
    "tienda": {
        "listar": "Lista cada factura pendiente del cliente.",
        "enviar_pedido": "Envía un pedido al almacén.",
        "cancelar_reserva": "Cancela la reserva de una mesa.",
    }
}


@pytest.mark.parametrize(
    ("language", "catalogue", "request_", "tool"),
    [
        ("german", GERMAN, "Zeig mir die letzten Buchungen", "konto__buchung_listen"),
        ("german", GERMAN, "Welche Rechnungen sind offen?", "konto__rechnung_stornieren"),
        ("spanish", SPANISH, "¿Qué facturas pendientes tengo?", "tienda__listar"),
        ("spanish", SPANISH, "Cancelé las reservas", "tienda__cancelar_reserva"),
    ],
)
async def test_other_languages_match_other_forms_of_their_words(
    language: str, catalogue: dict[str, dict[str, str]], request_: str, tool: str
) -> None:
    peers = {name: _peer(name, tools) for name, tools in catalogue.items()}
    async with adapter_with(peers, max_tools=1, stemmer=language) as adapter:
        assert offered(adapter, request_) == [tool]
        ranked = await adapter.rank_tools(request_)
        assert ranked[0][0].name == tool and ranked[0][1] > ranked[1][1]
    async with adapter_with(peers, max_tools=1, stemmer=None) as adapter:
        ranked = await adapter.rank_tools(request_)
        assert ranked[0][0].name != tool or ranked[0][1] == ranked[1][1]


def test_the_language_is_checked() -> None:
    assert check_language(None) is None and check_language("none") is None
    assert check_language("english") == "english" and check_language("german") == "german"
    with pytest.raises(UsageError, match=r"stemmer must be None, 'none' or one of arabic, .*'klingon'"):
        OpenAIPeerToolAdapter(stemmer="klingon")


def test_the_blocking_adapter_takes_the_language_too() -> None:
    request = "Welche Rechnungen sind offen?"
    with sync.OpenAIPeerToolAdapter(max_tools=1, stemmer="german") as adapter:
        adapter.add_peer("konto", InProcessPeer(_peer("konto", GERMAN["konto"]).server()))
        assert [t["function"]["name"] for t in adapter.get_openai_tools(relevant_to=request)] == [
            "konto__rechnung_stornieren"
        ]
    with pytest.raises(UsageError, match="stemmer must be"):
        sync.OpenAIPeerToolAdapter(stemmer="klingon")
