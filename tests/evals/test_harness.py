"""The evaluation harness against a scripted endpoint: its scoring, what each configuration sends,
and its token counts. These test the harness, never a model's quality."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from openai import AsyncOpenAI

from benchmarks.evals import cli
from benchmarks.evals.catalogue import catalogue_size, large_catalogue, small_catalogue
from benchmarks.evals.harness import (
    Outcome,
    Request,
    Settings,
    argument_problem,
    chosen,
    load_requests,
    run,
    strip_tools,
    summarise,
    value_matches,
)
from benchmarks.evals.recall import recall_at_k_async

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

pytestmark = pytest.mark.anyio

TIME = Request("t", "What time is it in Tokyo?", "time__get_current_time", {"timezone": "Asia/Tokyo"})
LOG = Request("g", "Show the last 3 commits of /srv/app.", "git__git_log", {"repo_path": "/srv/app"})


def chat_brain(plan: dict[str, tuple[str, str]], *, usage: bool = True) -> Any:
    """A scripted Chat model: for a user request, the planned (name, arguments) call; after a tool's
    answer, a final answer. `find_tools` is called first when it is offered and the planned tool is not."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        offered = [tool["function"]["name"] for tool in body.get("tools", [])]
        user = next(m["content"] for m in messages if m["role"] == "user")
        name, arguments = plan[user]
        last = messages[-1]
        searched = any(m.get("role") == "tool" and "Found" in str(m.get("content")) for m in messages)
        if last["role"] == "tool" and not (searched and name not in _called(messages)):
            out = chat_completion({"content": "It is done."})
        elif offered and offered[0] == "find_tools" and name not in offered and not searched:
            query = json.dumps({"query": user})
            out = chat_completion({"content": None, "tool_calls": [tool_call("s1", "find_tools", query)]})
        else:
            out = chat_completion({"content": None, "tool_calls": [tool_call("c1", name, arguments)]})
        if not usage:
            del out["usage"]
        return out

    return reply


def _called(messages: list[dict[str, Any]]) -> set[str]:
    return {c["function"]["name"] for m in messages for c in m.get("tool_calls") or []}


def responses_brain(plan: dict[str, tuple[str, str]]) -> Any:
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        items = body["input"]
        user = next(i["content"] for i in items if i.get("role") == "user")
        name, arguments = plan[user]
        offered = [tool.get("name") for tool in body.get("tools", [])]
        outputs = [i for i in items if i.get("type") == "function_call_output"]
        calls = [i["name"] for i in items if i.get("type") == "function_call"]
        if name in calls:
            return response([output_message("It is done.")])
        if offered and offered[0] == "find_tools" and name not in offered and not outputs:
            return response([function_call("s1", "find_tools", json.dumps({"query": user}))])
        return response([function_call("c1", name, arguments)])

    return reply


async def _run(
    settings: Settings, requests: list[Request], brain: Any, *, turns: int = 8
) -> tuple[list[Outcome], Any]:
    with replay_openai(
        [brain] * (turns * len(requests) * len(settings.configs) * len(settings.sizes))
    ) as replay:
        async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
            with anyio.fail_after(30):
                outcomes = await run(client, settings, requests)
    return outcomes, replay


def test_requests_cover_every_real_tool() -> None:
    requests = load_requests()
    assert len(requests) >= 100
    assert len({r.id for r in requests}) == len(requests)
    catalogue = large_catalogue(100)
    real = {
        f"{peer}__{t.name}"
        for peer in ("time", "fetch", "git", "everything", "fs", "memory")
        for t in catalogue[peer]
    }
    assert {r.tool for r in requests} == real


def test_catalogue_sizes() -> None:
    for size in (100, 1000, 5000):
        assert catalogue_size(large_catalogue(size)) == size
    small = small_catalogue("git__git_log", "x")
    assert catalogue_size(small) == 10 and "git_log" in {t.name for t in small["git"]}
    assert large_catalogue(1000) == large_catalogue(1000)  # deterministic


