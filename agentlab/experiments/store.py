"""Where a sweep keeps its work: an append-only journal of finished cells and a manifest.

``DIR/cells.jsonl`` gets one JSON line per finished cell, written and flushed the moment the
cell comes back, so a sweep that is interrupted (Ctrl+C, a killed process, a closed laptop)
loses at most the cells that were running. On restart the journal says which cells are done;
only the others run. A line cut short by a kill is the last line: it is ignored and trimmed
before the next append. ``DIR/manifest.json`` (written atomically through
``agentlab.state.StateStore``) records the experiment, the package versions, the seeds, the
start and end times, the machine's load and the status (``running``, ``interrupted``,
``complete``).

**Code identity.** Every journal record carries ``code_identity()``: the agentlab version, the
git commit of the package's checkout and whether it had uncommitted changes (with a hash of
them), and a hash of the scenario's source. A sweep resumed with other code would mix numbers
of two programs in one table; ``identity_differences`` says what changed, and the runner
refuses (``code_changed``) unless told ``force``.

Taught in ``notebooks/14_experiments.ipynb``.
"""
from __future__ import annotations

import hashlib
import inspect
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from ..atomic import atomic_write
from ..errors import ConfigError, StateError
from ..state import StateStore

__all__ = ["SweepStore", "package_versions", "replace_file", "code_identity",
           "identity_differences", "check_identity", "machine_load", "JOURNAL", "MANIFEST",
           "IDENTITY_KEYS"]

JOURNAL = "cells.jsonl"
MANIFEST = "manifest.json"
_VERSIONED = ("agentlab", "openai", "tiktoken", "numpy", "pandas", "pyarrow", "scipy",
              "matplotlib", "tqdm")


def package_versions() -> dict[str, str | None]:
    """Python, platform and the installed versions of the packages a sweep depends on."""
    out: dict[str, str | None] = {"python": sys.version.split()[0],
                                  "platform": platform.platform()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def replace_file(path: Path, write: Callable[[Any], Any]) -> None:
    """Write ``path`` through ``write(buffer)`` (a binary file object), atomically.

    ``write`` fills an in-memory buffer (``df.to_parquet(buf)``, ``df.to_csv(buf)``), which
    goes to disk through the package's one atomic write, ``agentlab.atomic.atomic_write``
    (temp file, fsync, rename, fsync of the folder): never half a file, even after a crash;
    the temp file of a writer killed mid-write is removed by the folder's next ``StateStore``.
    """
    buffer = io.BytesIO()
    write(buffer)
    atomic_write(path, buffer.getvalue(), error=StateError, code="sweep_write_failed")


#: The fields of ``code_identity`` that must match for a journal record to be reused.
IDENTITY_KEYS = ("agentlab", "git_commit", "git_dirty", "dirty_hash", "scenario_hash")


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, timeout=10,
                             check=True)
    except (OSError, subprocess.SubprocessError):
        return None  # not a checkout, or no git: the version alone identifies the code
    return out.stdout.decode("utf-8", "replace")


def _checkout() -> dict[str, Any]:
    """The git commit of the installed package's checkout, and its uncommitted changes."""
    package = Path(__file__).resolve().parents[1]  # the agentlab folder
    commit = _git(["rev-parse", "HEAD"], package)
    # an installed copy inside someone else's repository (a venv in a project) is not theirs
    if commit is None or not (_git(["ls-files", "--", "__init__.py"], package) or "").strip():
        return {"git_commit": None, "git_dirty": None, "dirty_hash": None}
    diff = _git(["diff", "HEAD", "--", "."], package) or ""
    return {"git_commit": commit.strip(), "git_dirty": bool(diff),
            "dirty_hash": hashlib.sha256(diff.encode()).hexdigest()[:16] if diff else None}


def code_identity(scenarios: dict[str, Any]) -> dict[str, dict]:
    """``{scenario name: identity}`` of the code that runs each scenario (``Scenario`` objects).

    An identity: ``agentlab`` (the version), ``git_commit``, ``git_dirty`` and ``dirty_hash``
    (of ``git diff HEAD`` in the package folder; None outside a git checkout) and
    ``scenario_hash``, 16 hex digits of a SHA-256 of the scenario function's source (its
    qualified name when the source cannot be read). Runs git three times: once per sweep.
    """
    try:
        version = metadata.version("agentlab")
    except metadata.PackageNotFoundError:
        version = None
    base = {"agentlab": version, **_checkout()}
    out = {}
    for name, scenario in scenarios.items():
        try:
            source = inspect.getsource(scenario.run)
        except (OSError, TypeError):
            source = f"{getattr(scenario.run, '__module__', '')}.{scenario.run!r}"
        out[name] = {**base, "scenario": name,
                     "scenario_hash": hashlib.sha256(source.encode()).hexdigest()[:16]}
    return out


def identity_differences(old: dict | None, new: dict) -> dict[str, list]:
    """``{field: [recorded, now]}`` for the ``IDENTITY_KEYS`` that differ (all, if none was
    recorded)."""
    old = old or {}
    return {k: [old.get(k), new.get(k)] for k in IDENTITY_KEYS if old.get(k) != new.get(k)}


