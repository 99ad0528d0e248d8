"""Words to their stems for the lexical ranking: "commits" and "commit", "shows" and "show" match.

The stemmers are Snowball's (the `snowballstemmer` package: English and 30-odd other languages),
imported on first use so that importing the library does not load them. Each stemmer keeps the
stems it made: the index is tokenised again whenever a peer's tools change, and a catalogue's
words are few, so after the first reading a stem costs a dictionary look-up.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Final

from .._errors import UsageError

__all__ = ["DEFAULT_LANGUAGE", "check_language", "stemmer"]

DEFAULT_LANGUAGE: Final = "english"
"""The stemmer's language unless an adapter is given another (tool descriptions are mostly English)."""

_CACHED: Final = 1 << 16
"""Stems kept per language: far more than the distinct words of a large catalogue and its queries."""


def check_language(language: str | None) -> str | None:
    """`language` when Snowball has a stemmer for it, None for None or "none" (no stemming)."""
    if language is None or language == "none":
        return None
    if language == DEFAULT_LANGUAGE:
        return language  # known without loading Snowball
    import snowballstemmer

    if not isinstance(language, str) or language not in snowballstemmer.algorithms():
        known = ", ".join(snowballstemmer.algorithms())
        raise UsageError(f"stemmer must be None, 'none' or one of {known}; not {language!r}")
    return language


@cache
def stemmer(language: str) -> Callable[[str], str]:
    """The stem of a lower-case word in `language` (a name `check_language` accepted), cached."""
    import snowballstemmer

    algorithm = snowballstemmer.stemmer(language)
    lock = threading.Lock()  # a Snowball stemmer keeps the word it works on: one word at a time

    @lru_cache(maxsize=_CACHED)
    def stem(word: str) -> str:
        with lock:
            result: str = algorithm.stemWord(word)
        return result

    return stem
