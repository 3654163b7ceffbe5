"""Chapter 16's widget and its functions (agentlab.widgets.timetravel), and the naive pitfall."""
from collections import Counter

from agentlab import CheckpointManager, widgets
from agentlab.naive.timetravel import resume_from_snapshot
from agentlab.timetravel import load_revision, replay
from agentlab.research import research_tools
from agentlab import sim

TASK = "Write a short report on asyncio pitfalls"


def test_timeline_explorer_forks_and_shows_a_revision(tmp_path):
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1, max_checkpoints=None)
    run_id = widgets.research_runtime(cm, tmp_path / "out").run(TASK).run_id
    panel = widgets.timeline_explorer(cm, run_id, tmp_path / "out")
    assert "parent recorded: revision 3" in panel.text and "tool log as of then: 3 calls" in panel.text
    assert len({r["run_id"] for r in cm.list_checkpoints()}) == 2  # the original and its fork
    slider = panel.children[0].children[0]
    slider.value = 2
    assert panel.text.startswith("revision 2: turn 1") and "tool log as of then: 1 calls" in panel.text
    bundle = panel._repr_mimebundle_()
    assert {"image/png", "text/plain"} <= set(bundle)


def test_naive_resume_reexecutes_what_replay_answers_from_the_log(tmp_path):
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1, max_checkpoints=None)
    run_id = widgets.research_runtime(cm, tmp_path / "out").run(TASK).run_id
    naive, read_only = Counter(), Counter()
    resume_from_snapshot(load_revision(cm, run_id, 3),
                         lambda c: widgets.research_runtime(c, tmp_path / "out", ran=naive))
    assert naive == {"web_search": 1, "read_url": 1, "write_file": 1}  # turns 3-5 again
    out = replay(cm, run_id, sim.Simulator(sim.Researcher()).llm(),
                 widgets.count_calls(research_tools(tmp_path / "out"), read_only))
    assert out.result.ok and read_only == {} and out.replayed == 6
