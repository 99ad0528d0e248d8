"""Words to their stems for the lexical ranking: "commits" and "commit", "shows" and "show" match.

The stemmers are Snowball's (the `snowballstemmer` package: English and 30-odd other languages),
imported on first use so that importing the library does not load them. Each stemmer keeps the
stems it made: the index is tokenised again whenever a peer's tools change, and a catalogue's
words are few, so after the first reading a stem costs a dictionary look-up.
"""

from __future__ import annotations

import threading
from functools import cache
from typing import Final

from .._errors import UsageError

__all__ = ["DEFAULT_LANGUAGE", "Stems", "check_language", "stemmer"]

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
def stemmer(language: str) -> Stems:
    """The stems of lower-case words in `language` (a name `check_language` accepted), kept."""
    return Stems(language)


class Stems(dict[str, str]):
    """Word -> stem in one language, filled as words are met: `stems.get(word) or stems.of(word)`
    costs a dictionary look-up once a word was seen (a look-up is cheaper than a call)."""

    def __init__(self, language: str) -> None:
        super().__init__()
        import snowballstemmer

        self._algorithm = snowballstemmer.stemmer(language)
        self._lock = threading.Lock()  # a Snowball stemmer keeps the word it works on: one at a time

    def of(self, word: str) -> str:
        """The stem of `word`, made and kept."""
        with self._lock:
            found: str = self._algorithm.stemWord(word)
        if len(self) >= _CACHED:
            self.clear()  # the words of catalogues and queries never get near: a bound, not a policy
        self[word] = found
        return found
