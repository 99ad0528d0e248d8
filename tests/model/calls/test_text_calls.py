"""Property tests of the calls recovered from a model's text (`model.calls._text_calls.recover_calls`).

Each format is rendered from generated calls and must be recovered exactly (names resolved,
arguments equal, the text around them kept); near misses of each format must recover nothing:
prose naming a tool, a call inside prose without a marker, unknown names, arguments that do not
parse or are no object, non-literal pythonic arguments, code in another language, and a message
only some of whose calls could run.
"""

from __future__ import annotations

import json
import keyword
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router.model.calls._text_calls import Recovered, or_unknown, recover_calls

PROPERTY = settings(max_examples=150, deadline=None)

identifiers = st.from_regex(r"\A[a-z][a-z0-9_]{0,11}\Z").filter(
    lambda n: not keyword.iskeyword(n) and n not in ("None", "True", "False")
)


@st.composite
def catalogues(draw: st.DrawFn) -> dict[str, str]:
    """Written name → public name: each published `peer__tool`, and each tool's own name when
    only one peer has it."""
    tools = draw(st.lists(identifiers, min_size=1, max_size=4, unique=True))
    peers = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=len(tools), max_size=len(tools)))
    names = {f"{peer}__{tool}": f"{peer}__{tool}" for peer, tool in zip(peers, tools, strict=True)}
    for peer, tool in zip(peers, tools, strict=True):
        names[tool] = f"{peer}__{tool}"
    return names


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=10),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
arguments = st.dictionaries(identifiers, values, max_size=4)
prose = st.text(
    st.characters(codec="utf-8", exclude_characters="<>[]{}|`", exclude_categories=("Cs",)), max_size=40
)
"""Text around the calls: no markers, braces or fences."""


