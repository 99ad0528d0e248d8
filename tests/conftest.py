"""The suite's shared fixtures, and the `subprocess` marker that `python3 dev.py test --quick` leaves out
(with the `typecheck` tests, which run mypy).

A test is marked `subprocess` when it starts another process: a stdio peer, an HTTP or OAuth test
server, a third-party server, nats-server, the command line as a child process. The marker is found,
not written: at collection, the test function, its fixtures and every function or class of the test
suite they use (in any module under tests/, followed through their globals) are searched for the
names that start a process (`StdioPeer`, `subprocess`, `sys.executable`, `open_process`, ...).
Tests may be moved between files and directories; nothing lists them by path. A test that starts
a process without being marked fails, saying so (`_no_unmarked_processes`), so the selection of
`--quick` cannot silently go wrong.
"""

from __future__ import annotations

import subprocess
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

# No per-example deadline: Hypothesis's default (200 ms) is a wall-clock bound that a busy machine
# breaks, and the test modules' own @settings inherit from this profile.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

_SPAWNING_NAMES = frozenset(
    {
        "StdioPeer",  # mcpx_router's stdio peers start their command
        "CodeMode",  # code mode's sandbox runs in pydantic-monty worker processes
        "StdioServerParameters",  # the mcp SDK's stdio client starts its command
        "stdio_client",
        "subprocess",  # subprocess.run / Popen / PIPE
        "executable",  # sys.executable: a Python child process, or a config entry that starts one
        "open_process",  # anyio
        "create_subprocess_exec",  # asyncio
        "create_subprocess_shell",
        "run_process",
        "Popen",
        "fork",
        "spawn",
    }
)
"""Names whose use in a test, its fixtures or the suite's helpers means a process is started."""

_SUITE_PREFIXES = ("tests.", "benchmarks.")
"""Whose functions and classes are followed: the test suite's, and the benchmarks some tests run."""


def _is_suite_object(value: object) -> bool:
    module = getattr(value, "__module__", None) or ""
    return module.startswith(_SUITE_PREFIXES) and module != __name__  # not this file's own guard


def _names_a_python_process(value: object) -> bool:
    """A constant such as `SERVER = [sys.executable, "server.py"]`: a command line to be started."""
    if isinstance(value, str):
        return value == sys.executable or sys.executable in value.split()
    if isinstance(value, list | tuple):
        return any(_names_a_python_process(part) for part in value)
    return False


def _code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def _functions_of(value: object) -> Iterator[types.FunctionType]:
    """The Python functions that make up `value`: itself, a wrapped function, a class's methods."""
    if isinstance(value, types.FunctionType):
        yield value
        inner = getattr(getattr(value, "hypothesis", None), "inner_test", None)  # @given's test
        for wrapped in (getattr(value, "__wrapped__", None), inner):
            if isinstance(wrapped, types.FunctionType):
                yield from _functions_of(wrapped)
    elif isinstance(value, staticmethod | classmethod):
        yield from _functions_of(value.__func__)
    elif isinstance(value, property):
        for part in (value.fget, value.fset, value.fdel):
            yield from _functions_of(part)
    elif isinstance(value, type):
        for klass in value.__mro__:
            if _is_suite_object(klass):
                for member in vars(klass).values():
                    yield from _functions_of(member)


_spawns_cache: dict[types.CodeType, bool] = {}


def _spawns(function: types.FunctionType, visiting: set[types.CodeType]) -> bool:
    """Whether `function`, or a function of the test suite it refers to, starts a process."""
    code = function.__code__
    if code in _spawns_cache:
        return _spawns_cache[code]
    if code in visiting:
        return False
    visiting.add(code)
    names = set(_code_names(code))
    found = bool(names & _SPAWNING_NAMES)
    if not found:
        for name in names:
            value = function.__globals__.get(name)
            if _names_a_python_process(value):
                found = True
                break
            if value is None or not _is_suite_object(value):
                continue
            if any(_spawns(f, visiting) for f in _functions_of(value)):
                found = True
                break
    visiting.discard(code)
    if found or not visiting:  # a False found inside a cycle may be incomplete: cache only at the top
        _spawns_cache[code] = found
    return found


def _fixture_functions(item: pytest.Function) -> Iterator[types.FunctionType]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return
    for definitions in info.name2fixturedefs.values():
        for definition in definitions:
            yield from _functions_of(definition.func)


def _starts_processes(item: pytest.Function) -> bool:
    functions = [*_functions_of(item.function), *_fixture_functions(item)]
    return any(_spawns(f, set()) for f in functions if _is_suite_object(f))


