"""The one error tree of mcpx_router.

Errors raised to the host are programmer or set-up errors. Mistakes of the model and failures
of a peer during `dispatch` never raise: they become error answers the model can read.

    RouterError
    ├── PeerError                 .peer
    │   ├── ConfigError           (also ValueError)
    │   ├── InvalidPeerIdError    (also ValueError)
    │   ├── DuplicatePeerError    (also ValueError)
    │   ├── UnknownPeerError      (also LookupError)
    │   ├── PeerUnavailableError
    │   └── ContentError          (a peer refused to read a resource or get a prompt)
    ├── ToolError                 .peer, .tool
    │   └── ToolConversionError   (also ValueError)
    ├── UnknownToolError          .name (also LookupError)
    ├── ToolCallFormatError       (also TypeError)
    ├── UsageError                (also ValueError and TypeError)
    ├── AdapterClosedError
    ├── UnknownContentError       .name (also LookupError)
    ├── EmbeddingError            (an embedder failed or returned unusable vectors)
    └── MCPxError                 (in mcpx_router.mcpx)
        ├── EnvelopeError         (also ValueError)
        ├── MCPxConnectionError   (also ConnectionError)
        │   └── MCPxAuthError     (also PermissionError)
        ├── MCPxClosedError
        └── BridgeError

What a message never says: the secrets of the peers' configs. Every value that is a credential
(see `remember_secret`, `credential_name`) is kept in one registry as it is loaded, and every
text that leaves the library is masked against it at a few exits: an error of this tree as it
is made and shown, every log record as it is made (a record factory, whichever library logs),
a span's status and exception event (`_tracing.py`), an error answer to the model
(`_dispatch.error`), and what the command line prints. docs/peers.md, "What is masked", says
which values are kept and how they are shown (`***`).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, quote_plus

MASK = "***"
"""What a secret is shown as."""
SHORTEST_SECRET = 3
"""Values shorter than this are not masked: one or two characters ("1", "on") say nothing, and
masking them would garble every message that holds them."""

_CREDENTIAL_PARTS = (
    "token", "secret", "passw", "apikey", "signature", "credential", "auth", "cookie", "session",
    "privatekey", "accesskey", "clientkey", "jwt", "bearer",
)  # fmt: skip
"""Parts of a name that make it a credential's wherever they appear (`GITHUB_TOKEN`, `X-Auth-User`)."""
_CREDENTIAL_WORDS = frozenset({"key", "sig", "code", "pass", "pwd", "pw", "otp", "pin", "sid", "sas"})
"""Words that make a name a credential's when they stand alone in it (`api_key`, `sig`, not `monkey`)."""
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def credential_name(name: str) -> bool:
    """Whether a name (a URL query parameter, an environment variable, a command-line option) holds a
    credential by the way it is named: `token`, `api_key`, `apiKey`, `X-Amz-Signature`, `--password`,
    `sig`, `code`, `client_secret`, `AUTH`...

    Example:
        >>> [credential_name(n) for n in ("api_key", "GITHUB_TOKEN", "--auth", "sig", "page", "monkey")]
        [True, True, True, True, False, False]
    """
    flat = re.sub(r"[^a-z0-9]", "", name.lower())
    if any(part in flat for part in _CREDENTIAL_PARTS):
        return True
    return any(word.lower() in _CREDENTIAL_WORDS for word in _WORDS.findall(name))


