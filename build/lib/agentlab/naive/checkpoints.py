"""A checkpoint manager written the way the article writes it, defects included.

Shown and measured in ``notebooks/11_checkpoints.ipynb`` and ``benchmarks/bench_checkpoints.py``
beside ``agentlab.checkpoints.CheckpointManager``. Do not use it for real runs. Its defects:

- ids are the wall clock in milliseconds: two saves in the same millisecond get the same id and
  the second silently overwrites the first;
- "which checkpoints exist" is a list kept in memory: after a restart ``load()`` (newest) finds
  nothing, and retention never sees files written by another process;
- files are written in place (``write_text``): a crash mid-write leaves half a JSON document,
  and reading it raises a bare ``JSONDecodeError``;
- timestamps come from ``time.monotonic()``, which means nothing in another process;
- no format version, no run id; anything not JSON is written as its ``str()`` (``default=str``);
- the directory is created by the constructor, even if nothing is ever saved.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

__all__ = ["NaiveCheckpointManager"]


class NaiveCheckpointManager:
    """Article-style manager: in-memory history, millisecond ids, in-place writes."""

    def __init__(self, checkpoint_dir: str = ".checkpoints", auto_save_interval: int = 3,
                 max_checkpoints: int = 10) -> None:
        self.checkpoint_dir = Path(checkpoint_dir)
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        self.auto_save_interval = auto_save_interval
        self.max_checkpoints = max_checkpoints
        self._last_saved_turn = 0
        self._history: list[str] = []  # the only record of what was saved

    def should_save(self, turn: int) -> bool:
        return turn - self._last_saved_turn >= self.auto_save_interval

    def save(self, turn, messages, state, tool_calls_made, metadata=None) -> str:
        cid = str(int(time.time() * 1000))  # same millisecond -> same id
        doc = {"id": cid, "timestamp": time.monotonic(), "turn": turn, "messages": messages,
               "state": state, "tool_calls_made": tool_calls_made, "metadata": metadata or {}}
        path = self.checkpoint_dir / f"{cid}.json"
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=2, default=str))  # in place
        self._history.append(cid)
        self._last_saved_turn = turn
        while len(self._history) > self.max_checkpoints:
            (self.checkpoint_dir / f"{self._history.pop(0)}.json").unlink(missing_ok=True)
        return cid

    def save_on_exception(self, turn, messages, state, tool_calls_made, error) -> str:
        meta = {"exception_type": type(error).__name__, "exception_msg": str(error),
                "saved_due_to": "exception"}
        return self.save(turn, messages, state, tool_calls_made, meta)

    def load(self, checkpoint_id: str | None = None) -> dict | None:
        if checkpoint_id is None:
            if not self._history:  # a new process has an empty list
                return None
            checkpoint_id = self._history[-1]
        path = self.checkpoint_dir / f"{checkpoint_id}.json"
        if not path.exists():
            return None
        return json.loads(path.read_text())  # half-written file -> JSONDecodeError

    def list_checkpoints(self) -> list[dict]:
        out = []
        for path in sorted(self.checkpoint_dir.glob("*.json")):
            doc = json.loads(path.read_text())
            out.append({"id": doc["id"], "timestamp": doc["timestamp"], "turn": doc["turn"],
                        "size_bytes": path.stat().st_size})
        return out

    def delete_checkpoint(self, checkpoint_id: str) -> None:
        (self.checkpoint_dir / f"{checkpoint_id}.json").unlink(missing_ok=True)
        if checkpoint_id in self._history:
            self._history.remove(checkpoint_id)

    def clear_all(self) -> None:
        for path in self.checkpoint_dir.glob("*.json"):
            path.unlink()
        self._history.clear()
