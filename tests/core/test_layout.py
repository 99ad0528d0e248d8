"""The package layout stays as docs/architecture.md draws it: imports point down the flow.

Every module's imports are read with `ast` (those under TYPE_CHECKING and inside functions
too), resolved to module names, and checked against the rules; `import mcpx_router` is run in a
fresh interpreter to check that nothing heavy loads with it. The shape rules are here too: how
many modules a package holds at any level, families of modules in sub-packages of their own, the
tests folders mirroring the packages, how long a module may be, no class made of mixins.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcpx_router

PACKAGE = Path(mcpx_router.__file__).resolve().parent
ROOT = "mcpx_router"
SUBPACKAGES = (
    "model",
    "peers",
    "mcpx",
    "cli",
    "sync",
    "groups",
    "relevance",
    "codemode",
    "integrations",
    "inspector",
)
FAMILIES = ("groups", "relevance", "codemode")
"""The core's families: packages of the core's own, each plugged in by the few modules named in SOCKETS."""
SOCKETS = {
    "groups": {"mcpx_router", "mcpx_router._adapter", "mcpx_router._answering", "mcpx_router._catalogue"},
    "relevance": {"mcpx_router", "mcpx_router._adapter", "mcpx_router.loop"},
    # Code mode loads on first use only: `mcpx_router.codemode` (the package's __getattr__), and
    # the loops' `code_mode=` (loop.py loads with `from mcpx_router.loop import ...`).
    "codemode": {"mcpx_router", "mcpx_router.loop"},
}
"""The modules of the core (outside the families) that may import each family."""
MAX_LINES = 400
ONE_IDEA = "One idea:"
"""A module over MAX_LINES says why it is one idea, in its docstring, on a line starting with this."""
MAX_MODULES = 16
"""The most modules (its __init__ counted) one package holds directly, at every level."""
FAMILY = 3
"""This many modules of one package named alike (`_strict`, `_strict_input`, `_strict_rules`) are a
family: they live in a sub-package of their own, named after them."""
REPO = PACKAGE.parent
TESTS = REPO / "tests"
TESTS_OF_THEIR_OWN = {"core", "support", "typing", "evals", "benchmarks"}
"""The tests folders that mirror no sub-package: the package's top modules (core), the helpers,
the type-checking tests, benchmarks/evals and the benchmarks' entry point."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str) -> Iterator[str]:
    """The modules of this package that module `name` imports, by full name."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.split(".")[0] == ROOT)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != ROOT:
                continue
            submodules = [f"{target}.{alias.name}" for alias in node.names]
            yield from (
                (s for s in submodules if s in MODULES) if all(s in MODULES for s in submodules) else [target]
            )


def _area(name: str) -> str:
    """'model', 'peers', 'mcpx', 'cli', 'sync', 'groups', 'relevance', 'integrations', or 'core'
    for the package's top-level modules."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in SUBPACKAGES else "core"


def _layer(name: str) -> str:
    """As `_area`, but the core's families count as the core."""
    area = _area(name)
    return "core" if area in FAMILIES else area


@functools.cache
def edges() -> dict[str, list[str]]:
    """Each module's imports of this package; read when a test needs them, not when every worker
    collects this module (it parses every module of the package)."""
    return {name: sorted(set(_imports(name))) for name in MODULES}


def _breaking(rule: str, allowed: dict[str, set[str]], exempt: frozenset[str] = frozenset()) -> list[str]:
    return [
        f"{name} imports {target} ({rule})"
        for name, targets in edges().items()
        if name not in exempt
        for target in targets
        if _layer(target) not in allowed.get(_layer(name), {_layer(target)})
    ]


def test_the_modules_are_found() -> None:
    assert {"mcpx_router._adapter", "mcpx_router.model._schema", "mcpx_router.peers._router"} <= set(MODULES)
    assert "mcpx_router.model._schema" in edges()["mcpx_router._catalogue"]
    assert "mcpx_router._errors" in edges()["mcpx_router.model._schema"]


def test_the_families_are_plugged_in_only_where_the_sockets_are() -> None:
    wrong = [
        f"{name} imports {target}"
        for name, targets in edges().items()
        if _area(name) == "core"
        for target in targets
        if _area(target) in FAMILIES and name not in SOCKETS[_area(target)]
    ]
    assert wrong == []


def test_the_families_know_nothing_of_each_other() -> None:
    wrong = [
        f"{name} imports {target}"
        for name, targets in edges().items()
        if _area(name) in FAMILIES
        for target in targets
        if _area(target) in FAMILIES and _area(target) != _area(name)
    ]
    assert wrong == []