def machine_load(samples: int = 20, sleep_s: float = 0.001) -> dict[str, Any]:
    """How busy the machine is: load averages and how late ``samples`` short sleeps wake up.

    The median overshoot of a 1 ms sleep is the scheduling delay a scaled tool call suffers;
    at ``time_scale=0.01`` every real millisecond is 100 simulated ones. Recorded in the
    manifest so that a table can be read next to the load it was made under.
    """
    over = []
    for _ in range(samples):
        t0 = time.perf_counter()
        time.sleep(sleep_s)
        over.append((time.perf_counter() - t0 - sleep_s) * 1000.0)
    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    return {"loadavg": [round(x, 2) for x in load] if load else None, "cpus": os.cpu_count(),
            "sleep_ms": sleep_s * 1000.0, "samples": samples,
            "sleep_overshoot_ms_median": round(statistics.median(over), 3),
            "sleep_overshoot_ms_max": round(max(over), 3), "at": now_iso()}


class SweepStore:
    """The journal and manifest of one sweep directory (created on first write).

    ``code``: ``code_identity(...)`` of this sweep; each appended record gets the identity of
    its scenario as ``record["code"]``.
    """

    def __init__(self, directory: str | os.PathLike, code: dict[str, dict] | None = None) -> None:
        self.dir = Path(directory)
        self.code = dict(code or {})
        self.journal = self.dir / JOURNAL
        self._file: Any = None

    # -- journal ------------------------------------------------------------------------------
    def records(self) -> dict[str, dict]:
        """Finished cells by ``cell_id``; a repeated id keeps its last record (a retried cell)."""
        out: dict[str, dict] = {}
        if not self.journal.exists():
            return out
        lines = self.journal.read_text(encoding="utf-8").split("\n")
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                if i == len(lines) - 1:  # the tail of a line cut short by a kill
                    continue
                raise ConfigError("journal_corrupt", f"line {i + 1} of {self.journal} is not "
                                  "JSON; move the file away to start the sweep afresh") from None
            out[rec["cell_id"]] = rec
        return out

    def append(self, record: dict) -> None:
        """Add one finished cell, stamped with its code identity; flushed at once (durable
        against a killed process)."""
        if self.code:
            scenario = ((record.get("cell") or {}).get("task") or {}).get("scenario")
            record.setdefault("code", self.code.get(scenario))
        if self._file is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._trim_torn_tail()
            self._file = open(self.journal, "a", encoding="utf-8")
        self._file.write(json.dumps(record) + "\n")  # key order kept: it is the column order
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def _trim_torn_tail(self) -> None:
        if not self.journal.exists() or self.journal.stat().st_size == 0:
            return
        data = self.journal.read_bytes()
        if not data.endswith(b"\n"):
            with open(self.journal, "r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    # -- manifest -----------------------------------------------------------------------------
    def manifest(self) -> dict | None:
        return StateStore(self.dir).load("manifest")

    def write_manifest(self, manifest: dict) -> None:
        StateStore(self.dir).save("manifest", manifest)

    def check_compatible(self, spec_hash: str, force: bool) -> None:
        """Refuse to mix two different experiments in one directory unless ``force``."""
        old = self.manifest()
        if old and old.get("spec_hash") != spec_hash and not force:
            raise ConfigError("sweep_mismatch", f"{self.dir} holds another experiment "
                              f"({old.get('name')!r}, spec {old.get('spec_hash')}); use another "
                              "output directory, or force=True (--force) to reuse the cells "
                              "both share and rewrite its tables")


def now_iso(t: float | None = None) -> str:
    """Wall-clock time as ISO 8601 in UTC (for manifests)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if t is None else t))


def check_identity(records: dict[str, dict], identities: dict[str, dict], force: bool,
                   where: Any = "the output directory") -> int:
    """Refuse to reuse ``records`` made by other code than ``identities`` unless ``force``.

    ``identities`` is ``code_identity(...)`` of this sweep, by scenario name. Returns how many
    records were made by other code (reused anyway, with a ``RuntimeWarning``, under
    ``force``); raises ``ConfigError("code_changed")`` naming what differs otherwise.
    """
    differs: dict[str, list] = {}
    count = 0
    for rec in records.values():
        scenario = ((rec.get("cell") or {}).get("task") or {}).get("scenario")
        diff = identity_differences(rec.get("code"), identities.get(scenario, {}))
        if diff:
            count += 1
            for key, pair in diff.items():
                differs.setdefault(key, pair)
    if not count:
        return 0
    what = "; ".join(f"{k}: {a!r} then, {b!r} now" for k, (a, b) in differs.items())
    if not force:
        raise ConfigError("code_changed", f"{count} finished cell(s) in {where} were made by "
                          f"other code ({what}); reusing them would mix two programs in one "
                          "table. Use another output directory, or --force (force=True) to "
                          "reuse them anyway", details={"cells": count, "differs": differs})
    warnings.warn(f"reusing {count} cell(s) made by other code ({what}) because of force",
                  RuntimeWarning, stacklevel=3)
    return count
