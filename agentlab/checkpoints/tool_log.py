"""The durable tool-result log of one run, indexed in memory and caught up incrementally.

Part of ``notebooks/11_checkpoints.ipynb``. A durable run asks the log before every tool call
("did this call already complete?"). Re-reading the whole log for that makes each turn cost
more than the one before (issue 13: 4 ms at 100 results, 68 ms at 3,000), so a
``CheckpointManager`` keeps one ``ToolLogIndex`` per run:

- ``refresh()`` asks the backend only for the records appended since its cursor
  (``backend.tool_results_since(run_id, cursor)``; a backend without it is read whole, the
  slow path); another process's records are picked up the same way;
- lookups are dict lookups: by ``tool_call_id``, and by ``(name, arguments)`` for a model that
  re-asks a call under a new id;
- the sealed chunks of ``tool_calls_made`` (``calls.py``) share the log but not the index of
  calls: they are never replayed as a tool result nor listed by ``completed_tool_calls``;
- every record is checked once, when it enters the index: a hand-edited line of the wrong
  shape raises ``CheckpointError("checkpoint_corrupt")`` naming the run, never a
  ``KeyError``/``TypeError`` deep inside a resume.

If the backend reports that the log was replaced (cleared, pruned) the index starts again.

``ToolResultLog`` is the log of every run in one store: the indexes, and the operations
(``record``, ``get``, ``find``, ``completed``). A ``CheckpointManager`` has one, as
``.tool_log``, and offers its operations under their chapter-11 names (``record_tool_result``,
``get_tool_result``, ``find_tool_result``, ``completed_tool_calls``).
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Callable

from ..errors import CheckpointError
from ..redaction import redact
from .calls import CHUNK_TOOL
from .redact import to_plain
from .run_ids import check_run_id

__all__ = ["ToolLogIndex", "ToolResultLog", "check_record", "arguments_key", "new_record"]

_FIELDS: dict[str, tuple[type, ...]] = {
    "run_id": (str,), "tool_call_id": (str,), "name": (str,), "result": (str,),
    "success": (bool,), "error_code": (str, type(None)), "arguments": (dict, type(None)),
    "turn": (int, type(None)), "recorded_at": (str,)}


def check_record(rec: Any, where: str) -> dict:
    """``rec`` if it is a tool-result record of the right shape, else ``checkpoint_corrupt``."""
    bad = None
    if not isinstance(rec, dict):
        bad = f"a {type(rec).__name__}, not an object"
    else:
        for key, types in _FIELDS.items():
            value = rec.get(key)
            if key not in rec or not isinstance(value, types) or \
                    (key == "turn" and isinstance(value, bool)):
                bad = f"field {key!r} is missing or of the wrong type ({type(value).__name__})"
                break
    if bad:
        raise CheckpointError("checkpoint_corrupt", f"the tool-result log {where} holds a record "
                              f"that agentlab did not write: {bad}. Delete that record (or the "
                              "log) and resume; calls without a record are run again",
                              details={"where": where, "problem": bad})
    return rec


def new_record(run_id: str, tool_call_id: Any, name: Any, result: Any, success: Any,
               error_code: Any, arguments: Any, turn: Any, secrets: tuple[str, ...]) -> dict:
    """The log record of one finished call, in the shape ``check_record`` accepts, with its
    result, arguments and error code redacted (``agentlab.redaction``)."""
    plain_args = None if arguments is None else to_plain(arguments, "arguments", False)
    return {"run_id": run_id, "tool_call_id": str(tool_call_id), "name": str(name),
            "result": redact(str(result), secrets), "success": bool(success),
            "error_code": None if error_code is None else redact(str(error_code), secrets),
            "arguments": redact(plain_args, secrets) if isinstance(plain_args, dict) else None,
            "turn": None if turn is None else int(turn),
            "recorded_at": datetime.now(timezone.utc).isoformat()}


def arguments_key(name: str, arguments: Any) -> str | None:
    """The lookup key of a call by name and (already redacted) arguments."""
    if arguments is None:
        return None
    try:
        return name + "\x00" + json.dumps(arguments, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


class ToolLogIndex:
    """Every recorded call of one run, by id and by (name, arguments), in completion order."""

    def __init__(self, backend: Any, run_id: str) -> None:
        self.backend, self.run_id = backend, run_id
        self.by_id: dict[str, dict] = {}
        self.by_call: dict[str, list[str]] = {}
        self.chunks: dict[str, dict] = {}  # sealed chunks of tool_calls_made (``calls.py``)
        self.cursor: Any = None
        self.reads = 0  # backend reads so far (tests check it stays O(1) per refresh)

    def add(self, rec: dict) -> None:
        """Index one record; the first record of a call wins (that is what the model saw)."""
        cid = rec["tool_call_id"]
        if rec["name"] == CHUNK_TOOL:  # not a tool call: never replayed, never listed
            self.chunks.setdefault(cid, rec)
            return
        if cid in self.by_id:
            return
        self.by_id[cid] = rec
        key = arguments_key(rec["name"], rec.get("arguments"))
        if key is not None:
            self.by_call.setdefault(key, []).append(cid)

    def refresh(self) -> "ToolLogIndex":
        """Read what was appended since the last refresh (by any process)."""
        since = getattr(self.backend, "tool_results_since", None)
        where = f"of run {self.run_id}"
        if since is None:  # a backend without the incremental read: the whole log
            self.reads += 1
            self._reset()
            for rec in self.backend.tool_results(self.run_id).values():
                self.add(check_record(rec, where))
            return self
        self.reads += 1
        records, cursor = since(self.run_id, self.cursor)
        if records is None:  # the log was replaced since our cursor: start again
            self._reset()
            self.reads += 1
            records, cursor = since(self.run_id, None)
        for rec in records or ():
            self.add(check_record(rec, where))
        self.cursor = cursor
        return self

    def _reset(self) -> None:
        self.by_id.clear()
        self.by_call.clear()
        self.chunks.clear()
        self.cursor = None

    def find(self, tool_call_id: str, name: str, arguments_key_: str | None,
             claimed: set[str]) -> dict | None:
        """The record of this call id, else of an unclaimed call with the same name and args."""
        rec = self.by_id.get(tool_call_id)
        if rec is not None or arguments_key_ is None:
            return rec
        for cid in self.by_call.get(arguments_key_, ()):
            if cid not in claimed:
                return self.by_id[cid]
        return None


class ToolResultLog:
    """The durable tool-call log ("no re-execution") of the runs in one checkpoint store.

    Args:
        backend: the ``CheckpointBackend`` that stores the records.
        secrets: returns what to mask in arguments and results (the manager's ``secrets``).
    """

    def __init__(self, backend: Any, secrets: Callable[[], tuple[str, ...]] = tuple) -> None:
        self.backend, self.secrets = backend, secrets
        self._indexes: dict[str, ToolLogIndex] = {}

    def record(self, run_id: str, tool_call_id: str, name: str, result: str, success: bool,
               error_code: str | None = None, *, arguments: dict | None = None,
               turn: int | None = None) -> bool:
        """Durably record a finished tool call before the run goes on.

        The first record for ``(run_id, tool_call_id)`` wins: that is what the model was shown.
        Returns False when the call was already recorded.
        """
        run_id = check_run_id(run_id)
        record = new_record(run_id, tool_call_id, name, result, success, error_code, arguments,
                            turn, self.secrets())  # arguments and result redacted alike
        added = self.backend.record_tool_result(record)
        if added and run_id in self._indexes:
            self._indexes[run_id].add(record)
        return added

    def index(self, run_id: str) -> ToolLogIndex:
        """This run's index, caught up with what any process appended since."""
        run_id = check_run_id(run_id)
        found = self._indexes.get(run_id)
        if found is None:
            found = self._indexes[run_id] = ToolLogIndex(self.backend, run_id)
        return found.refresh()

    def forget(self, run_id: str | None = None) -> None:
        """Drop the in-memory index of ``run_id`` (every run's when None): the store changed."""
        if run_id is None:
            self._indexes.clear()
        else:
            self._indexes.pop(run_id, None)

    def get(self, run_id: str, tool_call_id: str) -> dict | None:
        """The recorded outcome of this call, or None if it never completed."""
        return self.index(run_id).by_id.get(str(tool_call_id))

    def find(self, run_id: str, tool_call_id: str, name: str, arguments: Any,
             claimed: set[str]) -> dict | None:
        """The record of this call: by id, else a call with the same name and arguments whose id
        is not in ``claimed`` (a model that re-asks under a new id). O(1) per lookup."""
        key = arguments_key(str(name), None if arguments is None else
                            redact(to_plain(arguments, "arguments", False), self.secrets()))
        return self.index(run_id).find(str(tool_call_id), str(name), key, claimed)

    def completed(self, run_id: str) -> dict[str, dict]:
        """Every recorded call of a run: ``{tool_call_id: record}`` in completion order."""
        return dict(self.index(run_id).by_id)
