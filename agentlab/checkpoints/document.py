"""The checkpoint document: the ``Checkpoint`` record, its ids, and its on-disk text.

Part of chapter 11 (``notebooks/11_checkpoints.ipynb``). Both backends (``json_backend``,
``sqlite_backend``) store exactly this text, so a checkpoint reads the same from either.

- ids are ``<seq:08d>-<time_ns:019d>-<random>`` (``new_checkpoint_id``): ``seq`` is allocated by
  the backend under its cross-process lock, so ids are unique and sort in creation order;
- the text (``render_checkpoint``) is JSON whose first line holds the small header fields
  (``format_version, id, run_id, revision, turn, created_at, saved_due_to, n_messages``), so
  listing reads one line per file (``read_header``);
- ``parse_checkpoint`` turns every failure into a ``CheckpointError`` naming the file:
  ``checkpoint_corrupt``, or ``checkpoint_incompatible`` for an unknown ``format_version``.
  Hostile text is one of those failures: JSON nested deeper than the parser's recursion
  (100,000 ``[``) and fields the writer would refuse (``turn: -3``, ``format_version: true``,
  a boolean where an integer belongs) are ``checkpoint_corrupt``, never a raw exception.
"""
from __future__ import annotations

import dataclasses
import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import CheckpointError

__all__ = ["FORMAT_VERSION", "MIGRATIONS", "ID_RE", "Checkpoint", "new_checkpoint_id",
           "parse_checkpoint", "read_header", "render_checkpoint"]

#: Version of the on-disk checkpoint format. Bump it when the layout changes, and add a
#: migration to ``MIGRATIONS``; a file with a version not listed there is refused.
#: Version 2 (issue 13) added ``tool_calls_chunks``: the sealed chunks of a long run's
#: ``tool_calls_made`` list live in the run's tool-result log (``calls.py``), and the
#: checkpoint holds their ids and the tail.
FORMAT_VERSION = 2


def _v1_to_v2(doc: dict) -> dict:
    """Version 1 held the whole ``tool_calls_made`` list: no chunks."""
    return {**doc, "format_version": 2, "tool_calls_chunks": []}


#: Older versions this code can upgrade: ``{version: function(doc) -> doc of version + 1}``.
MIGRATIONS: dict[int, Callable[[dict], dict]] = {1: _v1_to_v2}
#: What a checkpoint id looks like (anything else is not a checkpoint of this store).
#: (``\Z``, not ``$``: ``$`` also matches before a trailing newline.)
ID_RE = re.compile(r"\A(\d{8})-(\d{19})-([0-9a-f]{6})\Z")

_REQUIRED = {"format_version": int, "id": str, "run_id": str, "revision": int, "turn": int,
             "created_at": str, "messages": list, "state": dict, "tool_calls_made": list,
             "metadata": dict, "tool_calls_chunks": list}


@dataclass
class Checkpoint:
    """One saved snapshot of a run at a safe point.

    ``revision`` counts the checkpoints of one ``run_id`` (1, 2, ... across resumes);
    ``created_at`` is wall-clock UTC (ISO 8601); ``metadata`` holds ``saved_due_to``, the task,
    the model, the tools, the token usage and the time used (``elapsed_s``).
    ``tool_calls_chunks`` are the ids of the sealed chunks of ``tool_calls_made`` on disk;
    ``CheckpointManager.load`` puts them back in front of the tail, and empties this list.
    """

    id: str
    run_id: str
    revision: int
    turn: int
    messages: list[dict]
    state: dict[str, Any]
    tool_calls_made: list[dict]
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    format_version: int = FORMAT_VERSION
    tool_calls_chunks: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def new_checkpoint_id(seq: int) -> str:
    """The id of the ``seq``-th checkpoint of a store (see the module docstring)."""
    return f"{seq:08d}-{time.time_ns():019d}-{secrets.token_hex(3)}"


def parse_checkpoint(text: bytes | str, where: str) -> Checkpoint:
    """Decode one checkpoint document; every failure is a ``CheckpointError`` naming ``where``."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, too deep
        why = "nested too deeply to read" if isinstance(exc, RecursionError) else str(exc)
        raise CheckpointError("checkpoint_corrupt",
                              f"checkpoint {where} is corrupt ({why}); delete it or load an "
                              "older checkpoint", details={"file": where}) from None
    if not isinstance(doc, dict) or not _is_int(doc.get("format_version")):
        raise CheckpointError("checkpoint_corrupt", f"checkpoint {where} has no integer "
                              "format_version; it was not written by agentlab",
                              details={"file": where})
    version = doc["format_version"]
    while version in MIGRATIONS:
        doc = MIGRATIONS[version](doc)
        version = doc["format_version"]
    if version != FORMAT_VERSION:
        raise CheckpointError(
            "checkpoint_incompatible",
            f"checkpoint {where} has format_version {version}; this agentlab reads version "
            f"{FORMAT_VERSION}{' (and migrates ' + str(sorted(MIGRATIONS)) + ')' if MIGRATIONS else ''}. "
            "Use the agentlab that wrote it, or start a new run.",
            details={"file": where, "format_version": version, "supported": FORMAT_VERSION})
    for key, typ in _REQUIRED.items():
        if not (_is_int(doc.get(key)) if typ is int else isinstance(doc.get(key), typ)):
            raise CheckpointError("checkpoint_corrupt", f"checkpoint {where}: field {key!r} is "
                                  f"missing or not a {typ.__name__}", details={"file": where})
    for key, least in (("turn", 0), ("revision", 1)):  # what the writer refuses to write
        if doc[key] < least:
            raise CheckpointError("checkpoint_corrupt", f"checkpoint {where}: field {key!r} is "
                                  f"{doc[key]}, below {least}", details={"file": where})
    return Checkpoint(**{k: doc[k] for k in _REQUIRED})


def _is_int(value: Any) -> bool:
    """An integer, not a boolean (``True`` is an ``int`` to Python, not to a format)."""
    return isinstance(value, int) and not isinstance(value, bool)


def read_header(line: bytes) -> dict | None:
    """The header is the first line of a checkpoint text: ``{...scalars...,`` (see below)."""
    try:
        head = json.loads(line.rstrip().rstrip(b",") + b"}")
        return head if isinstance(head, dict) else None
    except (ValueError, RecursionError):  # torn, not UTF-8, or nested too deeply
        return None


def render_checkpoint(header: dict, body: dict[str, str]) -> str:
    """One JSON document whose first line holds the small header fields, so listing is cheap.

    ``body`` maps the remaining field names to their already-encoded JSON. JSON strings never
    contain a raw newline, so the first line ends exactly after the header.
    """
    parts = [json.dumps(header, ensure_ascii=False, separators=(",", ":"))[:-1] + ","]
    parts.append(",\n".join(f'"{k}":{v}' for k, v in body.items()))
    return "\n".join(parts) + "}\n"
