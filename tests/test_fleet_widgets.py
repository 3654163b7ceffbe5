"""Chapter 13's widgets and plots: the runs table, the approval panel, throughput and tails."""
from __future__ import annotations

import time

import numpy as np
import pytest

from agentlab.fleet.control import Fleet
from agentlab.fleet.runs import RunSpec
from agentlab.viz.fleet import plot_throughput, plot_tool_percentiles, throughput_series, tool_percentiles
from agentlab.widgets.fleet import approval_panel, fleet_table, format_runs_table


@pytest.fixture
def fleet(redis_url, monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTLAB_REDIS_URL", redis_url)
    monkeypatch.setenv("AGENTLAB_FLEET_DIR", str(tmp_path))
    return Fleet()


def test_the_runs_table_goes_live_then_settles(fleet):
    ids = [fleet.submit("Research asyncio") for _ in range(2)]
    panel = fleet_table(fleet, ids, refresh_s=0.05)
    show, status = panel.children[0].children
    assert "queued: 2" in panel.text and "live" in status.value
    fleet.cancel(ids[0])
    show.value = "queued"  # the menu narrows the table at once; the count line counts all runs
    assert ids[0][:12] not in panel.text and ids[1][:12] in panel.text
    assert panel.text.splitlines()[-1] == "all runs: cancelled: 1  queued: 1"
    show.value = "all"
    fleet.cancel(ids[1])
    deadline = time.monotonic() + 5
    while "settled" not in status.value:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert panel.text.splitlines()[-1] == "cancelled: 2"
    assert "<pre>" in panel.children[1].value and "cancelled" in panel.children[1].value


def test_the_approval_panel_lists_the_pending_call_and_reports_a_failed_decision(fleet):
    run_id = "run-approve-1"
    fleet.records.create(run_id, RunSpec("Research asyncio", approve_tools=["write_file"]))
    fleet.records.update(run_id, state="paused", pending=[
        {"call_id": "c1", "tool": "write_file", "arguments": {"filename": "r.md"}}])
    panel = approval_panel(fleet, run_id)
    approve, reject = panel.children[0].children
    assert "waits for approval: write_file(filename='r.md')" in panel.text
    assert not approve.disabled and not reject.disabled
    reject.click()  # no checkpoint holds this made-up pause: the error is shown, not raised
    assert "CheckpointError" in panel.text and fleet.show(run_id)["state"] == "paused"


def test_a_settled_run_cannot_be_decided_from_the_panel(fleet):
    run_id = fleet.submit("Research asyncio")
    fleet.cancel(run_id)
    panel = approval_panel(fleet, run_id)
    assert panel.children[0].children[0].disabled and "cancelled" in panel.text
    assert format_runs_table([fleet.show(run_id)]).splitlines()[-1] == "cancelled: 1"


def test_percentiles_match_numpy_and_throughput_bins_count_every_run():
    xs = list(np.random.default_rng(0).exponential(100, 200))
    row = tool_percentiles({"web_search": xs, "idle": []})
    assert list(row) == ["web_search"] and row["web_search"]["calls"] == 200
    assert row["web_search"]["p95"] == pytest.approx(np.percentile(xs, 95))
    edges, counts = throughput_series([10.0, 10.2, 11.5, 13.9], bin_s=1.0)
    assert edges[0] == 0.0 and sum(counts) == 4 and counts[0] == 2
    assert plot_throughput([1.0, 2.0], events={"kill": 1.5}).axes[0].get_title() == "fleet throughput"
    assert len(plot_tool_percentiles({"a": [1, 2, 3]}).axes[0].patches) == 3


class _StoppableFleet:
    """A fleet handle whose Redis goes away on ``stop()`` (what ``LocalFleet.close()`` does)."""

    def __init__(self, records):
        self.records, self.stopped = {r["run_id"]: r for r in records}, False

    def show(self, run_id):
        if self.stopped:
            raise ConnectionError("Error 111 connecting to 127.0.0.1:6390. Connection refused.")
        return self.records[run_id]

    def approve(self, run_id):
        self.show(run_id)


def _rec(run_id, state):
    return {"run_id": run_id, "state": state, "attempts": 1, "worker": "w1@h",
            "result": {"turns": 6} if state == "finished" else None, "pending": []}


def test_the_show_menu_keeps_filtering_what_it_read_after_the_fleet_stopped():
    fleet = _StoppableFleet([_rec("run-aaaaaaaaaaaa1", "finished"),
                             _rec("run-bbbbbbbbbbbb2", "cancelled")])
    panel = fleet_table(fleet, list(fleet.records), refresh_s=60)
    show, status = panel.children[0].children
    fleet.stopped = True
    show.value = "cancelled"
    table = panel.children[1].value
    assert "run-bbbbbbbb" in table and "run-aaaaaaaa" not in table
    assert "all runs: cancelled: 1  finished: 1" in table
    assert "does not answer" in status.value and "as last read" in status.value
    show.value = "finished"
    assert "run-aaaaaaaa" in panel.children[1].value and "run-bbbbbbbb" not in panel.children[1].value


def test_the_approval_panel_shows_the_last_record_and_refuses_a_decision_once_stopped():
    paused = {**_rec("run-cccccccccccc3", "paused"), "pending": [
        {"call_id": "c1", "tool": "write_file", "arguments": {"filename": "r.md"}}]}
    fleet = _StoppableFleet([paused])
    panel = approval_panel(fleet, paused["run_id"])
    approve, reject = panel.children[0].children
    fleet.stopped = True
    approve.click()
    assert "waits for approval: write_file(filename='r.md')" in panel.text
    assert "ConnectionError" in panel.text and "as last read" in panel.text
    assert approve.disabled and reject.disabled


def test_the_fleet_plots_use_the_package_colours_and_no_legend_or_label_covers_a_bar():
    from matplotlib.colors import to_hex

    from agentlab.viz.states import PERCENTILE_COLORS, STATE_COLORS
    xs = {"read_url": [50.0] * 9 + [300.0], "web_search": [50.0, 300.0], "write_file": [300.0]}
    fig = plot_tool_percentiles(xs)
    fig.canvas.draw()
    ax = fig.axes[0]
    assert [to_hex(p.get_facecolor()) for p in ax.patches[::3]] == list(PERCENTILE_COLORS.values())
    legend = ax.get_legend().get_window_extent()
    assert not any(legend.overlaps(p.get_window_extent()) for p in ax.patches)
    fig = plot_throughput([0.0, 0.5, 1.2, 1.4, 1.6, 3.0], events={"worker killed": 1.5})
    fig.canvas.draw()
    ax = fig.axes[0]
    assert {to_hex(p.get_facecolor()) for p in ax.patches} == {STATE_COLORS["ok"]}
    label = ax.texts[0].get_window_extent()
    assert not any(label.overlaps(p.get_window_extent()) for p in ax.patches)
