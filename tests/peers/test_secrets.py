"""No message shows a secret: the masking rule over classes of values, and every way a secret of a
config or spec used to leave (an error, its traceback, a log record, a span) with real peers that
fail: a stdio command, an HTTP server on 127.0.0.1 that is not there or refuses."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpx_router import ConfigError, PeerUnavailableError
from mcpx_router._errors import MASK, SHORTEST_SECRET, Secrets, credential_name, redact
from mcpx_router.peers import FileTokenStore, HttpPeer, StdioPeer, load_config, parse_config
from mcpx_router.peers._router import Router
from mcpx_router.peers.auth._auth import BearerAuth

from ..support.otel_support import spans  # noqa: F401  (a fixture)
from ..support.router_support import free_port, growing_server

pytestmark = pytest.mark.anyio

TOKEN = "tok-9f8e7d6c5b4a"
KEY = "key-Zq81.secret+/="
QUERY = "q$sec(ret)[1]"

# -- the rule ------------------------------------------------------------------------------------

SECRET_TEXT = st.text(st.characters(exclude_categories=()), min_size=SHORTEST_SECRET, max_size=24)
"""Any text: regex metacharacters, unicode, surrogates, line breaks, spaces."""


@settings(max_examples=400)
@example(secret="a**", before="a", after="")  # the mask and the text around it would spell it again
@example(secret="$^.*+?{}[]\\|()", before="x", after="y")
@example(secret="abc", before="ab", after="bc")
@given(secret=SECRET_TEXT, before=st.text(max_size=20), after=st.text(max_size=20))
def test_a_secret_never_shows_whatever_surrounds_it(secret: str, before: str, after: str) -> None:
    assume(secret.strip("*") and secret.strip().strip("*") and len(secret.strip()) >= SHORTEST_SECRET)
    secrets = Secrets()
    secrets.remember(secret)
    for shown in (secret, secret.strip(), repr(secret)[1:-1], json.dumps(secret)[1:-1]):
        masked = secrets.redact(before + shown + after)
        assert shown not in masked
        assert MASK in masked


@settings(max_examples=300)
@example(secret="key-Zq81.secret+/=", cut=16, before="api-key ", mark="…")
@example(secret="a" * 200 + "b", cut=150, before="", mark="...")
@given(
    secret=st.text(st.characters(exclude_categories=()), min_size=SHORTEST_SECRET + 1, max_size=150),
    cut=st.integers(SHORTEST_SECRET, 150),
    before=st.text(max_size=10),
    mark=st.sampled_from(["…", "..."]),
)
def test_what_a_cut_leaves_of_a_secret_is_masked_too(secret: str, cut: int, before: str, mark: str) -> None:
    """A message cut short (an excerpt of what a server wrote) may end in the start of a secret, or
    start with its end, next to an ellipsis: that piece is masked as well."""
    cut = min(cut, len(secret) - 1)  # drawn apart from the secret: kept inside it, not filtered
    assume(secret[:cut].strip("*") and secret[cut:].strip("*"))
    start, end = secret[:cut], secret[cut:]
    secrets = Secrets()
    secrets.remember(secret)
    assert start not in secrets.redact(f"{before}{start}{mark} and more")
    if len(end) >= SHORTEST_SECRET:
        assert end not in secrets.redact(f"{before}{mark}{end}")


@settings(max_examples=300)
@given(secret=st.text(max_size=SHORTEST_SECRET - 1), text=st.text(max_size=40))
def test_a_value_of_one_or_two_characters_is_not_masked(secret: str, text: str) -> None:
    secrets = Secrets()
    secrets.remember(secret)
    assert secrets.redact(text) == text


@settings(max_examples=300)
@given(secrets_=st.lists(SECRET_TEXT, min_size=1, max_size=4), text=st.text(max_size=60))
def test_a_text_without_secrets_is_left_as_it_is(secrets_: list[str], text: str) -> None:
    secrets = Secrets()
    for secret in secrets_:
        secrets.remember(secret)
    assume(not any(form in text for form in secrets._values))
    assume("…" not in text and "..." not in text)  # beside an ellipsis, the start of a secret is masked
    assert secrets.redact(text) == text


@settings(max_examples=200)
@given(
    first=st.text(st.characters(categories=("L", "N", "P", "S")), min_size=3, max_size=12),
    second=st.text(st.characters(categories=("L", "N", "P", "S")), min_size=3, max_size=12),
    glue=st.text(max_size=3),
)
def test_overlapping_and_nested_secrets_all_disappear(first: str, second: str, glue: str) -> None:
    assume(first.strip("*") and second.strip("*"))
    secrets = Secrets()
    secrets.remember(first)
    secrets.remember(second)
    for text in (first + glue + second, second + first, first + second + first, first[:-1] + second):
        masked = secrets.redact(text)
        assert first not in masked and second not in masked


@given(value=SECRET_TEXT)
def test_a_secret_is_masked_percent_encoded_as_a_url_carries_it(value: str) -> None:
    from urllib.parse import quote, quote_plus

    assume(value.strip().strip("*") and len(value.strip()) >= SHORTEST_SECRET)
    secrets = Secrets()
    secrets.remember(value)
    for encoded in (quote(value, safe="", errors="surrogatepass"), quote_plus(value, errors="surrogatepass")):
        assert encoded not in secrets.redact(f"http://h/mcp?token={encoded}&page=2")


@pytest.mark.parametrize(
    ("name", "credential"),
    [
        *[(n, True) for n in ("token", "api_key", "apiKey", "API-KEY", "GITHUB_TOKEN", "X-Amz-Signature")],
        *[(n, True) for n in ("sig", "code", "client_secret", "password", "--api-key", "--auth", "passwd")],
        *[(n, True) for n in ("Authorization", "access_token", "SESSIONID", "private_key", "key", "pwd")],
        *[(n, False) for n in ("page", "monkey", "q", "user", "limit", "state", "region", "--port", "TZ")],
    ],
)
def test_which_names_hold_credentials(name: str, credential: bool) -> None:
    assert credential_name(name) is credential


# -- where secrets are kept as a config loads ----------------------------------------------------


def test_what_a_config_keeps_secret(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "s": {
                "command": "${BIN}",
                "args": [
                    "--api-key",
                    "${KEY}",
                    "--token=lit-tok-1",
                    "PASSWORD=lit-pass-2",
                    "--name",
                    "plain-1",
                ],
                "env": {"API_TOKEN": "lit-env-3", "MODE": "plain-2"},
            },
            "h": {
                "url": "http://u:pw-lit-4@127.0.0.1/mcp?api_key=lit-q-5&page=plain-3",
                "headers": {"X-A": "lit-h-6"},
            },
            "b": {"url": "http://127.0.0.1/mcp", "auth": {"type": "bearer", "token": "${TOK}"}},
            "o": {
                "url": "http://127.0.0.1/o",
                "auth": {"type": "oauth", "clientId": "c", "clientSecret": "lit-cs-7"},
            },
            "d": {"url": "${URL:-http://127.0.0.1/plain-4}"},
        }
    }
    environ = {"BIN": "/opt/bin-env-1", "KEY": KEY, "TOK": TOKEN}
    parse_config(config, environ=environ)
    kept = [
        "/opt/bin-env-1",
        KEY,
        TOKEN,
        *(f"lit-{x}" for x in ("tok-1", "pass-2", "env-3", "q-5", "h-6", "cs-7")),
    ]
    for secret in [*kept, "pw-lit-4"]:
        assert redact(f"<{secret}>") == f"<{MASK}>", secret
    for plain in ("plain-1", "plain-2", "plain-3", "plain-4", "127.0.0.1"):
        assert redact(plain) == plain  # a default written in the config is not a secret


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (
            f"Bearer {TOKEN}\r\n",
            "ends with a line break (CR or LF), as a value read from a file with Windows",
        ),
        (f"Bearer {TOKEN}\r", "ends with a line break"),
        (f"Bearer {TOKEN}\nX-Injected: 1", "holds a line break (CR or LF), which HTTP headers cannot carry"),
        (f"Bearer {TOKEN}\x00", "holds a control character"),
        (f"Bearer {TOKEN}é", "holds a character that is not ASCII"),
        (f" Bearer {TOKEN}", "starts or ends with a space or tab"),
    ],
)
def test_a_header_http_cannot_send_is_refused_as_the_config_loads(value: str, problem: str) -> None:
    entry = {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "${TOKEN}"}}
    with pytest.raises(ConfigError) as caught:
        parse_config({"mcpServers": {"notes": entry}}, source="mcp.json", environ={"TOKEN": value})
    message = str(caught.value)
    assert message.startswith(
        f"mcp.json: server 'notes': \"headers\": the value of header 'Authorization' {problem}"
    )
    assert TOKEN not in message and TOKEN not in repr(caught.value) and TOKEN not in str(caught.value.args)
    with pytest.raises(ValueError, match="the value of header 'Authorization'") as direct:
        HttpPeer("http://127.0.0.1:9/mcp", headers={"Authorization": value})
    assert TOKEN not in str(direct.value)
    with pytest.raises(ValueError, match="a bearer token must be"):
        BearerAuth(value)


# -- the ways out: errors, tracebacks, log records, spans ----------------------------------------


def _everything(caught: BaseException, caplog: pytest.LogCaptureFixture, spans: InMemorySpanExporter) -> str:  # noqa: F811
    """All the text the failure produced: the error, its traceback (with its causes), every log record
    (formatted with tracebacks) and every finished span's name, attributes, status and events."""
    texts = [str(caught), repr(caught), "".join(traceback.format_exception(caught)), caplog.text]
    formatter = logging.Formatter("%(message)s")
    texts += [formatter.format(record) for record in caplog.records]
    for span in spans.get_finished_spans():
        texts += [
            span.name,
            json.dumps(dict(span.attributes or {}), default=str),
            str(span.status.description),
        ]
        texts += [json.dumps(dict(event.attributes or {}), default=str) for event in span.events]
    return "\n".join(texts)


