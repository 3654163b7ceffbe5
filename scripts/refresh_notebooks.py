"""Execute notebooks in place and strip volatile metadata, ready to commit.

    python scripts/refresh_notebooks.py notebooks/01_llm_client.ipynb [...]
    python scripts/refresh_notebooks.py --all

Runs each notebook top to bottom in its own folder (as nbval does), keeps outputs, drops
timings and other metadata that change every run, then regenerates the student copies of
the exercises. Cells tagged ``raises-exception`` may raise; any other error stops here.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def clean(nb) -> None:
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in ("kernelspec", "language_info")}
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k == "tags"}
        cell.pop("id", None)


def refresh(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    clean(nb)
    nb.nbformat_minor = 4  # no cell ids: keeps diffs small and stable
    nbformat.write(nb, path)
    print(f"executed {path.relative_to(ROOT)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--all", action="store_true")
    args = parser.parse_args()
    paths = list(args.paths)
    if args.all:
        paths = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")) + \
            sorted((ROOT / "notebooks" / "exercises" / "solutions").glob("*.ipynb"))
    for p in paths:
        refresh(p.resolve())
    from agentlab.exercises import generate
    return generate.main([])


if __name__ == "__main__":
    sys.exit(main())
