"""Plots for chapter 11 (``notebooks/11_checkpoints.ipynb``): what checkpoints cost on disk.

- ``plot_checkpoint_sizes``: size of each checkpoint against the turn it was saved at, one line
  per store or run (rows of ``CheckpointManager.list_checkpoints()``);
- ``plot_step_runs``: a killed-and-resumed job, step by step: what the first process and the
  resumed one did with each step, in the call-state colours of ``agentlab.viz.states``.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .states import state_handles, state_style

__all__ = ["plot_checkpoint_sizes", "plot_step_runs"]

_STEP_LABELS = {"ok": "ran", "failed": "killed while running", "not_run":
                "not run (in the checkpoint, or not reached)",
                "replayed": "replayed from the tool log (not run)"}

_MARKERS = {"start": "s", "interval": "o", "completed": "*", "error": "X", "exhausted": "X",
            "paused": "P",
            "cancelled": "X"}


def plot_checkpoint_sizes(series: Any, *, title: str | None = None,
                          figsize: tuple[float, float] = (7.0, 3.2)):
    """Checkpoint size (KB) per turn.

    Args:
        series: rows of ``list_checkpoints()`` (each with ``turn`` and ``size_bytes``), or a dict
            ``{label: rows}`` to compare stores or runs. The marker shows why a checkpoint was
            saved (square: start, dot: interval, star: completed, cross: failure).
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    from matplotlib.lines import Line2D  # lazy: heavy

    if not isinstance(series, dict):
        series = {"checkpoints": series}
    if not any(series.values()):
        raise ValueError("no checkpoints to plot")
    fig, ax = plt.subplots(figsize=figsize)
    for label, rows in series.items():
        rows = [r for r in rows if "turn" in r and "size_bytes" in r]
        line, = ax.plot([r["turn"] for r in rows], [r["size_bytes"] / 1024 for r in rows], "-",
                        lw=1.4, label=label)
        for r in rows:
            ax.plot(r["turn"], r["size_bytes"] / 1024, _MARKERS.get(r.get("saved_due_to"), "o"),
                    color=line.get_color(), ms=8 if r.get("saved_due_to") == "completed" else 5)
    handles, _ = ax.get_legend_handles_labels()
    handles += [Line2D([], [], marker=m, ls="", color="gray", label=why)
                for why, m in (("start", "s"), ("interval", "o"), ("completed", "*"))]
    ax.legend(handles=handles, fontsize=8, loc="upper left", framealpha=0.9)
    ax.set_xlabel("turn the checkpoint was saved at")
    ax.set_ylabel("size (KB)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(title or "checkpoint size per turn", fontsize=10, loc="left")
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_step_runs(rows: Sequence[Mapping], *, checkpoint_turn: int | None = None,
                   title: str | None = None, figsize: tuple[float, float] = (7.0, 2.4)):
    """Each step of a job as a column, with one row per process (first run, resumed run).

    Args:
        rows: ``agentlab.widgets.kill_and_resume(...)["rows"]``: ``{"step", "first",
            "second"}`` where each value is a state (``ok``, ``failed`` for the step the
            process died in, ``replayed``, ``not_run``) or None (no second process).
        checkpoint_turn: the turn of the checkpoint the second process resumed from (a line).
    """
    import matplotlib.pyplot as plt  # lazy: heavy

    fig, ax = plt.subplots(figsize=figsize)
    lanes = [("first process", "first")]
    if any(r.get("second") for r in rows):
        lanes.append(("resumed process", "second"))
    seen = set()
    for y, (_, key) in enumerate(lanes):
        for r in rows:
            state = r.get(key)
            if state is None:
                continue
            seen.add(state)
            ax.barh(y, 0.9, left=r["step"] - 0.45, height=0.7, **state_style(state))
            runs = {"ok": "ran", "failed": "killed", "replayed": "log",
                    "not_run": "restored" if key == "second" else "-"}[state]
            ax.text(r["step"], y, runs, ha="center", va="center", fontsize=7,
                    color="white" if state in ("ok", "failed", "replayed") else "black")
    if checkpoint_turn is not None:
        ax.axvline(checkpoint_turn + 0.5, color="#37474f", ls="--", lw=1.2)
        ax.text(checkpoint_turn + 0.5, -0.55, f" checkpoint after turn {checkpoint_turn}",
                fontsize=7, color="#37474f", va="bottom")
    ax.set_yticks(range(len(lanes)), [name for name, _ in lanes], fontsize=8)
    ax.set_ylim(len(lanes) - 0.4, -0.9)
    ax.set_xticks([r["step"] for r in rows])
    ax.set_xlim(0.4, max([r["step"] for r in rows], default=1) + 0.6)
    ax.set_xlabel("step of the job (one per turn)")
    ax.legend(handles=state_handles(seen, labels=_STEP_LABELS), fontsize=7, loc="upper left",
              bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(title or "Which steps ran, in which process", fontsize=10, loc="left")
    fig.tight_layout()
    plt.close(fig)
    return fig
