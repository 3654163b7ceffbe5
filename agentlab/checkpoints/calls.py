"""A long run's ``tool_calls_made`` list in checkpoints: encoded once, saved in sealed chunks.

Part of ``notebooks/11_checkpoints.ipynb`` (issue 13). A checkpoint used to hold the run's
whole call list, so every save re-scrubbed it and wrote it again: at 2,000 calls each save
wrote ~300 KB and cost more than the one before. Two changes make a save cost the same at
the 2,000th call as at the first:

1. **Encoded once** (``CallListEncoder``). The list only grows during a run (the loop appends
   one record per call and never edits one), so a save scrubs and encodes only the records
   added since the previous save. The cache starts again when it is handed another list (a
   new run, a resume), a shorter one, one whose last cached record is not the same object any
   more, or when the secrets to mask changed.
2. **Sealed in chunks.** Every ``CHUNK_SIZE`` records become one immutable chunk, written
   once into the run's durable tool-result log as a record named ``CHUNK_TOOL`` whose id is
   ``tool_calls_made:<first>-<last>:<digest>`` (the digest of its text, so writing it again
   is a no-op). A checkpoint holds the chunk ids (``tool_calls_chunks``) and the tail of fewer
   than ``CHUNK_SIZE`` records; ``CheckpointManager.load`` puts the list back together
   (``join_chunks``). Chunks live as long as the run's tool log: retention never breaks
   them, and a run deleted with ``delete_run`` takes them along.

A chunk is recorded before the checkpoint that names it, so a crash in between leaves an
unused chunk, never a checkpoint with a missing one.
"""
from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Any

from ..errors import CheckpointError
from .redact import to_plain

__all__ = ["CHUNK_SIZE", "CHUNK_TOOL", "CallListEncoder", "chunk_record", "join_chunks"]

#: Records per sealed chunk of ``tool_calls_made``.
CHUNK_SIZE = 256
#: The ``name`` of chunk records in the tool-result log (never a tool a model can call).
CHUNK_TOOL = "agentlab.tool_calls_made"


class CallListEncoder:
    """``tool_calls_made`` as (chunk ids, new chunks, tail JSON), each record encoded once."""

    def __init__(self) -> None:
        self._list: list | None = None
        self._last: Any = None
        self._parts: list[str] = []
        self._secrets: tuple[str, ...] = ()
        self._chunks: list[str] = []

    def reset(self) -> None:
        """Forget the cache (e.g. after a chunk could not be recorded: it is sealed again)."""
        self._list, self._last, self._parts, self._chunks = None, None, [], []

    def encode(self, calls: list, secrets: tuple[str, ...]
               ) -> tuple[list[str], list[tuple[str, str]], str]:
        """``(ids of all sealed chunks, [(id, text) of chunks sealed now], tail JSON)``."""
        n = len(self._parts)
        if (calls is not self._list or len(calls) < n or secrets != self._secrets
                or (n and calls[n - 1] is not self._last)):
            self.reset()
            self._list, self._secrets, n = calls, secrets, 0
        for i in range(n, len(calls)):
            plain = to_plain(calls[i], f"tool_calls_made[{i}]", scrub=True, secrets=secrets)
            self._parts.append(json.dumps(plain, ensure_ascii=False, separators=(",", ":")))
        self._last = calls[-1] if calls else None
        sealed = []
        while len(self._parts) - len(self._chunks) * CHUNK_SIZE >= CHUNK_SIZE:
            start = len(self._chunks) * CHUNK_SIZE
            text = "[" + ",".join(self._parts[start:start + CHUNK_SIZE]) + "]"
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            chunk_id = f"tool_calls_made:{start}-{start + CHUNK_SIZE - 1}:{digest}"
            self._chunks.append(chunk_id)
            sealed.append((chunk_id, text))
        tail = "[" + ",".join(self._parts[len(self._chunks) * CHUNK_SIZE:]) + "]"
        return list(self._chunks), sealed, tail


def chunk_record(run_id: str, chunk_id: str, text: str) -> dict:
    """The tool-result-log record that holds one sealed chunk (already redacted text)."""
    return {"run_id": run_id, "tool_call_id": chunk_id, "name": CHUNK_TOOL, "result": text,
            "success": True, "error_code": None, "arguments": None, "turn": None,
            "recorded_at": datetime.now(timezone.utc).isoformat()}


def join_chunks(chunk_ids: list, chunks: dict[str, dict], tail: list, where: str) -> list:
    """The whole call list: every chunk's records in order, then ``tail``.

    ``chunks`` maps chunk ids to their log records; a missing or unreadable chunk raises
    ``CheckpointError("checkpoint_corrupt")`` naming the checkpoint."""
    out: list = []
    for chunk_id in chunk_ids:
        rec = chunks.get(chunk_id) if isinstance(chunk_id, str) else None
        try:
            part = json.loads(rec["result"]) if rec is not None else None
        except (ValueError, RecursionError):  # unreadable, or nested too deeply
            part = None
        if not isinstance(part, list):
            raise CheckpointError("checkpoint_corrupt", f"{where}: the tool_calls_made chunk "
                                  f"{chunk_id!r} is missing from the run's tool-result log or "
                                  "unreadable; load an older checkpoint",
                                  details={"where": where, "chunk": str(chunk_id)})
        out.extend(part)
    return out + list(tail)
