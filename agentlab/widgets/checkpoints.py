"""Widget for chapter 11 (``notebooks/11_checkpoints.ipynb``): kill a run, resume it.

``kill_point_explorer()`` is the widget: choose the step in which the process dies and how
often a checkpoint is saved; a six-step job with a side-effecting tool runs in a child process
that is killed (``os._exit``) inside that step, then a second process resumes the newest
checkpoint. The chart shows, for each step, what each process did with it: ran it, was killed
in it, answered it from the durable tool log (*replayed*), or did not need it (restored from
the checkpoint). ``kill_and_resume()`` is what it runs, callable directly so a notebook can
print a deterministic result next to the widget.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import ipywidgets as w

from ..checkpoints import CheckpointManager
from ..viz.checkpoints import plot_step_runs
from .panel import Panel

__all__ = ["STEPS", "kill_and_resume", "format_kill_and_resume", "kill_point_explorer"]

STEPS = 6
# The job: one side-effecting step per turn; the step named in argv[1] kills the process
# while it runs. Every execution is logged as "<step> <process>" before it does its work.
_JOB = textwrap.dedent("""
    import os, sys
    from agentlab import AgentRuntime, CheckpointManager, ToolRegistry, sim
    kill, phase, every = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    resume = sys.argv[4] if len(sys.argv) > 4 else None
    reg = ToolRegistry()

    @reg.tool(side_effects=True)
    def step(n: int, idempotency_key: str = "") -> str:
        "Run step n of the job."
        with open("steps.log", "a") as log:
            log.write(f"{n} {phase}\\n")
        if n == kill and phase == "1":
            os._exit(9)                       # killed in the middle of step n
        return f"step {n} done"

    plan = [sim.call("step", {"n": i}) for i in range(1, STEPS + 1)] + [sim.text("all done")]
    rt = AgentRuntime(sim.Simulator(sim.Script(plan)).llm(), reg,
                      checkpoints=CheckpointManager("job", auto_save_interval=every))
    r = rt.run("run the steps", resume_from=resume)
    print(r.state.value, "after", r.turns, "turns")
""").replace("STEPS", str(STEPS))


def _python(folder: Path, *args: Any) -> tuple[int, str]:
    out = subprocess.run([sys.executable, "-c", _JOB, *map(str, args)], cwd=folder,
                         capture_output=True, text=True, timeout=120)
    return out.returncode, (out.stdout + out.stderr).strip()


def kill_and_resume(kill_step: int = 4, every: int = 3, *,
                    folder: str | Path | None = None) -> dict[str, Any]:
    """Run the job in a process killed inside ``kill_step`` (0: not killed), then resume it.

    Returns ``{"kill_step", "every", "exit_code", "resumed", "checkpoint_turn", "executions",
    "rows"}``: ``executions`` is ``{step: times it ran}``; ``rows`` has, per step, the state of
    the step in each process (``ok``, ``failed`` = killed in it, ``replayed``, ``not_run`` =
    restored from the checkpoint or never reached) for ``plot_step_runs``.
    """
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        root = Path(tmp)
        code, out = _python(root, kill_step, "1", every)
        if not (root / "steps.log").exists():
            raise RuntimeError(f"the job did not start (exit code {code}): {out[-800:]}")
        saved = CheckpointManager(root / "job").list_checkpoints()
        checkpoint_turn = max((c["turn"] for c in saved), default=0)
        resumed = ""
        if code != 0:
            rc, out = _python(root, kill_step, "2", every, "latest")
            resumed = out.splitlines()[-1] if out else f"exit code {rc}"
        log = [ln.split() for ln in (root / "steps.log").read_text().splitlines()]
    ran = Counter((int(n), p) for n, p in log)
    rows = []
    for s in range(1, STEPS + 1):
        first = "failed" if s == kill_step else ("ok" if ran[(s, "1")] else "not_run")
        if code == 0:
            second = None
        elif ran[(s, "2")]:
            second = "ok"
        else:   # not run again: in the checkpoint's history, or answered from the tool log
            second = "not_run" if s <= checkpoint_turn else "replayed"
        rows.append({"step": s, "first": first, "second": second})
    return {"kill_step": kill_step, "every": every, "exit_code": code, "resumed": resumed,
            "checkpoint_turn": checkpoint_turn,
            "executions": {s: ran[(s, "1")] + ran[(s, "2")] for s in range(1, STEPS + 1)},
            "rows": rows}


def format_kill_and_resume(res: dict[str, Any]) -> str:
    """What happened, and how often each step's side effect ran."""
    if res["exit_code"] == 0:
        head = "not killed: the first process finished the job"
    else:
        head = (f"killed in step {res['kill_step']} (exit code {res['exit_code']}); newest "
                f"checkpoint after turn {res['checkpoint_turn']}; resumed: "
                f"{res['resumed']}")
    twice = [s for s, n in res["executions"].items() if n > 1]
    return "\n".join([head, "executions per step: " + str(res["executions"]),
                      f"ran twice: {twice or 'none'} (only a step that was running when the "
                      "process died can run twice)"])


def kill_point_explorer(*, every: int = 3) -> Panel:
    """The kill-step slider and the checkpoint interval; *Kill and resume* runs both processes.

    Returns a ``Panel`` (an ipywidgets ``VBox``) that runs once when it is built (two Python
    processes, about two seconds).
    """
    kill = w.IntSlider(4, min=0, max=STEPS, description="kill in step",
                       style={"description_width": "130px"})
    interval = w.IntSlider(every, min=1, max=STEPS, description="checkpoint every",
                           style={"description_width": "130px"})
    button = w.Button(description="Kill and resume", button_style="danger", icon="bolt")
    out = w.Output()
    panel = Panel([w.HBox([kill, interval]), button, out],
                  title="kill-point explorer (chapter 11)")

    def run(_: Any = None) -> None:
        button.disabled = True
        try:
            res = panel.result = kill_and_resume(kill.value, interval.value)  # kept: last run
            panel.show(out, format_kill_and_resume(res),
                       plot_step_runs(res["rows"], checkpoint_turn=res["checkpoint_turn"]
                                      if res["exit_code"] else None))
        finally:
            button.disabled = False

    button.on_click(run)
    run()
    return panel
