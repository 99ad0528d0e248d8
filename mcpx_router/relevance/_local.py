"""A local embedder: sentence embeddings on this machine, no hosted service (the `local-embeddings` extra).

`LocalEmbedder` loads a model from a folder, or by name from the Hugging Face Hub through
`huggingface_hub` (downloaded once into its cache; with `HF_HUB_OFFLINE=1`, or with no network,
the cached copy is used). Two kinds of model are read:

- a static model of model2vec (a `model.safetensors` holding one `embeddings` table, with its
  `tokenizer.json`): loaded and run by `model2vec.StaticModel`; a text costs microseconds;
- a BERT sentence-transformers model (`model.safetensors` of a `BertModel`, `tokenizer.json`,
  `1_Pooling/config.json`), such as all-MiniLM-L6-v2: its encoder runs in numpy (tokens by the
  `tokenizers` library), no torch; a tool's text costs about a millisecond of CPU;
- an MPNet sentence-transformers model (an `MPNetModel` in the same layout), such as
  all-mpnet-base-v2: the same encoder under other names, with no token types, positions counted
  from the padding id + 1, and a learned bias on attention by relative position; 110M
  parameters, about seven times MiniLM's CPU per text.

Nothing of this loads with `import mcpx_router`: numpy, `tokenizers` and the model load when the
embedder is created.
"""

from __future__ import annotations

import importlib
import json
import math
import os
from pathlib import Path
from typing import Any

import anyio.to_thread

from .._errors import EmbeddingError, UsageError

__all__ = ["DEFAULT_LOCAL_MODEL", "LocalEmbedder", "check_sizes", "require_extra", "resolve_model"]