def test_argument_checks() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "p": {"type": "string"}},
        "required": ["p"],
    }
    assert argument_problem(schema, {"p": "/srv/app"}, '{"p": " /SRV/app "}') is None
    assert argument_problem(schema, {"p": "/srv/app"}, '{"p": "/srv"}') is not None
    assert argument_problem(schema, {}, '{"n": 1}') == "schema: 'p' is a required property"
    assert argument_problem(schema, {}, "{not json") is not None
    assert argument_problem(schema, {}, "[1]") is not None
    assert value_matches({"has_all": ["a.txt", "b.txt"]}, ["/d/a.txt", "/d/b.txt"])
    assert not value_matches({"has_all": ["a.txt", "b.txt"]}, ["/d/a.txt"])
    assert value_matches({"any": [3, 4]}, 4) and not value_matches(3, True)


async def test_scoring_right_wrong_and_invalid_arguments() -> None:
    requests = [
        TIME,
        Request("w", "Wrong tool please", "time__get_current_time", {"timezone": "Asia/Tokyo"}),
        Request("b", "Bad arguments please", "time__get_current_time", {"timezone": "Asia/Tokyo"}),
        Request("u", "Unknown tool please", "time__get_current_time", {"timezone": "Asia/Tokyo"}),
    ]
    plan = {
        TIME.text: ("time__get_current_time", '{"timezone": "Asia/Tokyo"}'),
        "Wrong tool please": ("time__convert_time", '{"timezone": "Asia/Tokyo"}'),
        "Bad arguments please": ("time__get_current_time", '{"timezone": "Europe/Paris"}'),
        "Unknown tool please": ("no_such_tool", "{}"),
    }
    settings = Settings(model="m", sizes=(10,), configs=("budget",))
    outcomes, replay = await _run(settings, requests, chat_brain(plan))
    right, wrong, bad, unknown = outcomes
    assert (right.right, right.valid, right.answered, right.turns) == (True, True, True, 2)
    assert right.offered is True and right.answer == "It is done."
    assert (wrong.right, wrong.valid, wrong.problem) == (False, False, "wrong tool: time__convert_time")
    assert (bad.right, bad.valid) == (True, False)
    assert "does not match" in (bad.problem or "")
    assert (unknown.right, unknown.problem) == (False, "no such tool: no_such_tool")
    # 10 tools each time, max_tokens and temperature always sent
    for body in replay.bodies(CHAT):
        assert len(body["tools"]) == 10 and body["max_tokens"] == 256 and body["temperature"] == 0
    [row] = summarise(outcomes)
    assert (row.right, row.valid, row.requests) == (50, 25, 4)


async def test_budget_groups_and_search_send_what_they_should() -> None:
    plan = {
        TIME.text: ("time__get_current_time", '{"timezone": "Asia/Tokyo"}'),
        LOG.text: ("git__git_log", '{"repo_path": "/srv/app", "max_count": 3}'),
    }
    settings = Settings(model="m", sizes=(100,), configs=("budget", "search"), max_tools=20)
    outcomes, replay = await _run(settings, [TIME, LOG], chat_brain(plan))
    assert [(o.config, o.right, o.valid) for o in outcomes] == [
        ("budget", True, True),
        ("budget", True, True),
        ("search", True, True),
        ("search", True, True),
    ]
    bodies = replay.bodies(CHAT)
    budget, search = bodies[:4], bodies[4:]
    assert all(len(b["tools"]) == 20 for b in budget)
    assert all(b["tools"][0]["function"]["name"] != "find_tools" for b in budget)
    assert all(b["tools"][0]["function"]["name"] == "find_tools" and len(b["tools"]) <= 20 for b in search)
    # the search's first call is not scored: the tool found and called after it is
    assert outcomes[2].calls[0]["name"] == "find_tools" or outcomes[2].turns == 2

    # groups: the copies of get_current_time on time and time_eu are one function
    group_plan = {TIME.text: ("get_current_time", '{"timezone": "Asia/Tokyo", "peer": "time_eu"}')}
    grouped = Settings(model="m", sizes=(100,), configs=("groups",), max_tools=20)
    [outcome], replay = await _run(grouped, [TIME], chat_brain(group_plan))
    names = [t["function"]["name"] for t in replay.bodies(CHAT)[0]["tools"]]
    assert "get_current_time" in names and not {"time__get_current_time", "time_eu__get_current_time"} & set(
        names
    )
    assert (outcome.right, outcome.valid, outcome.answered) == (True, True, True)


