"""Check agentlab on every advertised Python: compile every module, and (``--demo``) install it in
a fresh venv and run ``agentlab demo`` there.

    python scripts/check_pythons.py                  # compile on 3.11, 3.12, 3.13 (as found)
    python scripts/check_pythons.py --demo           # ... and install + demo on each (~1 min each)
    python scripts/check_pythons.py --demo /path/to/python3.13 ...

Interpreters: the ones given, else this one plus ``~/.pyenv/versions/3.1{1,2,3}.*/bin/python``
(the newest patch of each) and ``python3.1{1,2,3}`` on PATH. A version that is not found is
reported as skipped, not failed. Compiling catches what a version refuses at import time (3.13
rejects a lone surrogate in a non-raw docstring, which 3.11 accepts); the demo catches missing
wheels and run-time differences. ``.ci/run`` runs it with ``--demo``; ``tests/test_pythons.py``
runs the compile step.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADVERTISED = ("3.11", "3.12", "3.13")

_COMPILE = """import pathlib, sys
bad = []
files = sorted(pathlib.Path(sys.argv[1]).rglob('*.py'))
for f in files:
    try:
        compile(f.read_bytes(), str(f), 'exec', dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        bad.append(f'{f}: {type(exc).__name__}: {exc}')
print(len(files), 'modules compiled')
print('\\n'.join(bad))
sys.exit(1 if bad else 0)
"""


def version_of(python: str) -> str | None:
    """``"3.12"`` for an interpreter, or None when it cannot be run."""
    try:
        out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def find_pythons() -> dict[str, str]:
    """Advertised version -> an interpreter for it (this one first, then pyenv, then PATH)."""
    found = {version_of(sys.executable): sys.executable}
    for v in ADVERTISED:
        candidates = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{v}.*/bin/python")),
                            key=lambda p: [int(x) for x in Path(p).parents[1].name.split(".")
                                           if x.isdigit()])
        candidates = candidates[::-1] + [shutil.which(f"python{v}") or ""]
        for c in candidates:
            if v not in found and c and version_of(c) == v:
                found[v] = c
    return {v: found[v] for v in ADVERTISED if v in found}


def compile_all(python: str) -> tuple[bool, str]:
    """Compile every module of the package with ``python`` (nothing written to disk)."""
    out = subprocess.run([python, "-c", _COMPILE, str(ROOT / "agentlab")], capture_output=True,
                         text=True, timeout=300)
    return out.returncode == 0, (out.stdout + out.stderr).strip()


def demo_in_fresh_venv(python: str) -> tuple[bool, str]:
    """Install the package (base install, no extras) in a fresh venv and run the demo there."""
    with tempfile.TemporaryDirectory(prefix="agentlab-py-") as tmp:
        venv = Path(tmp, "venv")
        bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
        steps = [[python, "-m", "venv", str(venv)],
                 [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(ROOT)],
                 [str(bin_dir / "agentlab"), "demo", "--output-dir", str(Path(tmp, "out"))]]
        for step in steps:
            out = subprocess.run(step, capture_output=True, text=True, cwd=tmp, timeout=900)
            if out.returncode != 0:
                return False, f"{' '.join(step[:3])}... failed:\n{(out.stdout + out.stderr)[-1500:]}"
        summary = [ln for ln in out.stdout.splitlines() if ln.startswith("Turns:")]
        ok = bool(summary) and "completed (finished)" in summary[0]
        return ok, summary[0] if summary else out.stdout[-500:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pythons", nargs="*", help="interpreters (default: find 3.11-3.13)")
    parser.add_argument("--demo", action="store_true", help="also install + run the demo")
    args = parser.parse_args(argv)
    pythons = ({version_of(p) or p: p for p in args.pythons} if args.pythons
               else find_pythons())
    failed = False
    for v in ADVERTISED:
        if v not in pythons and not args.pythons:
            print(f"Python {v}: skipped (no interpreter found)")
    for v, python in pythons.items():
        ok, text = compile_all(python)
        line = f"Python {v} ({python}): compile {'ok' if ok else 'FAILED'} ({text.splitlines()[0]})"
        if ok and args.demo:
            ok, demo = demo_in_fresh_venv(python)
            line += f"; demo {'ok' if ok else 'FAILED'}: {demo.strip()}"
        elif not ok:
            line += "\n" + text
        print(line, flush=True)
        failed |= not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