QUICK_EXAMPLES = 0.1
"""Under --quick, each property test tries this fraction of its examples (at least 10)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help="the edit-test loop: leave out the tests that start processes (marked `subprocess`, "
        "thirdparty and nats among them) and those that run mypy (marked `typecheck`), and try "
        f"{QUICK_EXAMPLES:.0%} of each property test's examples",
    )


def _fewer_examples(item: pytest.Function, done: set[int]) -> None:
    """Scale down the examples of a @given test, or of a rule-based state machine's TestCase, once
    (parametrized items share the function, a class's methods the class)."""
    function = getattr(item.obj, "__func__", item.obj)  # a test class's method: its function
    for owner, attribute in ((function, "_hypothesis_internal_use_settings"), (item.cls, "settings")):
        current = getattr(owner, attribute, None) if owner is not None else None
        if isinstance(current, settings) and current.max_examples > 10 and id(owner) not in done:
            done.add(id(owner))
            fewer = max(10, int(current.max_examples * QUICK_EXAMPLES))
            setattr(owner, attribute, settings(current, max_examples=fewer))


def _left_out_of_quick(item: pytest.Item) -> bool:
    """A test that starts a process, or that runs mypy (a type check, as the lint is)."""
    return any(item.get_closest_marker(name) is not None for name in ("subprocess", "typecheck"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "subprocess: starts another process (found at collection, see tests/conftest.py); "
        '`python3 dev.py test --quick` runs -m "not subprocess"',
    )


def _shared_fixtures(item: pytest.Function) -> list[str]:
    """The suite's module- or session-scoped fixtures `item` uses (a NATS cluster, installed servers)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return sorted(
        f"{definition.baseid or 'tests'}::{name}"
        for name, definitions in info.name2fixturedefs.items()
        for definition in definitions
        if definition.scope != "function" and _is_suite_object(definition.func)
    )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function):
            # Tests sharing such a fixture run on one worker, which sets it up once (--dist loadgroup).
            for shared in _shared_fixtures(item):
                item.add_marker(pytest.mark.xdist_group(shared))
    for item in items:
        if isinstance(item, pytest.Function) and (
            item.get_closest_marker("subprocess") is None
            and (
                item.get_closest_marker("thirdparty") is not None
                or item.get_closest_marker("nats") is not None
                or _starts_processes(item)
            )
        ):
            item.add_marker(pytest.mark.subprocess)
    if config.getoption("--quick"):
        kept = [item for item in items if not _left_out_of_quick(item)]
        left_out = [item for item in items if _left_out_of_quick(item)]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = kept
        done: set[int] = set()
        for item in kept:
            if isinstance(item, pytest.Function):
                _fewer_examples(item, done)
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: every worker sorts alike
        _longest_first(items, _recorded_durations(config))


_DURATIONS = "mcpx_router/durations"
"""The cache key (in .pytest_cache) of each test's duration in the last parallel run, per mode."""


def _durations_key(config: pytest.Config) -> str:
    return f"{_DURATIONS}/{'quick' if config.getoption('--quick') else 'full'}"


def _recorded_durations(config: pytest.Config) -> dict[str, float]:
    cache = getattr(config, "cache", None)
    recorded = cache.get(_durations_key(config), {}) if cache is not None else {}
    return recorded if isinstance(recorded, dict) else {}


def _expected_duration(item: pytest.Item, recorded: dict[str, float]) -> float:
    """How long `item` took last time, else a guess: starting processes is slow, properties next."""
    seconds = recorded.get(item.nodeid)
    if isinstance(seconds, int | float):
        return float(seconds)
    if item.get_closest_marker("subprocess") is not None:
        return 5.0
    if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
        return 2.0
    return 0.1


def _longest_first(items: list[pytest.Item], recorded: dict[str, float]) -> None:
    """Sort `items` by how long each unit of work takes, longest first: a unit is one test, or
    the tests of one xdist_group, which stay together and in their order (one worker runs them)."""
    units: dict[str, float] = {}
    first: dict[str, int] = {}
    unit_of: list[str] = []
    for index, item in enumerate(items):
        group = item.get_closest_marker("xdist_group")
        unit = f"group:{group.args[0] if group.args else group.kwargs.get('name')}" if group else item.nodeid
        unit_of.append(unit)
        units[unit] = units.get(unit, 0.0) + _expected_duration(item, recorded)
        first.setdefault(unit, index)
    order = sorted(range(len(items)), key=lambda i: (-units[unit_of[i]], first[unit_of[i]], i))
    items[:] = [items[i] for i in order]


# Longest first: pytest-xdist hands tests out in collection order (groups of tests sharing a fixture
# before single tests), so a run sorted so is not left waiting on a long test started last. The
# workers sort (above); the controller records what each test took, for the next run.
_durations: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    cache = getattr(config, "cache", None)
    if cache is None or hasattr(config, "workerinput") or not _durations:
        return
    if getattr(config.option, "numprocesses", None):  # parallel runs only: they are the ones sorted
        cache.set(_durations_key(config), {**_recorded_durations(config), **_durations})


@pytest.fixture(autouse=True)
def _no_unmarked_processes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail a test that starts a process without the `subprocess` marker (it would run in --quick)."""
    if request.node.get_closest_marker("subprocess") is not None:
        return
    test = request.node.nodeid

    def refuse(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> Any:
        raise AssertionError(
            f"{test} starts a process ({args!r}) but is not marked `subprocess`: mark it "
            "@pytest.mark.subprocess, or add the name that starts it to _SPAWNING_NAMES in tests/conftest.py"
        )

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)


@pytest.fixture(autouse=True)
def _same_recursion_limit() -> Iterator[None]:
    """A test that raises the interpreter's recursion limit (mypy's API, run in-process, does)
    leaves it as it found it: how deep a schema may nest before the validator refuses it depends
    on that limit, and another test on the same worker must see the interpreter's own."""
    limit = sys.getrecursionlimit()
    yield
    sys.setrecursionlimit(limit)


@pytest.fixture(autouse=True)
def _secrets_of_the_test_only() -> Iterator[None]:
    """The secrets a test's configs and specs remember are forgotten after it: a value one test
    keeps ("abc") must not be masked in the messages another test on the same worker reads."""
    from mcpx_router._errors import SECRETS

    with SECRETS.kept():
        yield


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs once on asyncio and once on trio."""
    return str(request.param)
