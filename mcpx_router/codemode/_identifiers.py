"""Python identifiers for names that are not: peers, tools and parameters as the sandbox spells them.

A peer id or tool name may hold anything (dashes, dots, spaces, any script, a leading digit, a
keyword). `identifier` turns one into a readable ASCII identifier; `Identifiers` gives each key
of one scope (the peers, or one peer's tools, or one tool's parameters) an identifier of its own,
never the same as another key's, and keeps it while the key exists.
"""

from __future__ import annotations

import builtins
import keyword
import re
import unicodedata
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

__all__ = ["RESERVED", "Identifiers", "identifier", "is_identifier"]

K = TypeVar("K", bound=Hashable)

_NOT_WORD = re.compile(r"[^A-Za-z0-9_]+")
_MAX_LEN = 60

RESERVED = frozenset(
    {*dir(builtins), *keyword.kwlist, *keyword.softkwlist, "find_tools", "self", "cls", "args", "kwargs"}
)
"""What a namespace or function of the sandbox never takes as its name: builtins (shadowing
`print` or `len` would break the program), keywords, `find_tools`."""

_ASCII_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_identifier(text: str) -> bool:
    """Whether `text` is an ASCII Python identifier that is no keyword (soft ones included)."""
    return (
        bool(_ASCII_IDENTIFIER.match(text))
        and not keyword.iskeyword(text)
        and not keyword.issoftkeyword(text)
    )


def identifier(name: str, *, fallback: str = "tool") -> str:
    """A readable ASCII identifier for `name`: accents dropped, other characters as `_`, a digit
    first prefixed, builtins and keywords suffixed with `_` (as `class_`).

    Example:
        >>> identifier("git-log"), identifier("class"), identifier("3d.render"), identifier("Café")
        ('git_log', 'class_', 'n3d_render', 'Cafe')
    """
    ascii_text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    text = _NOT_WORD.sub("_", ascii_text).strip("_")
    text = re.sub(r"__+", "_", text)[:_MAX_LEN].rstrip("_")
    if not text:
        text = fallback
    if text[0].isdigit():
        text = "n" + text
    if text in RESERVED or not is_identifier(text):
        text += "_"
    return text


class Identifiers(Generic[K]):
    """One scope's identifiers: each key gets its own, kept while the key stays.

    Example:
        >>> ids = Identifiers[str]()
        >>> ids.update(["git-log", "git_log"]); ids.of("git-log"), ids.of("git_log")
        ('git_log', 'git_log_2')
    """

    __slots__ = ("_by_id", "_by_key", "_fallback")

    def __init__(self, fallback: str = "tool") -> None:
        self._by_key: dict[K, str] = {}
        self._by_id: dict[str, K] = {}
        self._fallback = fallback

    def update(self, keys: Iterable[K], names: Iterable[str] | None = None) -> None:
        """Keep exactly `keys`: those gone release their identifiers, newcomers get one (in order).

        `names` (as many as `keys`) are what identifiers are made from; the keys themselves by default.
        """
        keys = list(keys)
        texts = [str(key) for key in keys] if names is None else list(names)
        wanted = set(keys)
        for key in [k for k in self._by_key if k not in wanted]:
            del self._by_id[self._by_key.pop(key)]
        for key, text in zip(keys, texts, strict=True):
            if key not in self._by_key:
                self._assign(key, identifier(text, fallback=self._fallback))

    def _assign(self, key: K, base: str) -> None:
        candidate, n = base, 1
        while candidate in self._by_id:
            n += 1
            candidate = f"{base}_{n}"
        self._by_key[key] = candidate
        self._by_id[candidate] = key

    def of(self, key: K) -> str:
        """The identifier of `key` (KeyError if it has none)."""
        return self._by_key[key]

    def key(self, ident: str) -> K | None:
        """The key an identifier stands for, or None."""
        return self._by_id.get(ident)

    def items(self) -> Iterable[tuple[K, str]]:
        return self._by_key.items()

    def __len__(self) -> int:
        return len(self._by_key)
