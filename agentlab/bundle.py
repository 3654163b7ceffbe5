"""Where the kit's data lives: the top-level ``data/`` folder of a checkout, or ``agentlab/data``
inside an installed wheel.

``data/`` sits next to ``notebooks/`` and ``tests/`` so that a learner finds the datasets (see
``data/README.md``). A wheel cannot carry a folder outside its package, so the build maps it
into the package: ``setup.py`` declares the package ``agentlab.data`` with ``package_dir``
pointing at ``data/``, and ``pyproject.toml`` lists which of its files ship (what the package
reads at run time: the model table, the tiktoken encodings, the research corpus). One copy of
each file, in ``data/``; the wheel's copy is made by the build, never by hand.

An editable install (``pip install -e .``) and a plain checkout run from the source tree, where
there is no ``agentlab/data``: there the folder next to the package is the one.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["DATA_DIR", "data_path"]


def _find() -> Path:
    package = Path(__file__).resolve().parent
    installed = package / "data"  # a wheel (or ``pip install .``): the build put data/ here
    if (installed / "models.json").is_file():
        return installed
    return package.parent / "data"  # a checkout or an editable install: the top-level folder


#: The data folder this installation reads (``data/`` of a checkout, or ``agentlab/data``).
DATA_DIR = _find()


def data_path(*parts: str) -> Path:
    """A path inside ``DATA_DIR``, e.g. ``data_path("corpus", "index.json")``."""
    return DATA_DIR.joinpath(*parts)