class Secrets:
    """The values no message may show, and the masking of a text against them (thread-safe).

    A value is kept with the forms it takes in text: as it is and stripped of surrounding
    whitespace, escaped as `repr` and JSON write it (`\\r`, `\\u00e9`), as its UTF-8 bytes' `repr`,
    and percent-encoded as in a URL. A text is masked until none of them is left in it, longest
    first, so that a secret never shows, not even where a mask and the text around it would
    spell it again. Values shorter than `SHORTEST_SECRET`, and values of `*` only, are not kept.
    """

    def __init__(self) -> None:
        self._values: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    def remember(self, value: object) -> None:
        """Mask `value` from now on (anything but a string is ignored)."""
        if not isinstance(value, str):
            return
        forms = _forms(value) - self._values
        if forms:
            with self._lock:
                self._values |= forms
                self._pattern = None
            _mask_log_records()

    def redact(self, text: str) -> str:
        """`text` with every secret (in any of its forms) replaced by `***`, and the start or end of one
        that a cut left before or after an ellipsis (`…`, `...`)."""
        if not self._values:
            return text
        pattern = self._pattern
        if pattern is None:
            with self._lock:
                pattern = self._pattern = _pattern(self._values)
        values = self._values
        while True:  # each pass removes at least one character that is not `*`: it ends
            masked = _pieces_masked(pattern.sub(MASK, text), values)
            if masked == text:
                return text
            text = masked

    @contextmanager
    def kept(self) -> Iterator[None]:
        """Forget, at the end of the block, what was remembered in it (for tests)."""
        saved = self._values
        try:
            yield
        finally:
            with self._lock:
                self._values, self._pattern = saved, None


def _pattern(values: frozenset[str]) -> re.Pattern[str]:
    """Any of `values`, the longest first."""
    return re.compile("|".join(map(re.escape, sorted(values, key=lambda v: (-len(v), v)))))


_CUT = re.compile(r"…|\.\.\.")
"""An ellipsis: where a text may have been cut short, in the middle of a secret."""


def _pieces_masked(text: str, values: frozenset[str]) -> str:
    """`text` with what a cut left of a secret masked: its start (at least `SHORTEST_SECRET` long) just
    before an ellipsis, its end just after one."""
    if "…" not in text and "..." not in text:
        return text
    out: list[str] = []
    last = 0
    for cut in _CUT.finditer(text):
        if cut.start() < last:
            continue  # inside an end masked after the previous ellipsis
        # In a run of more than three dots, the dots before the ellipsis may end the start of a
        # secret, and those after it begin its end: try the ellipsis at each place in the run.
        run_end = cut.end()
        if cut.group() == "...":
            while run_end < len(text) and text[run_end] == ".":
                run_end += 1
        places = range(cut.start(), run_end - len(cut.group()) + 1)
        at, start, end = max(
            (
                (
                    place,
                    max((_start_before(text[last:place], v) for v in values), default=0),
                    max((_end_after(text, place + len(cut.group()), v) for v in values), default=0),
                )
                for place in places
            ),
            key=lambda found: found[1] + found[2],
        )
        before = text[last:at]
        out += [before[: len(before) - start], MASK if start else "", cut.group()]
        last = at + len(cut.group())
        if end:
            out.append(MASK)
            last += end
    out.append(text[last:])
    return "".join(out)


def _start_before(before: str, value: str) -> int:
    """The length of the longest start of `value` (not all of it) that `before` ends with; 0 if none."""
    for n in range(min(len(value) - 1, len(before)), SHORTEST_SECRET - 1, -1):
        if before.endswith(value[:n]) and value[:n].strip("*"):
            return n
    return 0


def _end_after(text: str, at: int, value: str) -> int:
    """The length of the longest end of `value` (not all of it) that `text` has at `at`; 0 if none."""
    for n in range(min(len(value) - 1, len(text) - at), SHORTEST_SECRET - 1, -1):
        if text.startswith(value[-n:], at) and value[-n:].strip("*"):
            return n
    return 0


def _forms(value: str) -> frozenset[str]:
    forms: set[str] = set()
    for text in {value, value.strip()}:
        forms |= {
            text,
            repr(text)[1:-1],
            repr(text.encode("utf-8", "surrogatepass"))[2:-1],
            json.dumps(text)[1:-1],
            quote(text, safe="", errors="surrogatepass"),
            quote(text, errors="surrogatepass"),
            quote_plus(text, errors="surrogatepass"),
        }
    return frozenset(form for form in forms if len(form) >= SHORTEST_SECRET and form.strip("*"))


SECRETS = Secrets()
"""The process's registry: what configs, specs, credentials and token stores put in it as they load."""