async def test_search_on_the_responses_api() -> None:
    plan = {LOG.text: ("git__git_log", '{"repo_path": "/srv/app"}')}
    settings = Settings(model="m", sizes=(100,), configs=("search-responses",), max_tools=16)
    [outcome], replay = await _run(settings, [LOG], responses_brain(plan))
    bodies = replay.bodies(RESPONSES)
    assert all(b["tools"][0]["name"] == "find_tools" and len(b["tools"]) <= 16 for b in bodies)
    assert all(b["max_output_tokens"] == 256 for b in bodies)
    assert (outcome.right, outcome.valid, outcome.answered) == (True, True, True)

    native = Settings(
        model="m", sizes=(100,), configs=("search-responses",), max_tools=16, native_search=True
    )
    with replay_openai([response([output_message("No.")])]) as replay:
        async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
            [outcome] = await run(client, native, [LOG])
    assert replay.bodies(RESPONSES)[0]["tools"][0]["type"] == "tool_search"
    assert (outcome.right, outcome.answered, outcome.problem) == (False, True, "no tool call")


async def test_token_counts_from_usage_or_estimated() -> None:
    plan = {TIME.text: ("time__get_current_time", '{"timezone": "Asia/Tokyo"}')}
    settings = Settings(model="m", sizes=(10,), configs=("budget",))
    [counted], _ = await _run(settings, [TIME], chat_brain(plan))
    assert (counted.prompt_tokens, counted.tokens_counted) == (2, True)  # usage says 1 per request
    [estimated], replay = await _run(settings, [TIME], chat_brain(plan, usage=False))
    assert not estimated.tokens_counted
    first = replay.bodies(CHAT)[0]
    assert estimated.prompt_tokens > len(json.dumps(first["tools"])) // 4


async def test_recall_helper() -> None:
    scores = await recall_at_k_async(100, (1, 10, 100))
    assert 0 < scores[1] <= scores[10] <= scores[100] == 1.0


def _time_then_done(body: dict[str, Any]) -> dict[str, Any]:
    """A model that calls the time tool, then answers once it has the result."""
    if body["messages"][-1]["role"] == "tool":
        return chat_completion({"content": "Done."})
    return chat_completion({"content": None, "tool_calls": [tool_call("c", "time__get_current_time", "{}")]})


