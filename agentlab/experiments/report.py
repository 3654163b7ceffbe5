"""A sweep as a markdown report with tables and PNG plots (``agentlab report DIR``).

The report says what ran (manifest: experiment, versions, times, throughput), the run
metrics per configuration with 95 % bootstrap intervals, tool-latency percentiles with their
intervals and too-few-samples flags, the paired comparisons of the spec (``[[compare]]``; with
none, each configuration against the first on a few headline metrics), and one plot per table.
Taught in ``notebooks/14_experiments.ipynb``.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, Sequence

from ..viz.experiments import plot_latency_ecdf, plot_paired_comparison, plot_percentile_bars
from .results import Results
from .stats import FewSamplesWarning

__all__ = ["write_report", "markdown_table", "HEADLINE_METRICS"]

#: Run metrics the report summarises when the sweep has them.
HEADLINE_METRICS = ("success", "total_tokens", "cost_usd", "wasted_s", "false_kills",
                    "tool_timeouts", "llm_retries", "compressions", "sim_makespan_ms",
                    "makespan_ms")


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, float):
        return "" if math.isnan(v) else _num(v)
    return str(v)


def _num(v: float) -> str:
    """4 significant digits, without switching to exponents for counts like 12906."""
    return f"{v:.0f}" if 1e4 <= abs(v) < 1e9 else f"{v:.4g}"


def markdown_table(rows: Sequence[dict], columns: Sequence[str]) -> str:
    """A GitHub-flavoured markdown table (``|`` in cells is escaped)."""
    head = "| " + " | ".join(columns) + " |"
    rule = "| " + " | ".join("---" for _ in columns) + " |"
    body = ["| " + " | ".join(_fmt(r.get(c, "")).replace("|", "\\|") for c in columns) + " |"
            for r in rows]
    return "\n".join([head, rule, *body])


def _interval(mean: float, low: float, high: float) -> str:
    if math.isnan(mean):
        return ""
    if not math.isfinite(low):
        return _num(mean)
    return f"{_num(mean)} [{_num(low)}, {_num(high)}]"


def _summary_section(results: Results) -> tuple[list[str], list[str]]:
    metrics = [m for m in HEADLINE_METRICS if m in results.runs.columns
               and results.ok()[m].notna().any()]
    summary = results.summary(metrics)
    rows = [{"config": r["config"], "runs": r["runs"],
             **{m: _interval(r[m], r[f"{m}_low"], r[f"{m}_high"]) for m in metrics}}
            for _, r in summary.iterrows()]
    status = results.runs.groupby(["config", "status"], sort=False).size()
    lines = ["## Runs per configuration", "",
             "Mean per run with its 95 % bootstrap interval, over the runs that ran.", "",
             markdown_table(rows, ["config", "runs", *metrics]), "", "Status of the cells: "
             + "; ".join(f"{c} {s}: {n}" for (c, s), n in status.items()), ""]
    errs = [c for c in results.runs.columns if c.startswith("err_")]
    if errs:
        by = results.runs.groupby("config", sort=False)[errs].sum().reset_index()
        lines += ["Errors by code (runs' `errors`, summed):", "",
                  markdown_table(by.to_dict("records"), ["config", *errs]), ""]
    return lines, metrics


def _percentile_section(results: Results, plots: Path) -> list[str]:
    if results.tool_calls.empty:
        return []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FewSamplesWarning)
        table = results.percentiles()
    plot_percentile_bars(table).savefig(plots / "percentiles.png", dpi=110)
    lines = ["## Tool latency percentiles", "",
             "Durations in ms on the simulated clock, 95 % bootstrap intervals. `few_samples`: "
             "fewer calls than a trustworthy interval of that percentile needs (`min_n`); "
             "`censored`: the percentile falls among calls killed at their timeout (a lower "
             "bound).", "", markdown_table(table.to_dict("records"),
                                           ["config", "tool", "q", "n", "value", "low", "high",
                                            "min_n", "few_samples", "censored"]), "",
             "![percentiles](plots/percentiles.png)", ""]
    if caught:
        lines += [f"> Warning: {caught[0].message}", ""]
    for tool in dict.fromkeys(results.tool_calls["tool"]):
        name = f"ecdf_{''.join(ch if ch.isalnum() else '_' for ch in str(tool))}.png"
        plot_latency_ecdf(results, tool).savefig(plots / name, dpi=110)
        lines += [f"![{tool}](plots/{name})", ""]
    return lines


def _comparisons(results: Results, metrics: list[str]) -> list[dict]:
    spec = (results.manifest.get("experiment") or {}).get("compare") or []
    if spec:
        return spec
    configs = results.configs
    return [{"metric": m, "a": configs[0], "b": b} for b in configs[1:] for m in metrics
            if m in ("success", "total_tokens", "wasted_s", "false_kills", "sim_makespan_ms")]


def _compare_section(results: Results, metrics: list[str], plots: Path) -> list[str]:
    specs = _comparisons(results, metrics)
    if not specs:
        return []
    rows, lines = [], []
    for i, c in enumerate(specs):
        d = results.compare(c["metric"], c["a"], c["b"], stat=c.get("stat", "mean"))
        rows.append({"metric": d.metric, "b - a": f"{d.b} - {d.a}", "pairs": d.n,
                     "a": d.a_value, "b": d.b_value, "difference": d.estimate, "low": d.low,
                     "high": d.high, "excludes 0": d.excludes_zero})
        if d.n:
            plot_paired_comparison(results, c["metric"], c["a"], c["b"]).savefig(
                plots / f"compare_{i}.png", dpi=110)
            lines += [f"![{d.metric}](plots/compare_{i}.png)", ""]
    return ["## Paired comparisons", "", "Runs matched on task and seed; the difference is "
            "b - a with its 95 % bootstrap interval. Where the interval excludes 0 the data "
            "support a difference; where it includes 0 they do not (at this many seeds).", "",
            markdown_table(rows, ["metric", "b - a", "pairs", "a", "b", "difference", "low",
                                  "high", "excludes 0"]), "", *lines]


def write_report(directory: str | Path, out: str | Path | None = None) -> Path:
    """Write ``report.md`` (and ``plots/*.png``) for the sweep saved in ``directory``."""
    src = Path(directory)
    results = Results.load(src)
    m = results.manifest
    target = Path(out) if out is not None else src / "report.md"
    plots = target.parent / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    versions = m.get("versions") or {}
    sessions = m.get("sessions") or []
    lines = [f"# Sweep report: {m.get('name', src.name)}", ""]
    if results.partial:
        ran = int((results.runs["status"] != "not_run").sum()) if len(results.runs) else 0
        lines += [f"> **Partial report**: the sweep is {m.get('status')} (interrupted, killed, "
                  f"or still running); {ran} of {m.get('cells')} cells are in its journal. "
                  "Run the same sweep again to finish it, then report again.", ""]
    load = m.get("load") or {}
    lines += [f"- status: {m.get('status')}; {m.get('cells')} cells; counts {m.get('counts')}",
              f"- started {m.get('started_at')}, ended {m.get('ended_at')}; executor "
              f"{m.get('executor')} with {m.get('workers')} worker(s)",
              f"- throughput: {m.get('runs_per_s')} runs/s (last session); sessions: "
              + "; ".join(f"{s.get('ran')} ran, {s.get('reused')} reused ({s.get('status')})"
                          for s in sessions),
              f"- seeds: {m.get('seeds')}; spec hash {m.get('spec_hash')}",
              f"- cost: {m.get('cost')}",
              "- machine load (start, end of the last session): " + ", ".join(
                  f"load average {(x or {}).get('loadavg')}, 1 ms sleeps "
                  f"{(x or {}).get('sleep_overshoot_ms_median')} ms late (median)"
                  for x in (load.get("start"), load.get("end")) if x),
              "- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v),
              "- code (last session): " + "; ".join(
                  f"{name}: git {str(c.get('git_commit') or 'unknown')[:12]}"
                  + (" with uncommitted changes" if c.get("git_dirty") else "")
                  + f", scenario source {c.get('scenario_hash')}"
                  for name, c in ((sessions[-1] if sessions else {}).get("code") or {}).items()),
              ""]
    summary, metrics = _summary_section(results)
    lines += summary + _percentile_section(results, plots) + _compare_section(
        results, metrics, plots)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target
