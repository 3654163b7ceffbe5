"""agentlab.widgets: each chapter's widget, driven in code (set a value, click, check the output
changed), the snapshot bundle that makes widgets show on open, the refresh script that keeps
widget state, and the JupyterLab setting that saves it.

Widgets run without a kernel here: ``Panel.text`` and ``Panel.figure`` hold what a widget shows
(what it printed into its ``Output`` and the figure it displayed).
"""
from __future__ import annotations

import base64
import importlib.util
import json
import math
import os
import re
import sys
import threading
from pathlib import Path
from typing import Literal

import matplotlib
import numpy as np

matplotlib.use("Agg")

import ipywidgets as w  # noqa: E402
import nbformat  # noqa: E402
import pytest  # noqa: E402
from scipy import stats as scipy_stats  # noqa: E402

from agentlab import widgets  # noqa: E402
from agentlab.messages import synthetic_history  # noqa: E402
from agentlab.tools import ToolRegistry  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n"


def control(panel: w.Widget, cls: type, description: str | None = None) -> w.Widget:
    """The first widget of type ``cls`` (with that description) inside ``panel``."""
    stack = [panel]
    while stack:
        c = stack.pop(0)
        if isinstance(c, cls) and (description is None or c.description == description):
            return c
        stack.extend(getattr(c, "children", ()))
    raise LookupError(f"no {cls.__name__} {description or ''} in the widget")


def changed(panel: widgets.Panel, act) -> tuple[str, str]:
    """Run ``act()``; return (text before, text after) and check the panel redrew."""
    before, n = panel.text, panel.updates
    act()
    assert panel.updates > n, "the widget did not redraw"
    assert panel.text != before, "the widget's output did not change"
    return before, panel.text


# -- the snapshot bundle ----------------------------------------------------------------------

def test_panel_bundle_carries_widget_view_png_and_hint():
    panel = widgets.Panel([w.IntSlider(7, description="max turns")], title="demo (chapter 00)")
    panel.show(None, "hello")
    bundle = panel._repr_mimebundle_()
    assert set(bundle) == {"application/vnd.jupyter.widget-view+json", "image/png", "text/plain"}
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == panel.model_id
    assert base64.b64decode(bundle["image/png"]).startswith(PNG)
    assert bundle["text/plain"].startswith("\u25b6 demo (chapter 00): run this cell")
    assert "VBox(" not in bundle["text/plain"]


def test_snapshot_draws_controls_text_and_figures():
    import matplotlib.pyplot as plt
    figs = [plt.subplots(figsize=(4, 2), dpi=80)[0] for _ in range(2)]
    png = widgets.snapshot_png("t", ["a: 1"], "line\n" * 40, figs)
    import matplotlib.image as mpimg
    import io
    img = mpimg.imread(io.BytesIO(png))
    # both plots, stacked; each cropped to what it draws (+0.1 in), so about 4 in wide at 80 dpi
    assert 280 <= img.shape[1] <= 340 and img.shape[0] > 2 * 140
    assert widgets.control_values(w.VBox([w.Dropdown(options=[("nice", 1)], value=1,
                                                     description="pick"),
                                          w.Checkbox(True, description="on?"), w.Button(),
                                          w.Textarea("long")])) == ["pick: nice", "on?: on"]


