"""agentlab.viz: every plot returns a labelled Figure, and the plot bugs of issue #14 stay fixed.

Each public ``plot_*`` gets small real data (``SAMPLES``); a plot added without a sample fails
``test_every_plot_has_a_sample``. The named bugs each have a test below that measures the drawn
figure (pixel sizes, overlaps, axis ranges), not the code.
"""
from __future__ import annotations

import functools

import re
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from agentlab import viz  # noqa: E402
from agentlab.dag import critical_path, simulate_schedule  # noqa: E402
from agentlab.executor import ToolExecutor, ToolResult  # noqa: E402
from agentlab.llm import Attempt, ToolCall  # noqa: E402
from agentlab.messages import MessageManager, synthetic_history  # noqa: E402
from agentlab.observe import AgentObserver  # noqa: E402
from agentlab.sim.tool_latency import LogNormal, replay  # noqa: E402
from agentlab.timeouts import AdaptiveTimeoutManager  # noqa: E402
from agentlab.timetravel import Revision  # noqa: E402
from agentlab.tools import ToolRegistry  # noqa: E402
from agentlab.viz.labels import legend_without_artist, overlapping_texts  # noqa: E402

DEPS = {"search": [], "read1": ["search"], "read2": ["search"], "sum": ["read1", "read2"]}
DUR = {"search": 200, "read1": 100, "read2": 400, "sum": 100}
# a unit in an axis label: "(ms)", "(s, log)", "tokens", "calls", a turn/step number, ...
UNIT = re.compile(r"\((ms|s|KB|KiB|USD|%)\b|\b(ms|tokens?|calls?|turn|step|retry|messages?|"
                  r"multiplier|level|index|compression #|call number|calls that|share of)\b",
                  re.I)  # "share of runs": a fraction is a unit too


def _observer(failed: bool = False) -> AgentObserver:
    obs = AgentObserver("viz-test", model="gpt-4o")
    with obs.span("run"):
        for turn in (1, 2):
            with obs.span("turn", turn=turn):
                obs.record_llm_call(prompt_tokens=300 * turn, completion_tokens=20,
                                    duration_ms=30.0, turn=turn)
                obs.record_tool_call("web_search", 12.0 * turn, True, turn=turn)
                obs.record_tool_call("read_url", 300.0, not failed,
                                     "tool_timeout" if failed else None, turn=turn)
    obs.finish("completed")
    return obs


def _results(timeout: bool = True) -> list[ToolResult]:
    t = time.perf_counter()
    out = [ToolResult("a", "fetch", "page", True, 50.0, started_at=t),
           ToolResult("b", "stuck", "Error", False, 300.0, "tool_timeout", started_at=t),
           ToolResult("c", "divide", "Error", False, 5.0, "tool_failed", started_at=t + 0.05)]
    return out if timeout else out[:1]


def _mm() -> MessageManager:
    mm = MessageManager("You research.", max_tokens=6000)
    mm.extend(synthetic_history(60, seed=1))
    return mm


def _attempts() -> list[Attempt]:
    return [Attempt(1, 1, 0.0, 2.0, 429, "rate_limited", 0.1),
            Attempt(1, 2, 0.102, 2.0, 500, "provider_unavailable", 0.2),
            Attempt(1, 3, 0.304, 3.0, 200, None)]


def _agent_result(tool_fault_rate: float = 0.3, seed: int = 3):
    from agentlab.widgets import run_with_settings
    return run_with_settings(model_fault_rate=0.0, tool_fault_rate=tool_fault_rate, seed=seed,
                             output_dir="/tmp/agentlab-test-viz")[0]


@functools.lru_cache(maxsize=1)
def _sweep():
    """A small chapter-14 sweep (two DAG strategies x 4 seeds), run once for its four plots."""
    from agentlab.experiments import Experiment
    return Experiment(grid={"strategy": ["levels", "ready"]}, seeds=4, tasks=["dag"],
                      settings={"dag_calls": 6}).run(workers=1, progress=False)