def test_model_imports_only_itself_errors_and_naming() -> None:
    core_allowed = {"mcpx_router._errors", "mcpx_router._naming"}
    wrong = [
        f"{name} imports {target}"
        for name, targets in edges().items()
        if _area(name) == "model"
        for target in targets
        if _area(target) != "model" and target not in core_allowed
    ]
    assert wrong == []


def test_mcpx_knows_nothing_of_the_router_or_the_command() -> None:
    assert _breaking("mcpx below peers and cli", {"mcpx": {"mcpx", "core", "model"}}) == []


def test_only_the_command_imports_the_command() -> None:
    wrong = [
        f"{name} imports {target}"
        for name, targets in edges().items()
        if _area(name) != "cli" and name != "mcpx_router.__main__"
        for target in targets
        if _area(target) == "cli"
    ]
    assert wrong == []


def test_the_core_imports_neither_the_router_side_nor_the_command() -> None:
    # The package's __init__ is its public face: it re-exports the Router (see docs/architecture.md).
    facade = frozenset({"mcpx_router", "mcpx_router.__main__"})
    assert _breaking("core below peers, mcpx and cli", {"core": {"core", "model"}}, facade) == []


def test_the_blocking_facade_sits_on_top_and_nothing_imports_it() -> None:
    # `mcpx_router.sync` wraps the Router; the command and the rest know nothing of it.
    assert _breaking("sync above peers, below nothing", {"sync": {"sync", "peers", "core", "model"}}) == []
    wrong = [
        f"{name} imports {target}"
        for name, targets in edges().items()
        if _area(name) != "sync"
        for target in targets
        if _area(target) == "sync"
    ]
    assert wrong == []


def test_the_framework_integrations_sit_on_top_and_nothing_imports_them() -> None:
    # Each integration imports its framework (an optional extra): nothing else of the package may.
    allowed = {"integrations": {"integrations", "core", "model", "peers", "sync"}}
    assert _breaking("integrations above peers and sync, below nothing", allowed) == []
    wrong = [
        f"{name} imports {target}"
        for name, targets in edges().items()
        if _area(name) != "integrations"
        for target in targets
        if _area(target) == "integrations"
    ]
    assert wrong == []


def test_the_inspector_sits_below_the_command_and_only_the_command_imports_it() -> None:
    # It reads the Router (peers/) and serves with the gateway's Hypercorn (mcpx/); `inspect` serves it.
    allowed = {"inspector": {"inspector", "core", "model", "peers", "mcpx"}}
    assert _breaking("inspector above peers and mcpx, below cli", allowed) == []
    wrong = [
        f"{name} imports {target}"
        for name, targets in edges().items()
        if _area(name) not in ("inspector", "cli")
        for target in targets
        if _area(target) == "inspector"
    ]
    assert wrong == []


def test_a_host_mounting_the_inspector_loads_no_hypercorn() -> None:
    loaded = _loaded_after("import mcpx_router.inspector as i; i.Inspector")
    assert "mcpx_router.inspector._app" in loaded
    assert sorted(m for m in loaded if m.split(".")[0] in ("hypercorn", "wsproto", "openai")) == []


def test_peers_does_not_import_the_command() -> None:
    assert _breaking("peers below cli", {"peers": {"peers", "core", "model", "mcpx"}}) == []


def test_no_modules_import_each_other_even_for_types() -> None:
    """No import cycle between modules at all (TYPE_CHECKING imports count)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(name: str) -> None:  # Tarjan's strongly connected components
        index[name] = low[name] = len(index)
        stack.append(name)
        for target in edges().get(name, []):
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == name:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in MODULES:
        if name not in index:
            visit(name)
    assert cycles == []


def _unit(package: str, name: str) -> str | None:
    """What `name` is one of, seen from `package`: the module or sub-package directly in it."""
    if not name.startswith(f"{package}."):
        return None
    return f"{package}.{name[len(package) + 1 :].split('.')[0]}"


def _package_circles(package: str, imports: dict[str, list[str]]) -> list[list[str]]:
    """The circles among the modules and sub-packages directly in `package`, each sub-package
    counted as one (with everything in it): Tarjan's strongly connected components."""
    graph: dict[str, set[str]] = {}
    for name, targets in imports.items():
        if (source := _unit(package, name)) is None:
            continue
        for target in targets:
            if (unit := _unit(package, target)) is not None and unit != source:
                graph.setdefault(source, set()).add(unit)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for target in sorted(graph.get(name, ())):
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            component = []
            while (top := stack.pop()) != name:
                component.append(top)
            if component:
                circles.append(sorted([*component, name]))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return circles


