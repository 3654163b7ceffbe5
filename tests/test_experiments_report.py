"""``agentlab report``: primary vs exploratory comparisons, Holm, unbounded percentile ends."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from agentlab.experiments import Results
from agentlab.experiments.report import write_report


def _sweep(tmp_path, compare=None):
    rng = np.random.default_rng(0)
    runs, calls = [], []
    for config in ("x=a", "x=b", "x=c"):
        for seed in range(10):
            runs.append({"config": config, "task": "t", "seed": seed, "status": "ok",
                         "success": True, "sim_false_kills": float(rng.integers(0, 4)),
                         "total_tokens": float(1000 + seed + (50 if config == "x=c" else 0))})
            calls += [{"config": config, "tool": "step", "duration_ms": float(d),
                       "timed_out": False, "timeout_s": 30.0, "outcome": "ok"}
                      for d in rng.lognormal(3, 1, 5)]
    manifest = {"name": "t", "status": "complete", "experiment": {"compare": compare or []}}
    return Results(pd.DataFrame(runs), pd.DataFrame(calls), manifest).save(tmp_path / "s")


def test_default_comparisons_are_counted_labelled_exploratory_and_holm_adjusted(tmp_path):
    text = write_report(_sweep(tmp_path)).read_text()
    # 2 configurations against the first x 3 metrics (success, total_tokens, sim_false_kills)
    assert "**Exploratory** comparisons" in text and "6 comparison(s)" in text
    assert "| p (Holm) | yes after Holm |" in text
    row = next(r for r in text.splitlines() if r.startswith("| total_tokens | x=c - x=a"))
    assert "| yes | [50, 50] |" in row  # +50 tokens on every seed survives Holm
    kills = next(r for r in text.splitlines() if r.startswith("| sim_false_kills | x=b - x=a"))
    cells = [c.strip() for c in kills.split("|")]
    joint = [float(v) for v in cells[-2].strip("[]").split(",")]
    assert joint[0] < float(cells[7]) and joint[1] > float(cells[8])  # wider: 1 - 0.05/6
    assert "+inf" in text  # 50 calls cannot bound a p99 (368 needed)
    assert "9 of 9" not in text and "1 [1, 1]" not in text
    share = stats.binomtest(10, 10).proportion_ci(method="exact").low
    assert f"1 [{share:.4g}, 1]" in text  # success 10/10 gets Clopper-Pearson


def test_spec_comparisons_are_primary(tmp_path):
    compare = [{"metric": "total_tokens", "a": "x=a", "b": "x=c"}]
    text = write_report(_sweep(tmp_path, compare)).read_text()
    assert "**Primary** comparisons" in text and "1 comparison(s)" in text
    assert "Exploratory" not in text