def _sweep_summary():
    """Makespan against a numeric setting: the number of calls in the DAG."""
    from agentlab.experiments import Experiment
    res = Experiment(grid={"dag_calls": [4, 6]}, seeds=3, tasks=["dag"]).run(workers=1,
                                                                              progress=False)
    return res.summary(["sim_makespan_ms", "success"], by=("dag_calls",))


SAMPLES = {
    "plot_percentile_bars": lambda: viz.plot_percentile_bars(_sweep().percentiles()),
    "plot_coverage": lambda: viz.plot_coverage([{"n": 20, "exact": 0.98, "bootstrap": 0.18},
                                                {"n": 200, "exact": 0.97, "bootstrap": 0.87}]),
    "plot_latency_ecdf": lambda: viz.plot_latency_ecdf(_sweep(), "step"),
    "plot_paired_comparison": lambda: viz.plot_paired_comparison(
        _sweep(), "sim_makespan_ms", "strategy=levels", "strategy=ready"),
    "plot_sweep_summary": lambda: viz.plot_sweep_summary(
        _sweep_summary(), "dag_calls", ["sim_makespan_ms", "success"],
        xlabel="tool calls in the DAG"),
    "plot_retry_timeline": lambda: viz.plot_retry_timeline(_attempts()),
    "plot_bars": lambda: viz.plot_bars({"file": 2.2, "sqlite": 0.43, "memory": 0.012},
                                       xlabel="store", ylabel="ms per save",
                                       title="Cost of one save", log=True),
    "plot_tool_gantt": lambda: viz.plot_tool_gantt({"parallel": _results()}, timeout_s=0.3),
    "plot_call_gantt": lambda: viz.plot_call_gantt(
        {"naive": [{"name": "stuck #b", "segments": [(0, 300, "timed_out"),
                                                      (300, 1200, "abandoned")]}]},
        timeout_ms=300, done_ms={"naive": 1200}),
    "plot_hung_batch": lambda: viz.plot_hung_batch([0.1, 0.2], {"naive": [1.0, 1.0],
                                                                "agentlab": [0.1, 0.2]}, hang_s=1),
    "plot_token_usage": lambda: viz.plot_token_usage([100, 300, 200], threshold=250,
                                                     max_tokens=400, compressions=[2],
                                                     tokens_before=[320]),
    "plot_compression": lambda: viz.plot_compression(_mm().compressions, threshold=4500),
    "plot_append_cost": lambda: viz.plot_append_cost([100, 200, 400], {"naive": [1e-3, 2e-3,
                                                                                 4e-3],
                                                                       "ours": [1e-5] * 3}),
    "plot_survivors": lambda: viz.plot_survivors([{"index": i, "role": r, "tokens": 50,
                                                   "status": s} for i, (r, s) in enumerate(
        [("user", "kept"), ("assistant", "removed"), ("tool", "kept")])]),
    "plot_crash_writes": lambda: viz.plot_crash_writes([
        {"store": "naive", "file_bytes": 4096, "new_bytes": 20000, "tmp_bytes": 0,
         "outcome": "torn", "limit_bytes": 4096},
        {"store": "agentlab", "file_bytes": 25, "new_bytes": 20000, "tmp_bytes": 4096,
         "outcome": "old value", "limit_bytes": 4096}]),
    "plot_turn_timeline": lambda: viz.plot_turn_timeline(_agent_result()),
    "plot_turn_tokens": lambda: viz.plot_turn_tokens(_agent_result(0.0)),
    "plot_stream_timing": lambda: viz.plot_stream_timing([{"turn": 1, "first_token_ms": 80,
                                                           "total_ms": 150},
                                                          {"turn": 2, "first_token_ms": None,
                                                           "total_ms": 90}]),
    "plot_latency_percentiles": lambda: viz.plot_latency_percentiles(
        {"fast": LogNormal(5, 0.3, seed=1).samples(200),
         "slow": LogNormal(800, 0.5, seed=2).samples(200)}, {"fast": 0.02, "slow": 2.0}),
    "plot_timeout_tradeoff": lambda: viz.plot_timeout_tradeoff([1, 1.5, 2], [0.02, 0.01, 0.0],
                                                               [120, 130, 170], current=1.5),
    "plot_timeout_trace": lambda: viz.plot_timeout_trace(
        {"agentlab": replay(AdaptiveTimeoutManager(min_timeout=0.05),
                            LogNormal(100, 0.3, seed=2).samples(50))},
        LogNormal(100, 0.3, seed=2).samples(50)),
    "plot_dag": lambda: viz.plot_dag(DEPS, durations_ms=DUR,
                                     highlight=critical_path(DUR, DEPS)[1]),
    "plot_schedules": lambda: viz.plot_schedules(
        {"ready": simulate_schedule(DUR, DEPS, 2)}, critical_path_ms=700, order=list(DEPS)),
    "plot_checkpoint_sizes": lambda: viz.plot_checkpoint_sizes(
        [{"turn": t, "size_bytes": 1000 * (t + 1), "saved_due_to": "interval"} for t in range(4)]),
    "plot_step_runs": lambda: viz.plot_step_runs(
        [{"step": 1, "first": "ok", "second": "not_run"},
         {"step": 2, "first": "ok", "second": "replayed"},
         {"step": 3, "first": "failed", "second": "ok"}], checkpoint_turn=1),
    "plot_trace": lambda: viz.plot_trace(_observer(failed=True)),
    "plot_turn_cost": lambda: viz.plot_turn_cost(_observer()),
    "plot_runs_cost": lambda: viz.plot_runs_cost(
        [{"turn": 1, "runs": 3, "prompt_tokens": 300, "completion_tokens": 20,
          "mean_usd": 0.001, "min_usd": 0.0009, "max_usd": 0.0012}], model="gpt-4o"),
    "plot_tool_latency": lambda: viz.plot_tool_latency(_observer(failed=True)),
    "plot_timeline": lambda: viz.plot_timeline(
        {"original": [Revision("r", i + 1, "c", i, "interval", "", 2, 100 * i, None)
                      for i in range(4)],
         "fork": [Revision("f", i, "c", i + 1, "interval", "", 2, 90 * (i + 1), None)
                  for i in range(1, 3)]}, fork_turn=1, selected=2),
}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _plot_names() -> list[str]:
    return sorted(n for n in dir(viz) if n.startswith("plot_") and callable(getattr(viz, n)))