def _connect_events(spans: InMemorySpanExporter) -> list[dict[str, object]]:  # noqa: F811
    return [
        dict(event.attributes or {})
        for span in spans.get_finished_spans()
        if span.name.startswith("connect_peer")
        for event in span.events
        if event.name == "exception"
    ]


async def test_a_stdio_command_that_fails_never_shows_its_key(
    caplog: pytest.LogCaptureFixture, spans: InMemorySpanExporter  # noqa: F811
) -> None:
    """A server that writes its own command line on stdout (not JSON-RPC) and exits: the key is in
    the command line of the join error, in the server's words, and in the span's exception."""
    caplog.set_level(logging.DEBUG)
    script = "import sys; print('started with ' + ' '.join(sys.argv[1:]))"
    environ = {"KEY": KEY}
    entry = {"command": sys.executable, "args": ["-c", script, "--api-key", "${KEY}", f"--token={TOKEN}"]}
    peers = parse_config({"mcpServers": {"x": entry}}, environ=environ)
    async with Router(connect_timeout=20) as router:
        with pytest.raises(PeerUnavailableError) as caught:
            await router.join("x", peers["x"])
    message = str(caught.value)
    assert "peer 'x'" in message and "not JSON-RPC" in message and MASK in message
    everything = _everything(caught.value, caplog, spans)
    assert KEY not in everything and TOKEN not in everything
    (event,) = _connect_events(spans)
    assert event["exception.type"] == "mcpx_router._errors.PeerUnavailableError"
    assert MASK in str(event["exception.message"]) and MASK in str(event["exception.stacktrace"])


