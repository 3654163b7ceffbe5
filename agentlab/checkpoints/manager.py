"""Checkpoints that survive a crash, and a durable log so finished tool calls never run twice.

Taught in ``notebooks/11_checkpoints.ipynb`` (article section 9; run identity, revisions,
format versions and idempotency keys from the book chapter on runtimes, sections 1.4-1.5).

A checkpoint is a snapshot of one run at a safe point: its messages, state, tool-call log and
turn counter. ``CheckpointManager`` writes them to one of two backends (``store.py``):

- JSON files in ``checkpoint_dir`` (the default): one file per checkpoint, written atomically
  (temp file + fsync + ``os.replace``), so a crash leaves either the old file or the new one.
- SQLite (``store="sqlite"`` or a path ending in ``.db``/``.sqlite``): two tables, WAL journal,
  ``synchronous=FULL``, stdlib ``sqlite3``; the embedded default for real use.

What the article's manager got wrong and this one does not:

- ids are ``<seq:08d>-<time_ns:019d>-<random>``, ``seq`` allocated under a cross-process lock:
  unique, and sorted in creation order even within a millisecond;
- ``load()`` with no id reads the newest checkpoint *on disk* (works in a new process), and
  checks that the messages it returns are a valid conversation;
- retention (``max_checkpoints``) counts what is on disk and is per run: another run's saves
  never delete a run's checkpoints; ``delete_run`` removes a run with its tool-result log;
- every checkpoint records ``format_version``, ``run_id``, ``revision`` and ``created_at``; a
  corrupt file or unknown version raises ``CheckpointError`` naming the file
  (``checkpoint_corrupt`` / ``checkpoint_incompatible``), never a bare ``JSONDecodeError``;
- ``save`` refuses a history that is not at a safe point (``safe_point.py``);
- secrets are not written (``agentlab.redaction`` through ``redact.py``): credential-like keys,
  key-shaped tokens and ``add_secret()`` values are masked everywhere;
- a turn's cost does not grow with the run (issue 13): the tool-result log is indexed in memory
  and read incrementally (``tool_log.py``), and ``tool_calls_made`` is written in sealed chunks
  of 256 records (``calls.py``); what remains proportional is the (bounded) history;
- no directory or database file is created until the first write.

Run identity (book 1.4, ``run_ids.py``): a run keeps its ``run_id`` when it resumes;
``revision`` is 1 + the highest revision of that run in the store. The tool-result log is a
``tool_log.ToolResultLog`` the manager holds (``.tool_log``); ``record_tool_result``,
``find_tool_result``, ... are its operations under their chapter-11 names.

With the runtime, ``AgentRuntime(..., checkpoints=cm)`` calls ``cm.attach(runtime)``
(``durable.py``: when to save, tool results recorded and reused, ``resume_from``); this module
owns what is written and how it is read back.
"""
from __future__ import annotations

import logging
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import CheckpointError, ConfigError
from ..redaction import MIN_SECRET_LENGTH, registered_secrets
from .document import FORMAT_VERSION, Checkpoint, new_checkpoint_id, render_checkpoint
from .durable import DurableRuns, idempotency_key, attach as attach_runs
from .calls import CallListEncoder, chunk_record, join_chunks
from .redact import encode_body, to_plain
from .run_ids import check_run_id, new_run_id
from .safe_point import conversation_problem, unsafe_index
from .store import make_backend
from .tool_log import ToolResultLog

__all__ = ["CheckpointManager", "idempotency_key", "new_run_id"]

logger = logging.getLogger(__name__)


