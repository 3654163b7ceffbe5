"""Widget for chapter 05 (``notebooks/05_state_store.ipynb``): kill a writer in the middle.

``crash_explorer()`` is the widget: crash injection on or off and the point where the writer is
killed; each change saves a new value with both stores -- the naive one (``write_text``) and
agentlab's (temporary file, fsync, rename) -- in a child process, then loads it back.
``crash_write()`` is what it runs, callable directly so a notebook can print a deterministic
result next to the widget.

The child process may not write files larger than the crash point (``RLIMIT_FSIZE``) and is
killed by ``SIGXFSZ`` when it tries: a real crash inside ``write()``, at a chosen byte, on every
POSIX system (not on Windows, where the widget says so).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import ipywidgets as w

from ..errors import StateError
from ..naive.state import NaiveStateStore
from ..state import StateStore, to_json
from ..viz.state import plot_crash_writes
from .panel import Panel

__all__ = ["STORES", "crash_write", "format_crash_writes", "crash_explorer"]

#: label -> class name in the child process (both take a folder).
STORES = {"naive (write_text)": "NaiveStateStore", "agentlab (temp + rename)": "StateStore"}
_CLASSES = {"NaiveStateStore": NaiveStateStore, "StateStore": StateStore}
_CHILD = """
import resource, signal, sys
from agentlab.state import StateStore
from agentlab.naive.state import NaiveStateStore
limit, cls, folder, words = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
store = {"StateStore": StateStore, "NaiveStateStore": NaiveStateStore}[cls](folder)
if limit:
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)        # past the limit: killed, no exception
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
store.save("notes", {"text": "new " * words})
"""
OLD = {"text": "old value"}


def crash_write(store: str = "agentlab (temp + rename)", *, crash: bool = True,
                crash_kib: float = 4.0, new_kib: float = 20.0,
                folder: str | os.PathLike | None = None) -> dict[str, Any]:
    """Save ``OLD``, then a ~``new_kib`` KiB value in a child process killed after
    ``crash_kib`` KiB (if ``crash``), then load the key back.

    Returns ``{"store", "crash", "exit_code", "limit_bytes", "file_bytes", "new_bytes",
    "tmp_bytes", "outcome", "loaded"}`` with ``outcome`` one of ``"old value"``, ``"new
    value"``, ``"torn"`` (the file no longer parses) or ``"missing"``.
    """
    if store not in STORES:
        raise ValueError(f"store must be one of {', '.join(STORES)}")
    if crash and os.name != "posix":
        raise OSError("crash injection needs RLIMIT_FSIZE (Linux or macOS)")
    cls = STORES[store]
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        where = Path(tmp) / "store"
        _CLASSES[cls](where).save("notes", OLD)
        words = int(new_kib * 1024 / 4)
        limit = int(crash_kib * 1024) if crash else 0
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
        code = subprocess.run([sys.executable, "-c", _CHILD, str(limit), cls, str(where),
                               str(words)], env=env, capture_output=True, timeout=60).returncode
        value_file = where / "notes.json"
        file_bytes = value_file.stat().st_size if value_file.exists() else 0
        tmp_bytes = sum(p.stat().st_size for p in where.glob(".*.tmp"))
        try:
            loaded = _CLASSES[cls](where).load("notes")
            outcome = ("missing" if loaded is None else
                       "old value" if loaded == OLD else "new value")
        except (json.JSONDecodeError, StateError) as exc:
            loaded, outcome = f"{type(exc).__name__}: {exc}", "torn"
    new = {"text": "new " * words}
    new_bytes = len((to_json("notes", new) if cls == "StateStore"
                     else json.dumps(new, ensure_ascii=False, indent=2)).encode())
    return {"store": store, "crash": crash, "exit_code": code, "limit_bytes": limit or None,
            "file_bytes": file_bytes, "new_bytes": new_bytes, "tmp_bytes": tmp_bytes,
            "outcome": outcome, "loaded": loaded if outcome == "torn" else outcome}


def format_crash_writes(rows: list[dict[str, Any]]) -> str:
    """One line per store: how the writer ended, the bytes on disk, what ``load()`` gives."""
    lines = []
    for r in rows:
        how = (f"killed ({signal.Signals(-r['exit_code']).name})" if r["exit_code"] < 0
               else f"exit code {r['exit_code']}")
        lines.append(f"{r['store'].split()[0]:<9} writer {how}, notes.json {r['file_bytes']:,} "
                     f"of {r['new_bytes']:,} bytes; load() -> {str(r['loaded'])[:40]}")
    return "\n".join(lines)


def crash_explorer(*, new_kib: float = 20.0) -> Panel:
    """Crash injection on/off and the crash point; both stores save, then load, each time.

    Returns a ``Panel`` (an ipywidgets ``VBox``).
    """
    crash = w.ToggleButtons(options=["crash during the save", "no crash"],
                            value="crash during the save", description="injection")
    point = w.FloatSlider(4.0, min=0.5, max=new_kib - 1, step=0.5, continuous_update=False,
                          description="kill at (KiB)", readout_format=".1f")
    out = w.Output()
    panel = Panel([crash, point, out], title="crash explorer (chapter 05)")

    def redraw(_: Any = None) -> None:
        on = crash.value == "crash during the save"
        point.disabled = not on
        if on and os.name != "posix":
            panel.show(out, "crash injection needs RLIMIT_FSIZE (Linux or macOS)")
            return
        rows = [crash_write(s, crash=on, crash_kib=point.value, new_kib=new_kib)
                for s in STORES]
        panel.show(out, format_crash_writes(rows), plot_crash_writes(rows))

    crash.observe(redraw, "value")
    point.observe(redraw, "value")
    redraw()
    return panel