async def test_a_command_that_cannot_start_never_shows_its_arguments(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    spec = StdioPeer(
        sys.executable, ["-c", "import sys; sys.exit(3)", "--api-key", KEY], env={"API_TOKEN": TOKEN}
    )
    async with Router(connect_timeout=20) as router:
        with pytest.raises(PeerUnavailableError) as caught:
            await router.join("x", spec)
    assert str(caught.value).startswith(f"could not connect to peer 'x' ({sys.executable} -c ")
    assert f"--api-key {MASK})" in str(caught.value)
    assert KEY not in "".join(traceback.format_exception(caught.value)) + caplog.text


@asynccontextmanager
async def refusing_server() -> AsyncIterator[int]:
    """An HTTP server on 127.0.0.1 that answers every request 401, quoting the token it was sent
    (as servers that explain a refusal do)."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)

    async def answer(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            data = b""
            with anyio.move_on_after(5):
                while b"\r\n\r\n" not in data:
                    data += await stream.receive()
            sent = re.search(rb"(?im)^authorization: bearer (\S+)", data)
            token = sent.group(1).decode() if sent else ""
            challenge = f'Bearer error="invalid_token", error_description="the token {token} is unknown"'
            body = f"the token {token} is unknown".encode()
            head = f"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: {challenge}\r\n"
            head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            await stream.send(head.encode() + body)

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, answer)
        yield listener.extra(anyio.abc.SocketAttribute.local_port)
        tg.cancel_scope.cancel()


async def test_an_http_server_that_refuses_or_is_not_there_never_shows_a_credential(
    caplog: pytest.LogCaptureFixture, spans: InMemorySpanExporter  # noqa: F811
) -> None:
    caplog.set_level(logging.DEBUG)
    environ = {"TOKEN": TOKEN, "QUERY": QUERY}
    async with refusing_server() as port:
        for where in (port, free_port()):  # one that refuses, one where nothing listens
            url = f"http://127.0.0.1:{where}/mcp?api_key=${{QUERY}}&page=2"
            entry = {"url": url, "headers": {"Authorization": "Bearer ${TOKEN}"}}
            peers = parse_config({"mcpServers": {"notes": entry}}, environ=environ)
            async with Router(connect_timeout=20) as router:
                with pytest.raises(PeerUnavailableError) as caught:
                    await router.join("notes", peers["notes"])
            message = str(caught.value)
            assert f"http://127.0.0.1:{where}/mcp?api_key={MASK}&page=2" in message
            everything = _everything(caught.value, caplog, spans)
            assert TOKEN not in everything and QUERY not in everything
            assert "q%24sec%28ret%29%5B1%5D" not in everything  # nor percent-encoded
            if where == port:
                assert f"the token {MASK} is unknown" in message  # the server's words, masked
            spans.clear()
            caplog.clear()


@pytest.mark.parametrize("name", ["mcpx_router.peers", "httpx2", "mcp.client.streamable_http", "host.app"])
def test_a_log_record_is_masked_for_any_handler(name: str) -> None:
    """A host's own handler (here: one that keeps records) sees every record masked as it is made,
    its traceback included, whichever library (or the host itself) logs a secret."""
    BearerAuth(TOKEN)
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    try:
        try:
            raise RuntimeError(f"deep down: {TOKEN}")
        except RuntimeError:
            logger.warning("token %s refused", TOKEN, exc_info=True)
        logger.warning("nothing secret: %s", "plain")
    finally:
        logger.removeHandler(handler)
    masked, plain = records
    text = logging.Formatter("%(message)s").format(masked)
    assert TOKEN not in text and f"token {MASK} refused" in text and f"deep down: {MASK}" in text
    assert (plain.msg, plain.args) == ("nothing secret: %s", ("plain",))  # left as it is


# -- files others can write ----------------------------------------------------------------------


@pytest.mark.skipif(os.name == "nt", reason="file modes say nothing on Windows")
@pytest.mark.parametrize(
    ("mode", "warned"), [(0o666, True), (0o664, True), (0o646, True), (0o644, False), (0o600, False)]
)
def test_a_config_others_can_write_is_used_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: int, warned: bool
) -> None:
    file = tmp_path / f"mcp-{mode:o}.json"
    file.write_text(json.dumps({"mcpServers": {"t": {"command": "true"}}}))
    file.chmod(mode)
    with caplog.at_level(logging.WARNING, logger="mcpx_router"):
        assert list(load_config(file)) == ["t"]  # used all the same
    lines = [r.getMessage() for r in caplog.records if r.name == "mcpx_router"]
    if warned:
        assert lines == [
            f"the peer config {str(file)!r} has mode {mode:04o}: others can write it, and it decides which "
            f"commands run; make it your own alone with: chmod go-w {file}"
        ]
    else:
        assert lines == []


@pytest.mark.skipif(os.name == "nt", reason="file modes say nothing on Windows")
async def test_a_token_store_others_can_read_or_write_is_used_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    file = tmp_path / "tokens.json"
    record = {"tokens": {"access_token": TOKEN, "token_type": "Bearer"}}
    file.write_text(json.dumps({"version": 1, "servers": {"http://h/mcp": record}}))
    for mode, who in ((0o666, "others can write it"), (0o640, "others can read it")):
        file.chmod(mode)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="mcpx_router"):
            tokens = await FileTokenStore(file, "http://h/mcp").get_tokens()
            await FileTokenStore(file, "http://h/mcp").get_tokens()  # once per file and mode
        assert tokens is not None and tokens.access_token == TOKEN
        assert [r.getMessage() for r in caplog.records] == [
            f"the token store {str(file)!r} has mode {mode:04o}: {who}, and it holds your credentials; "
            f"make it your own alone with: chmod 600 {file}"
        ]
    assert redact(TOKEN) == MASK  # a token read from a store is a secret too


async def test_an_error_answer_to_the_model_never_shows_a_secret() -> None:
    """The answers the library writes for a failed call (here: an unknown name, which it quotes)
    are masked too: they go to a hosted model, and into its provider's logs."""
    BearerAuth(TOKEN)
    call = {"id": "c1", "type": "function", "function": {"name": f"grower__{TOKEN}", "arguments": "{}"}}
    async with Router() as router:
        await router.join("grower", growing_server())
        (answer,) = await router.dispatch([call])
    assert TOKEN not in json.dumps(answer) and MASK in answer["content"]


@pytest.mark.parametrize(
    "entry",
    [
        {"url": "http://127.0.0.1/mcp", "auth": f"Bearer {TOKEN}"},
        {"url": "http://127.0.0.1/mcp", "headers": f"Authorization: Bearer {TOKEN}"},
        {"url": "http://127.0.0.1/mcp", "headers": {"X-Pin": 918273}},
        {"command": "x", "env": {"API_TOKEN": 918273}},
    ],
)
def test_a_misplaced_secret_is_named_by_its_type_never_shown(entry: dict[str, object]) -> None:
    """A token written where an object was expected, or a number where a string was: the error says
    what is wrong without showing what was written."""
    with pytest.raises(ConfigError) as caught:
        parse_config({"mcpServers": {"notes": entry}}, source="mcp.json")
    assert TOKEN not in str(caught.value) and "918273" not in str(caught.value)
    assert str(caught.value).endswith(("not str", "not a string", "not a number"))


def test_a_record_whose_arguments_do_not_fit_is_left_to_its_handler() -> None:
    """Masking a record as it is made never raises where logging itself would not."""
    BearerAuth(TOKEN)
    record = logging.getLogger("host.app").makeRecord("host.app", logging.INFO, "f", 1, "%d", ("x",), None)
    assert (record.msg, record.args) == ("%d", ("x",))
