"""Embeddings: one per tool definition, in batches, through any embedder or the real `openai` SDK.

The cache is keyed by a tool's name on its peer and its definition fingerprint, so the tests
change definitions through real in-process peers and count what the embedder was given.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import anyio
import mcp_types as mt
import pytest
from openai import AsyncOpenAI

from mcpx_router import EmbeddingError, OpenAIEmbedder, OpenAIPeerToolAdapter, UsageError
from mcpx_router.relevance._embedding import EmbeddingIndex, embedding_text, first_sentence
from mcpx_router.testing import HashingEmbedder

from ..support._model_peers import RecordingPeer, connected
from ..support._openai_replay import EMBEDDINGS, replay_openai

pytestmark = pytest.mark.anyio

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}


def peer(name: str, tools: dict[str, str]) -> RecordingPeer:
    rec = RecordingPeer(name)
    for tool, description in tools.items():
        rec.tool(tool, TEXT, description=description)
    return rec


async def test_each_definition_is_embedded_once_across_refreshes_and_peers() -> None:
    embedder = HashingEmbedder()
    a = peer("a", {"search": "Search the web.", "fetch": "Fetch a page."})
    b = peer("b", {"search": "Search the web."})  # the same definition as a's search
    async with connected(a=a, b=b) as clients, OpenAIPeerToolAdapter(embedder=embedder) as adapter:
        await adapter.add_peer("a", clients["a"])
        await adapter.add_peer("b", clients["b"])
        await adapter.rank_tools("look something up")
        embedded = [text for call in embedder.calls for text in call]
        assert len(embedded) == 3  # two tool texts (a/search = b/search) and the query
        assert embedded.count("search. Search the web.") == 1
        await adapter.rank_tools("look something up")  # the query is cached too
        assert len(embedder.calls) == 2
        a.tools[1] = mt.Tool(name="fetch", description="Fetch a page, now faster.", input_schema=TEXT)
        assert await adapter.refresh_peer("a")
        await adapter.rank_tools("look something up")
        assert embedder.calls[-1] == ["fetch. Fetch a page, now faster."]


async def test_missing_tools_are_embedded_in_batches() -> None:
    embedder = HashingEmbedder()
    rec = peer("p", {f"tool{i}": f"Tool number {i}." for i in range(25)})
    async with connected(p=rec) as clients, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("p", clients["p"])
        index = EmbeddingIndex(embedder, batch_size=10)
        vectors = await index.tool_vectors(adapter.tools)
        assert [len(call) for call in embedder.calls] == [10, 10, 5]
        assert all(math.isclose(sum(x * x for x in v), 1.0) for v in vectors)
        assert index.texts_embedded == 25


async def test_concurrent_callers_embed_a_definition_once() -> None:
    embedder = HashingEmbedder()
    rec = peer("p", {f"tool{i}": f"Tool {i}." for i in range(5)})
    async with connected(p=rec) as clients, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("p", clients["p"])
        index = EmbeddingIndex(embedder)
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(index.tool_vectors, adapter.tools)
        assert sum(len(call) for call in embedder.calls) == 5


def test_the_embedded_text_is_the_peers_definition_not_the_public_name() -> None:
    from mcpx_router import PublishedTool

    tool = PublishedTool(
        name="web__get_page",
        peer="web",
        tool="get_page",
        description="Fetch. (via web)",
        parameters={"type": "object", "properties": {"url": {"description": "The page."}, "raw": {}}},
        input_schema={},
        origin=("Fetch a URL.", "Page getter"),
    )
    assert embedding_text(tool) == "get page. Page getter. Fetch a URL."
    tool.origin = ("x" * 10_000, None)
    assert len(embedding_text(tool)) == 2000 and embedding_text(tool).endswith("x…")


def test_of_a_description_only_its_first_sentence_is_embedded() -> None:
    from mcpx_router import PublishedTool

    about = "Fetches a URL from the internet. Although originally you did not have access, now you do.\n"
    tool = PublishedTool(
        name="web__fetch",
        peer="web",
        tool="fetch",
        description=about,
        parameters={"type": "object", "properties": {"url": {"description": "The page."}}},
        input_schema={},
        origin=(about, None),
    )
    assert embedding_text(tool) == "fetch. Fetches a URL from the internet."


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("One. Two.", "One."),
        ("  Is it? Yes.", "Is it?"),
        ("Heading line\n\nThe rest.", "Heading line"),
        ("v1.2 is out", "v1.2 is out"),  # a dot inside a word ends nothing
        ("No end at all", "No end at all"),
        ("", ""),
    ],
)
def test_first_sentence(text: str, first: str) -> None:
    assert first_sentence(text) == first


async def test_urls_and_paths_in_a_query_are_embedded_as_what_they_are() -> None:
    embedder = HashingEmbedder()
    index = EmbeddingIndex(embedder)
    await index.query_vector("Get https://example.com/pricing and save it to /srv/app/price.html")
    assert embedder.calls[-1] == ["Get  url  and save it to  path "]


BAD: list[tuple[Any, str]] = [
    (lambda texts: [[1.0]] * (len(texts) + 1), "returned 2 vectors for 1 texts"),
    (lambda texts: None, "returned NoneType for 1 texts"),
    (lambda texts: [[float("nan")]], "NaN or infinity"),
    (lambda texts: [[]], "empty"),
    (lambda texts: ["ab"], "not a sequence of numbers"),
    (lambda texts: 1 / 0, "the embedder failed on 1 texts: ZeroDivisionError"),
]


@pytest.mark.parametrize(("embedder", "message"), BAD)
async def test_an_unusable_embedder_answer_raises_embedding_error(embedder: Any, message: str) -> None:
    with pytest.raises(EmbeddingError, match=message):
        await EmbeddingIndex(embedder).query_vector("q")


async def test_vectors_of_different_lengths_are_refused() -> None:
    lengths = iter([3, 4])
    index = EmbeddingIndex(lambda texts: [[1.0] * next(lengths) for _ in texts])
    rec = peer("p", {"t": "A tool."})
    async with connected(p=rec) as clients, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("p", clients["p"])
        with pytest.raises(EmbeddingError, match="query vector of length 4 but tool vectors of length 3"):
            await index.similarities("q", adapter.tools)


async def test_an_async_embedder_is_awaited() -> None:
    async def embed(texts: list[str]) -> list[list[float]]:
        await anyio.lowlevel.checkpoint()
        return [[1.0, 0.0] for _ in texts]

    assert await EmbeddingIndex(embed).query_vector("q") == (1.0, 0.0)


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_bad_options_are_refused(bad: Any) -> None:
    with pytest.raises(UsageError, match="batch_size must be a positive integer"):
        EmbeddingIndex(HashingEmbedder(), batch_size=bad)
    with pytest.raises(UsageError, match="semantic_weight must be a number from 0 to 1"):
        OpenAIPeerToolAdapter(semantic_weight=bad if bad is not True and bad != 0 else 2)


def test_an_embedder_must_be_callable() -> None:
    with pytest.raises(UsageError, match="embedder must be callable"):
        OpenAIPeerToolAdapter(embedder="text-embedding-3-small")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("encoding", "floats_only", "asked"),
    [(None, False, "base64"), (None, True, "base64"), ("float", False, "float")],
    ids=["base64", "base64-answered-with-floats", "float"],
)
async def test_openai_embedder_through_the_real_sdk_in_batches(
    encoding: Literal["float"] | None, floats_only: bool, asked: str
) -> None:
    rec = peer("p", {f"tool{i}": f"Tool number {i}." for i in range(7)})
    local = HashingEmbedder()
    with replay_openai([], floats_only=floats_only) as replay:
        async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
            embedder = OpenAIEmbedder(
                client, "text-embedding-3-small", dimensions=512, encoding_format=encoding
            )
            index = EmbeddingIndex(embedder, batch_size=4)
            async with connected(p=rec) as clients, OpenAIPeerToolAdapter() as adapter:
                await adapter.add_peer("p", clients["p"])
                with anyio.fail_after(20):
                    scores = await index.similarities("tool number 3", adapter.tools)
                    again = await index.similarities("tool number 3", adapter.tools)
    bodies = replay.bodies(EMBEDDINGS)
    assert [len(b["input"]) for b in bodies] == [4, 3, 1]  # two batches of tools, then the query
    assert all(b["model"] == "text-embedding-3-small" and b["encoding_format"] == asked for b in bodies)
    assert all(b["dimensions"] == 512 for b in bodies)
    assert scores == again
    # The vectors are those the endpoint computed, in order: the same as the local embedder's.
    direct = EmbeddingIndex(local)
    async with connected(p=rec) as clients, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("p", clients["p"])
        expected = await direct.similarities("tool number 3", adapter.tools)
    assert scores == pytest.approx(expected)
    assert max(range(7), key=lambda i: scores[i]) == 3


async def test_the_embedder_refuses_an_encoding_it_cannot_read() -> None:
    async with AsyncOpenAI(base_url="http://127.0.0.1:1/v1", api_key="sk-test") as client:
        with pytest.raises(UsageError, match="encoding_format must be None or 'float'"):
            OpenAIEmbedder(client, encoding_format="base64")  # type: ignore[arg-type]


async def test_an_endpoint_error_becomes_embedding_error() -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("model not loaded")

    with replay_openai([], embed=broken) as replay:
        async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
            index = EmbeddingIndex(OpenAIEmbedder(client))
            with anyio.fail_after(20), pytest.raises(EmbeddingError, match="InternalServerError"):
                await index.query_vector("what time is it")


async def test_a_full_cache_evicts_what_is_no_longer_used() -> None:
    embedder = HashingEmbedder()
    rec = peer("p", {f"tool{i}": f"Tool {i}." for i in range(4)})
    async with connected(p=rec) as clients, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("p", clients["p"])
        index = EmbeddingIndex(embedder, max_entries=4)
        await index.tool_vectors(adapter.tools)
        rec.tools[3] = mt.Tool(name="tool3", description="Tool 3, changed.", input_schema=TEXT)
        assert await adapter.refresh_peer("p")
        vectors = await index.tool_vectors(adapter.tools)  # the old tool3 goes, the others stay
        assert len(vectors) == 4 and embedder.calls[-1] == ["tool 3. Tool 3, changed."]
        await index.tool_vectors(adapter.tools[:3])
        assert sum(len(call) for call in embedder.calls) == 5  # nothing in use was evicted


async def test_of_a_long_query_the_end_is_embedded() -> None:
    embedder = HashingEmbedder()
    await EmbeddingIndex(embedder).query_vector("old words " * 1000 + "what time is it")
    (texts,) = embedder.calls
    assert len(texts[0]) == 2000 and texts[0].endswith("what time is it")
