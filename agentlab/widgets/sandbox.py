"""The misbehaving-tool widget of ``notebooks/15_sandbox`` (chapter 15).

Pick a misbehaving tool and the sandbox's limits; the widget runs it through a ``ToolExecutor``
in a thread and in the sandbox (``agentlab.sandbox.compare.side_by_side``) and shows how each
call ended, when the executor answered, and the harm measured afterwards.
"""
from __future__ import annotations

from typing import Any

import ipywidgets as w

from ..sandbox.compare import KINDS, side_by_side
from ..sandbox.policy import SandboxPolicy
from .panel import Panel

__all__ = ["sandbox_explorer", "explain_sandbox", "plot_side_by_side", "HARM_UNITS"]


def explain_sandbox(kind: str, timeout_s: float = 1.0, memory_mb: int = 256,
                    max_procs: int = 16, secret_dir: str | None = None) -> tuple[dict, str]:
    """What the widget shows for these settings: the two outcomes and their text."""
    policy = SandboxPolicy(memory_mb=memory_mb, max_procs=max_procs, workers=1,
                           hidden=(secret_dir,) if secret_dir else ())
    res = side_by_side(kind, timeout_s=timeout_s, policy=policy, secret_dir=secret_dir)
    lines = [f"{kind}, timeout {timeout_s:g} s, sandbox limits {memory_mb} MB / "
             f"{max_procs} processes"]
    for side, o in res.items():
        lines.append(f"  {side:<8} {o['ending']:<14} answered after {o['returned_s']:.1f} s; "
                     f"{o['effect']}")
    return res, "\n".join(lines)


#: what each kind's ``harm`` counts, for axis labels
HARM_UNITS = {"hang then write": "files written late", "memory bomb": "MB of this process",
              "fork bomb": "processes left running", "read a secret": "secrets read",
              "infinite output": "(thread not run)"}


def plot_side_by_side(kind: str, res: dict) -> Any:
    """Two bars: the harm measured after the call, thread vs sandbox."""
    from matplotlib.figure import Figure  # lazy: heavy
    fig = Figure(figsize=(6, 1.8))
    ax = fig.subplots()
    sides = list(res)
    harm = [0 if res[s]["harm"] != res[s]["harm"] else res[s]["harm"] for s in sides]  # nan: 0
    ax.barh(sides, harm, color=["#c62828", "#2e7d32"])
    ax.set_xlabel(f"harm after the call: {HARM_UNITS[kind]}")
    ax.set_title(kind)
    fig.tight_layout()
    return fig


def sandbox_explorer(secret_dir: str | None = None) -> Panel:
    """A tool picker, a timeout and two limits; each change runs both sides again."""
    kind = w.Dropdown(options=list(KINDS), value=KINDS[0], description="tool")
    timeout = w.FloatSlider(1.0, min=0.5, max=3.0, step=0.5, description="timeout s",
                            continuous_update=False)
    memory = w.IntSlider(256, min=128, max=1024, step=128, description="memory MB",
                         continuous_update=False)
    procs = w.IntSlider(16, min=4, max=64, step=4, description="processes",
                        continuous_update=False)
    out = w.Output()
    panel = Panel([w.HBox([kind, timeout]), w.HBox([memory, procs]), out],
                  title="misbehaving tools: thread vs sandbox (chapter 15)")

    def redraw(_: Any = None) -> None:
        res, text = explain_sandbox(kind.value, timeout.value, memory.value, procs.value,
                                    secret_dir)
        panel.show(out, text, plot_side_by_side(kind.value, res))

    for control in (kind, timeout, memory, procs):
        control.observe(redraw, "value")
    redraw()
    return panel
