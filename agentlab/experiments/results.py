"""The results of a sweep as two pandas DataFrames, with the statistics and the files.

``Results.runs``: one row per cell: ``cell_id``, ``config``, one column per grid setting,
``task``, ``scenario``, ``seed``, ``status`` (``ok``, ``error``, ``skipped_cost_cap``), the
run's ``state`` and ``stopped_reason``, ``success``, ``turns``, tokens, ``cost_usd``,
tool-call counts (``tool_timeouts``, ``false_kills``, ``wasted_s``; ``sim_timeouts``,
``sim_false_kills``, ``sim_wasted_s``), ``llm_retries``,
``compressions``, ``errors`` and one ``err_<code>`` column per error code, scenario metrics
(e.g. ``makespan_ms``) and ``wall_s``.
``Results.tool_calls``: one row per tool call: the cell's keys, ``turn``, ``tool``,
``outcome`` (``ok`` or the error code), ``duration_ms``, ``timeout_s`` (the one enforced),
``true_ms`` (the drawn latency when the scenario knows it), ``false_kill``, ``wasted_ms``,
and their replayed ``sim_*`` twins. Durations are in simulated ms
(``agentlab.experiments.rows``).

Rows are sorted in cell order, never in finishing order, so the same spec and seeds give the
same tables, at any machine load, outside two lists of columns:

- ``MEASURED``: read off the clock (wall time, measured durations, time spent on killed
  calls, a DAG's measured makespan); they differ between two runs of the same sweep.
- ``LOAD_SENSITIVE``: ``clock_overrides`` / ``clock_override``, calls whose outcome the
  real-clock backstop decided instead of the simulated clock; 0 unless the machine stalled
  for seconds. Every other column is computed from simulated quantities (the ``sim_*``
  columns replay each call's true duration against the timeout in force).

``comparison_metrics(results)`` names the columns a default comparison may use.

``save(dir)`` writes ``runs.parquet``, ``tool_calls.parquet``, the same as CSV, and
``manifest.json``; ``Results.load(dir)`` reads them back (or rebuilds the tables from the
journal of an interrupted sweep). Taught in ``notebooks/14_experiments.ipynb``.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

from ..errors import ConfigError
from .cells import Cell
from .stats import PairedDifference, mean_interval, paired_difference, percentile_table
from .store import MANIFEST, SweepStore, replace_file

__all__ = ["Results", "MEASURED", "LOAD_SENSITIVE", "build_tables", "comparison_metrics"]

#: Columns that measure elapsed time: they differ between two runs of the same sweep.
MEASURED = {"runs": ("wall_s", "wasted_s", "makespan_ms", "makespan_ratio"),
            "tool_calls": ("duration_ms", "wasted_ms")}
#: Columns that machine load can change although they are not clock readings (see above).
LOAD_SENSITIVE = {"runs": ("clock_overrides",), "tool_calls": ("clock_override",)}
_KEYS = ("cell_id", "index", "config")
_TAIL = ("task", "scenario", "seed", "status")
_NOT_METRICS = {*_KEYS, *_TAIL, "state", "stopped_reason", "turn", "call_id", "tool",
                "outcome"}


def comparison_metrics(source: Any, table: str = "runs") -> list[str]:
    """The columns of ``table`` that default comparisons may use, in table order.

    A metric qualifies when it is numeric (or 0/1), has a value somewhere, and is neither a
    key, a grid setting, ``MEASURED`` nor ``LOAD_SENSITIVE``: so two runs of the same sweep
    give it the same values at any load, and a difference in it is the configurations', not
    the machine's.

    Args:
        source: a ``Results`` (its grid settings are known from the manifest), or a
            DataFrame of that table (then only the standard key columns are left out).
        table: ``"runs"`` or ``"tool_calls"``.
    """
    if table not in MEASURED:
        raise ConfigError("invalid_argument", f"table must be 'runs' or 'tool_calls', got "
                          f"{table!r}")
    df, grid = source, set()
    if isinstance(source, Results):
        df = getattr(source, table)
        grid = {k for c in source.manifest.get("configs") or [] for k in c.get("grid") or {}}
    skip = _NOT_METRICS | grid | set(MEASURED[table]) | set(LOAD_SENSITIVE[table])
    return [c for c in df.columns if c not in skip and df[c].notna().any()
            and (df[c].dtype == bool or getattr(df[c].dtype, "kind", "O") in "iuf")]


def _rows(cells: Sequence[Any], records: dict[str, dict]) -> tuple[list[dict], list[dict]]:
    runs, calls = [], []
    for cell in cells:
        rec = records.get(cell.cell_id)
        key = {"cell_id": cell.cell_id, "index": cell.index, "config": cell.config,
               **cell.grid, "task": cell.task["name"], "scenario": cell.task["scenario"],
               "seed": cell.seed}
        if rec is None:
            runs.append({**key, "status": "not_run"})
            continue
        run = dict(rec.get("run") or {})
        codes = run.pop("error_codes", None) or {}
        runs.append({**key, "status": rec.get("status", "ok"), **run,
                     **{f"err_{c}": n for c, n in codes.items()}})
        short = {k: key[k] for k in ("cell_id", "config", *cell.grid, "task", "seed")}
        calls.extend({**short, **row} for row in rec.get("tool_calls") or [])
    return runs, calls


def build_tables(cells: Sequence[Any], records: dict[str, dict]) -> tuple[Any, Any]:
    """``(runs, tool_calls)`` DataFrames for ``cells`` from their journal records."""
    import pandas as pd  # lazy: heavy

    runs, calls = _rows(cells, records)
    r, t = pd.DataFrame(runs), pd.DataFrame(calls)
    err = sorted(c for c in r.columns if c.startswith("err_"))
    r[err] = r[err].fillna(0).astype(int) if err else r[err]
    if "wall_s" in r.columns:  # measured time last
        r = r[[c for c in r.columns if c != "wall_s"] + ["wall_s"]]
    for df in (r, t):
        for col in df.columns:  # a setting swept over mixed types is stored as text
            kinds = {type(v) for v in df[col].dropna()}
            if len(kinds) > 1 and not kinds <= {int, float, bool}:
                df[col] = df[col].map(lambda v: v if v is None or v != v else str(v))
    return r.reset_index(drop=True), t.reset_index(drop=True)


class Results:
    """What ``Experiment.run`` returns (see the module docstring)."""

    def __init__(self, runs: Any, tool_calls: Any, manifest: dict | None = None) -> None:
        self.runs, self.tool_calls = runs, tool_calls
        self.manifest = dict(manifest or {})

    def __repr__(self) -> str:
        status = self.runs["status"].value_counts().to_dict() if len(self.runs) else {}
        return (f"Results({len(self.runs)} runs, {len(self.tool_calls)} tool calls, "
                f"configs={self.configs}, status={status})")

    @property
    def partial(self) -> bool:
        """True when the sweep did not complete: interrupted, killed, or still running."""
        return self.manifest.get("status", "complete") != "complete"

    @property
    def configs(self) -> list[str]:
        """Configuration labels in grid order."""
        return list(dict.fromkeys(self.runs["config"])) if len(self.runs) else []

    def ok(self) -> Any:
        """The runs that ran (not skipped or crashed)."""
        return self.runs[self.runs["status"] == "ok"]

    def without_measured(self, table: str = "runs") -> Any:
        """``runs`` or ``tool_calls`` without the clock-measured columns (``MEASURED``): what
        the same sweep reproduces exactly, on any machine and at any load."""
        if table not in MEASURED:
            raise ConfigError("invalid_argument", f"table must be 'runs' or 'tool_calls', "
                              f"got {table!r}")
        df = getattr(self, table)
        return df.drop(columns=[c for c in MEASURED[table] if c in df.columns])

    # -- statistics ---------------------------------------------------------------------------
    def percentiles(self, metric: str = "duration_ms", by: Sequence[str] = ("config", "tool"),
                    q: Sequence[float] = (50, 95, 99), *, confidence: float = 0.95,
                    seed: int = 0, where: Any = None, censored_by: str | None = None) -> Any:
        """Percentiles of ``metric`` per group with exact intervals and sample flags.

        ``metric`` is a column of ``tool_calls`` (default) or of ``runs`` (e.g. ``"wall_s"``
        with ``by=("config",)``); ``where`` is an optional boolean mask of that table.
        Warns ``FewSamplesWarning`` when a group has fewer than ``min_samples(q)`` values.
        ``censored_by``: the column flagging lower bounds (default ``sim_timed_out`` for a
        ``sim_*`` metric, else ``timed_out``).
        """
        table = self.tool_calls if metric in self.tool_calls.columns else self.ok()
        if where is not None:
            table = table[where]
        if censored_by is None:  # a killed call is a lower bound, on its own clock
            censored_by = "sim_timed_out" if metric.startswith("sim_") else "timed_out"
        return percentile_table(table, metric, list(by), q, confidence=confidence, seed=seed,
                                censored_by=censored_by)

    def summary(self, metrics: Sequence[str] = ("success", "total_tokens", "cost_usd"), *,
                by: Sequence[str] = ("config",), confidence: float = 0.95,
                seed: int = 0) -> Any:
        """Mean of each run metric per group with its interval (``<m>_low/_high``): a
        t-interval, or Clopper-Pearson for a 0/1 column such as ``success``."""
        import pandas as pd  # lazy: heavy

        runs = self.ok()
        metrics = [m for m in metrics if m in runs.columns]
        rows = []
        for key, group in runs.groupby(list(by), sort=False):
            row = dict(zip(by, key if isinstance(key, tuple) else (key,)), runs=len(group))
            for m in metrics:
                row[m], row[f"{m}_low"], row[f"{m}_high"] = mean_interval(
                    group[m].astype(float), confidence=confidence, seed=seed)
            rows.append(row)
        return pd.DataFrame(rows)

    def compare(self, metric: str, a: str, b: str, *, on: Sequence[str] = ("task", "seed"),
                stat: str = "mean", confidence: float = 0.95, seed: int = 0,
                warn: bool = True) -> PairedDifference:
        """Paired difference ``b - a`` of a run metric, matching runs on ``on`` (same seeds).

        ``a`` and ``b`` are configuration labels (``results.configs``). A ``partial`` sweep
        may not have run a configuration or a metric yet: that gives 0 pairs, not an error.
        Fewer than ``stats.FEW_PAIRS`` pairs warn ``FewSamplesWarning`` unless ``warn=False``.
        """
        runs = self.ok()
        for label in (a, b):
            if label not in self.configs and not self.partial:
                raise ConfigError("invalid_argument", f"no configuration {label!r}; this sweep "
                                  f"has {self.configs}")
        if metric not in runs.columns and not self.partial:
            raise ConfigError("invalid_argument", f"no run metric {metric!r}; columns: "
                              f"{', '.join(runs.columns)}")
        if metric not in runs.columns or runs.empty:
            return paired_difference([], [], stat=stat, metric=metric, labels=(a, b))
        wide = runs.pivot_table(index=list(on), columns="config", values=metric,
                                aggfunc="first")
        if a not in wide.columns or b not in wide.columns:
            return paired_difference([], [], stat=stat, metric=metric, labels=(a, b))
        pairs = wide[[a, b]].astype(float).dropna()
        return paired_difference(pairs[a].tolist(), pairs[b].tolist(), stat=stat,
                                 confidence=confidence, seed=seed, metric=metric,
                                 labels=(a, b), warn=warn)

    # -- files --------------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write Parquet + CSV tables and the manifest into ``directory``; returns its path."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        for name, df in (("runs", self.runs), ("tool_calls", self.tool_calls)):
            replace_file(out / f"{name}.parquet", lambda f, df=df: df.to_parquet(f, index=False))
            replace_file(out / f"{name}.csv", lambda f, df=df: df.to_csv(f, index=False))
        SweepStore(out).write_manifest(_plain(self.manifest))
        return out

    @classmethod
    def load(cls, directory: str | Path) -> "Results":
        """Read a saved sweep; one that did not complete (interrupted, killed with ``kill -9``,
        still running) is rebuilt from its journal, whatever tables an earlier session left:
        ``partial`` is then True and the manifest's ``cells`` says how many it has in all."""
        import pandas as pd  # lazy: heavy

        src = Path(directory)
        store = SweepStore(src)
        manifest = store.manifest()
        if manifest is None:
            raise ConfigError("not_a_sweep", f"{src} has no {MANIFEST}: not a sweep directory "
                              "(run `agentlab sweep SPEC.toml --out DIR` first)")
        if manifest.get("status") == "complete" and (src / "runs.parquet").exists():
            runs = pd.read_parquet(src / "runs.parquet")
            calls = (pd.read_parquet(src / "tool_calls.parquet")
                     if (src / "tool_calls.parquet").exists() else pd.DataFrame())
            return cls(runs, calls, manifest)
        records = store.records()  # not complete: each journal record carries its cell
        cells = _planned_cells(manifest) or sorted(
            (Cell(**r["cell"]) for r in records.values()), key=lambda c: c.index)
        return cls(*build_tables(cells, records), manifest)


def _planned_cells(manifest: dict) -> list[Cell]:
    """Every cell of the sweep, from the manifest's ``plan`` (cells not in the journal yet
    become ``not_run`` rows, so every configuration has its rows in a partial table)."""
    grids = {c["config"]: c.get("grid") or {} for c in manifest.get("configs") or []}
    return [Cell(cid, index, config, grids.get(config, {}), {"name": task, "scenario": scenario},
                 seed, {}) for cid, index, config, task, scenario, seed in manifest.get("plan")
            or []]


def _plain(value: Any) -> Any:
    """A manifest as strict JSON (NaN and infinities become None)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return json.loads(json.dumps(value, default=str)) if not isinstance(
        value, (str, int, bool, type(None))) else value
