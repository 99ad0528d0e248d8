"""`${VAR}`, `${VAR:-default}` and `${env:VAR}` in config values: a table of cases, then properties
over arbitrary text, variable names and environments."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router.peers.config._expand import ExpansionError, escape, expand

ENV = {"TOKEN": "abc", "EMPTY": "", "HOME": "/home/me", "NESTED": "${TOKEN}"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Bearer ${TOKEN}", "Bearer abc"),
        ("${env:TOKEN}", "abc"),
        ("${HOME}/bin:${TOKEN}", "/home/me/bin:abc"),
        ("${EMPTY}", ""),  # set but empty is set
        ("${EMPTY:-fallback}", "fallback"),  # `:-` also replaces an empty value, as in sh
        ("${MISSING:-}", ""),
        ("${MISSING:-a b:c/$x{y}", "a b:c/$x{y"),  # a default is literal up to the first }
        ("${TOKEN:-unused}", "abc"),
        ("${NESTED}", "${TOKEN}"),  # a value is not expanded again
        ("$TOKEN and $$ and a lone $", "$TOKEN and $$ and a lone $"),  # only ${ is special
        ("pa$$word", "pa$$word"),
        ("$${TOKEN}", "${TOKEN}"),  # the escape
        ("$$${TOKEN}", "$abc"),  # before {, $$ is one literal $; the odd $ left starts a reference
        ("$$$${TOKEN}", "$${TOKEN}"),
        ("a$$b{", "a$$b{"),
        ("{}}$", "{}}$"),
    ],
)
def test_expansion_table(text: str, expected: str) -> None:
    assert expand(text, ENV) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("${MISSING}", "uses ${MISSING}, which is not set"),
        ("x ${env:MISSING} y", "uses ${env:MISSING}, which is not set"),
        ("${input:api-key}", "uses ${input:api-key}, a VS Code input prompt"),
        ("${workspaceFolder}/x", "${workspaceFolder} is a VS Code variable"),
        ("${1ABC}", "uses ${1ABC}, which is not a reference this config understands"),
        ("${A-B}", "uses ${A-B}, which is not a reference"),
        ("${}", "uses ${}, which is not a reference"),
        ("${env:A:-x}", "uses ${env:A:-x}, which is not a reference"),
        ("${A:-${TOKEN}}", "a default cannot hold another ${...} reference"),
        ("tail ${TOKEN", "with no closing '}'"),
    ],
)
def test_what_cannot_be_expanded_is_an_error(text: str, message: str) -> None:
    with pytest.raises(ExpansionError) as caught:
        expand(text, ENV)
    assert message in str(caught.value)


def test_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPX_EXPAND_PROBE", "from the process")
    assert expand("${MCPX_EXPAND_PROBE}") == "from the process"


# -- properties ---------------------------------------------------------------------------------

NAMES = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,12}\Z")
TEXT = st.text(alphabet=st.sampled_from("ab$:{}-_ \\é\x00\U0001f600"), max_size=30) | st.text(max_size=30)
ENVIRONS = st.dictionaries(NAMES, TEXT, max_size=6)


@dataclass(frozen=True)
class Ref:
    name: str
    form: str  # "plain", "env" or "default"
    default: str = ""

    def written(self) -> str:
        if self.form == "env":
            return f"${{env:{self.name}}}"
        if self.form == "default":
            return f"${{{self.name}:-{self.default}}}"
        return f"${{{self.name}}}"


REFS = st.builds(
    Ref,
    NAMES,
    st.sampled_from(["plain", "env", "default"]),
    st.text(alphabet=st.characters(blacklist_characters="}$"), max_size=10),
)


@settings(max_examples=500, deadline=None)
@given(text=TEXT.filter(lambda t: "$" not in t), environ=ENVIRONS)
def test_text_without_a_dollar_is_never_touched(text: str, environ: dict[str, str]) -> None:
    assert expand(text, environ) == text


@settings(max_examples=500, deadline=None)
@given(text=TEXT, environ=ENVIRONS)
def test_escaped_text_round_trips(text: str, environ: dict[str, str]) -> None:
    assert expand(escape(text), environ) == text


@settings(max_examples=500, deadline=None)
@given(text=TEXT, environ=ENVIRONS)
def test_any_text_expands_or_says_why(text: str, environ: dict[str, str]) -> None:
    try:
        result = expand(text, environ)
    except ExpansionError as exc:
        assert str(exc).startswith(("uses ${", "has '${")), str(exc)
    else:
        assert isinstance(result, str)


@settings(max_examples=500, deadline=None)
@given(
    parts=st.lists(TEXT | REFS, max_size=6),
    environ=ENVIRONS,
    data=st.data(),
)
def test_references_are_replaced_and_defaults_honoured(
    parts: list[str | Ref], environ: dict[str, str], data: st.DataObject
) -> None:
    """A template of literal text (escaped) and references expands to the text and the values; a
    reference to an unset variable without a default is the error, and names it."""
    # Some references name variables that are set, so both branches are exercised.
    for part in parts:
        if isinstance(part, Ref) and data.draw(st.booleans(), label=f"set {part.name}"):
            environ[part.name] = data.draw(TEXT, label=f"value of {part.name}")
    merged: list[str | Ref] = []
    for part in parts:  # adjacent literal pieces are one piece of text
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    written = ""
    for index, part in enumerate(merged):
        if isinstance(part, Ref):
            written += part.written()
        else:
            written += escape(part)
            if index + 1 < len(merged):  # a reference follows: its `$` joins the run before `{`
                written += re.search(r"\$*\Z", part).group(0)  # type: ignore[union-attr]
    expected: list[str] = []
    missing: Ref | None = None
    for part in parts:
        if isinstance(part, str):
            expected.append(part)
        elif part.form == "default":
            expected.append(environ.get(part.name) or part.default)
        elif part.name in environ:
            expected.append(environ[part.name])
        elif missing is None:
            missing = part
    if missing is None:
        assert expand(written, environ) == "".join(expected)
    else:
        with pytest.raises(ExpansionError, match=re.escape(f"uses {missing.written()}, which is not set")):
            expand(written, environ)
