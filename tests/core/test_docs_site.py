"""The documentation site (mkdocs.yml): built with `--strict` as `python3 dev.py docs` serves it,
so a broken link or anchor, a page left out of the navigation, or an object the API reference
cannot find fails here; and every public name has a docstring that says what it does.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import griffe
import pytest

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = {
    # module: the reference page that documents its public names
    "mcpx_router": "reference/index.html",
    "mcpx_router.peers": "reference/peers/index.html",
    "mcpx_router.mcpx": "reference/mcpx/index.html",
    "mcpx_router.loop": "reference/loop/index.html",
    "mcpx_router.testing": "reference/loop/index.html",
    "mcpx_router.sync": "reference/sync/index.html",
    "mcpx_router.integrations.agents": "reference/integrations/index.html",
    "mcpx_router.integrations.pydantic_ai": "reference/integrations/index.html",
    "mcpx_router.integrations.langchain": "reference/integrations/index.html",
    "mcpx_router.integrations.dspy": "reference/integrations/index.html",
    "mcpx_router.codemode": "reference/codemode/index.html",
    "mcpx_router.inspector": "reference/inspector/index.html",
}
WITH_DOCSTRINGS = (
    "mcpx_router",
    "mcpx_router.integrations.agents",
    "mcpx_router.integrations.pydantic_ai",
    "mcpx_router.integrations.langchain",
    "mcpx_router.integrations.dspy",
    "mcpx_router.codemode",
    "mcpx_router.inspector",
)
"""The modules whose every public name must say what it does: the package's `__all__`, each
integration's, code mode's and the inspector's."""


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config)]
    return subprocess.run(
        [*command, "--site-dir", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"},
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = tmp_path_factory.mktemp("site")
    done = _build(ROOT / "mkdocs.yml", built)
    assert done.returncode == 0, done.stdout + done.stderr
    return built


def _public_names(module: str) -> list[str]:
    return list(importlib.import_module(module).__all__)


def test_the_site_builds_and_its_reference_holds_every_public_name(site: Path) -> None:
    missing = {}
    for module, page in PUBLIC.items():
        ids = set(re.findall(r'id="([^"]+)"', (site / page).read_text(encoding="utf-8")))
        if absent := [name for name in _public_names(module) if f"{module}.{name}" not in ids]:
            missing[module] = absent
    assert missing == {}
    assert (site / "architecture" / "index.html").exists()


def test_every_page_of_docs_is_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert sorted(page for page in pages if f": {page}" not in config) == []


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the guide](guide.md) and [a section](#nowhere).\n")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = re.sub(r"(?ms)^nav:.*?(?=^\S)", "nav:\n  - Home: index.md\n", config)
    config = re.sub(r"(?ms)^plugins:.*?(?=^\S)", "plugins:\n  - search\n", config)
    (tmp_path / "mkdocs.yml").write_text(config.replace("docs_dir: docs", f"docs_dir: {docs}"))
    done = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "guide.md" in done.stderr and "nowhere" in done.stderr


def _first_sentence(docstring: str) -> str:
    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    return re.split(r"(?<=[.!?])\s", paragraph, maxsplit=1)[0]


def _says_what_it_does(name: str, docstring: str) -> bool:
    """A first sentence of three words or more that is not the name again."""
    sentence = _first_sentence(docstring)
    return len(sentence.split()) >= 3 and sentence.rstrip(".:").strip("`") != name


@pytest.mark.subprocess  # griffe asks git where a package's sources are
def test_every_public_name_says_what_it_does_in_its_first_sentence() -> None:
    """Read as the reference reads them (griffe, statically): classes, functions, constants and
    type aliases alike, re-exported names followed to where they are defined."""
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)])
    package = loader.load("mcpx_router")
    loader.resolve_aliases(implicit=False, external=False)
    silent = []
    for name in WITH_DOCSTRINGS:
        module = package if name == "mcpx_router" else package[name.removeprefix("mcpx_router.")]
        for public in _public_names(name):
            target = module[public]
            target = target.final_target if target.is_alias else target
            docstring = target.docstring.value if target.docstring else ""
            if not _says_what_it_does(public, docstring):
                silent.append(f"{name}.{public}: {_first_sentence(docstring)!r}")
    assert silent == []


@pytest.mark.subprocess
def test_a_name_without_a_docstring_is_found(tmp_path: Path) -> None:
    package = tmp_path / "quiet"
    package.mkdir()
    (package / "__init__.py").write_text(
        '__all__ = ["Said", "Silent", "Named"]\n\n'
        'class Said:\n    """Holds one thing for a test."""\n\n'
        "class Silent:\n    pass\n\n"
        'Named: int = 1\n"""Named."""\n'
    )
    loaded = griffe.GriffeLoader(search_paths=[str(tmp_path)]).load("quiet")
    docstrings = {name: loaded[name].docstring for name in ("Said", "Silent", "Named")}
    said = {name: _says_what_it_does(name, doc.value if doc else "") for name, doc in docstrings.items()}
    assert said == {"Said": True, "Silent": False, "Named": False}


def test_the_benchmarks_page_holds_current_tables_not_history() -> None:
    """docs/benchmarks.md says what each benchmark measures now, with the command that measures it:
    short (one table per benchmark), and without dated passes, which belong in CHANGELOG.md."""
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert len(page.splitlines()) <= 267
    sections = [part for part in page.split("\n## ")[1:] if not part.startswith("How the figures")]
    assert sections and all("python -m benchmarks" in part for part in sections), [
        part.splitlines()[0] for part in sections if "python -m benchmarks" not in part
    ]
    history = re.compile(
        r"\b(an earlier run|a (second|third) pass|first measurement|superseded|was \d)", re.I
    )
    assert history.findall(page) == []
