"""A sweep as a markdown report with tables and PNG plots (``agentlab report DIR``).

The report says what ran (manifest: experiment, versions, times, throughput), the run
metrics per configuration with 95 % intervals (t; Clopper-Pearson for 0/1 columns), tool-latency
percentiles with exact intervals (an end the data cannot bound is printed ``-inf`` / ``+inf``)
and too-few-samples flags, the paired comparisons, and one plot per table.

**Primary and exploratory comparisons.** The ``[[compare]]`` tables of the spec are the
*primary* comparisons: the questions written down before the data were seen. Without them the
report compares each configuration with the first on ``comparison_metrics(results)`` and labels
those *exploratory*: the more comparisons, the more chance one "excludes 0" by luck (20 % to
70 % of null sweeps had at least one with 2 to 6 configurations). Every comparison table says
how many comparisons it holds and gives Holm-adjusted p-values ("yes after Holm" keeps the
chance of any false "yes" in the table below 5 %) and Bonferroni intervals that hold jointly.
Taught in ``notebooks/14_experiments.ipynb``.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, Sequence

from ..viz.experiments import plot_latency_ecdf, plot_paired_comparison, plot_percentile_bars
from .results import Results, comparison_metrics
from .stats import FewSamplesWarning, holm

__all__ = ["write_report", "markdown_table", "HEADLINE_METRICS", "DEFAULT_COMPARISONS"]

#: Run metrics the report summarises when the sweep has them.
HEADLINE_METRICS = ("success", "total_tokens", "cost_usd", "sim_wasted_s", "sim_false_kills",
                    "wasted_s", "false_kills", "tool_timeouts", "llm_retries", "compressions",
                    "sim_makespan_ms", "makespan_ms")
#: What the report compares when the spec has no ``[[compare]]`` (exploratory), kept to those
#: of ``results.comparison_metrics`` (the same at any machine load).
DEFAULT_COMPARISONS = ("success", "total_tokens", "sim_wasted_s", "sim_false_kills",
                       "sim_makespan_ms")


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


def _end(v: float) -> str:
    """One end of an interval; an unbounded one says so (never clipped to the sample)."""
    return ("+inf" if v > 0 else "-inf") if math.isinf(v) else _num(v)


def _interval(mean: float, low: float, high: float) -> str:
    if math.isnan(mean):
        return ""
    if math.isnan(low) or math.isnan(high):
        return _num(mean)
    return f"{_num(mean)} [{_end(low)}, {_end(high)}]"


def _summary_section(results: Results) -> tuple[list[str], list[str]]:
    metrics = [m for m in HEADLINE_METRICS if m in results.runs.columns
               and results.ok()[m].notna().any()]
    summary = results.summary(metrics)
    rows = [{"config": r["config"], "runs": r["runs"],
             **{m: _interval(r[m], r[f"{m}_low"], r[f"{m}_high"]) for m in metrics}}
            for _, r in summary.iterrows()]
    status = results.runs.groupby(["config", "status"], sort=False).size()
    lines = ["## Runs per configuration", "",
             "Mean per run with its 95 % interval, over the runs that ran (Student's t; "
             "Clopper-Pearson for a 0/1 column such as `success`). Where the runs are too few for "
             "t on data this skewed (Cochran's rule: runs > 25 x skewness squared) the long "
             "tail's end is open, `+inf`: plain t would cover 88 % at 20 runs of lognormal "
             "latencies (`benchmarks/bench_coverage.py`).", "",
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
    calls = results.tool_calls
    metric = ("sim_duration_ms" if "sim_duration_ms" in calls.columns
              and calls["sim_duration_ms"].notna().any() else "duration_ms")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FewSamplesWarning)
        table = results.percentiles(metric)
    plot_percentile_bars(table, metric=metric).savefig(plots / "percentiles.png", dpi=110)
    rows = [{**r, "low": _end(r["low"]), "high": _end(r["high"])}
            for r in table.to_dict("records")]
    lines = ["## Tool latency percentiles", "",
             f"`{metric}` in ms (`sim_duration_ms`: each call's true duration replayed against "
             "its timeout, the same at any machine load; `duration_ms`: read off the clock), "
             "exact 95 % intervals (order statistics, "
             "distribution-free). `+inf`: the calls cannot bound the percentile from above "
             "(fewer than `min_n`, the calls such an interval needs, or the end falls among "
             "timed-out calls); `few_samples`: n < `min_n`; `censored`: the percentile falls "
             "among calls killed at their timeout (a lower bound).", "", markdown_table(rows,
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


def _comparisons(results: Results) -> tuple[list[dict], bool]:
    """The spec's ``[[compare]]`` (primary), else each configuration against the first on
    ``comparison_metrics`` (exploratory); the flag says which."""
    spec = (results.manifest.get("experiment") or {}).get("compare") or []
    if spec:
        return list(spec), True
    configs, usable = results.configs, set(comparison_metrics(results))
    return [{"metric": m, "a": configs[0], "b": b} for b in configs[1:]
            for m in DEFAULT_COMPARISONS if m in usable], False


def _compare_section(results: Results, plots: Path) -> list[str]:
    specs, primary = _comparisons(results)
    if not specs:
        return []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FewSamplesWarning)
        diffs = [results.compare(c["metric"], c["a"], c["b"], stat=c.get("stat", "mean"))
                 for c in specs]
    adjusted = holm([d.p_value for d in diffs])
    joint = [results.compare(c["metric"], c["a"], c["b"], stat=c.get("stat", "mean"),
                             confidence=1 - 0.05 / len(specs), warn=False) for c in specs]
    rows, lines = [], []
    for i, (c, d, p_adj, j) in enumerate(zip(specs, diffs, adjusted, joint)):
        rows.append({"metric": d.metric, "b - a": f"{d.b} - {d.a}", "pairs": d.n,
                     "a": d.a_value, "b": d.b_value, "difference": d.estimate,
                     "low": _end(d.low), "high": _end(d.high), "excludes 0": d.excludes_zero,
                     "p": d.p_value, "p (Holm)": p_adj, "yes after Holm": p_adj < 0.05,
                     "joint interval": "" if math.isnan(j.low) else f"[{_end(j.low)}, "
                                                                      f"{_end(j.high)}]"})
        if d.n:
            plot_paired_comparison(results, c["metric"], c["a"], c["b"]).savefig(
                plots / f"compare_{i}.png", dpi=110)
            lines += [f"![{d.metric}](plots/compare_{i}.png)", ""]
    kind = ("**Primary** comparisons: the `[[compare]]` tables of the spec, chosen before the "
            "data were seen." if primary else
            "**Exploratory** comparisons: the spec names none (`[[compare]]`), so each "
            "configuration is compared with the first on the default metrics. Read them as "
            "leads for a new sweep with the comparison written down first, not as findings.")
    head = ["## Paired comparisons", "", f"{kind} {len(rows)} comparison(s); with this many, "
            "some interval may exclude 0 by chance.", "", "Runs matched on task and seed; the "
            "difference is b - a with its 95 % t-interval (exact interval and sign test for a "
            "median). `excludes 0` reads one comparison alone; `p (Holm)` is adjusted for all "
            f"{len(rows)} in this table, and `yes after Holm` (adjusted p < 0.05) keeps the "
            "chance of any false yes in the table below 5 %. `joint interval`: at confidence "
            f"1 - 0.05/{len(rows)} (Bonferroni), so all {len(rows)} hold together with at least "
            "95 %.", ""]
    if caught:
        head += [f"> Warning: {caught[0].message}", ""]
    return head + [markdown_table(rows, ["metric", "b - a", "pairs", "a", "b", "difference",
                                         "low", "high", "excludes 0", "p", "p (Holm)",
                                         "yes after Holm", "joint interval"]), "", *lines]


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
    summary, _ = _summary_section(results)
    lines += summary + _percentile_section(results, plots) + _compare_section(results, plots)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target
