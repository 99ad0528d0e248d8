"""Embeddings of tools and queries: a pluggable embedder, a cache per tool definition.

An embedder is any callable that takes a list of texts and returns one vector per text, in
order (or an awaitable of them): `OpenAIEmbedder` calls the `openai` SDK's embeddings endpoint;
`mcpx_router.testing.HashingEmbedder` is a deterministic local one. A tool is embedded once per
definition: the cache is keyed by the tool's name on its peer and its definition fingerprint (the
JSON of its description, title and input schema), so an unchanged tool is never embedded again,
and the same tool offered by two peers is embedded once. Missing tools are embedded in batches.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from operator import mul
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio

from .._catalogue import PublishedTool
from .._errors import EmbeddingError, UsageError
from ..model._budget import query_text, tokens
from ._fusion import numpy_or_none

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["Embedder", "EmbeddingIndex", "OpenAIEmbedder", "embedding_text", "first_sentence"]

Vector: TypeAlias = tuple[float, ...]
Embedder: TypeAlias = Callable[[list[str]], Sequence[Sequence[float]] | Awaitable[Sequence[Sequence[float]]]]
"""Texts in, one vector per text out (in order), directly or awaited."""


class OpenAIEmbedder:
    """An embedder calling the embeddings endpoint through an `AsyncOpenAI` client.

    Example:
        ```python
        adapter = OpenAIPeerToolAdapter(embedder=OpenAIEmbedder(AsyncOpenAI()))
        ```

    Args:
        client: Any `AsyncOpenAI` client (`base_url` may point at a compatible endpoint).
        model: The embedding model.
        dimensions: Ask for vectors of this length (models that support it); None: the model's own.
        encoding_format: None (the default): what the SDK asks for by default, vectors as base64,
            which it decodes; an endpoint that answers with lists of floats instead is read as well.
            `"float"`: ask for lists of floats, for an endpoint that refuses base64 (parsing a
            list of floats in the SDK costs about 20 times the CPU: seconds for thousands of tools).
    """

    def __init__(
        self,
        client: AsyncOpenAI,
        model: str = "text-embedding-3-small",
        *,
        dimensions: int | None = None,
        encoding_format: Literal["float"] | None = None,
    ) -> None:
        if encoding_format not in (None, "float"):
            raise UsageError(f"encoding_format must be None or 'float', not {encoding_format!r}")
        self._client = client
        self.model = model
        self._dimensions = dimensions
        self._encoding = encoding_format

    async def __call__(self, texts: list[str]) -> list[list[float]]:
        extra: dict[str, Any] = {} if self._dimensions is None else {"dimensions": self._dimensions}
        if self._encoding is not None:
            extra["encoding_format"] = self._encoding
        reply = await self._client.embeddings.create(model=self.model, input=texts, **extra)
        ordered = sorted(reply.data, key=lambda item: item.index)
        return [list(item.embedding) for item in ordered]


def embedding_text(tool: PublishedTool) -> str:
    """What is embedded of a tool: its name on its peer (as words), its title and the first
    sentence of the peer's description (at most `MAX_TEXT` characters); not the peer id, so the
    same tool of two peers embeds alike.

    Not the rest of the description nor the parameters: a sentence model averages what it reads,
    and a long description (notes, caveats, the parameters' details) drowns the one sentence that
    says what the tool does (docs/evals.md measures both; BM25 reads all of it).
    """
    description, title = tool.origin
    parts = [" ".join(tokens(tool.tool)) or tool.tool, title or "", first_sentence(description or "")]
    # Each part ends in one full stop, whether or not it had one.
    text = " ".join(f"{p.strip().rstrip('.')}." for p in parts if p and p.strip().rstrip("."))
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n\s*\n")


def first_sentence(text: str) -> str:
    """`text` up to the end of its first sentence (a full stop, question or exclamation mark
    followed by a space, or a blank line), without leading or trailing space."""
    text = text.strip()
    end = _SENTENCE_END.search(text)
    return text[: end.start()].rstrip() if end else text


def _tool_key(tool: PublishedTool) -> bytes:
    name = tool.tool.encode("utf-8", "surrogatepass")
    return hashlib.sha256(len(name).to_bytes(4, "big") + name + tool.fingerprint).digest()


class EmbeddingIndex:
    """Tool and query vectors from one embedder, each tool definition embedded once.

    Args:
        embedder: Texts in, one vector per text out (see `Embedder`).
        batch_size: The most texts one call of the embedder is given.
        max_entries: The most tool vectors kept (the least recently used go first; never fewer
            than one request's tools).
    """

    def __init__(self, embedder: Embedder, *, batch_size: int = 256, max_entries: int = 100_000) -> None:
        if not callable(embedder):
            raise UsageError(
                f"embedder must be callable (texts in, vectors out), not {type(embedder).__name__}"
            )
        for what, value in (("batch_size", batch_size), ("max_entries", max_entries)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageError(f"{what} must be a positive integer, not {value!r}")
        self._embedder = embedder
        self._batch_size = batch_size
        self._max_entries = max_entries
        self._tools: OrderedDict[bytes, Vector] = OrderedDict()
        self._queries: OrderedDict[str, Vector] = OrderedDict()
        self._lock = anyio.Lock()
        self._last: tuple[int, tuple[tuple[str, float], ...], Any] | None = None
        self._matrix: tuple[int, Any] | None = None
        """The tools' vectors of one catalogue version as one matrix (with numpy)."""
        self.texts_embedded = 0
        """How many texts were handed to the embedder so far (tools and queries)."""

    async def tool_vectors(self, tools: Sequence[PublishedTool]) -> list[Vector]:
        """One unit vector per tool, embedding in batches only the definitions not seen before."""
        return [_as_tuple(row) for row in await self._tool_rows(tools)]

    async def _tool_rows(self, tools: Sequence[PublishedTool]) -> list[Any]:
        """The kept vector of each tool (numpy rows with numpy, else tuples), embedding the missing."""
        keys = [_tool_key(tool) for tool in tools]
        async with self._lock:  # two callers never embed the same definition twice
            missing: dict[bytes, str] = {}
            for key, tool in zip(keys, tools, strict=True):
                if key in self._tools:
                    self._tools.move_to_end(key)  # in use: the last to go
                elif key not in missing:
                    missing[key] = embedding_text(tool)
            pending = list(missing.items())
            for start in range(0, len(pending), self._batch_size):
                batch = pending[start : start + self._batch_size]
                vectors = await self._embed([text for _, text in batch])
                for (key, _), vector in zip(batch, vectors, strict=True):
                    self._tools[key] = vector
            # Evict the least recently used, never one of these tools (they are the most recent).
            while len(self._tools) > max(self._max_entries, len(set(keys))):
                self._tools.popitem(last=False)
            return [self._tools[key] for key in keys]

    async def query_vector(self, text: str) -> Vector:
        """The unit vector of a query (the last few hundred are kept), with its URLs and file paths
        read as the words "url" and "path". Of a long query, the last `MAX_TEXT` characters are
        embedded: the latest message is at the end of a conversation's."""
        return _as_tuple(await self._query_row(text))

    async def _query_row(self, text: str) -> Any:
        # A URL or a file path is embedded as the word "url" or "path" (`query_text`): its own
        # words are the user's data, not what the tool does.
        text = query_text(text)
        text = text if len(text) <= MAX_TEXT else text[-MAX_TEXT:]
        vector = self._queries.get(text)
        if vector is None:
            vector = (await self._embed([text]))[0]
            self._queries[text] = vector
            if len(self._queries) > _MAX_QUERIES:
                self._queries.popitem(last=False)
        else:
            self._queries.move_to_end(text)
        return vector

    async def similarities(
        self, query: str, tools: Sequence[PublishedTool], *, version: int | None = None
    ) -> list[float]:
        """The cosine similarity of `query` to each tool, in [-1, 1].

        Given the catalogue `version` the tools are from, the last answer is kept and given again
        for the same version and query (a loop asks once per turn, mostly about the same messages).
        """
        return [float(x) for x in await self.similarity_scores([(query, 1.0)], tools, version=version)]

    async def similarity_scores(
        self,
        queries: Sequence[tuple[str, float]],
        tools: Sequence[PublishedTool],
        *,
        version: int | None = None,
    ) -> Any:
        """The cosine similarity to each tool of the weighted sum of the `(text, weight)` queries'
        vectors, scaled to unit length: a numpy array with numpy, else a list.

        Each text is embedded once and kept: in a conversation, only its newest message is new.
        Given the catalogue `version`, the tools' matrix is built once per version, and the last
        answer is given again for the same version and queries.
        """
        asked = tuple(queries)
        if version is not None and self._last is not None and self._last[:2] == (version, asked):
            return self._last[2]
        scores = await self._similarities(asked, tools, version)
        if version is not None:
            self._last = (version, asked, scores)
        return scores

    async def _similarities(
        self, queries: tuple[tuple[str, float], ...], tools: Sequence[PublishedTool], version: int | None
    ) -> Any:
        np = numpy_or_none()
        kept = self._matrix
        if version is not None and kept is not None and kept[0] == version and len(kept[1]) == len(tools):
            matrix = kept[1]  # this version's tools, their vectors looked up already
        else:
            rows = await self._tool_rows(tools)
            if not rows:
                return []
            if np is None or not isinstance(rows[0], np.ndarray):
                return await self._similarities_pure(queries, rows)
            # float32: half the memory to read per query (the product is bound by it), and far
            # more precision than ranking needs.
            matrix = np.stack(rows).astype(np.float32)
            if version is not None:
                self._matrix = (version, matrix)
        parts = [(await self._query_row(text), weight) for text, weight in queries]
        _check_lengths([row for row, _ in parts], matrix.shape[1])
        target = sum(w * np.asarray(row, dtype=np.float64) for row, w in parts)
        norm = float(np.linalg.norm(target))
        target = (target / norm if norm > 0 else target).astype(np.float32)
        # Not `matrix @ target`: BLAS spreads a product this small over threads that then spin,
        # about ten times the CPU of numpy's own loop (vecdot, numpy 2; einsum before it).
        vecdot = getattr(np, "vecdot", None)
        return vecdot(matrix, target) if vecdot is not None else np.einsum("ij,j->i", matrix, target)

    async def _similarities_pure(
        self, queries: tuple[tuple[str, float], ...], rows: list[Any]
    ) -> list[float]:
        parts = [(await self._query_row(text), weight) for text, weight in queries]
        _check_lengths([row for row, _ in parts], len(rows[0]))
        target = unit([sum(w * row[i] for row, w in parts) for i in range(len(rows[0]))])
        return [sum(map(mul, target, vector)) for vector in rows]

    async def _embed(self, texts: list[str]) -> list[Vector]:
        try:
            result = self._embedder(texts)
            if inspect.isawaitable(result):
                result = await result
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(
                f"the embedder failed on {len(texts)} texts: {type(exc).__name__}: {exc}"
            ) from exc
        self.texts_embedded += len(texts)
        return _checked(result, len(texts))


def _check_lengths(queries: list[Any], length: int) -> None:
    for row in queries:
        if len(row) != length:
            raise EmbeddingError(
                f"the embedder gave a query vector of length {len(row)} but tool vectors of length "
                f"{length}; an embedder must always return vectors of one length"
            )


def _as_tuple(row: Any) -> Vector:
    return row if isinstance(row, tuple) else tuple(float(x) for x in row)


def _checked(result: Any, count: int) -> list[Any]:
    """The embedder's answer as unit vectors (numpy rows with numpy, else tuples), or
    EmbeddingError saying what is wrong with it."""
    np = numpy_or_none()
    if np is not None:
        try:
            array = np.asarray(result, dtype=np.float64)
        except (TypeError, ValueError):
            array = None
        if (
            array is not None
            and array.ndim == 2
            and array.shape == (count, array.shape[1])
            and array.shape[1] > 0
            and np.isfinite(array).all()
        ):
            norms = np.linalg.norm(array, axis=1, keepdims=True)
            return list(array / np.where(norms == 0, 1, norms))
        # Not a clean matrix: the checks below say what is wrong with it.
        return [np.asarray(v, dtype=np.float64) for v in _checked_rows(result, count)]
    return _checked_rows(result, count)


def _checked_rows(result: Any, count: int) -> list[Vector]:
    try:
        rows = list(result)
    except TypeError:
        rows = None
    if rows is None or len(rows) != count:
        got = f"{len(rows)} vectors" if rows is not None else type(result).__name__
        raise EmbeddingError(
            f"the embedder returned {got} for {count} texts; it must return one vector per text, in order"
        )
    out: list[Vector] = []
    length = None
    for i, row in enumerate(rows):
        try:
            vector = tuple(float(x) for x in row)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(f"vector {i} of the embedder is not a sequence of numbers: {exc}") from exc
        if not vector or not all(math.isfinite(x) for x in vector):
            raise EmbeddingError(f"vector {i} of the embedder is empty or holds NaN or infinity")
        if length is not None and len(vector) != length:
            raise EmbeddingError(
                f"the embedder returned vectors of lengths {length} and {len(vector)}; "
                "they must all be of one length"
            )
        length = len(vector)
        out.append(unit(vector))
    return out


def unit(vector: Sequence[float]) -> Vector:
    """`vector` scaled to length 1 (a zero vector stays zero: it is similar to nothing)."""
    norm = math.sqrt(sum(x * x for x in vector))
    return tuple(vector) if norm == 0 else tuple(x / norm for x in vector)


_MAX_QUERIES = 512
MAX_TEXT = 2000
"""The most characters of a tool's text that are embedded (well within any model's input limit)."""