@st.composite
def calls(draw: st.DrawFn, names: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """One to three (written name, arguments) pairs, each name one the catalogue knows."""
    return draw(st.lists(st.tuples(st.sampled_from(sorted(names)), arguments), min_size=1, max_size=3))


def json_call(draw: st.DrawFn, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A call object as models write it: `arguments` or `parameters`, an object or a string."""
    key = draw(st.sampled_from(["arguments", "parameters"]))
    value: Any = json.dumps(args) if draw(st.booleans()) else args
    call = {"name": name, key: value}
    if draw(st.booleans()):
        call["type"] = "function"
    return call


def render(draw: st.DrawFn, form: str, written: list[tuple[str, dict[str, Any]]]) -> tuple[str, str | None]:
    """The text of the calls in `form`, and the rest of the text the recovery must keep."""
    objects = [json_call(draw, name, args) for name, args in written]
    if form == "hermes":
        before, after = draw(prose), draw(prose)
        blocks = "".join(f"<tool_call>\n{json.dumps(o)}\n</tool_call>" for o in objects)
        if draw(st.booleans()):  # a last block left unclosed
            blocks = blocks.removesuffix("</tool_call>")
            after = ""
        return f"{before}\n{blocks}\n{after}", (f"{before}\n\n{after}".strip() or None)
    if form == "mistral":
        before = draw(prose)
        body = json.dumps(objects if len(objects) > 1 or draw(st.booleans()) else objects[0])
        return f"{before}[TOOL_CALLS]{body}", before.strip() or None
    if form == "mistral-args":
        before = draw(prose)
        body = "".join(f"[TOOL_CALLS]{name}[ARGS]{json.dumps(args)}" for name, args in written)
        return f"{before}{body}", before.strip() or None
    if form == "llama":
        before = draw(prose)
        end = draw(st.sampled_from(["", "<|eom_id|>", "<|eot_id|>", ";"]))
        return (
            f"{before}<|python_tag|>{'; '.join(json.dumps(o) for o in objects)}{end}",
            before.strip() or None,
        )
    if form == "fenced":
        body = json.dumps(
            objects if len(objects) > 1 else objects[0], indent=draw(st.sampled_from([None, 2]))
        )
        return f"```{draw(st.sampled_from(['json', '']))}\n{body}\n```", None
    if form == "bare":
        body = json.dumps(objects if len(objects) > 1 else objects[0])
        return f"{draw(st.sampled_from(['', ' ', chr(10)]))}{body}", None
    if form == "lines":  # one call after another, one a line, as a small model's second call
        sep = draw(st.sampled_from(["\n", "\n\n", " \n", "\r\n"]))
        body = sep.join(json.dumps(o, indent=draw(st.sampled_from([None, 2]))) for o in objects)
        return (f"```json\n{body}\n```" if draw(st.booleans()) else body), None
    assert form == "pythonic"
    rendered = [f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})" for name, args in written]
    return f"[{', '.join(rendered)}]", None


FORMS = ["hermes", "mistral", "mistral-args", "llama", "fenced", "bare", "lines", "pythonic"]


@PROPERTY
@given(data=st.data(), names=catalogues(), form=st.sampled_from(FORMS))
def test_each_format_is_recovered_exactly(data: st.DataObject, names: dict[str, str], form: str) -> None:
    written = data.draw(calls(names))
    text, rest = render(data.draw, form, written)
    recovered = recover_calls(text, names.get)
    assert recovered is not None, text
    assert [call.name for call in recovered.calls] == [names[name] for name, _ in written]
    assert [json.loads(call.arguments) for call in recovered.calls] == [args for _, args in written]
    assert recovered.text == rest
    ids = [call.call_id for call in recovered.calls]
    assert len(set(ids)) == len(ids) and all(i.startswith("call_text_") for i in ids)
    assert recover_calls(text, names.get) == recovered  # the same message, the same ids


@PROPERTY
@given(data=st.data(), names=catalogues(), form=st.sampled_from(FORMS))
def test_a_name_not_in_the_catalogue_recovers_nothing_in_any_format(
    data: st.DataObject, names: dict[str, str], form: str
) -> None:
    written = data.draw(calls(names))
    unknown = data.draw(identifiers.filter(lambda n: n not in names))
    written.insert(data.draw(st.integers(0, len(written))), (unknown, data.draw(arguments)))
    text, _ = render(data.draw, form, written)
    assert recover_calls(text, names.get) is None


@PROPERTY
@given(
    data=st.data(),
    names=catalogues(),
    form=st.sampled_from(["hermes", "mistral", "mistral-args", "llama", "fenced", "bare"]),
    bad=st.one_of(
        st.sampled_from(["{", '{"a": }', "nope", "[1, 2]", "1", "null", '"{}"', '{"x": NaN}', "{'a': 1}"]),
        st.lists(st.integers(), max_size=2),
        st.integers(),
        st.none(),
    ),
)
def test_arguments_that_do_not_parse_or_are_no_object_recover_nothing(
    data: st.DataObject, names: dict[str, str], form: str, bad: Any
) -> None:
    name = data.draw(st.sampled_from(sorted(names)))
    key = data.draw(st.sampled_from(["arguments", "parameters"]))
    body = json.dumps({"name": name, key: bad})
    if form == "mistral-args":
        text = f"[TOOL_CALLS]{name}[ARGS]{bad if isinstance(bad, str) else json.dumps(bad)}"
    else:
        text = {
            "hermes": f"<tool_call>{body}</tool_call>",
            "mistral": f"[TOOL_CALLS][{body}]",
            "llama": f"<|python_tag|>{body}",
            "fenced": f"```json\n{body}\n```",
            "bare": body,
        }[form]
    assert recover_calls(text, names.get) is None


@PROPERTY
@given(data=st.data(), names=catalogues(), before=prose, after=prose)
def test_prose_naming_tools_or_holding_a_call_without_a_marker_recovers_nothing(
    data: st.DataObject, names: dict[str, str], before: str, after: str
) -> None:
    name, args = data.draw(calls(names))[0]
    call = json.dumps({"name": name, "arguments": args})
    pythonic = f"[{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})]"
    if not (before + after).strip():
        before = "To do that I would use"
    texts = [
        f"{before} {name} {after}",
        f"{before} {name}({', '.join(f'{k}={v!r}' for k, v in args.items())}) {after}",
        f"{before.strip() or 'Like this:'} {call} {after}",
        f"{before.strip() or 'Like this:'}\n```json\n{call}\n```\n{after}",
        f"{before.strip() or 'Like this:'}\n```\n{call}\n```",
        f"```json\n{call}\n```\n{after.strip() or 'That is how.'}",
        f"{before.strip() or 'Like this:'} {pythonic}",
        f"```python\n{pythonic}\n```",
        f"```json\n{call}\n```\n```json\n{call}\n```",
    ]
    for text in texts:
        assert recover_calls(text, names.get) is None, text


@PROPERTY
@given(
    names=catalogues(),
    data=st.data(),
    bad=st.sampled_from(
        [
            "x=city",
            "x=open('f')",
            "x=f()",
            "x=1 + a",
            "'Oslo'",
            "**kwargs",
            "*args",
            "x=lambda: 1",
            "x={1, 2}",
            "x=b'raw'",
            "x=1j",
            "x=float('nan')",
            "x=[i for i in range(3)]",
            "x=1, x=2",
            "x=__import__('os')",
        ]
    ),
)
def test_pythonic_calls_with_anything_but_literal_keyword_arguments_recover_nothing(
    names: dict[str, str], data: st.DataObject, bad: str
) -> None:
    name = data.draw(st.sampled_from(sorted(names)))
    assert recover_calls(f"[{name}({bad})]", names.get) is None
    assert recover_calls(f"[{name}(), {name}({bad})]", names.get) is None
    assert recover_calls(f"[os.system('true'), {name}()]", names.get) is None


@given(names=catalogues(), data=st.data())
def test_near_misses_of_each_marker_recover_nothing(names: dict[str, str], data: st.DataObject) -> None:
    name, args = data.draw(calls(names))[0]
    call = json.dumps({"name": name, "arguments": args})
    texts = [
        f"<tool_call>{call}</tool_call> and then </tool_call>",  # a closing tag on its own
        f"<tool_call>{call} trailing words</tool_call>",
        f"<tool_call>{json.dumps({'name': name, 'arguments': args, 'extra': 1})}</tool_call>",
        f"<tool_call>{json.dumps({'name': name, 'arguments': args, 'parameters': args})}</tool_call>",
        f"<tool_call>{json.dumps({'name': name})}</tool_call>",
        f"<tool_call>{json.dumps({'name': name, 'arguments': args, 'type': 'custom'})}</tool_call>",
        "<tool_call></tool_call>",
        f"[TOOL_CALLS]{call} and more",
        "[TOOL_CALLS][]",
        f"[TOOL_CALLS] {name} [ARGS]{json.dumps(args)}",
        f"<|python_tag|>print({name!r})",
        f"<|python_tag|>{call} then prose",
        f"<|python_tag|>brave_search.call(query={name!r})",
        "[]",
        f"{call} {call}",
        json.dumps([{"name": name, "arguments": args}, {"role": "user"}]),
        json.dumps({"name": name, "arguments": args, "description": "a tool definition"}),
        "",
        "   ",
    ]
    for text in texts:
        assert recover_calls(text, names.get) is None, text


def test_non_text_recovers_nothing() -> None:
    for value in (None, 7, b"{}", ["<tool_call>"], {"name": "x"}):
        assert recover_calls(value, {"x": "x"}.get) is None


def test_the_rest_of_the_text_is_kept_and_a_message_of_calls_only_has_none() -> None:
    names = {"get_weather": "w__get_weather"}.get
    text = 'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    assert recover_calls(text, names) == Recovered(
        (recover_calls(text, names).calls[0],),  # type: ignore[union-attr]
        "Let me look.",
    )
    only = recover_calls('{"name": "get_weather", "parameters": "{\\"city\\": \\"Oslo\\"}"}', names)
    assert only is not None and only.text is None
    assert only.calls[0].name == "w__get_weather" and only.calls[0].arguments == '{"city": "Oslo"}'


@PROPERTY
@given(data=st.data(), names=catalogues(), between=prose.filter(lambda t: t.strip() != ""))
def test_calls_one_a_line_with_prose_between_them_recover_nothing(
    data: st.DataObject, names: dict[str, str], between: str
) -> None:
    written = data.draw(calls(names).filter(lambda c: len(c) > 1))
    objects = [json.dumps(json_call(data.draw, name, args)) for name, args in written]
    text = f"{objects[0]}\n{between}\n" + "\n".join(objects[1:])
    assert recover_calls(text, names.get) is None, text


@PROPERTY
@given(data=st.data(), names=catalogues(), form=st.sampled_from(FORMS))
def test_with_unknown_names_read_a_call_of_one_is_recovered_as_written(
    data: st.DataObject, names: dict[str, str], form: str
) -> None:
    written = data.draw(calls(names))
    unknown = data.draw(identifiers.filter(lambda n: n not in names))
    written.insert(data.draw(st.integers(0, len(written))), (unknown, data.draw(arguments)))
    text, _ = render(data.draw, form, written)
    recovered = recover_calls(text, or_unknown(names.get))
    assert recovered is not None
    assert [call.name for call in recovered.calls] == [names.get(name, name) for name, _ in written]


CUT_FORMS = ["hermes", "lines", "list", "llama"]


@PROPERTY
@given(data=st.data(), names=catalogues(), form=st.sampled_from(CUT_FORMS))
def test_a_reply_cut_inside_its_last_call_keeps_the_calls_before_it(
    data: st.DataObject, names: dict[str, str], form: str
) -> None:
    written = data.draw(calls(names).filter(lambda c: len(c) >= 2))
    objects = [json.dumps({"name": name, "arguments": args}) for name, args in written]
    head, last = objects[:-1], objects[-1]
    cut = last[: data.draw(st.integers(1, len(last) - 1))]  # the closing brace at least is lost
    if form == "hermes":
        text = "".join(f"<tool_call>\n{o}\n</tool_call>\n" for o in head) + f"<tool_call>\n{cut}"
    elif form == "lines":
        text = "\n".join([*head, cut])
    elif form == "list":
        text = "[" + ", ".join([*head, cut])
    else:
        text = "<|python_tag|>" + "; ".join([*head, cut])
    recovered = recover_calls(text, names.get, truncated=True)
    assert recovered is not None, text
    assert [call.name for call in recovered.calls] == [names[name] for name, _ in written[:-1]]
    assert [json.loads(call.arguments) for call in recovered.calls] == [args for _, args in written[:-1]]
    if form != "llama":  # the cut call stays in the text
        assert recovered.text is not None and cut.strip() in recovered.text
    assert recover_calls(text, names.get) is None  # a reply not cut keeps nothing of a broken one
