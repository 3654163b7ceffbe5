"""Widgets for chapter 01: pick a fault plan, run one call, see every attempt.

``retry_explorer()`` is the widget; ``run_fault_plan()`` is what its button runs, callable
directly so a notebook can print a deterministic result next to the widget.
"""
from __future__ import annotations

import time
from typing import Any

import ipywidgets as w

from .. import sim
from ..errors import ProviderError
from ..llm import collect_stream
from ..viz.llm import plot_retry_timeline
from .panel import Panel

__all__ = ["PLANS", "run_fault_plan", "format_attempts", "retry_explorer"]

#: Named fault plans (one entry per request; see ``agentlab.sim.FaultPlan``).
PLANS: dict[str, list] = {
    "no faults": [],
    "429 (Retry-After 0.2 s), ok": [("rate_limit", {"retry_after": 0.2})],
    "429, 500, ok": ["rate_limit", "server_error"],
    "3 x 429, ok": ["rate_limit"] * 3,
    "timeout, 503, ok": ["timeout", "unavailable"],
    "6 x 503 (gives up)": ["unavailable"] * 6,
    "401 bad key": [401],
    "400 bad request": [400],
}


def run_fault_plan(plan: list, *, max_retries: int = 3, retry_base_delay: float = 0.05,
                   seed: int = 0, stream: bool = False, sleep=None) -> dict[str, Any]:
    """Run one ``chat`` (or ``stream``) call on a simulator that follows ``plan``.

    Returns ``{"outcome", "requests", "attempts", "wall_s"}``: what the caller got, how many
    requests went over the wire, the ``Attempt`` records, and the wall time.
    """
    simulator = sim.Simulator(sim.Script([sim.text("Hello from the simulator.")]),
                              faults=sim.FaultPlan(plan), seed=seed)
    kw = {} if sleep is None else {"sleep": sleep}
    llm = simulator.llm(max_retries=max_retries, retry_base_delay=retry_base_delay, seed=seed,
                        **kw)
    messages = [{"role": "user", "content": "Say hello."}]
    t0 = time.perf_counter()
    try:
        r = collect_stream(llm.stream(messages)) if stream else llm.chat(messages)
        outcome = f"ok: {r.content!r} (finish_reason={r.finish_reason!r})"
    except ProviderError as e:
        outcome = f"ProviderError code={e.code} retryable={e.retryable}"
    return {"outcome": outcome, "requests": len(simulator.requests),
            "attempts": list(llm.attempts), "wall_s": time.perf_counter() - t0}


def format_attempts(attempts) -> str:
    """A small text table of attempts: number, status, error code, backoff after it."""
    lines = [f"{'n':>2}  {'status':>6}  {'error_code':<22} {'delay after':>11}"]
    for a in attempts:
        status = "-" if a.status is None else str(a.status)
        lines.append(f"{a.n:>2}  {status:>6}  {a.error_code or 'ok':<22} "
                     f"{a.delay_s * 1000:>8.0f} ms")
    return "\n".join(lines)


def retry_explorer(plans: dict[str, list] | None = None) -> Panel:
    """A fault-plan picker: choose a plan and retry settings, run a call, see the attempts.

    Taught in ``notebooks/01_llm_client.ipynb`` (and 00). Returns a ``Panel`` (an ipywidgets
    ``VBox``) that runs the default plan once when it is built.
    """
    plans = plans or PLANS
    pick = w.Dropdown(options=list(plans), value="429, 500, ok", description="fault plan")
    retries = w.IntSlider(value=3, min=0, max=6, description="max_retries")
    # the values offered are the values used (a log slider showed 0.0562 while 0.05 was used)
    base = w.SelectionSlider(options=[0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0],
                             value=0.05, description="base delay s")
    mode = w.ToggleButtons(options=["chat", "stream"], value="chat")
    run = w.Button(description="Run call", button_style="primary")
    out = w.Output()
    panel = Panel([w.HBox([pick, mode]), w.HBox([retries, base]), run, out],
                  title="retry explorer (chapter 01)")

    def on_run(_=None):
        res = run_fault_plan(plans[pick.value], max_retries=retries.value,
                             retry_base_delay=base.value, stream=mode.value == "stream")
        text = "\n".join([res["outcome"],
                          f"requests on the wire: {res['requests']}   "
                          f"wall time: {res['wall_s']:.2f} s",
                          format_attempts(res["attempts"])])
        fig = (plot_retry_timeline({pick.value: res["attempts"]}, title="Attempts of this call")
               if res["attempts"] else None)
        panel.show(out, text, fig)

    run.on_click(on_run)
    pick.observe(on_run, "value")  # a new plan runs at once (the browser check found it silent)
    on_run()
    return panel