@pytest.mark.subprocess  # the results record the commit (`git rev-parse`)
def test_command_line_writes_results(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    with replay_openai([_time_then_done] * 10) as replay:
        code = cli.main(
            [
                "--base-url",
                replay.base_url,
                "--model",
                "m",
                "--api-key",
                "k",
                "--sizes",
                "10",
                "--configs",
                "budget",
                "--limit",
                "3",
                "--quiet",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    document = json.loads(out.read_text())
    assert [row["requests"] for row in document["summary"]] == [3]
    assert {o["first_call"] for o in document["outcomes"]} == {"time__get_current_time"}


@pytest.mark.subprocess  # the results record the commit (`git rev-parse`)
def test_resume_runs_only_what_a_run_cut_short_left_and_refuses_other_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    common = ["--model", "m", "--api-key", "k", "--sizes", "10", "--configs", "budget", "--quiet"]
    with replay_openai([_time_then_done] * 6) as replay:
        assert cli.main(["--base-url", replay.base_url, *common, "--limit", "3", "--out", str(out)]) == 0
    first = json.loads(out.read_text())
    # cut short after its second conversation
    cut = first | {"complete": False, "outcomes": first["outcomes"][:2], "commit": "commit 0000000"}
    out.write_text(json.dumps(cut))
    with replay_openai([_time_then_done] * 2) as replay:
        again = ["--limit", "3", "--out", str(out), "--resume"]
        code = cli.main(["--base-url", replay.base_url, *common, *again])
        asked = [body["messages"][-1]["content"] for body in replay.bodies(CHAT)]
    assert code == 0
    document = json.loads(out.read_text())
    assert document["complete"] and document["date"] == first["date"]
    assert [o["request"] for o in document["outcomes"]] == [o["request"] for o in first["outcomes"]]
    assert len(asked) == 2  # the third request only: its call, then its answer
    assert "2 conversations already run" in capsys.readouterr().out
    assert document["commit"] == f"commit 0000000 then {first['commit']}"  # each part's code
    with replay_openai([_time_then_done] * 2) as replay:
        again = ["--limit", "2", "--out", str(out), "--resume"]
        code = cli.main(["--base-url", replay.base_url, *common, *again])
        assert replay.bodies(CHAT) == []
    assert code == 2
    assert "other settings (default_limit)" in capsys.readouterr().out
    assert json.loads(out.read_text()) == document
    with replay_openai([]) as replay:  # once more: nothing left to run, the same commits
        again = ["--limit", "3", "--out", str(out), "--resume"]
        assert cli.main(["--base-url", replay.base_url, *common, *again]) == 0
    assert json.loads(out.read_text())["commit"] == document["commit"]


async def test_without_takes_out_what_it_names_from_what_the_model_is_sent() -> None:
    group_plan = {TIME.text: ("get_current_time", '{"timezone": "Asia/Tokyo", "peer": "time_eu"}')}
    sent: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for without in ((), ("via", "defaults", "peer-enum")):
        settings = Settings(model="m", sizes=(100,), configs=("groups",), max_tools=20, without=without)
        [outcome], replay = await _run(settings, [TIME], chat_brain(group_plan))
        assert outcome.right
        sent[without] = replay.bodies(CHAT)[0]["tools"]
    full, bare = sent[()], sent[("via", "defaults", "peer-enum")]
    assert [t["function"]["name"] for t in full] == [t["function"]["name"] for t in bare]

    def texts(tools: list[dict[str, Any]]) -> str:
        return json.dumps(tools)

    # what the router publishes has all three, and only they are gone from the stripped copy
    assert " (via " in texts(full) and "Default: " in texts(full)
    group = next(t["function"] for t in full if t["function"]["name"] == "get_current_time")
    assert set(group["parameters"]["properties"]["peer"]["enum"]) == {"time", "time_eu"}
    assert " (via " not in texts(bare) and "Default: " not in texts(bare)
    stripped = next(t["function"] for t in bare if t["function"]["name"] == "get_current_time")
    assert "enum" not in stripped["parameters"]["properties"]["peer"]
    assert stripped["parameters"]["properties"]["peer"]["description"].startswith("The peer to prefer")
    assert strip_tools(full, ()) == full
    again = strip_tools(full, ("via",))
    assert again != full and " (via " in texts(full)  # a copy: what it was given is unchanged


@pytest.mark.subprocess  # the results record the commit (`git rev-parse`)
@pytest.mark.parametrize("limit", [["--limit", "0"], ["--limits", "budget:10=0"], ["--limit", "1"]])
def test_command_line_limit_zero_runs_every_request(tmp_path: Path, limit: list[str]) -> None:
    out = tmp_path / "r.json"
    picked = ["--requests", "time-1,time-2"]
    with replay_openai([_time_then_done] * 10) as replay:
        common = ["--base-url", replay.base_url, "--model", "m", "--api-key", "k", "--sizes", "10"]
        code = cli.main([*common, "--configs", "budget", *picked, *limit, "--quiet", "--out", str(out)])
    assert code == 0
    document = json.loads(out.read_text())
    assert document["complete"] is True
    expected = 1 if limit == ["--limit", "1"] else 2
    assert [row["requests"] for row in document["summary"]] == [expected]
    assert [o["request"] for o in document["outcomes"]] == ["time-1", "time-2"][:expected]
    assert all(o["right"] for o in document["outcomes"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--limit", "-1"], "expected 0 (every request) or more, not -1"),
        (["--limit", "x"], "expected a number of requests, not 'x'"),
        (["--limits", "budget:ten=3"], "expected CONFIG:SIZE=N, not 'budget:ten=3'"),
        (["--limits", "nope:10=3"], "unknown configuration 'nope'"),
    ],
)
def test_command_line_refuses_bad_limits_with_a_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        cli.parser().parse_args(argv)
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_chosen_requests() -> None:
    requests = load_requests()
    assert chosen(requests, None) == chosen(requests, 0) == requests
    assert len(chosen(requests, 5)) == 5 and chosen(requests, 1) == requests[:1]


def test_the_evaluation_page_links_nothing_outside_the_repository() -> None:
    root = Path(__file__).resolve().parents[2]
    page = root / "docs" / "evals.md"
    text = page.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r"(?<![\w/.])\.\./[^\s),`]+", text)
    assert targets  # the page does link to the harness's files
    for target in targets:
        assert not re.match(r"[a-z][a-z0-9+.-]*:", target), f"{target} leaves the repository"
        path = target.split("#")[0]
        if not path:
            continue  # an anchor on the page itself
        resolved = (page.parent / path).resolve()
        assert resolved.is_relative_to(root), f"{target} is outside the repository"
        assert resolved.exists(), f"{target} does not exist"
    anchors = {
        re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", text, re.M)
    }
    for target in targets:
        if target.startswith("#"):
            assert target[1:] in anchors, f"{target} names no heading of the page"


async def test_misses_names_the_requests_below_k_and_what_ranked_above() -> None:
    from benchmarks.evals.rankings import misses, ranks_by_ranking

    requests = load_requests()[::15]
    ranks = (await ranks_by_ranking(100, requests, None))["BM25"]
    for k in (0, 1, 3):
        lines = await misses(100, requests, None, k=k, above=2)
        headers = [line for line in lines if line.startswith("#")]
        assert len(headers) == sum(r is None or r > k for r in ranks)
        for place, request in zip(ranks, requests, strict=True):
            if place is None or place > k:
                assert f"#{place} {request.tool}: {request.text!r}" in headers
    everything = await misses(100, requests, None, k=0, above=2)
    # Each missed request is followed by one to two distinct tools (a replica's copy is the same
    # tool) that ranked above it, and none when it ranked first.
    blocks = "\n".join(everything).split("\n#")
    assert len(blocks) == len(requests)
    for block, place in zip(blocks, ranks, strict=True):
        above = [line.split()[0].split("__", 1)[1] for line in block.splitlines()[1:]]
        assert len(set(above)) == len(above) <= 2
        assert (len(above) == 0) is (place == 1)
    assert await misses(100, requests, None, k=100) == []
    with pytest.raises(ValueError, match="needs an embedder"):
        await misses(100, requests, None, "blend 0.5")


async def test_the_rankings_rows_order_the_tools_as_the_adapter_does() -> None:
    # `ranks_by_ranking` orders BM25's scores itself (copies spread apart, `_order`); its ranks
    # must be those of the adapter's own `rank_tools` (`recall.ranks`), in a catalogue with copies.
    from benchmarks.evals.rankings import ranks_by_ranking
    from benchmarks.evals.recall import ranks

    requests = load_requests()[::4]
    for size in (100, 5000):
        assert (await ranks_by_ranking(size, requests, None))["BM25"] == await ranks(size, requests=requests)