def test_packages_form_layers_at_every_level() -> None:
    """No circle between packages: in every package, its modules and sub-packages (each as one)
    import each other in one direction only (TYPE_CHECKING imports count)."""
    packages = sorted(name for name, path in MODULES.items() if path.name == "__init__.py")
    assert {package: circles for package in packages if (circles := _package_circles(package, edges()))} == {}


def test_a_circle_between_packages_is_found() -> None:
    imports = {
        "p.a": ["p.sub.x"],
        "p.sub.x": ["p.sub.y"],
        "p.sub.y": ["p.b"],
        "p.b": ["p.a"],
        "p.c": ["p.sub.x"],
    }
    assert _package_circles("p", imports) == [["p.a", "p.b", "p.sub"]]
    assert _package_circles("p.sub", imports) == []


def test_a_tool_calls_path_reads_top_to_bottom() -> None:
    """From `dispatch` to the peer session and back (recorded by `python -m benchmarks.layout`):
    every call from one module into another goes down the import graph, the path reaches each
    step of docs/architecture.md's route in order, and no module the path left is entered again
    except to return."""
    from benchmarks.layout import below, reentries, steps

    path = steps()
    calls = [(source, target, function) for way, source, target, function in path if way == "call"]
    assert [call for call in calls if call[1] not in below(call[0])] == []
    assert calls[0][:2] == ("mcpx_router._adapter", "mcpx_router._answering")
    entered = [target for _, target, _ in calls]
    route = [
        "mcpx_router.model.calls._calls",
        "mcpx_router._catalogue",
        "mcpx_router._published",
        "mcpx_router._dispatch",
        "mcpx_router._session",
        "mcpx_router.model._results",
        "mcpx_router.model.calls._answers",
    ]
    assert [module for module in entered if module in route] == route
    # every call returns: the path ends where it started
    assert path[-1][0] == "return" and path[-1][2] == "mcpx_router._adapter"
    assert reentries(path) == []


def test_the_downward_rule_sees_an_upward_call() -> None:
    from benchmarks.layout import below, reentries

    assert "mcpx_router._dispatch" in below("mcpx_router._adapter")
    assert "mcpx_router._adapter" not in below("mcpx_router._dispatch")
    path = [
        ("call", "a", "b", "f"),
        ("return", "b", "a", "f"),
        ("call", "a", "b", "g"),
        ("call", "b", "c", "h"),
    ]
    assert reentries(path) == [("call", "a", "b", "g")]


def _says_it_is_one_idea(path: Path) -> bool:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    lines = docstring.splitlines()
    return any(line.startswith(ONE_IDEA) and len(line) > len(ONE_IDEA) + 10 for line in lines)


def test_no_module_is_over_the_line_limit_unless_it_says_why_it_is_one_idea() -> None:
    long = {
        str(path.relative_to(PACKAGE)): count
        for path in MODULES.values()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and not _says_it_is_one_idea(path)
    }
    assert long == {}


def test_a_module_claims_the_exemption_with_a_docstring_line(tmp_path: Path) -> None:
    claims = tmp_path / "claims.py"
    claims.write_text('"""Title.\n\nOne idea: the adapter is the face of its parts.\n"""\n')
    silent = tmp_path / "silent.py"
    silent.write_text('"""Title.\n\nLong. One idea: not at a line\'s start.\n"""\n# One idea: a comment\n')
    empty = tmp_path / "empty.py"
    empty.write_text('"""One idea:"""\n')
    assert [_says_it_is_one_idea(p) for p in (claims, silent, empty)] == [True, False, False]


def _packages(root: Path) -> list[Path]:
    return sorted(init.parent for init in root.rglob("__init__.py"))


def _crowded(root: Path) -> dict[str, int]:
    return {
        str(folder.relative_to(REPO)): count
        for folder in _packages(root)
        if (count := len(list(folder.glob("*.py")))) > MAX_MODULES
    }


def test_every_package_holds_at_most_sixteen_modules_at_every_level() -> None:
    assert _crowded(PACKAGE) == {}
    assert _crowded(REPO / "benchmarks") == {}


def _families(folder: Path) -> dict[str, list[str]]:
    """Modules of one folder named alike (the first word of the name), three or more of them,
    unless the folder is named after them."""
    named: dict[str, list[str]] = {}
    for path in folder.glob("_*.py"):
        if not path.stem.startswith("__"):
            named.setdefault(path.stem.lstrip("_").split("_")[0], []).append(path.stem)
    return {
        word: sorted(stems) for word, stems in named.items() if len(stems) >= FAMILY and word != folder.name
    }