def test_every_plot_has_a_sample():
    assert set(_plot_names()) == set(SAMPLES)


def _has_data(ax) -> bool:
    return bool(ax.patches or ax.lines or ax.collections or ax.images or ax.texts) \
        and ax.get_visible()


def _categorical(labels) -> bool:
    """Tick labels that name things (tools, turns as words) rather than numbers."""
    texts = [re.sub(r"\\mathdefault|[${}^\\]", "", t.get_text()) for t in labels]
    return any(re.search(r"[A-Za-z]{2,}", t) for t in texts)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_plot_is_a_labelled_figure_with_units(name):
    fig = SAMPLES[name]()
    assert isinstance(fig, Figure), f"{name} returned {type(fig).__name__}"
    axes = [ax for ax in fig.axes if _has_data(ax)]
    assert axes, f"{name}: nothing drawn"
    titles = [fig._suptitle.get_text() if fig._suptitle else ""] + [
        ax.get_title(loc) for ax in fig.axes for loc in ("left", "center", "right")]
    assert any(t.strip() for t in titles), f"{name}: no title"
    fig.canvas.draw()
    shared_xlabel = next((a.get_xlabel() for a in fig.axes if a.get_xlabel()),
                         fig._supxlabel.get_text() if fig._supxlabel else "")
    for ax in axes:
        xlabel = ax.get_xlabel() or shared_xlabel   # stacked panels: on the bottom one
        assert xlabel, f"{name}: an axis without an x label"
        if not _categorical(ax.get_xticklabels()):
            assert UNIT.search(xlabel), f"{name}: x label {xlabel!r} has no unit"
        if _categorical(ax.get_yticklabels()) or not ax.get_yticks().size:
            continue     # rows are named (tools, calls, stores) or it is a diagram (the DAG)
        assert UNIT.search(ax.get_ylabel()), f"{name}: y label {ax.get_ylabel()!r} has no unit"