def remember_secret(value: object) -> None:
    """Mask `value` in every message, log record, span and error the library makes from now on."""
    SECRETS.remember(value)


def redact(text: str) -> str:
    """`text` with every remembered secret shown as `***`."""
    return SECRETS.redact(text)


def _masked(record: logging.LogRecord) -> logging.LogRecord:
    """`record` with every secret masked in its message, traceback and stack (left as it is, its
    arguments unformatted, when it shows none)."""
    try:
        message = record.getMessage()
    except Exception:  # arguments that do not fit the message: the handler reports it, as always
        message = None
    masked = None if message is None else SECRETS.redact(message)
    if masked != message:
        record.msg, record.args = masked, None
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        masked = SECRETS.redact(text)
        if masked != text:
            record.exc_text = masked  # what formatters show instead of formatting `exc_info` again
    if record.stack_info:
        record.stack_info = SECRETS.redact(record.stack_info)
    return record


def _masking_factory(make: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        return _masked(record) if SECRETS._values else record

    factory.masks_secrets = True  # type: ignore[attr-defined]
    return factory


def _mask_log_records() -> None:
    """From the first secret remembered on, every log record made in this process, whichever
    library makes it (the HTTP client logs each request's URL, the SDK the headers of each answer),
    is masked as it is made, so that no handler, ours or the host's, ever sees a secret. A process
    that never loads a secret keeps its record factory as it was."""
    if not getattr(logging.getLogRecordFactory(), "masks_secrets", False):
        logging.setLogRecordFactory(_masking_factory(logging.getLogRecordFactory()))


class RouterError(Exception):
    """Base class of every error mcpx_router raises; its message never shows a secret (see `redact`)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(arg) if isinstance(arg, str) else arg for arg in args))

    def __str__(self) -> str:
        return redact(super().__str__())


class PeerError(RouterError):
    """Something is wrong with a peer; `.peer` names it."""

    def __init__(self, message: str, *, peer: str) -> None:
        super().__init__(message)
        self.peer = peer


class ConfigError(PeerError, ValueError):
    """A peer config (an `mcpServers` file or mapping) is unusable; `.peer` names the entry, if one."""


class InvalidPeerIdError(PeerError, ValueError):
    """A peer id is empty or not a string."""


class DuplicatePeerError(PeerError, ValueError):
    """A peer with this id is already registered."""


class UnknownPeerError(PeerError, LookupError):
    """No peer with this id is registered."""


class PeerUnavailableError(PeerError):
    """The peer's session failed while listing its tools or answering a call.

    `.sent` is False when a call is known never to have reached the peer (safe to retry), True
    or None (unknown) otherwise.
    """

    def __init__(self, message: str, *, peer: str, sent: bool | None = None) -> None:
        super().__init__(message, peer=peer)
        self.sent = sent


class ContentError(PeerError):
    """A peer answered a resource read or a prompt request with an error; the message keeps its words."""


class ToolError(RouterError):
    """Something is wrong with one tool of one peer; `.peer` and `.tool` name it."""

    def __init__(self, message: str, *, peer: str, tool: str) -> None:
        super().__init__(message)
        self.peer = peer
        self.tool = tool


class ToolConversionError(ToolError, ValueError):
    """A peer's tool definition cannot be converted to an OpenAI tool."""


class UnknownToolError(RouterError, LookupError):
    """No tool is published under this public name."""

    def __init__(self, message: str, *, name: str) -> None:
        super().__init__(message)
        self.name = name


class ToolCallFormatError(RouterError, TypeError):
    """The host passed something that is not a tool call in any known shape."""


class UsageError(RouterError, ValueError, TypeError):
    """An option or argument given to mcpx_router has the wrong type or value."""


class AdapterClosedError(RouterError):
    """The adapter was used after its `async with` block ended."""


class UnknownContentError(RouterError, LookupError):
    """No resource or prompt is published under this public name."""

    def __init__(self, message: str, *, name: str) -> None:
        super().__init__(message)
        self.name = name


class EmbeddingError(RouterError):
    """An embedder failed, or returned something other than one finite vector per text."""