def test_a_failing_snapshot_still_displays_the_widget(monkeypatch):
    panel = widgets.Panel([], title="x")
    monkeypatch.setattr(panel, "snapshot_png", lambda: 1 / 0)
    bundle = panel._repr_mimebundle_()
    assert "image/png" not in bundle and "ZeroDivisionError" in bundle["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in bundle


@pytest.mark.parametrize("name", [n for n in widgets.__all__ if n.endswith(
    ("_explorer", "_panel", "_viewer", "_editor"))])
def test_every_widget_is_a_panel(name):
    assert getattr(widgets, name).__annotations__["return"] in ("Panel", widgets.Panel)


# -- one widget per chapter, driven ---------------------------------------------------------

def test_00_06_run_panel(tmp_path):
    panel = widgets.run_panel(output_dir=tmp_path)
    assert "6/6 tool calls ok | run errors: 0" in panel.text and panel.figure is not None
    control(panel, w.FloatSlider, "tool fault rate").value = 0.3
    control(panel, w.IntText, "seed").value = 3
    _, after = changed(panel, control(panel, w.Button).click)
    assert re.search(r"(\d+)/(\d+) tool calls ok \((\d+) failed\)", after)
    assert "FAILED" in after


def test_summary_counts_failed_tools_next_to_the_successes(tmp_path):
    result, _ = widgets.run_with_settings(tool_fault_rate=0.3, seed=3, output_dir=tmp_path)
    calls = result.tool_calls_made
    ok = sum(c["success"] for c in calls)
    assert ok < len(calls)
    assert (f"{ok}/{len(calls)} tool calls ok ({len(calls) - ok} failed) | "
            f"run errors: {len(result.errors)}") in widgets.summarize_result(result)


def test_a_slow_machine_prints_the_same_faulty_run(tmp_path, monkeypatch):
    """Notebook 08's faulty run depends only on its seed: a write_file slowed by 0.15 s (two
    fsyncs on a loaded laptop) still finishes inside the injected-fault tool timeout."""
    settings = dict(model_fault_rate=0.4, tool_fault_rate=0.3, seed=3)
    quick, _ = widgets.run_with_settings(output_dir=tmp_path / "quick", **settings)
    import agentlab.research as research_module
    real = research_module.atomic_write

    def slow_write(*args, **kwargs):
        threading.Event().wait(0.15)
        return real(*args, **kwargs)

    monkeypatch.setattr(research_module, "atomic_write", slow_write)
    slow, _ = widgets.run_with_settings(output_dir=tmp_path / "slow", **settings)
    assert widgets.summarize_result(slow) == widgets.summarize_result(quick)
    assert [c["success"] for c in slow.tool_calls_made] == [c["success"] for c in quick.tool_calls_made]


def test_01_retry_explorer():
    panel = widgets.retry_explorer()
    assert panel.text.startswith("ok:")
    _, after = changed(panel, lambda: setattr(control(panel, w.Dropdown, "fault plan"), "value",
                                              "401 bad key"))  # a new plan runs at once
    assert "code=auth_failed" in after
    assert "base delay s: 0.05" in widgets.control_values(panel)  # the value used, as shown


def test_02_schema_explorer():
    reg = ToolRegistry()

    @reg.tool
    def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
        """Weather for a city.

        Args:
            city: the city.
            unit: degrees.
        """
        return "sunny"

    panel = widgets.schema_explorer(reg, arguments='{"city": "Oslo", "unit": "kelvin"}')
    assert "Error" in panel.text and '"enum"' in panel.text
    _, after = changed(panel, lambda: setattr(control(panel, w.Textarea, "arguments"), "value",
                                              '{"city": "Oslo"}'))
    assert after.endswith("valid: city='Oslo'")


def test_03_hung_batch_explorer():
    panel = widgets.hung_batch_explorer(hang_s=0.6)
    wall = lambda t: float(re.search(r"results back after (\d+) ms", t).group(1))  # noqa: E731
    assert wall(panel.text) < 0.3 * 1000 + 200 and "b timed out" in panel.text
    changed(panel, lambda: setattr(control(panel, w.FloatSlider), "value", 0.15))
    assert "timeout 0.15 s" in panel.text and wall(panel.text) < 0.15 * 1000 + 200
    changed(panel, lambda: setattr(control(panel, w.ToggleButtons), "value",
                                   "naive execute_parallel"))
    assert wall(panel.text) >= 600 and "waited for the hung thread" in panel.text


def test_03_executor_buttons_are_told_apart_by_their_first_word():
    buttons = control(widgets.hung_batch_explorer(hang_s=0.2), w.ToggleButtons)
    labels = list(buttons._options_labels)
    assert len({lab.split()[0] for lab in labels}) == len(labels)  # distinct even when cut short
    assert len(set(buttons.tooltips)) == len(labels) and all(buttons.tooltips)
    assert list(buttons._options_values) == list(widgets.EXECUTORS)


def test_03_gantt_rows_show_the_abandoned_thread():
    res = widgets.run_hung_batch(0.1, hang_s=0.4)
    stuck = next(r for r in res["rows"] if r["name"] == "stuck #b")
    assert [s for _, _, s in stuck["segments"]] == ["timed_out", "abandoned"]
    (s0, e0, _), (s1, e1, _) = stuck["segments"]
    assert abs((e0 - s0) - 100) < 60 and e1 - s0 >= 390


def test_04_budget_explorer():
    panel = widgets.budget_explorer(synthetic_history(40, seed=1)[:120], max_tokens=6000)
    kept = lambda t: int(re.search(r"messages kept: (\d+)/", t).group(1))  # noqa: E731
    before, after = changed(panel, lambda: setattr(control(panel, w.IntSlider, "max_tokens"),
                                                   "value", 2000))
    assert kept(after) < kept(before)


@pytest.mark.skipif(os.name != "posix", reason="crash injection needs RLIMIT_FSIZE")
def test_05_crash_explorer():
    panel = widgets.crash_explorer()
    naive, ours = panel.text.splitlines()
    assert "killed (SIGXFSZ)" in naive and "JSONDecodeError" in naive
    assert "killed (SIGXFSZ)" in ours and "load() -> old value" in ours
    changed(panel, lambda: setattr(control(panel, w.ToggleButtons), "value", "no crash"))
    assert panel.text.count("load() -> new value") == 2


@pytest.mark.skipif(os.name != "posix", reason="crash injection needs RLIMIT_FSIZE")
def test_05_crash_point_decides_how_much_of_the_naive_file_survives(tmp_path):
    small = widgets.crash_write("naive (write_text)", crash_kib=2, folder=tmp_path)
    large = widgets.crash_write("naive (write_text)", crash_kib=8, folder=tmp_path)
    assert (small["file_bytes"], large["file_bytes"]) == (2048, 8192)
    assert small["outcome"] == large["outcome"] == "torn"
    ours = widgets.crash_write(crash_kib=8, folder=tmp_path)
    assert ours["outcome"] == "old value" and ours["tmp_bytes"] == 8192


def test_07_stream_viewer():
    panel = widgets.stream_viewer(time_scale=0.05)
    assert panel.text.startswith("Checking item 2.") and "first text after" in panel.text
    control(panel, w.IntSlider, "first token (ms)").value = 1500
    _, after = changed(panel, control(panel, w.Button).click)
    firsts = [int(x) for x in re.findall(r"first text after (\d+) ms", after)]
    assert len(firsts) == 3 and min(firsts) >= 1500 * 0.05 * 0.8


def test_08_research_explorer(tmp_path):
    panel = widgets.research_explorer(output_dir=tmp_path)
    assert 'web_search("Python asyncio best practices")' in panel.text
    control(panel, w.Combobox).value = widgets.QUESTIONS[1]
    _, after = changed(panel, control(panel, w.Button).click)
    assert "cancellation" in after and "cost: $" in after and "# " in after
    _, priced = changed(panel, lambda: setattr(control(panel, w.Dropdown, "price as"), "value",
                                               "gpt-4o-mini"))  # the browser check found it silent
    assert "at gpt-4o-mini list prices" in priced


def test_09_multiplier_explorer():
    panel = widgets.multiplier_explorer()
    timeout = lambda t: float(re.search(r"timeout ([\d.]+) s", t).group(1))  # noqa: E731
    before, after = changed(panel, lambda: setattr(control(panel, w.FloatSlider), "value", 3.0))
    assert "x3" in after and timeout(after) > timeout(before)
    changed(panel, lambda: setattr(control(panel, w.Dropdown), "value", "report"))
    assert panel.text.startswith("report:")


def test_10_dag_editor():
    panel = widgets.dag_editor()
    assert "critical path 750 ms" in panel.text
    assert "ready, 2 workers: makespan 750 ms" in panel.text
    _, after = changed(panel, lambda: setattr(control(panel, w.IntSlider), "value", 1))
    assert "ready, 1 worker: makespan 1300 ms" in after      # one worker: the sum of all calls
    box = control(panel, w.Textarea)
    changed(panel, lambda: setattr(box, "value", box.value + "\nsearch2 10: summarize, read9"))
    assert "unknown_dependency" in panel.text
    changed(panel, lambda: setattr(box, "value", "a 10: b\nb 10: a"))
    assert "cycle_detected" in panel.text and panel.figure is None


def test_10_parse_dag_names_the_bad_line():
    with pytest.raises(ValueError, match=r"line 2 \('b: a'\)"):
        widgets.parse_dag("a 10\nb: a")


@pytest.fixture(scope="module")
def killed_in_step_6():
    """The kill-point explorer (kill in step 4), then killed in step 6 with checkpoints every
    3 steps: two kill-and-resume pairs of processes, shared by the two tests below."""
    panel = widgets.kill_point_explorer(every=3)
    first = panel.text
    control(panel, w.IntSlider, "kill in step").value = 6
    before, after = changed(panel, control(panel, w.Button).click)
    assert before == first
    return panel, first, after


def test_11_kill_point_explorer(killed_in_step_6):
    _, first, after = killed_in_step_6
    assert "killed in step 4" in first and "ran twice: [4]" in first
    assert "ran twice: [6]" in after
    assert "{1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 2}" in after


def test_11_steps_between_checkpoint_and_crash_are_replayed_not_rerun(killed_in_step_6):
    res = killed_in_step_6[0].result  # what kill_and_resume(6, every=3) returned
    assert (res["kill_step"], res["every"]) == (6, 3)
    assert res["checkpoint_turn"] == 3
    assert [r["second"] for r in res["rows"]] == ["not_run"] * 3 + ["replayed"] * 2 + ["ok"]


def test_12_latency_explorer():
    panel = widgets.latency_explorer(runs=10)
    calls = lambda t: dict(re.findall(r"^(\w+)\s+(\d+)", t, re.M))  # noqa: E731
    assert panel.text.startswith("10 runs pooled") and calls(panel.text)["read_url"] == "30"
    _, after = changed(panel, lambda: setattr(control(panel, w.IntSlider, "runs"), "value", 20))
    assert after.startswith("20 runs pooled") and calls(after)["read_url"] == "60"
    assert re.search(r"^read_url\s+60\s+0 .*, \+inf\]\s+[\d.]+ \[[\d.]+, \+inf\]$", after, re.M)


def test_12_percentiles_carry_exact_intervals_unbounded_below_min_samples():
    obs = widgets.observe_runs(34)
    stats = widgets.tool_percentiles(obs)
    read, search = stats["read_url"], stats["web_search"]
    assert read["calls"] == 102 and search["calls"] == 68
    for name, row in stats.items():
        ms = [t.duration_ms for o in obs for t in o.tool_calls if t.name == name]
        for q in (50, 95, 99):
            ci = scipy_stats.quantile_test(np.array(ms), p=q / 100).confidence_interval()
            assert row[f"p{q}"] == pytest.approx(np.percentile(ms, q))
            assert row[f"p{q}_high"] == (math.inf if math.isnan(ci.high) else ci.high)
    assert read["p95_high"] < math.inf and read["p99_high"] == math.inf  # 72 <= 102 < 368
    assert search["p95_high"] == math.inf and search["p95_low"] <= search["p95"]
    rows = widgets.cost_per_turn(obs)
    assert [r["turn"] for r in rows] == [1, 2, 3, 4, 5, 6] and rows[0]["runs"] == 34
    assert rows[-1]["mean_usd"] > rows[0]["mean_usd"] > 0


# -- committed notebooks keep their widget state; a student's save keeps it too -------------

def _refresh_module():
    spec = importlib.util.spec_from_file_location("refresh_notebooks",
                                                  ROOT / "scripts" / "refresh_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_refresh_keeps_widget_state_and_strips_the_rest(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import ipywidgets as w\nw.VBox([w.IntSlider(3)])"),
                nbformat.v4.new_code_cell("w.IntSlider(9)  # not displayed below", outputs=[])]
    nb.metadata["toc"] = {"volatile": True}
    path = tmp_path / "t.ipynb"
    nbformat.write(nb, path)
    _refresh_module().refresh(path)
    done = nbformat.read(path, as_version=4)
    state = done.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    shown = done.cells[0].outputs[0]["data"]["application/vnd.jupyter.widget-view+json"]
    assert shown["model_id"] in state                        # the displayed box and ...
    box = state[shown["model_id"]]["state"]
    assert box["children"][0].removeprefix("IPY_MODEL_") in state   # ... what it refers to
    assert set(done.metadata) == {"kernelspec", "language_info", "widgets"}
    assert all(set(c.metadata) <= {"tags"} for c in done.cells)