# -- the named bugs ---------------------------------------------------------------------------

def _overlap(a, b) -> float:
    """Area (px^2) where two display-space boxes overlap."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0) * max(h, 0)


@pytest.mark.parametrize("name", ["plot_compression", "plot_survivors", "plot_token_usage"])
def test_04_legend_hides_no_data(name):
    if name == "plot_compression":
        fig = viz.plot_compression(_mm().compressions)
    else:
        fig = SAMPLES[name]()
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    for artist in list(ax.patches) + [ln for ln in ax.lines if len(ln.get_xdata()) > 2]:
        assert _overlap(legend, artist.get_window_extent()) < 1.0, f"legend over {artist}"


def test_04_token_usage_shows_the_size_before_compression_crossing_the_threshold():
    mm = MessageManager("You research.", max_tokens=6000)
    sizes, steps = [], []
    for i, msg in enumerate(synthetic_history(60, seed=1)):
        before = len(mm.compressions)
        mm.append(msg)
        sizes.append(mm.count_tokens())
        if len(mm.compressions) > before:
            steps.append(i)
    before = [r.tokens_before for r in mm.compressions[:len(steps)]]
    assert max(sizes) <= mm.threshold_tokens < max(before)        # the data has the crossing
    fig = viz.plot_token_usage(sizes, threshold=mm.threshold_tokens, max_tokens=mm.max_tokens,
                               compressions=steps, tokens_before=before)
    line = fig.axes[0].lines[0]
    assert max(line.get_ydata()) > mm.threshold_tokens             # ... and the plot shows it


def test_04_append_cost_draws_a_slope_one_reference():
    fig = SAMPLES["plot_append_cost"]()
    labels = [ln.get_label() for ln in fig.axes[0].lines]
    assert any("slope 1" in lab for lab in labels)
    assert any("naive: slope 1.00" == lab for lab in labels)


def test_06_tool_bars_are_at_least_4_px_wide():
    fig = viz.plot_turn_timeline(_agent_result(0.0))
    fig.canvas.draw()
    widths = [p.get_window_extent().width for p in fig.axes[0].patches]
    assert len(widths) == 11 and min(widths) >= 4.0        # 6 model calls, 5 tool bars


def test_06_failed_tools_are_marked_and_counted():
    result = _agent_result(0.3, seed=3)
    failed = sum(not c["success"] for c in result.tool_calls_made)
    assert failed
    ax = viz.plot_turn_timeline(result).axes[0]
    colours = {to_hex(p.get_facecolor()) for p in ax.patches}
    assert viz.STATE_COLORS["failed"] in colours
    marked = [t.get_text() for t in ax.texts if "failed" in t.get_text()]
    assert sum(int(re.search(r"(\d+) failed", t).group(1)) for t in marked) == failed


def test_09_panels_share_the_duration_axis_and_count_in_whole_calls():
    fig = SAMPLES["plot_latency_percentiles"]()
    fig.canvas.draw()
    assert len({ax.get_xlim() for ax in fig.axes}) == 1
    for ax in fig.axes:
        assert all(float(t).is_integer() for t in ax.get_yticks())


def test_09_percentile_legend_gives_the_exact_interval_and_an_open_p99():
    import numpy as np
    from scipy import stats
    fig = SAMPLES["plot_latency_percentiles"]()
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    slow = np.array(LogNormal(800, 0.5, seed=2).samples(200))
    ci = stats.quantile_test(slow, p=0.95).confidence_interval()
    assert f"p95 {np.percentile(slow, 95):.0f} ms [{ci.low:.0f}, {ci.high:.0f}]" in labels
    assert any(lab.startswith("p99 ") and lab.endswith(", +inf]") for lab in labels)  # 200 < 368
    assert any(p.get_hatch() == "//" for p in fig.axes[1].patches)


def test_09_right_axis_starts_at_zero():
    fig = SAMPLES["plot_timeout_tradeoff"]()
    assert [ax.get_ylim()[0] for ax in fig.axes] == [0.0, 0.0]


@pytest.mark.parametrize("log", [True, False])
def test_01_05_bars_carry_their_values(log):
    fig = viz.plot_bars({"file": 2.242, "sqlite": 0.43, "memory": 0.012}, xlabel="store",
                        ylabel="ms per save", title="t", log=log, fmt="{:.3f} ms")
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"2.242 ms", "0.430 ms", "0.012 ms"} <= texts


def test_timeout_is_the_same_state_in_chapter_03_and_10():
    orange = viz.STATE_COLORS["timed_out"]
    gantt = viz.plot_tool_gantt({"parallel": _results()})
    reg = ToolRegistry()

    @reg.tool
    def slow(query: str = "") -> str:
        """Sleeps."""
        time.sleep(0.5)
        return "late"

    @reg.tool
    def after(query: str = "") -> str:
        """Depends on slow."""
        return "x"

    from agentlab.dag import DependencyAwareExecutor
    ex = DependencyAwareExecutor(reg, default_timeout=0.05)
    results = ex.execute_with_dependencies([ToolCall("s", "slow", {}), ToolCall("a", "after", {})],
                                           {"a": ["s"]})
    assert results[0].error_code == "tool_timeout"
    dag = viz.plot_schedules({"run": ex.last_schedule}, results=results)
    for fig in (gantt, dag):
        colours = {to_hex(p.get_facecolor()) for ax in fig.axes for p in ax.patches}
        assert orange in colours, fig
        labels = [t.get_text() for leg in fig.legends + [ax.get_legend() for ax in fig.axes
                                                       if ax.get_legend()]
                  for t in leg.get_texts()]
        assert "timed out" in labels


def test_12_trace_starts_at_the_run_and_its_title_gives_the_run_duration():
    obs = AgentObserver("late-start", model="gpt-4o")
    time.sleep(0.3)                                 # the observer exists before the run starts
    with obs.span("run"):
        with obs.span("turn", turn=1):
            obs.record_llm_call(prompt_tokens=10, completion_tokens=5, duration_ms=20.0, turn=1)
    obs.finish("completed")
    run = next(s for s in obs.spans if s.name == "run")
    fig = viz.plot_trace(obs)
    ax = fig.axes[0]
    bar = ax.patches[0]
    assert bar.get_x() == 0.0 and abs(bar.get_width() - run.duration_ms) < 1e-6
    title = ax.get_title("left")
    assert f"run {run.duration_ms:.0f} ms" in title and run.duration_ms < 200


def test_12_tool_latency_draws_unbounded_ends_as_arrows_not_the_slowest_call():
    fig = viz.plot_tool_latency(_observer())
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert any("2 calls" in lab and "p50/p95/p99 unbounded" in lab for lab in labels)
    ticks = [ln for ln in ax.lines if len(ln.get_xdata()) == 2 and ln.get_label().startswith("_")]
    assert len(ticks) == 6                          # p50, p95, p99 ticks, one set per tool
    arrows = [a for a in ax.texts if getattr(a, "arrow_patch", None) is not None]
    assert len(arrows) == 6 and all(a.xy[0] == ax.get_xlim()[1] for a in arrows)  # to the edge
    assert viz.MIN_CALLS == {50: 6, 95: 72, 99: 368}


def test_call_state_vocabulary():
    assert viz.call_state(ToolResult("1", "t", "x", True)) == "ok"
    assert viz.call_state({"success": False, "error_code": "tool_timeout"}) == "timed_out"
    assert viz.call_state({"success": False, "error_code": "dependency_failed"}) == "not_run"
    assert viz.call_state({"success": False, "error_code": "tool_failed"}) == "failed"
    assert viz.call_state(_attempts()[0]) == "failed"
    assert viz.call_state(simulate_schedule(DUR, DEPS, 1).calls[0]) == "ok"
    assert viz.worst_state(["ok", "timed_out", "failed"]) == "failed"
    with pytest.raises(ValueError, match="unknown call state"):
        viz.call_state("bogus")
    assert [h.get_label() for h in viz.state_handles(["replayed", "ok"])] == \
        ["ok", "replayed from the log"]


def test_token_usage_rejects_mismatched_peaks():
    with pytest.raises(ValueError, match="tokens_before has 1 values for 2 compressions"):
        viz.plot_token_usage([1, 2, 3], compressions=[1, 2], tokens_before=[5])


def test_executor_gantt_still_draws_real_results():
    reg = ToolRegistry()

    @reg.tool
    def nap(ms: int) -> str:
        """Sleep."""
        time.sleep(ms / 1000)
        return "ok"

    res = ToolExecutor(reg, default_timeout=0.05).execute_parallel(
        [ToolCall("1", "nap", {"ms": 10}), ToolCall("2", "nap", {"ms": 200})])
    fig = viz.plot_tool_gantt({"parallel": res}, timeout_s=0.05)
    widths = sorted(p.get_width() for p in fig.axes[0].patches)
    assert widths[0] >= 10 and 45 <= widths[-1] <= 150


def test_trace_and_latency_row_labels_are_readable_and_apart():
    """Span names and latency rows are >= 9 pt and never overprint (issue 24: 'turn' at 7 pt)."""
    for fig in (viz.plot_trace(_observer(failed=True)), viz.plot_tool_latency(_observer())):
        fig.canvas.draw()
        ax = fig.axes[0]
        labels = [t for t in ax.texts if t.get_text()] or \
            [t for t in ax.get_yticklabels() if t.get_text()]
        assert labels and min(t.get_fontsize() for t in labels) >= 9
        boxes = sorted((t.get_window_extent() for t in labels), key=lambda b: b.y0)
        assert all(a.y1 <= b.y0 + 0.5 for a, b in zip(boxes, boxes[1:]))  # no overlap


# -- issue 24: labels that overprint, legend entries with nothing drawn ------------------------

@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_no_two_drawn_texts_overlap(name):
    """Tick labels in view, axis labels, titles, annotations and legend entries, as drawn."""
    assert overlapping_texts(SAMPLES[name]()) == []


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_legend_entry_has_something_drawn_for_it(name):
    assert legend_without_artist(SAMPLES[name]()) == []


def test_the_checks_see_an_overprint_and_an_empty_legend_entry():
    fig, ax = plt.subplots()
    ax.text(0.5, 0.5, "first label")
    ax.text(0.52, 0.5, "second label")
    ax.fill_between([0, 1], [0, 0], [float("inf")] * 2, label="band")  # nothing drawn
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend()
    assert overlapping_texts(fig) == [("first label", "second label")]
    assert legend_without_artist(fig) == ["band"]


def test_14_a_lone_finite_interval_is_drawn_and_the_swept_values_label_one_shared_axis():
    import pandas as pd
    summary = pd.DataFrame({"threshold": [0.6, 0.9], "tokens": [13835.0, 10869.0],
                            "tokens_low": [11873.8, 5210.97],
                            "tokens_high": [15796.2, float("inf")]})
    fig = viz.plot_sweep_summary(summary, "threshold", ["tokens", "tokens"],
                                 xlabel="threshold (share of token budget)")
    ax = fig.axes[0]
    whiskers = [c for c in ax.containers if c.get_label() == "95% interval"]
    assert len(whiskers) == 1  # the 0.6 interval, with no finite neighbour to make a band
    (segments,) = [c.get_segments() for c in whiskers[0].lines[2]]
    assert [tuple(map(float, p)) for p in segments[0]] == [(0.6, 11873.8), (0.6, 15796.2)]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.6", "0.9"]
    assert fig._supxlabel.get_text() == "threshold (share of token budget)"
    assert not any(a.get_xlabel() for a in fig.axes)
    assert overlapping_texts(fig) == [] and legend_without_artist(fig) == []


def test_14_long_tick_labels_are_turned_until_they_clear():
    import pandas as pd
    xs = [0.5 + 0.05 * i for i in range(11)]
    summary = pd.DataFrame({"x": xs, "m": xs, "m_low": xs, "m_high": xs})
    fig = viz.plot_sweep_summary(summary, "x", ["m", "m", "m"], figsize=(6, 3))
    assert overlapping_texts(fig) == []


def test_04_compression_labels_never_overprint_with_many_compressions():
    mm = MessageManager("You are a researcher.", max_tokens=6000)
    for m in synthetic_history(150, seed=1):
        mm.append(m)
    assert len(mm.compressions) > 30  # the notebook's case: 33 bars in 7.5 inches
    fig = viz.plot_compression(mm.compressions, threshold=mm.threshold_tokens)
    assert overlapping_texts(fig) == []
    assert {t.get_fontsize() for t in fig.axes[0].texts} == {8.0}


@pytest.mark.parametrize("crash_kib", [None, 4, 19])
def test_05_crash_labels_clear_the_kill_line_and_each_other(crash_kib):
    kill = crash_kib * 1024 if crash_kib else None
    torn = dict(outcome="torn", file_bytes=kill) if kill else dict(outcome="new value",
                                                                  file_bytes=20496)
    rows = [{"store": "naive (write_text)", "new_bytes": 20496, "tmp_bytes": 0,
             "limit_bytes": kill, **torn},
            {"store": "agentlab (temp + rename)", "new_bytes": 20496, "limit_bytes": kill,
             "outcome": "old value" if kill else "new value",
             "file_bytes": 25 if kill else 20496, "tmp_bytes": kill or 0}]
    fig = viz.plot_crash_writes(rows)
    assert overlapping_texts(fig) == []
    ax = fig.axes[0]
    for text in ax.texts:  # beside the axes, so over no bar and no line
        assert text.get_window_extent().x0 >= ax.get_window_extent().x1
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert ("value file, torn" in labels) == bool(kill)


def test_00_12_trace_row_labels_are_readable_and_clear_of_the_bars():
    fig = viz.plot_trace(_observer())
    fig.canvas.draw()
    ax = fig.axes[0]
    rows = [t for t in ax.texts]
    assert [t.get_text() for t in rows if t.get_text().startswith("turn")] == ["turn 1", "turn 2"]
    assert min(t.get_fontsize() for t in rows) >= 9
    left = ax.get_window_extent().x0
    assert all(t.get_window_extent().x1 < left for t in rows)
    assert overlapping_texts(fig) == []


def test_07_a_long_title_clears_the_legend_above_the_bars():
    rows = [{"turn": 1, "first_token_ms": 82.0, "total_ms": 143.0},
            {"turn": 2, "first_token_ms": 81.0, "total_ms": 140.0}]
    fig = viz.plot_stream_timing(rows, title="Time to first text vs the whole call (latency "
                                             "scaled x0.2)")
    assert overlapping_texts(fig, min_px2=0.0) == []


@pytest.mark.parametrize("dpi", [72, 80, 90, 100, 150])
def test_03_gantt_bar_labels_end_inside_the_axes_at_any_dpi(dpi):
    # the widget draws at 90 dpi and its snapshot at 80: "(then ran on)" was cut at the edge
    rows = [{"name": "stuck #b", "segments": [(0, 350, "timed_out"), (350, 1200, "abandoned")]},
            {"name": "fetch #a", "segments": [(0, 60, "ok")]}]
    fig = viz.plot_call_gantt({"parallel (agentlab)": rows}, timeout_ms=350,
                              done_ms={"parallel (agentlab)": 351}, figsize=(7.5, 2.6))
    fig.set_dpi(dpi)
    fig.canvas.draw()
    ax = fig.axes[0]
    assert max(t.get_window_extent().x1 for t in ax.texts) < ax.get_window_extent().x1
