"""A second stage of ranking: a cross-encoder re-reads the first candidates beside the request.

The first stage (BM25, or BM25 blended with embeddings) scores every tool from what was computed
before the request came: an index, or one vector per tool. A cross-encoder reads the request and
one tool's text together, through the whole model, and says how well they match; that costs a
model run per pair, so it re-scores only the first stage's `top` candidates. Their new score is
`weight` times the cross-encoder's plus the rest times the first stage's, each scaled to [0, 1]
over the candidates (`blend_top`, pure); they keep the first places, in that order, and every
other tool follows in its first-stage order.

`LocalReranker` runs a cross-encoder exported to ONNX (such as ms-marco-MiniLM-L-12-v2) with
onnxruntime on this machine (the `local-embeddings` extra); any object with `top`, `weight` and
an async or plain `__call__(query, texts)` returning one score per text serves as well.
"""

from __future__ import annotations

import math
import os
from collections.abc import Awaitable, Sequence
from typing import Any, Protocol, runtime_checkable

import anyio.to_thread

from .._errors import EmbeddingError, UsageError
from .._published import PublishedTool
from ..model._budget import tokens
from ._local import check_sizes, require_extra, resolve_model

__all__ = ["DEFAULT_RERANKER", "LocalReranker", "Reranker", "blend_top", "rerank_text"]

DEFAULT_RERANKER = "cross-encoder/ms-marco-MiniLM-L-12-v2"
"""The model `LocalReranker()` loads by name: the one docs/evals.md measures."""

_FILES = ["config.json", "tokenizer.json", "model.onnx", "onnx/model.onnx"]


@runtime_checkable
class Reranker(Protocol):
    """What the adapter's `reranker=` takes: how many candidates to re-score, the share of its
    score in theirs, and the scores of (query, text) pairs, one per text (may be async)."""

    top: int
    weight: float

    def __call__(self, query: str, texts: list[str]) -> Sequence[float] | Awaitable[Sequence[float]]: ...


def rerank_text(tool: PublishedTool) -> str:
    """What a cross-encoder reads of a tool: its public name as words (the peer's name and the
    tool's, as the model sees them), its title and the peer's description (the model cuts what
    is past its `max_tokens`)."""
    description, title = tool.origin
    words = " ".join(tokens(tool.name)) or tool.name
    rest = " ".join(part.strip() for part in (title or "", description or "") if part and part.strip())
    return f"{words}: {rest}" if rest else words


def blend_top(first: Sequence[float], second: Sequence[float], weight: float) -> list[float]:
    """The candidates' new scores: `weight` times `second` plus the rest times `first`, each
    scaled to [0, 1] over the candidates (all equal: 1.0 each)."""

    def scaled(values: Sequence[float]) -> list[float]:
        low, high = min(values), max(values)
        return [1.0] * len(values) if high <= low else [(v - low) / (high - low) for v in values]

    if not first:
        return []
    return [weight * s + (1 - weight) * f for f, s in zip(scaled(first), scaled(second), strict=True)]


class LocalReranker:
    """A cross-encoder run on this machine with onnxruntime (extra `local-embeddings`).

    Example:
        ```python
        adapter = OpenAIPeerToolAdapter(
            embedder=LocalEmbedder(), reranker=LocalReranker("/models/ms-marco-MiniLM-L-12-v2")
        )
        ```

    Args:
        model: A folder holding `model.onnx` (or `onnx/model.onnx`) and `tokenizer.json`, or a
            model's name on the Hugging Face Hub, downloaded on first use into the Hub's cache.
        top: How many of the first stage's candidates are re-scored (a model run each).
        weight: The cross-encoder's share of a candidate's new score (0 to 1).
        max_tokens: Tokens of a (query, text) pair read at most (longer texts are cut).

    The pairs of one request are scored in one batch. A model with 8-bit weights quantizes its
    activations over the batch, so a pair's score can move by a few hundredths beside other
    candidates; the same request over the same tools scores the same every time.

    Raises:
        UsageError: The extra is not installed, an argument is out of range, or `model` names a
            folder that does not exist.
        EmbeddingError: The model cannot be had, or is not a cross-encoder with one score a pair.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] = DEFAULT_RERANKER,
        *,
        top: int = 40,
        weight: float = 0.5,
        max_tokens: int = 256,
    ) -> None:
        check_sizes(top=top, max_tokens=max_tokens)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= 1:
            raise UsageError(f"weight must be a number from 0 to 1, not {weight!r}")
        require_extra("LocalReranker", "numpy", "onnxruntime", "tokenizers")
        import onnxruntime
        from tokenizers import Tokenizer

        self.top = top
        self.weight = float(weight)
        self.path = resolve_model(model, _FILES, needs="model.onnx and tokenizer.json")
        """The folder the model was read from."""
        found = (p for p in (self.path / "model.onnx", self.path / "onnx" / "model.onnx") if p.is_file())
        weights = next(found, None)
        if weights is None or not (self.path / "tokenizer.json").is_file():
            raise EmbeddingError(
                f"{str(self.path)!r} holds no model.onnx (or onnx/model.onnx) and tokenizer.json"
            )
        try:
            self._session = onnxruntime.InferenceSession(str(weights), providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise EmbeddingError(f"cannot load {str(weights)!r}: {type(exc).__name__}: {exc}") from exc
        self._inputs = {i.name for i in self._session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= self._inputs:
            raise EmbeddingError(
                f"{str(weights)!r} is not a cross-encoder: its inputs are {sorted(self._inputs)}, "
                "not input_ids and attention_mask"
            )
        self._tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.no_padding()

    def score(self, query: str, texts: list[str]) -> list[float]:
        """One score per text, higher for a better match to `query`, in this thread."""
        import numpy as np

        if not texts:
            return []
        encoded = self._tokenizer.encode_batch([(query, text) for text in texts])
        width = max(len(e.ids) for e in encoded)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, e in enumerate(encoded):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
            types[row, : len(e.ids)] = e.type_ids
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = types
        logits = np.asarray(self._session.run(None, feeds)[0], dtype=np.float64)
        if logits.ndim == 2 and logits.shape[1] == 1:
            logits = logits[:, 0]
        if logits.shape != (len(texts),):
            raise EmbeddingError(
                f"the re-ranker gave scores of shape {logits.shape} for {len(texts)} pairs: "
                "it is not a cross-encoder with one score a pair"
            )
        scores = [float(x) for x in logits]
        if not all(math.isfinite(x) for x in scores):
            raise EmbeddingError("the re-ranker gave a score that is not a finite number")
        return scores

    async def __call__(self, query: str, texts: list[str]) -> list[float]:
        """Scored in a worker thread: the event loop goes on meanwhile."""
        return await anyio.to_thread.run_sync(self.score, query, texts)

    def __repr__(self) -> str:
        return f"LocalReranker({str(self.path)!r}, top={self.top}, weight={self.weight})"