def test_a_family_of_modules_has_a_sub_package_of_its_own() -> None:
    crowds = {
        str(folder.relative_to(REPO)): families
        for root in (PACKAGE, REPO / "benchmarks")
        for folder in _packages(root)
        if (families := _families(folder))
    }
    assert crowds == {}


def test_the_family_rule_finds_a_family(tmp_path: Path) -> None:
    for stem in ("_auth", "_auth_config", "_auth_errors", "_link", "_link_state"):
        (tmp_path / f"{stem}.py").write_text("")
    assert _families(tmp_path) == {"auth": ["_auth", "_auth_config", "_auth_errors"]}
    named = tmp_path / "auth"
    named.mkdir()
    for stem in ("_auth", "_auth_config", "_auth_errors"):
        (named / f"{stem}.py").write_text("")
    assert _families(named) == {}


def test_the_tests_mirror_the_package() -> None:
    """tests/X/Y holds the tests of mcpx_router/X/Y; every sub-package has its folder of tests."""
    folders = {folder.relative_to(TESTS) for folder in _packages(TESTS) if folder != TESTS}
    own = {f for f in folders if f.parts[0] in TESTS_OF_THEIR_OWN}
    packages = {folder.relative_to(PACKAGE) for folder in _packages(PACKAGE) if folder != PACKAGE}
    assert sorted(map(str, folders - own - packages)) == []
    assert sorted(map(str, packages - folders)) == []


def test_no_class_is_built_from_methods_mixins() -> None:
    """One class, one file: a class holds its parts as collaborators, not `*Methods` bases."""
    mixed = [
        f"{name}.{node.name}({', '.join(ast.unparse(base) for base in node.bases)})"
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        and (
            node.name.endswith("Methods")
            or any(ast.unparse(base).split("[")[0].rsplit(".")[-1].endswith("Methods") for base in node.bases)
        )
    ]
    assert mixed == []


def test_the_adapter_is_one_class_in_one_file() -> None:
    from mcpx_router import OpenAIPeerToolAdapter

    assert OpenAIPeerToolAdapter.__bases__ == (object,)
    methods = [v for k, v in vars(OpenAIPeerToolAdapter).items() if callable(v) and not k.startswith("__")]
    assert len(methods) > 20
    assert {method.__module__ for method in methods} == {"mcpx_router._adapter"}


HEAVY = (
    "hypercorn",
    "wsproto",
    "openai",
    "jsonschema",
    "referencing",
    "jsonschema_specifications",
    # the frameworks of mcpx_router.integrations (optional extras)
    "agents",
    "pydantic_ai",
    # code mode's sandbox (an optional extra)
    "pydantic_monty",
)
LOADED = "import json, sys; {}; print(json.dumps(sorted(sys.modules)))"