def test_prune_widget_state_keeps_only_what_outputs_reach():
    mod = _refresh_module()
    state = {"a": {"state": {"children": ["IPY_MODEL_b"]}}, "b": {"state": {"layout":
                                                                           "IPY_MODEL_c"}},
             "c": {"state": {}}, "orphan": {"state": {}}}
    nb = nbformat.v4.new_notebook(metadata={"widgets": {
        "application/vnd.jupyter.widget-state+json": {"state": state, "version_major": 2,
                                                      "version_minor": 0}}})
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
        "display_data", {"application/vnd.jupyter.widget-view+json": {"model_id": "a"}})])]
    mod.prune_widget_state(nb)
    assert set(nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]) \
        == {"a", "b", "c"}


def test_jupyterlab_setting_saves_widget_state_and_ships_with_the_package(tmp_path, capsys):
    tomllib = pytest.importorskip("tomllib")          # Python 3.11+
    from agentlab.widgets import lab_settings
    rel = "share/jupyter/lab/settings/overrides.d"
    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "data-files"][rel]
    assert [ROOT / f for f in shipped] == [lab_settings.SETTINGS_FILE]
    settings = json.loads(lab_settings.SETTINGS_FILE.read_text())
    assert settings == {"@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}}
    # an editable install gets it from the module; it writes only overrides.d/agentlab.json
    assert lab_settings.main(["--check", "--prefix", str(tmp_path)]) == 1
    (tmp_path / rel).mkdir(parents=True)
    (tmp_path / rel / ".." / "overrides.json").write_text('{"mine": {}}')
    assert lab_settings.main(["--prefix", str(tmp_path)]) == 0
    assert lab_settings.is_installed(tmp_path)
    assert lab_settings.main(["--check", "--prefix", str(tmp_path)]) == 0
    assert (tmp_path / rel / ".." / "overrides.json").read_text() == '{"mine": {}}'
    assert sorted(p.name for p in (tmp_path / rel).iterdir()) == ["agentlab.json"]
    hook = tmp_path / "etc/jupyter/jupyter_server_config.d/agentlab-save-hook.json"
    assert json.loads(hook.read_text()) == {
        "ServerApp": {"jpserver_extensions": {"agentlab.widgets.save_hook": True}}}
    assert "restart JupyterLab" in capsys.readouterr().out


def _saved_panel_notebook(tmp_path):
    """A notebook whose one output is a Panel, executed with its widget state (nbclient)."""
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    from agentlab.exercises.kernels import ipc_kernel_manager
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from agentlab import widgets\nwidgets.retry_explorer()")])
    NotebookClient(nb, kernel_name="python3", store_widget_state=True,
                   kernel_manager_class=ipc_kernel_manager(),
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    return json.loads(nbformat.writes(nb))


def test_a_partial_run_save_keeps_the_picture_and_a_restored_panel_says_run_this_cell(tmp_path):
    from agentlab.widgets import save_hook
    nb = _saved_panel_notebook(tmp_path)
    [out] = nb["cells"][0]["outputs"]
    assert save_hook.WIDGET_VIEW in out["data"] and "image/png" in out["data"]
    whole = json.loads(json.dumps(nb))
    save_hook.pre_save({"type": "notebook", "content": whole})  # Run All + save: view kept
    state = whole["metadata"]["widgets"][save_hook.WIDGET_STATE]["state"]
    notes = [m["state"]["value"] for m in state.values()
             if save_hook.RESTORED_CLASS in m["state"].get("_dom_classes", ())]
    assert notes == [save_hook.RESTORED_NOTE] and "Run this cell" in notes[0]
    assert save_hook.WIDGET_VIEW in whole["cells"][0]["outputs"][0]["data"]
    # a partial run in a new kernel, then save: JupyterLab writes only the new kernel's models
    nb["metadata"]["widgets"][save_hook.WIDGET_STATE]["state"] = {}
    save_hook.pre_save({"type": "notebook", "content": nb})
    data = nb["cells"][0]["outputs"][0]["data"]
    assert save_hook.WIDGET_VIEW not in data and "image/png" in data
    assert "run this cell" in "".join(data["text/plain"])


def test_jupyterlab_reads_the_override_from_the_environment(tmp_path):
    from jupyterlab_server.settings_utils import _get_overrides
    from agentlab.widgets import lab_settings
    lab_settings.install_settings(tmp_path)
    overrides, error = _get_overrides(str(tmp_path / "share/jupyter/lab/settings"))
    assert not error
    assert overrides["@jupyter-widgets/jupyterlab-manager:plugin"] == {"saveState": True}


def test_schema_explorer_opens_on_the_tool_it_is_given():
    from agentlab.errors import ConfigError
    from agentlab.tools import ToolRegistry
    from agentlab.widgets import schema_explorer
    reg = ToolRegistry()

    @reg.tool()
    def web_search(query: str) -> str:
        """Search."""
        return query

    @reg.tool()
    def get_weather(city: str, unit: str = "c") -> str:
        """Weather."""
        return city
    panel = schema_explorer(reg, arguments='{"city": "Oslo"}', tool="get_weather")
    picks = [c for c in panel.children if getattr(c, "description", "") == "tool"]
    dropdown = picks[0] if picks else next(
        c for box in panel.children for c in getattr(box, "children", ()) if
        getattr(c, "description", "") == "tool")
    assert dropdown.value == "get_weather"
    with pytest.raises(ConfigError):
        schema_explorer(reg, tool="nope")


class _StoppedFleet:
    """A fleet whose Redis goes away when ``stopped`` is set (notebook 13's last cell)."""

    def __init__(self):
        self.stopped = False
        self.record = {"run_id": "r1", "state": "paused", "task": "t", "turns": 1, "attempts": 1,
                       "pending": [{"tool": "write_file", "arguments": {"filename": "a.md"}}]}

    def _check(self):
        if self.stopped:
            raise ConnectionError("Error 111 connecting to 127.0.0.1:6390. Connection refused.")

    def runs(self):
        self._check()
        return [self.record]

    def show(self, run_id):
        self._check()
        return self.record

    def approve(self, run_id):
        self._check()


def test_13_controls_say_when_the_fleet_was_stopped_instead_of_failing_silently():
    from agentlab.widgets.fleet import approval_panel, fleet_table
    fleet = _StoppedFleet()
    table = fleet_table(fleet, refresh_s=60)
    table.stop()
    status = table.children[0].children[1]
    assert "settled" in status.value
    fleet.stopped = True
    control(table, w.Dropdown, "show").value = "paused"
    assert "the fleet does not answer (ConnectionError" in status.value
    fleet.stopped = False
    panel = approval_panel(fleet, "r1")
    assert "waits for approval: write_file" in panel.text
    fleet.stopped = True
    control(panel, w.Button, "Approve").click()
    assert "it was probably stopped. Shown: the records as last read" in panel.text


def test_the_server_extension_prunes_a_notebook_saved_through_jupyter_server(tmp_path):
    """The save hook as JupyterLab uses it: enabled as a server extension, run on a PUT."""
    import socket
    import subprocess
    import time
    import urllib.request
    pytest.importorskip("jupyter_server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from agentlab.widgets import lab_settings
    (tmp_path / "root").mkdir()
    config_d = tmp_path / "cfg" / "jupyter_server_config.d"  # as lab_settings installs it
    config_d.mkdir(parents=True)
    (config_d / "agentlab.json").write_text(lab_settings.SERVER_FILE.read_text())
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "server", "--no-browser", f"--port={port}",
         "--IdentityProvider.token=t", "--allow-root", f"--ServerApp.root_dir={tmp_path / 'root'}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/api"
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{base}/status?token=t", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        view = {"model_id": "gone", "version_major": 2, "version_minor": 0}
        nb = {"cells": [{"cell_type": "code", "source": "w", "metadata": {}, "execution_count": 1,
                         "outputs": [{"output_type": "display_data", "metadata": {}, "data": {
                             "text/plain": "w", "image/png": "iVBORw0KGgo=",
                             "application/vnd.jupyter.widget-view+json": view}}]}],
              "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        body = json.dumps({"type": "notebook", "format": "json", "content": nb}).encode()
        urllib.request.urlopen(urllib.request.Request(
            f"{base}/contents/a.ipynb?token=t", data=body, method="PUT",
            headers={"Content-Type": "application/json"}), timeout=30)
        saved = json.loads((tmp_path / "root" / "a.ipynb").read_text())
        assert sorted(saved["cells"][0]["outputs"][0]["data"]) == ["image/png", "text/plain"]
    finally:
        proc.terminate()
        proc.wait(timeout=20)

