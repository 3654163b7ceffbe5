"""Chapter 14 plots return titled, labelled figures; the experiments package imports light."""
from __future__ import annotations

import subprocess
import sys
import warnings

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest

from agentlab import viz
from agentlab.experiments import Experiment


@pytest.fixture(scope="module")
def results():
    exp = Experiment(grid={"strategy": ["levels", "ready"]}, seeds=4, tasks=["dag"],
                     settings={"dag_calls": 6})
    return exp.run(workers=1, progress=False)


def _labels(fig):
    title = fig._suptitle.get_text() if fig._suptitle else fig.axes[0].get_title()
    return title, [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]


def test_percentile_bars_have_units_and_hatch_the_few_samples(results):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = results.percentiles()
    fig = viz.plot_percentile_bars(table)
    title, labels = _labels(fig)
    assert "exact 95% intervals" in title and "too few samples" in title
    assert "no upper bound" in title
    assert all("(ms" in y for _, y in labels)
    hatched = [p for ax in fig.axes for p in ax.patches if p.get_hatch()]
    assert len(hatched) == table["few_samples"].sum()


def test_ecdf_marks_the_timeouts(results):
    fig = viz.plot_latency_ecdf(results, "step")
    (ax,) = fig.axes
    assert "timeouts enforced" in ax.get_title()
    assert ax.get_xlabel().startswith("call duration (ms") and "share of calls" in ax.get_ylabel()
    assert sum("timeout" in t.get_text() for t in ax.texts) == 2  # one per configuration


def test_paired_comparison_shows_the_difference_and_its_interval(results):
    fig = viz.plot_paired_comparison(results, "sim_makespan_ms", "strategy=levels",
                                     "strategy=ready")
    title, labels = _labels(fig)
    assert title == "sim_makespan_ms: strategy=ready vs strategy=levels"
    assert labels[0][1] == "sim_makespan_ms (ms)"
    assert labels[1][0] == "strategy=ready minus strategy=levels (ms)"
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert any(t.startswith("mean ") and "[" in t for t in legend)


def test_sweep_summary_plots_each_metric_against_the_setting(results):
    summary = results.summary(["sim_makespan_ms", "success"], by=("strategy",))
    summary["strategy"] = [0, 1]
    fig = viz.plot_sweep_summary(summary, "strategy", ["sim_makespan_ms", "success"])
    _, labels = _labels(fig)
    # one x label under both panels (one each overprinted the neighbour's): the figure's
    assert fig._supxlabel.get_text() == "strategy"
    assert labels == [("", "mean sim_makespan_ms (ms)"), ("", "mean success (share of runs)")]


def test_importing_experiments_and_the_cli_loads_no_data_stack():
    code = ("import sys, agentlab.experiments, agentlab.cli; print([m for m in ('pandas', "
            "'scipy', 'pyarrow', 'matplotlib', 'tqdm') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_coverage_plot_draws_the_bootstrap_cap():
    fig = viz.plot_coverage([{"n": 20, "exact": 0.98, "bootstrap": 0.18},
                             {"n": 50, "exact": 0.97, "bootstrap": 0.37}])
    (ax,) = fig.axes
    cap = next(ln for ln in ax.lines if ln.get_label().startswith("bootstrap cap"))
    n, y = cap.get_xdata(), cap.get_ydata()
    assert abs(y[0] - (1 - 0.99 ** 20)) < 1e-9 and abs(y[-1] - (1 - 0.99 ** 50)) < 1e-9
    assert n[0] == 20 and "p99" in ax.get_ylabel()



def test_sweep_summary_draws_an_open_end_instead_of_dropping_it():
    import pandas as pd

    summary = pd.DataFrame({"threshold": [0.5, 1.0], "tokens": [10.0, 20.0],
                            "tokens_low": [8.0, 15.0], "tokens_high": [12.0, float("inf")]})
    ax = viz.plot_sweep_summary(summary, "threshold", ["tokens"]).axes[0]
    assert any(c.get_hatch() == "//" for c in ax.collections)  # the open end, hatched
    assert "no bound (open end)" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert ax.get_ylim()[1] < 1e6  # the axis is not stretched towards +inf


def _drawn_overlaps(fig):
    fig.canvas.draw()
    out = []
    for ax in fig.axes:
        boxes = [t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()]
        out += [(a, b) for a, b in zip(boxes, boxes[1:]) if a.overlaps(b)]
    return out


def test_overlapping_x_tick_labels_are_rotated_apart():
    from agentlab.viz.labels import spread_xticks

    fig, ax = plt.subplots(figsize=(3, 2.5))
    ax.plot(range(6), range(6))
    ax.set_xticks(range(6), [f"threshold {v}" for v in range(6)])
    assert _drawn_overlaps(fig)  # the case this guards against is really there
    spread_xticks(fig)
    assert _drawn_overlaps(fig) == []
    plt.close(fig)


def test_sweep_summary_legend_has_no_entry_without_a_drawing():
    import pandas as pd

    summary = pd.DataFrame({"t": [0.5, 1.0], "tokens": [10.0, 20.0],
                            "tokens_low": [8.0, 15.0], "tokens_high": [float("inf")] * 2})
    ax = viz.plot_sweep_summary(summary, "t", ["tokens"]).axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "95% interval" not in legend  # no finite band anywhere: nothing to stand for
    summary["tokens_high"] = [12.0, 25.0]
    fig = viz.plot_sweep_summary(summary, "t", ["tokens"])
    ax = fig.axes[0]
    (whiskers,) = [c for c in ax.containers if c.get_label() == "95% interval"]
    assert len(whiskers.lines[2][0].get_segments()) == 2  # the entry stands for drawn whiskers
    assert any(len(p.vertices) > 2 for p in ax.collections[0].get_paths())  # and a band
    from agentlab.viz.labels import legend_without_artist
    assert legend_without_artist(fig) == []