class CheckpointManager:
    """Save, list, load and prune checkpoints of agent runs; keep the durable tool-result log.

    Args:
        checkpoint_dir: folder of the JSON files (and of ``checkpoints.db`` with ``store="sqlite"``).
        auto_save_interval: ``should_save(turn)`` is true every this many turns.
        max_checkpoints: how many checkpoints the store keeps (oldest removed first, counted
            on disk across processes and runs); ``None`` keeps all.
        store: ``None``/``"json"``, ``"sqlite"``, a ``.db``/``.sqlite`` path, a URL whose scheme
            a plug-in serves (``"redis://host:port/0"``: chapter 13), or a backend object.
        run_id: the run new checkpoints belong to (a fresh ``run-<uuid>`` when omitted).
        redact_values: exact secret strings (e.g. the API key a client was built with) that must
            never reach disk, masked everywhere including messages; see also ``add_secret``
            (values under 8 characters are ignored: ``agentlab.redaction``'s rule).
    """

    def __init__(self, checkpoint_dir: str | os.PathLike = ".agent_checkpoints",
                 auto_save_interval: int = 3, max_checkpoints: int | None = 10,
                 store: Any = None, *, run_id: str | None = None,
                 redact_values: tuple[str, ...] | list[str] = ()) -> None:
        if not isinstance(auto_save_interval, int) or auto_save_interval < 1:
            raise ConfigError("invalid_config", "auto_save_interval must be an integer >= 1")
        if max_checkpoints is not None and (not isinstance(max_checkpoints, int) or max_checkpoints < 1):
            raise ConfigError("invalid_config", "max_checkpoints must be an integer >= 1 or None")
        self.checkpoint_dir = Path(checkpoint_dir)
        self.auto_save_interval = auto_save_interval
        self.max_checkpoints = max_checkpoints
        self.backend = make_backend(store, checkpoint_dir)
        self._run_id = check_run_id(run_id) if run_id is not None else new_run_id()
        self._secrets: list[str] = []
        for value in redact_values:
            self.add_secret(value)
        self._last_saved_turn = 0
        self.last_error: BaseException | None = None
        self._calls = CallListEncoder()
        self.tool_log = ToolResultLog(self.backend, self.secrets)  # the durable tool-call log

    # -- identity
    @property
    def run_id(self) -> str:
        """The run that ``save`` writes to unless told otherwise."""
        return self._run_id

    @run_id.setter
    def run_id(self, value: str) -> None:
        self._run_id = check_run_id(value)

    def add_secret(self, value: str | None) -> bool:
        """Never write this exact string (an API key, a token); masked even inside messages.

        Matched as ``agentlab.redaction`` matches registered secrets (whole tokens; anywhere
        when 20+ characters). A value shorter than 8 characters is ignored (returns False):
        it cannot be told from ordinary text."""
        if not value:
            return False
        if not isinstance(value, str):
            raise ConfigError("invalid_config", f"a secret is a string, not {type(value).__name__}")
        if len(value) < MIN_SECRET_LENGTH:
            logger.info("a secret of %d characters is too short to mask safely; ignored", len(value))
            return False
        if value not in self._secrets:
            self._secrets.append(value)
        return True

    def secrets(self) -> tuple[str, ...]:
        """What this manager masks besides key shapes: its own secrets and the process's."""
        return tuple(self._secrets) + registered_secrets()

    # -- saving
    def should_save(self, current_turn: int) -> bool:
        """True when ``auto_save_interval`` turns have passed since the last save."""
        return current_turn - self._last_saved_turn >= self.auto_save_interval

    def save(self, turn: int, messages: list[dict], state: dict | None,
             tool_calls_made: list | None, metadata: dict | None = None, *,
             run_id: str | None = None) -> str:
        """Write a checkpoint at a safe point and return its id.

        Raises ``CheckpointError``: ``checkpoint_unsafe`` when an assistant ``tool_calls`` message
        lacks results, ``not_serializable`` for non-data values (clients, locks, ...);
        ``ConfigError`` for a turn that is not an integer >= 0 or messages that are not a list.
        """
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
            raise ConfigError("invalid_argument", f"turn must be an integer >= 0, not {turn!r}")
        if not isinstance(messages, list):
            raise ConfigError("invalid_argument", "messages must be a list of message dicts, "
                              f"not {type(messages).__name__}")
        bad = unsafe_index(messages)
        if bad is not None:
            i, ids = bad
            raise CheckpointError(
                "checkpoint_unsafe",
                f"messages[{i}] ({messages[i].get('role')}) breaks the tool-call pairing "
                f"(unanswered or orphaned call ids: {', '.join(map(str, ids))}); save after every "
                "tool result is appended, or use save_on_exception, which cuts the unfinished tail",
                details={"index": i, "tool_call_ids": ids})
        run = check_run_id(run_id) if run_id is not None else self._run_id
        secrets = self.secrets()
        meta = to_plain(metadata or {}, "metadata", scrub=True, secrets=secrets)
        calls = tool_calls_made if isinstance(tool_calls_made, list) else list(tool_calls_made or [])
        try:  # 1. the call list: new records encoded, full chunks recorded before the checkpoint
            chunk_ids, sealed, tail = self._calls.encode(calls, secrets)
            for chunk_id, text in sealed:
                self.backend.record_tool_result(chunk_record(run, chunk_id, text))
        except (RecursionError, ValueError) as exc:
            self._calls.reset()
            raise CheckpointError("not_serializable", f"cannot save tool_calls_made: "
                                  f"{type(exc).__name__}: {str(exc)[:200]}") from None
        except BaseException:
            self._calls.reset()  # sealed again (and recorded) by the next save
            raise
        # 2. the rest, encoded outside the store lock
        body = encode_body(meta, state, tail, chunk_ids, messages, secrets)

        def build(seq: int, revision: int) -> tuple[dict, str]:
            header = {"format_version": FORMAT_VERSION, "id": new_checkpoint_id(seq),
                      "run_id": run, "revision": revision, "turn": int(turn),
                      "created_at": datetime.now(timezone.utc).isoformat(),
                      "saved_due_to": str(meta.get("saved_due_to", "save")),
                      "n_messages": len(messages)}
            return header, render_checkpoint(header, body)

        try:
            header = self.backend.write(run, build, self.max_checkpoints)
        except UnicodeEncodeError as exc:  # a lone surrogate somewhere in the text
            raise CheckpointError("not_serializable", "cannot save this checkpoint: it holds text "
                                  f"that is not valid Unicode ({exc.reason} at {exc.start})",
                                  details={"reason": "UnicodeEncodeError"}) from None
        self._last_saved_turn = int(turn)
        logger.info("checkpoint %s saved (run %s, revision %s, turn %s, %d bytes)", header["id"],
                    run, header["revision"], turn, header["size_bytes"])
        return header["id"]

    def save_on_exception(self, exc: BaseException, turn: int, messages: list[dict],
                          state: dict | None, tool_calls_made: list | None,
                          metadata: dict | None = None, *, run_id: str | None = None) -> str | None:
        """Save what can be resumed after a failure; never raises (see ``last_error``).

        An unfinished tool batch at the end of ``messages`` is cut off (a checkpoint must be a
        valid conversation) and kept in ``metadata["unsafe_tail"]`` for diagnosis and for a
        resume that wants to re-append it and fill results from the tool-result log.
        """
        meta = dict(metadata or {})
        meta.update(saved_due_to="exception", exception_type=type(exc).__name__,
                    exception_message=str(exc))
        if hasattr(exc, "to_dict"):
            meta["error"] = exc.to_dict()
        msgs = list(messages)
        bad = unsafe_index(msgs)
        if bad is not None:
            meta["unsafe_tail"] = msgs[bad[0]:]
            msgs = msgs[:bad[0]]
        try:
            cid = self.save(turn, msgs, state, tool_calls_made, meta, run_id=run_id)
        except Exception as save_exc:  # keep the original failure visible
            self.last_error = save_exc
            logger.error("could not save a checkpoint after %s: %s", type(exc).__name__, save_exc)
            return None
        logger.info("checkpoint %s saved after %s", cid, type(exc).__name__)
        return cid

    # -- reading
    def load(self, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The checkpoint with this id, or the newest in the store (``None``/``"latest"``).

        Returns ``None`` only when no id was given and the store is empty; an unknown id raises
        ``checkpoint_not_found``; a corrupt or unknown-version one raises naming its file, and
        so does one whose messages are not a valid conversation (``checkpoint_corrupt``).
        """
        if checkpoint_id is not None and not isinstance(checkpoint_id, str):
            raise ConfigError("invalid_argument", "checkpoint_id is a string (an id from "
                              f"list_checkpoints(), or 'latest'), not {checkpoint_id!r}")
        if checkpoint_id == "latest":
            checkpoint_id = None
        cp = self.backend.read(checkpoint_id)
        if cp is not None and cp.tool_calls_chunks:  # a long run: its call list in chunks
            cp.tool_calls_made = join_chunks(cp.tool_calls_chunks, self.tool_log.index(cp.run_id).chunks,
                                             cp.tool_calls_made, f"checkpoint {cp.id}")
            cp.tool_calls_chunks = []
        problem = None if cp is None else conversation_problem(cp.messages)
        if problem:
            raise CheckpointError("checkpoint_corrupt", f"checkpoint {cp.id} (run {cp.run_id}) does "
                                  f"not hold a valid conversation: {problem}. It was edited or "
                                  "damaged; load an older checkpoint",
                                  details={"id": cp.id, "problem": problem})
        return cp

    def resume(self, checkpoint_id: str | None = "latest") -> Checkpoint | None:
        """``load`` and continue that run here: binds ``run_id`` and the auto-save turn counter."""
        cp = self.load(checkpoint_id)
        if cp is not None:
            self.bind(cp)
        return cp

    def bind(self, checkpoint: Checkpoint) -> None:
        """Continue ``checkpoint``'s run here: its ``run_id``, and auto-save counted from its turn."""
        self.run_id = checkpoint.run_id
        self._last_saved_turn = checkpoint.turn

    def list_checkpoints(self, run_id: str | None = None) -> list[dict]:
        """Oldest first: id, run_id, revision, turn, created_at, saved_due_to, size_bytes, path.

        A file whose header cannot be read is listed with ``"error": "checkpoint_corrupt"``.
        """
        rows = self.backend.headers()
        return [r for r in rows if run_id is None or r.get("run_id") == run_id]

    def delete_checkpoint(self, checkpoint_id: str) -> bool:
        """Remove one checkpoint; True if it existed. A run's last one takes its tool log along."""
        self.tool_log.forget()
        return self.backend.delete(checkpoint_id)

    def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of ``run_id`` and its tool-result log; returns how many."""
        run_id = check_run_id(run_id)
        self.tool_log.forget(run_id)
        drop = getattr(self.backend, "delete_run", None)
        if drop is not None:
            return drop(run_id)
        mine = [h["id"] for h in self.backend.headers() if h.get("run_id") == run_id]
        return sum(self.backend.delete(cid) for cid in mine)

    def clear_all(self) -> int:
        """Remove every checkpoint and tool result in the store; returns checkpoints removed."""
        self._last_saved_turn = 0
        self.tool_log.forget()
        return self.backend.clear()

    # -- the durable tool-result log (``self.tool_log``) under its chapter-11 names
    def record_tool_result(self, run_id: str, tool_call_id: str, name: str, result: str,
                           success: bool, error_code: str | None = None, **kw: Any) -> bool:
        """Record a finished call (the first record wins); ``ToolResultLog.record``."""
        return self.tool_log.record(run_id, tool_call_id, name, result, success, error_code, **kw)

    def get_tool_result(self, run_id: str, tool_call_id: str) -> dict | None:
        """The recorded outcome of this call, or None; ``ToolResultLog.get``."""
        return self.tool_log.get(run_id, tool_call_id)

    def find_tool_result(self, run_id: str, tool_call_id: str, name: str, arguments: Any,
                         claimed: set[str]) -> dict | None:
        """By id, else by name and arguments among unclaimed ids; ``ToolResultLog.find``."""
        return self.tool_log.find(run_id, tool_call_id, name, arguments, claimed)

    def completed_tool_calls(self, run_id: str) -> dict[str, dict]:
        """Every recorded call of a run, in completion order; ``ToolResultLog.completed``."""
        return self.tool_log.completed(run_id)

    # -- with a runtime
    def attach(self, runtime: Any) -> DurableRuns:
        """Make ``runtime``'s runs durable with this manager (``AgentRuntime(checkpoints=cm)``).

        Same as ``agentlab.checkpoints.durable.attach(runtime, self)``: hooks save checkpoints,
        a ``DurableExecutor`` records and replays tool results, and the resume phase makes
        ``run(task, resume_from="latest" | id)`` continue a saved run.
        """
        return attach_runs(runtime, self)

    def __repr__(self) -> str:
        return (f"CheckpointManager({str(self.checkpoint_dir)!r}, store={type(self.backend).__name__}, "
                f"run_id={self.run_id!r})")
