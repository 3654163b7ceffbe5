"""Chapter 14's sweep explorer: it runs a real sweep and shows what the direct call returns."""
from agentlab.widgets import Panel, format_sweep, small_sweep, sweep_explorer

TASKS = [{"name": "asyncio testing", "scenario": "research",
          "prompt": "Research asyncio testing and write a short technical report saved to a file."}]


def _button(panel):
    return panel.children[0].children[2]


def test_the_widget_shows_the_table_small_sweep_returns():
    panel = sweep_explorer(TASKS, thresholds=(0.9,), seeds=1)
    assert isinstance(panel, Panel)
    table = format_sweep(small_sweep(TASKS, (0.9,), 1))
    assert panel.text == table and panel.figure is not None


def test_pressing_run_reruns_with_the_new_controls_and_an_empty_pick_says_so():
    panel = sweep_explorer(TASKS, thresholds=(0.9,), seeds=1, run=False)
    assert panel.text == ""
    pick = panel.children[0].children[0]
    pick.value = (0.6, 1.0)
    _button(panel).click()
    assert "0.6" in panel.text and "1.0" in panel.text and "0.9" not in panel.text
    pick.value = ()
    _button(panel).click()
    assert panel.text == "pick at least one threshold"