def _loaded_after(statement: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", LOADED.format(statement)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(json.loads(done.stdout))


@pytest.fixture(scope="module")
def after_import() -> set[str]:
    return _loaded_after("import mcpx_router")


def test_importing_the_package_loads_nothing_heavy(after_import: set[str]) -> None:
    assert sorted(m for m in after_import if m.split(".")[0] in HEAVY) == []
    lazy = {
        "mcpx_router.mcpx.gateway._gateway",
        "mcpx_router.mcpx.gateway._serve",
        "mcpx_router.mcpx._ws",
        "mcpx_router.loop",
        # loaded by the first call, the first strict or JSON-string tool, the first topic joined
        "mcpx_router.model.arguments._validation",
        "mcpx_router.model.strict._strict",
        "mcpx_router.model.arguments._jsonstring",
        # the first calls written as text (`text_calls=True`)
        "mcpx_router.model.calls._text_calls",
        "mcpx_router.model.calls._written_calls",
        "mcpx_router.mcpx.client._topic",
        "mcpx_router.mcpx.client._participant",
        "mcpx_router.mcpx._envelope",
        "mcpx_router.mcpx.bridge._bridge",
        "mcpx_router.sync",
        "mcpx_router.integrations",
        "mcpx_router.integrations.agents",
        "mcpx_router.integrations.pydantic_ai",
        "mcpx_router.codemode",
        # the inspector (Starlette's app side, served with Hypercorn): `mcpx-router inspect`
        "mcpx_router.inspector",
        "mcpx_router.inspector._app",
        "mcpx_router.inspector._guard",
        "mcpx_router.inspector._feed",
        "mcpx_router.inspector._serve",
    }
    assert lazy & after_import == set()


def test_importing_the_package_loads_no_other_library_than_mcp_does(after_import: set[str]) -> None:
    # httpx2, pydantic, anyio...: whatever third-party code loads, `import mcp` loads it already.
    by_mcp = _loaded_after("import mcp, mcp_types")
    extra = {m.split(".")[0] for m in after_import - by_mcp} - {"mcpx_router"}
    assert sorted(extra - sys.stdlib_module_names) == []


def test_what_loads_lazily_loads_when_used() -> None:
    loaded = _loaded_after(
        "import mcpx_router, mcp_types as mt; "
        "a = mcpx_router.OpenAIPeerToolAdapter(strict=True, json_string_params=True); "
        "schema = {'type': 'object', 'properties': {'o': {'type': 'object'}}}; "
        "a._catalogue.set_peer('p', [mt.Tool(name='t', input_schema=schema)]); "
        "a.tools[0].validator(); "
        "from mcpx_router.mcpx import TopicClient, ParticipantServer"
    )
    assert {
        "jsonschema",
        "mcpx_router.model.arguments._validation",
        "mcpx_router.model.strict._strict",
        "mcpx_router.model.arguments._jsonstring",
        "mcpx_router.mcpx.client._topic",
        "mcpx_router.mcpx.client._participant",
    } <= loaded


def test_the_stemmer_loads_at_the_first_ranking_not_at_import_or_with_an_adapter(
    after_import: set[str],
) -> None:
    assert "snowballstemmer" not in after_import
    made = _loaded_after("import mcpx_router; mcpx_router.OpenAIPeerToolAdapter()")
    assert "snowballstemmer" not in made
    ranked = _loaded_after("from mcpx_router.model._budget import rank; rank(['git log'], 'commits')")
    assert "snowballstemmer" in ranked


FRAMEWORKS = ("langchain_core", "langgraph", "langsmith", "dspy", "litellm")


def test_importing_the_package_loads_no_agent_framework(after_import: set[str]) -> None:
    assert sorted(m for m in after_import if m.split(".")[0] in FRAMEWORKS) == []
    assert sorted(m for m in after_import if m.startswith("mcpx_router.integrations")) == []


@pytest.mark.parametrize(
    ("module", "framework"),
    [("langchain", "langgraph.prebuilt"), ("dspy", "dspy")],
)
def test_an_integration_loads_its_framework_only(module: str, framework: str) -> None:
    loaded = _loaded_after(f"import mcpx_router.integrations.{module}")
    assert framework in loaded
    # create_agent's middleware (the `langchain` package) loads with LangChainTools.middleware().
    others = {"langchain": {"dspy", "langchain"}, "dspy": {"langgraph"}}[module]
    assert sorted(m for m in loaded if m.split(".")[0] in others) == []


def test_importing_the_package_loads_no_starlette_beyond_what_mcp_does(after_import: set[str]) -> None:
    # The `mcp` SDK imports part of Starlette itself; our gateway's routes and ASGI app must not add to it.
    by_mcp = _loaded_after("import mcp, mcp_types")
    assert sorted(m for m in after_import - by_mcp if m.split(".")[0] == "starlette") == []


def test_what_the_docs_name_is_reachable_as_written() -> None:
    """`from mcpx_router import sync` then `sync.loop.run_chat`, `mcpx_router.testing.HashingEmbedder`:
    every public dotted path the docs write resolves attribute by attribute in a fresh interpreter."""
    root = PACKAGE.parent
    texts = [path.read_text(encoding="utf-8") for path in [root / "README.md", *(root / "docs").glob("*.md")]]
    paths = {
        found
        for text in texts
        for found in re.findall(r"\bmcpx_router(?:\.[A-Za-z_][A-Za-z0-9_]*)+", text)
        if f"{ROOT}.{found.split('.')[1]}" in MODULES and "._" not in found
    }
    assert {"mcpx_router.sync.loop.run_chat", "mcpx_router.testing.HashingEmbedder"} <= paths
    check = (
        "import functools, mcpx_router; from mcpx_router import sync; sync.loop.run_chat; "
        f"[functools.reduce(getattr, p.split('.')[1:], mcpx_router) for p in {sorted(paths)!r}]"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=60)
    # and importing the package still loads none of them
    assert _loaded_after("import mcpx_router") & {"mcpx_router.sync", "mcpx_router.loop", "openai"} == set()


def test_the_gateway_side_loads_when_used() -> None:
    loaded = _loaded_after(
        "from mcpx_router.mcpx import Gateway, gateway_main; import mcpx_router.mcpx as m; m.run_gateway"
    )
    assert {
        "hypercorn",
        "starlette.applications",
        "mcpx_router.mcpx.gateway._gateway",
        "mcpx_router.mcpx.gateway._serve",
    } <= loaded
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = mcpx_router.mcpx.nothing_here  # type: ignore[attr-defined]
