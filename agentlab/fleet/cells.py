"""Chapter 14's sweeps on chapter 13's fleet: a ``CellExecutor`` whose cells are Celery tasks.

``Experiment.run(fleet=True)`` and ``agentlab sweep --fleet`` find ``CeleryCells`` through the
``agentlab.fleet_executors`` entry point (``pyproject.toml``), so the experiments package never
imports the fleet: a cell is plain JSON (``Cell.to_dict()``), sent as the task
``agentlab.fleet.cell`` to the workers ``agentlab worker`` started, and run there by chapter
14's own ``run_cell``. A cell is safe to run again (it only measures), so the fleet's late acks
and redelivery are all it needs; no lease.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

from ..experiments.cells import Cell, run_cell
from .app import FleetConfig, app
from .control import Fleet

__all__ = ["CELL_TASK", "CeleryCells", "run_cell_task"]

CELL_TASK = "agentlab.fleet.cell"


@app.task(name=CELL_TASK)
def run_cell_task(cell: dict) -> dict:
    """On a worker: run one cell of a sweep (``experiments.cells.run_cell``)."""
    return run_cell(Cell(**cell))


class CeleryCells:
    """Send cells to the fleet; each ``submit`` returns a ``Future`` of the cell's record.

    Args:
        cfg: the fleet (default: the environment's, ``AGENTLAB_REDIS_URL``).
        workers: how many cells the fleet runs at once (the runner keeps twice that in flight).
        poll_s: how often the results are polled.
    """

    kind = "fleet"

    def __init__(self, cfg: FleetConfig | None = None, workers: int = 4,
                 poll_s: float = 0.05) -> None:
        self.fleet = Fleet(cfg)  # FleetUnavailableError now, not at the first cell
        self.workers, self.poll_s = int(workers), poll_s
        self._pending: dict[str, tuple[Any, Future]] = {}
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._poller = threading.Thread(target=self._poll, daemon=True, name="agentlab-cells")
        self._poller.start()

    def submit(self, cell: Cell) -> Future:
        future: Future = Future()
        result = self.fleet.app.send_task(CELL_TASK, args=[cell.to_dict()])
        with self._lock:
            self._pending[result.id] = (result, future)
        return future

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_s):
            with self._lock:
                items = list(self._pending.items())
            for task_id, (result, future) in items:
                try:
                    ready = result.ready()
                    if ready:
                        future.set_result(result.get(timeout=5))
                except Exception as exc:  # the task raised, or the result could not be read
                    future.set_exception(exc)
                    ready = True
                if ready:
                    with self._lock:
                        self._pending.pop(task_id, None)

    def shutdown(self, cancel: bool = False) -> None:
        """Stop polling; with ``cancel`` the cells not yet finished are revoked."""
        if cancel:
            with self._lock:
                for result, future in self._pending.values():
                    result.revoke()
                    future.cancel()
        self._stop.set()
        self._poller.join(timeout=5)
