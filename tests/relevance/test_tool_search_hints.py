"""What the model reads in a tool-search conversation: the search function's schema carries no
example to copy, and a call to a name no tool answers to is answered with what the search finds
for that name. Real in-process MCP servers (the captured real servers' tools and a notes server),
through the real `openai` SDK against the replay endpoint."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp
import mcp_types as mt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI

from mcpx_router import OpenAIPeerToolAdapter, ToolSearch
from mcpx_router.loop import run_chat, run_responses
from mcpx_router.model._budget import terms
from mcpx_router.model._search_hints import hint, hinted, holds, meaningful, query_of
from mcpx_router.model._unknown import UnknownNames

from ..support._model_peers import RecordingPeer
from ..support._openai_replay import (
    CHAT,
    RESPONSES,
    chat_completion,
    function_call,
    output_message,
    replay_openai,
    response,
    tool_call,
)
from ..support.big_catalogue import real_peers

pytestmark = pytest.mark.anyio

SAFETY = 30.0
NOTE = json.dumps({"title": "groceries", "text": "milk"})


def notes() -> RecordingPeer:
    schema = {
        "type": "object",
        "properties": {"title": {"type": "string"}, "text": {"type": "string"}},
        "required": ["title", "text"],
    }
    return RecordingPeer("notes").tool(
        "add_note", schema, description="Save a new note with a title and text."
    )


@asynccontextmanager
async def catalogue(**options: Any) -> AsyncIterator[tuple[OpenAIPeerToolAdapter, dict[str, RecordingPeer]]]:
    peers = {**real_peers(), "notes": notes()}
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter(max_tools=8, **options))
        for name, peer in peers.items():
            await adapter.add_peer(name, await stack.enter_async_context(mcp.Client(peer.server())))
        yield adapter, peers


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] if "function" in t else t.get("name", t["type"]) for t in tools]


# Quoted text, "e.g." or "for example": what a model would copy as its query.
EXAMPLE = re.compile(r"'[^']+'|\"[^\"]+\"|\be\.g\b|example|such as", re.IGNORECASE)


async def test_the_search_tool_carries_no_example_to_copy() -> None:
    async with catalogue() as (adapter, _):
        search = ToolSearch(adapter)
        chat = (await search.chat_tools("hello"))[0]
        native = (await search.responses_tools("hello"))[0]
        plain = (await ToolSearch(adapter, native=False).responses_tools("hello"))[0]
        legacy = (await search.functions("hello"))[0]
    schemas = [
        chat["function"]["parameters"],
        native["parameters"],
        plain["parameters"],
        legacy["parameters"],
    ]
    descriptions = [chat["function"]["description"], native["description"], plain["description"]]
    for schema in schemas:
        assert set(schema["properties"]) == {"query"}
        described = schema["properties"]["query"]["description"]
        assert "own words" in described and not EXAMPLE.search(described)
        assert (
            "examples" not in schema["properties"]["query"] and "default" not in schema["properties"]["query"]
        )
    for description in descriptions:
        assert not EXAMPLE.search(description)


def test_a_name_as_a_query_and_the_hint() -> None:
    assert query_of("save_note") == query_of("saveNote") == query_of("save-note") == "save note"
    assert query_of("sum_two_numbers") == "sum two numbers"
    text = hint(["notes__add_note"], "find_tools", offered=True)
    assert text == (
        "The tool search finds for that name: 'notes__add_note' (offered from your next step on). "
        "To find another tool, call find_tools with what you need in your own words."
    )
    assert "use the tool search" in hint([], None, offered=False)
    answer = {"role": "tool", "tool_call_id": "c1", "content": "Error: no."}
    assert hinted(answer, "Hint.") == {**answer, "content": "Error: no. Hint."}
    output = {"type": "function_call_output", "call_id": "c1", "output": "Error: no."}
    assert hinted(output, "Hint.")["output"] == "Error: no. Hint."
    parts = {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text"}]}
    assert hinted(parts, "Hint.") is parts


async def test_chat_an_unknown_name_is_answered_with_what_the_search_finds() -> None:
    async with catalogue() as (adapter, peers):
        script = [
            chat_completion(
                {
                    "content": None,
                    "tool_calls": [
                        tool_call("c1", "save_note", NOTE),
                        tool_call("c2", "sum_two_numbers", json.dumps({"a": 1, "b": 2})),
                        tool_call("c3", "frobnicate_widget", "{}"),
                    ],
                }
            ),
            chat_completion({"content": None, "tool_calls": [tool_call("c4", "notes__add_note", NOTE)]}),
            chat_completion({"content": "Saved."}),
        ]
        with replay_openai(script) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(SAFETY):
                    messages: list[Any] = [{"role": "user", "content": "Remember: buy milk"}]
                    result = await run_chat(client, adapter, model="m", messages=messages, tool_search=True)
        bodies = replay.bodies(CHAT)
    assert result.text == "Saved."
    answers = {m["tool_call_id"]: m["content"] for m in bodies[1]["messages"] if m["role"] == "tool"}
    assert answers["c1"].startswith("Error: there is no tool named 'save_note'.")
    assert answers["c1"].endswith(
        "The tool search finds for that name: 'notes__add_note' (offered from your next step on). "
        "To find another tool, call find_tools with what you need in your own words."
    )
    assert "'everything__get-sum'" in answers["c2"] and "call find_tools" in answers["c2"]
    assert answers["c3"].endswith(
        "The tool search finds no tool for that name; to find one, call find_tools with what you "
        "need in your own words."
    )
    assert "notes__add_note" not in names(bodies[0]["tools"])
    assert {"notes__add_note", "everything__get-sum"} <= set(names(bodies[1]["tools"]))
    assert peers["notes"].calls == [("add_note", json.loads(NOTE))]


async def test_a_published_name_gets_no_hint_and_without_search_none_does() -> None:
    async with catalogue() as (adapter, peers):
        calls = [tool_call("c1", "notes__add_note", NOTE), tool_call("c2", "save_note", NOTE)]
        plain = await adapter.dispatch(calls)
        searched = await ToolSearch(adapter).dispatch(calls)
    assert plain[0] == searched[0] and "tool search" not in plain[0]["content"]
    assert "tool search" not in plain[1]["content"]
    assert searched[1]["content"].startswith(plain[1]["content"] + " The tool search finds")
    assert len(peers["notes"].calls) == 2


async def test_responses_native_search_names_the_finds_and_the_tool_search() -> None:
    async with catalogue() as (adapter, _):
        script = [response([function_call("c1", "save_note", NOTE)]), response([output_message("ok")])]
        with replay_openai(script) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(SAFETY):
                    await run_responses(client, adapter, model="m", input="Keep a note", tool_search=True)
        bodies = replay.bodies(RESPONSES)
    [output] = [i for i in bodies[1]["input"] if i.get("type") == "function_call_output"]
    assert output["output"].endswith(
        "The tool search finds for that name: 'notes__add_note'. To find another tool, use the tool "
        "search with what you need in your own words."
    )


async def test_a_group_and_the_members_it_hides_are_known_names() -> None:
    peers = {"notes": notes(), "notes2": notes()}
    options = {"aliases": {"save": ["notes/add_note", "notes2/add_note"]}, "hide_members": True}
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter(max_tools=8, **options))
        for name, rec in peers.items():
            await adapter.add_peer(name, await stack.enter_async_context(mcp.Client(rec.server())))
        assert "notes__add_note" not in [t.name for t in adapter.tools]
        calls = [tool_call("c1", "save", NOTE), tool_call("c2", "notes__add_note", NOTE)]
        answers = await ToolSearch(adapter).dispatch(calls)
    assert [a["tool_call_id"] for a in answers] == ["c1", "c2"]
    assert not any("tool search" in a["content"] for a in answers)
    assert len(peers["notes"].calls) + len(peers["notes2"].calls) == 2


# --- hints that cannot lead to harm --------------------------------------------------------------

VERBS = ["save", "add", "delete", "remove", "list", "get", "sum", "update", "send", "archive"]
NOUNS = ["note", "number", "file", "message", "budget", "item", "todo", "user"]


@dataclass(frozen=True)
class Tool:
    name: str
    tool: str
    description: str
    risk: int


@st.composite
def catalogues(draw: st.DrawFn) -> list[Tool]:
    pairs = draw(st.lists(st.tuples(st.sampled_from(VERBS), st.sampled_from(NOUNS)), min_size=1, unique=True))
    tools = []
    for verb, noun in pairs:
        extra = draw(st.sampled_from(["", " by its number", " and its file", " for the user"]))
        risk = draw(st.integers(0, 2))
        tools.append(Tool(f"p__{verb}_{noun}", f"{verb}_{noun}", f"{verb.title()} a {noun}{extra}.", risk))
    return tools


@st.composite
def called_names(draw: st.DrawFn) -> str:
    words = draw(
        st.lists(st.sampled_from(VERBS + NOUNS + ["two", "the", "new", "my"]), min_size=1, max_size=3)
    )
    style = draw(st.sampled_from(["snake", "kebab", "camel"]))
    if style == "camel":
        return words[0] + "".join(w.title() for w in words[1:])
    return ("_" if style == "snake" else "-").join(words)


def words_of(text: str) -> set[str]:
    return set(terms(query_of(text)))


@settings(max_examples=300, deadline=None)
@given(catalogues(), called_names(), st.randoms(use_true_random=False))
def test_a_hint_says_what_the_name_says_and_a_tool_that_may_destroy_never_leads(
    tools: list[Tool], name: str, random: Any
) -> None:
    random.shuffle(tools)
    kept = meaningful(name, tools)
    query = words_of(name)
    for tool in kept:
        shared = query & words_of(f"{tool.tool} {tool.description}")
        if tool.risk > 0:  # everything the name says, and never a one-word guess
            assert shared == query and len(query) >= 2
        else:  # never one shared word of several
            assert len(shared) >= min(2, len(query)) and 2 * len(shared) >= len(query)
    risks = [tool.risk >= 2 for tool in kept]
    assert risks == sorted(risks)  # no tool that may destroy before one that may not
    assert [t for t in kept if t.risk < 2] == [t for t in tools if t in kept and t.risk < 2]  # order kept
    # The same holds of the "did you mean" names when they are only spelt alike.
    unknown = UnknownNames()
    text = unknown.why(name, {"p": {t.name: t for t in tools}})
    suggested = re.findall(r"'(p__[a-z_]+)'", text.partition("Did you mean")[2])
    by_name = {t.name: t for t in tools}
    flags = [by_name[n].risk >= 2 for n in suggested]
    assert flags == sorted(flags)
    if unknown._suggester is not None and not unknown._suggester.graded(name)[1]:
        assert suggested == [t.name for t in meaningful(name, [by_name[n] for n in suggested], misspelt=True)]


def test_the_hints_of_the_transcripts() -> None:
    notes = [
        Tool("notes__delete_note", "delete_note", "Delete a note by its number.", 2),
        Tool("notes__add_note", "add_note", "Save a new note with a title and text.", 1),
        Tool("calc__get_sum", "get_sum", "Returns the sum of two numbers.", 0),
    ]
    assert meaningful("save_note", notes) == [notes[1]]
    assert meaningful("sum_two_numbers", notes) == [notes[2]]
    assert meaningful("note", notes) == []  # one word: no tool that may change anything
    assert meaningful("delete_note", notes) == [notes[0]]  # what the name says, all of it
    purge = Tool("notes__purge_note", "purge_note", "Archive a note and purge it.", 2)
    archive = Tool("notes__archive_note", "archive_note", "Archive a note.", 1)
    assert meaningful("archive_note", [purge, archive]) == [archive, purge]


def annotated_notes() -> RecordingPeer:
    schema = {"type": "object", "properties": {"note_id": {"type": "integer"}}, "required": ["note_id"]}
    peer = notes().tool("delete_note", schema, description="Delete a note by its number.")
    peer.tool("list_notes", {"type": "object"}, description="List every note with its number.")
    peer.tools[0] = peer.tools[0].model_copy(
        update={"annotations": mt.ToolAnnotations(destructive_hint=False)}
    )
    peer.tools[1] = peer.tools[1].model_copy(
        update={"annotations": mt.ToolAnnotations(destructive_hint=True)}
    )
    peer.tools[2] = peer.tools[2].model_copy(update={"annotations": mt.ToolAnnotations(read_only_hint=True)})
    return peer


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_no_hint_names_a_tool_that_deletes_for_a_name_that_does_not_say_delete(api: str) -> None:
    peers = {**real_peers(), "notes": annotated_notes()}
    wrong = [("c1", "save_note", NOTE), ("c2", "sum_two_numbers", '{"a": 1, "b": 2}'), ("c3", "note", "{}")]
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter(max_tools=8))
        for name, peer in peers.items():
            await adapter.add_peer(name, await stack.enter_async_context(mcp.Client(peer.server())))
        if api == "chat":
            script = [
                chat_completion({"content": None, "tool_calls": [tool_call(*c) for c in wrong]}),
                chat_completion({"content": "Done."}),
            ]
        else:
            script = [response([function_call(*c) for c in wrong]), response([output_message("Done.")])]
        with replay_openai(script) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(SAFETY):
                    search = ToolSearch(adapter, native=False)
                    if api == "chat":
                        messages: list[Any] = [{"role": "user", "content": "Note: buy milk"}]
                        await run_chat(client, adapter, model="m", messages=messages, tool_search=search)
                    else:
                        await run_responses(
                            client, adapter, model="m", input="Note: buy milk", tool_search=search
                        )
        body = replay.bodies(CHAT if api == "chat" else RESPONSES)[1]
    items = body["messages"] if api == "chat" else body["input"]
    answers = {
        i.get("tool_call_id", i.get("call_id")): i.get("content", i.get("output"))
        for i in items
        if i.get("role") == "tool" or i.get("type") == "function_call_output"
    }
    assert "'notes__add_note'" in answers["c1"] and "'everything__get-sum'" in answers["c2"]
    assert not any("delete" in answer for answer in answers.values())
    assert "notes__delete_note" not in search.found
    assert peers["notes"].calls == []


# --- one-word searches -------------------------------------------------------------------------


def planner() -> RecordingPeer:
    empty = {"type": "object", "properties": {}}
    peer = RecordingPeer("planner").tool(
        "ynab_budgetplan", empty, description="Show this month's budgetplan."
    )
    return peer.tool("todoist_add", empty, description="Add a task to Todoist.")


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_a_one_word_search_finds_tools_a_word_of_which_holds_it(api: str) -> None:
    peers = {**real_peers(), "planner": planner()}
    queries = [("s1", "budget"), ("s2", "TODO"), ("s3", "zzzz")]
    calls = [(call_id, "find_tools", json.dumps({"query": query})) for call_id, query in queries]
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter(max_tools=8))
        for name, peer in peers.items():
            await adapter.add_peer(name, await stack.enter_async_context(mcp.Client(peer.server())))
        search = ToolSearch(adapter, native=False)
        if api == "chat":
            script = [
                chat_completion({"content": None, "tool_calls": [tool_call(*c) for c in calls]}),
                chat_completion({"content": "Done."}),
            ]
        else:
            script = [response([function_call(*c) for c in calls]), response([output_message("Done.")])]
        with replay_openai(script) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(SAFETY):
                    if api == "chat":
                        messages: list[Any] = [{"role": "user", "content": "plan"}]
                        await run_chat(client, adapter, model="m", messages=messages, tool_search=search)
                    else:
                        await run_responses(client, adapter, model="m", input="plan", tool_search=search)
        body = replay.bodies(CHAT if api == "chat" else RESPONSES)[1]
    items = body["messages"] if api == "chat" else body["input"]
    answers = {
        i.get("tool_call_id", i.get("call_id")): i.get("content", i.get("output"))
        for i in items
        if i.get("role") == "tool" or i.get("type") == "function_call_output"
    }
    assert (
        answers["s1"].startswith("Found 1 tools for 'budget'") and "planner__ynab_budgetplan" in answers["s1"]
    )
    assert answers["s2"].startswith("Found 1 tools for 'TODO'") and "planner__todoist_add" in answers["s2"]
    assert answers["s3"] == "No tool matches 'zzzz'. Try other words, or go on without a tool."
    assert {"planner__ynab_budgetplan", "planner__todoist_add"} <= set(names(body["tools"]))


WORDS = st.from_regex(r"[a-z]{4,12}", fullmatch=True)


@given(WORDS, st.data())
def test_a_part_of_a_word_finds_it(word: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(word) - 4))
    end = data.draw(st.integers(start + 4, len(word)))
    assert holds(frozenset({word}), word[start:end])  # a part of four letters or more
    assert holds(frozenset({word}), word[:3])  # a beginning
    assert holds(frozenset({word}), word + "s")  # the word is where the query begins
    three = data.draw(st.from_regex(r"[a-z]{3}", fullmatch=True) | st.just(word[1:4]))
    assert holds(frozenset({word}), three) == word.startswith(three)  # three letters: a beginning only


def test_a_typo_keeps_its_close_names_but_never_turns_save_into_delete() -> None:
    notes = [
        Tool("notes__delete_note", "delete_note", "Delete a note by its number.", 2),
        Tool("gh__list_issue_read", "list_issue_read", "Read an issue of a list.", 0),
    ]
    assert meaningful("lst_issue_raed", notes) == []  # read as words: no word in common
    assert meaningful("lst_issue_raed", notes, misspelt=True) == [notes[1]]  # read as a typo
    assert meaningful("save_note", notes, misspelt=True) == []
    assert meaningful("delet_note", notes, misspelt=True) == [notes[0]]
    unknown = UnknownNames()
    text = unknown.why(
        "gh__lst_issue_raed", {"gh": {notes[1].name: notes[1]}, "notes": {notes[0].name: notes[0]}}
    )
    assert "Did you mean 'gh__list_issue_read'?" in text
