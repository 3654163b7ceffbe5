"""Widgets for chapter 13 (``notebooks/13_fleet.ipynb``): a live table of the fleet's runs, and
an approval panel for a paused run's calls.

``fleet_table(fleet)`` redraws the runs table from Redis every ``refresh_s`` from a background
thread (by setting an HTML widget's value, never by printing) until every run it shows is
terminal or paused (or ``stop()`` is called), so a cell can display it and move on while the
fleet works. ``approval_panel(fleet, run_id)`` lists the calls a paused run waits on, with
Approve and Reject buttons that call ``Fleet.approve`` / ``Fleet.reject``.
``format_runs_table`` is the plain text both show, for checked prints.

Both keep the records they last read. When the fleet no longer answers (``LocalFleet.close()``
ran, or Redis went away) they say so and go on answering from those records: the "show" menu
still narrows the table, the approval panel still shows how the run ended, and a decision,
which needs the fleet, is refused with the reason.
"""
from __future__ import annotations

import html
import threading
from collections import Counter
from typing import Any

import ipywidgets as w

from ..fleet.runs import PAUSED, TERMINAL
from .panel import Panel

__all__ = ["format_runs_table", "fleet_table", "approval_panel"]


def format_runs_table(records: list[dict], *, short_ids: bool = True) -> str:
    """One line per run (id, state, attempts, worker, turns) and a count per state."""
    lines = [f"{'run':<14} {'state':<10} {'att':>3}  {'worker':<8} {'turns':>5}"]
    for r in records:
        rid = r["run_id"][:12] + "…" if short_ids else r["run_id"]
        worker = (r.get("worker") or "-").split("@")[0]
        turns = (r.get("result") or {}).get("turns", "")
        lines.append(f"{rid:<14} {r['state']:<10} {r['attempts']:>3}  {worker:<8} {turns!s:>5}")
    counts = Counter(r["state"] for r in records)
    lines.append("  ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return "\n".join(lines)


def fleet_table(fleet: Any, run_ids: list[str] | None = None, *, refresh_s: float = 0.5,
                timeout_s: float = 120.0) -> Panel:
    """A live table of ``run_ids`` (default: every run), refreshed until they all settle; the
    "show" menu narrows it to the runs in one state (the count line always counts them all)."""
    status, table = w.HTML(), w.HTML()
    show = w.Dropdown(options=["all", "queued", "running", PAUSED, *sorted(TERMINAL)],
                      value="all", description="show")
    panel = Panel([w.HBox([show, status]), table], title="fleet runs (chapter 13)")
    stop = threading.Event()
    seen: list[dict] = []  # the records last read: what the table answers from once the fleet is gone

    def records() -> list[dict]:
        return [fleet.show(i) for i in run_ids] if run_ids else fleet.runs()

    def draw(recs: list[dict], note: str) -> None:
        shown = [r for r in recs if show.value in ("all", r["state"])]
        text = format_runs_table(shown)
        if show.value != "all":
            text += "\nall runs: " + "  ".join(f"{k}: {v}" for k, v in sorted(
                Counter(r["state"] for r in recs).items()))
        # widget values only: printing into an Output widget from a thread would land in
        # whichever cell is running at the time
        table.value = f"<pre>{html.escape(text)}</pre>"
        panel.show(None, text=text + (f"\n({note})" if note else ""))

    def refresh(_: Any = None) -> bool:
        recs = records()
        seen[:] = recs
        settled = all(r["state"] in TERMINAL or r["state"] == PAUSED for r in recs)
        status.value = f"<b>{len(recs)} runs</b> — {'settled' if settled else 'live'}"
        draw(recs, "")
        return settled

    def from_memory(exc: Exception) -> None:
        """The fleet does not answer: say so, and show the records last read."""
        status.value = _unreachable(exc, recorded=bool(seen))
        draw(seen, _unreachable(exc, html_=False, recorded=bool(seen)))

    def on_show(_: Any) -> None:  # a callback's exception would vanish into the kernel's log
        try:
            refresh()
        except Exception as exc:  # noqa: BLE001 - shown to the student instead
            from_memory(exc)

    show.observe(on_show, "value")

    def loop() -> None:
        waited = 0.0
        while not stop.wait(refresh_s) and waited < timeout_s:
            waited += refresh_s
            try:
                if refresh():
                    return
            except Exception as exc:  # Redis gone (the fleet was stopped): say so, stop
                from_memory(exc)
                return

    refresh()
    panel.stop = stop.set  # type: ignore[attr-defined]
    threading.Thread(target=loop, daemon=True, name="agentlab-fleet-table").start()
    return panel


def _unreachable(exc: Exception, html_: bool = True, recorded: bool = False) -> str:
    """What a control says when the fleet cannot answer (e.g. ``lf.close()`` stopped it):
    visibly, instead of a callback failing silently, and whether it shows what it last read."""
    text = (f"the fleet does not answer ({type(exc).__name__}: {str(exc)[:120]}); it was "
            "probably stopped. " + ("Shown: the records as last read while it ran. " if recorded
                                    else "") + "For a live fleet run the notebook from the top")
    return f"<b style='color:#b71c1c'>{html.escape(text)}</b>" if html_ else text


def approval_panel(fleet: Any, run_id: str) -> Panel:
    """The calls paused run ``run_id`` waits on, with Approve / Reject (and a reason)."""
    out = w.Output()
    reason = w.Text(description="reason", placeholder="told to the model if rejected")
    approve, reject = w.Button(description="Approve", button_style="success"), \
        w.Button(description="Reject", button_style="danger")
    panel = Panel([w.HBox([approve, reject]), reason, out], title="approval (chapter 13)")
    seen: dict = {}  # the record last read: shown once the fleet no longer answers

    def describe(note: str = "") -> None:
        try:
            rec = fleet.show(run_id)
        except Exception as exc:  # noqa: BLE001 - the fleet was stopped: say so in the panel
            stopped = _unreachable(exc, html_=False, recorded=bool(seen))
            if seen:
                describe_record(seen, f"{note}\n{stopped}".strip())
            else:
                panel.show(out, text=f"{note}\n{stopped}".strip())
            approve.disabled = reject.disabled = True  # a decision needs the fleet
            return
        seen.clear()
        seen.update(rec)
        describe_record(rec, note)
        approve.disabled = reject.disabled = rec["state"] != PAUSED

    def describe_record(rec: dict, note: str) -> None:
        lines = [f"run {run_id[:12]}…: {rec['state']}"]
        for call in rec.get("pending") or []:
            args = ", ".join(f"{k}={str(v)[:30]!r}" for k, v in call["arguments"].items())
            lines.append(f"  waits for approval: {call['tool']}({args})")
        panel.show(out, text="\n".join(lines + ([note] if note else [])))

    def decide(button: Any) -> None:
        try:
            if button is approve:
                fleet.approve(run_id)
            else:
                fleet.reject(run_id, reason=reason.value)
            done = "approved" if button is approve else "rejected"
            describe(f"{done}: the run is queued again and continues on any worker")
        except Exception as exc:
            describe(f"{type(exc).__name__}: {exc}")

    approve.on_click(decide)
    reject.on_click(decide)
    describe()
    return panel