DEFAULT_LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The model `LocalEmbedder()` loads: the one the recall table of docs/evals.md measures."""

_FILES = ["config.json", "model.safetensors", "tokenizer.json", "1_Pooling/config.json", "modules.json"]


class LocalEmbedder:
    """Sentence embeddings computed on this machine (extra `local-embeddings`: numpy, model2vec).

    Example:
        ```python
        adapter = OpenAIPeerToolAdapter(embedder=LocalEmbedder())  # all-MiniLM-L6-v2
        adapter = OpenAIPeerToolAdapter(embedder=LocalEmbedder("/models/all-MiniLM-L6-v2"))
        adapter = OpenAIPeerToolAdapter(
            embedder=LocalEmbedder("sentence-transformers/all-mpnet-base-v2")  # MPNet, 768 dimensions
        )
        ```

    Args:
        model: A folder holding the model's files, or a model's name on the Hugging Face Hub
            (`"minishlab/potion-base-8M"`), downloaded on first use into the Hub's cache.
        batch_size: Texts encoded together (BERT models).
        max_tokens: Tokens of a text read at most (BERT models; longer texts are cut).

    Raises:
        UsageError: The extra is not installed, or `model` names a folder that does not exist.
        EmbeddingError: The model cannot be had (offline and not in the cache) or is not one of
            the kinds above.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] = DEFAULT_LOCAL_MODEL,
        *,
        batch_size: int = 32,
        max_tokens: int = 256,
    ) -> None:
        check_sizes(batch_size=batch_size, max_tokens=max_tokens)
        require_extra("LocalEmbedder", "numpy", "tokenizers")
        self.path = resolve_model(model, _FILES, needs="model.safetensors and tokenizer.json")
        """The folder the model was read from."""
        self._batch_size = batch_size
        self._encoder: Any = _load(self.path, max_tokens)

    @property
    def dimensions(self) -> int:
        """The length of the vectors."""
        return int(self._encoder.dimensions)

    def encode(self, texts: list[str]) -> Any:
        """The unit vectors of `texts` as a numpy array (one row per text), in this thread."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        out = np.asarray(self._encoder.encode(texts, self._batch_size), dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)

    async def __call__(self, texts: list[str]) -> Any:
        """Encoded in a worker thread: the event loop goes on meanwhile."""
        return await anyio.to_thread.run_sync(self.encode, texts)

    def __repr__(self) -> str:
        return f"LocalEmbedder({str(self.path)!r})"


def check_sizes(**sizes: object) -> None:
    """Raise `UsageError` for the first of `sizes` that is not a positive integer."""
    for what, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UsageError(f"{what} must be a positive integer, not {value!r}")


def require_extra(who: str, *modules: str) -> None:
    """Raise `UsageError` saying to install the `local-embeddings` extra if a module is missing."""
    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError as exc:
        raise UsageError(
            f"{who} needs the local-embeddings extra: pip install 'mcpx-router[local-embeddings]' ({exc})"
        ) from None


def resolve_model(model: str | os.PathLike[str], files: list[str], *, needs: str) -> Path:
    """The folder of `model`: itself, or the Hub's cached copy of the named model (its `files`,
    those of them it has); `needs` names the files a folder must hold, for the error."""
    if not isinstance(model, str | os.PathLike) or not str(model).strip():
        raise UsageError(f"model must be a folder or a model name, not {model!r}")
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    text = str(model)
    if (
        isinstance(model, os.PathLike)
        or path.exists()
        or text.startswith(("/", ".", "~"))
        or text.count("/") != 1
    ):
        raise UsageError(
            f"no model folder at {str(path)!r}: give a folder holding {needs}, "
            "or a model's name on the Hugging Face Hub such as 'sentence-transformers/all-MiniLM-L6-v2'"
        )
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover - tokenizers depends on it
        raise UsageError(
            "loading a model by name needs huggingface_hub (pip install huggingface_hub)"
        ) from None
    try:
        return Path(snapshot_download(text, allow_patterns=files))
    except Exception as exc:
        offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0", "false", "False")
        hint = " (HF_HUB_OFFLINE is set and it is not in the cache)" if offline else ""
        raise EmbeddingError(
            f"cannot get the model {text!r} from the Hugging Face Hub{hint}: {type(exc).__name__}: {exc}. "
            "Download it once with network access, or pass the folder that holds its files"
        ) from exc


def _load(path: Path, max_tokens: int) -> Any:
    weights = path / "model.safetensors"
    if not weights.is_file() or not (path / "tokenizer.json").is_file():
        raise EmbeddingError(f"{str(path)!r} holds no model.safetensors and tokenizer.json")
    from safetensors import safe_open

    with safe_open(str(weights), framework="numpy") as handle:
        keys = set(handle.keys())
    if keys == {"embeddings"} or ("embeddings" in keys and len(keys) <= 3):
        return _Static(path)
    if any(
        k.endswith(("encoder.layer.0.attention.self.query.weight", "encoder.layer.0.attention.attn.q.weight"))
        for k in keys
    ):
        return _Bert(path, max_tokens)
    raise EmbeddingError(
        f"{str(path)!r} is neither a model2vec static model nor a BERT or MPNet sentence-transformers model"
    )


class _Static:
    """A model2vec static model."""

    def __init__(self, path: Path) -> None:
        try:
            from model2vec import StaticModel
        except ImportError:
            raise UsageError(
                "a static model needs model2vec: pip install 'mcpx-router[local-embeddings]'"
            ) from None
        self._model = StaticModel.from_pretrained(str(path))
        self.dimensions = int(self._model.dim)

    def encode(self, texts: list[str], batch_size: int) -> Any:
        return self._model.encode(texts, batch_size=max(batch_size, 1024), use_multiprocessing=False)


class _Bert:
    """A BERT or MPNet encoder (sentence-transformers layout) run in numpy, pooled as its config says."""

    def __init__(self, path: Path, max_tokens: int) -> None:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        pooling_file = path / "1_Pooling" / "config.json"
        pooling = json.loads(pooling_file.read_text(encoding="utf-8")) if pooling_file.is_file() else {}
        self._cls = bool(pooling.get("pooling_mode_cls_token")) and not pooling.get(
            "pooling_mode_mean_tokens"
        )
        raw = load_file(str(path / "model.safetensors"))
        prefix = next((p for p in ("bert.", "mpnet.") if any(k.startswith(p) for k in raw)), "")
        self._w = {
            _bert_name(k[len(prefix) :]): v.astype(np.float32) for k, v in raw.items() if k.startswith(prefix)
        }
        # MPNet (all-mpnet-base-v2): BERT's layers under other names, no token types, positions
        # counted from its padding id + 1, and a bias on attention by relative position
        self._relative = self._w.get("encoder.relative_attention_bias.weight")
        self._first_position = int(config.get("pad_token_id", 1)) + 1 if self._relative is not None else 0
        for name in [
            k
            for k in self._w
            if (k.startswith("encoder.")
            and k.endswith("dense.weight"))
            or k.endswith(("query.weight", "key.weight", "value.weight"))
        ]:
            self._w[name] = np.ascontiguousarray(self._w[name].T)  # x @ w: one BLAS call, no copy
        self._heads = int(config["num_attention_heads"])
        self._layers = int(config["num_hidden_layers"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self.dimensions = int(config["hidden_size"])
        limit = min(max_tokens, int(config.get("max_position_embeddings", 512)) - self._first_position)
        self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self._tokenizer.enable_truncation(limit)
        self._tokenizer.no_padding()

    def encode(self, texts: list[str], batch_size: int) -> Any:
        import numpy as np

        ids = [e.ids for e in self._tokenizer.encode_batch(texts)]
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # like lengths together: little padding
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            width = max(len(ids[i]) for i in chosen)
            tokens = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros((len(chosen), width), dtype=np.float32)
            for row, i in enumerate(chosen):
                tokens[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            out[chosen] = self._forward(tokens, mask)
        return out

    def _norm(self, x: Any, name: str) -> Any:
        import numpy as np

        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self._eps) * self._w[f"{name}.weight"] + self._w[f"{name}.bias"]

    def _linear(self, x: Any, name: str) -> Any:
        """`x @ W.T + b` over the last axis, as one matrix product (2-D: numpy hands it to BLAS whole)."""
        weight = self._w[f"{name}.weight"]
        flat = x.reshape(-1, x.shape[-1]) @ weight + self._w[f"{name}.bias"]
        return flat.reshape(*x.shape[:-1], weight.shape[1])

    def _forward(self, tokens: Any, mask: Any) -> Any:
        import numpy as np

        w, (batch, width) = self._w, tokens.shape
        first = self._first_position
        x = w["embeddings.word_embeddings.weight"][tokens] + w["embeddings.position_embeddings.weight"][
            first : first + width
        ]
        if "embeddings.token_type_embeddings.weight" in w:
            x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = self._norm(x, "embeddings.LayerNorm")
        heads, size = self._heads, self.dimensions // self._heads
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        if self._relative is not None:
            bias = bias + _relative_bias(np, self._relative, width)
        for n in range(self._layers):
            at = f"encoder.layer.{n}"

            def split(t: Any) -> Any:
                return t.reshape(batch, width, heads, size).transpose(0, 2, 1, 3)

            q = split(self._linear(x, f"{at}.attention.self.query"))
            k = split(self._linear(x, f"{at}.attention.self.key"))
            v = split(self._linear(x, f"{at}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, width, self.dimensions)
            x = self._norm(
                x + self._linear(context, f"{at}.attention.output.dense"), f"{at}.attention.output.LayerNorm"
            )
            hidden = _gelu(self._linear(x, f"{at}.intermediate.dense"))
            x = self._norm(x + self._linear(hidden, f"{at}.output.dense"), f"{at}.output.LayerNorm")
        if self._cls:
            return x[:, 0]
        return (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)


_MPNET_NAMES = (
    ("attention.attn.q.", "attention.self.query."),
    ("attention.attn.k.", "attention.self.key."),
    ("attention.attn.v.", "attention.self.value."),
    ("attention.attn.o.", "attention.output.dense."),
    ("attention.LayerNorm.", "attention.output.LayerNorm."),
)


def _bert_name(name: str) -> str:
    """A weight's name as BERT calls it (MPNet names its attention's parts otherwise)."""
    for mpnet, bert in _MPNET_NAMES:
        name = name.replace(mpnet, bert)
    return name


def _relative_bias(np: Any, table: Any, width: int, max_distance: int = 128) -> Any:
    """MPNet's attention bias (1, heads, width, width): bidirectional buckets of the distance
    from each token to each other one, exact up to a quarter of the buckets, then logarithmic
    up to `max_distance`."""
    half = table.shape[0] // 2
    exact = half // 2
    distance = np.arange(width)[:, None] - np.arange(width)[None, :]  # query - key
    bucket = np.where(distance < 0, half, 0)
    n = np.abs(distance)
    far = exact + (
        np.log(np.maximum(n, 1) / exact) / math.log(max_distance / exact) * (half - exact)
    ).astype(np.int64)
    bucket = bucket + np.where(n < exact, n, np.minimum(far, half - 1))
    return table[bucket].transpose(2, 0, 1)[None]


def _gelu(x: Any) -> Any:
    """BERT's GELU (the exact, erf form)."""
    import numpy as np

    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0), np))


def _erf(x: Any, np: Any) -> Any:
    """erf in numpy, which has none: the Chebyshev fit of erfc from Numerical Recipes (relative
    error below 1.2e-7)."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * a)
    y = 1.0 - t * np.exp(
        -a * a
        - 1.26551223
        + t
        * (
            1.00002368
            + t
            * (
                0.37409196
                + t
                * (
                    0.09678418
                    + t
                    * (
                        -0.18628806
                        + t
                        * (
                            0.27886807
                            + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))
                        )
                    )
                )
            )
        )
    )
    return sign * y
