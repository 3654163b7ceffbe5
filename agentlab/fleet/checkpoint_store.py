"""Checkpoints and the durable tool-result log in Redis, shared by a fleet (chapter 13).

Part of ``notebooks/13_fleet.ipynb``. ``CheckpointManager(store="redis://host:port/0")`` picks
this backend through the backend factory's plug-in table (``agentlab.checkpoints.store``: the
``agentlab.checkpoint_stores`` entry point names it), so chapter 11 does not import the fleet.
It keeps chapter 11's backend contract (``CheckpointBackend``), for every worker at once:

Keys of tenant ``T`` (all under ``agentlab:T:``, the pattern its ACL user is limited to):

- ``ckpt:seq`` — the store's checkpoint counter; ``ckpt:revisions`` — hash run_id → last revision;
- ``ckpt:index`` — sorted set of checkpoint ids scored by ``seq`` (listing and "newest");
  ``ckpt:run:<run_id>`` — the same for one run (retention is per run: ``max_keep`` newest);
- ``ckpt:doc:<id>`` — hash: ``body`` (the chapter-11 document text), ``header``, ``size``;
- ``toollog:<run_id>`` — hash call id → record (JSON); ``toolorder:<run_id>`` — completion order;
  ``toolepoch:<run_id>`` — a token set when the log is created, so a reader whose cursor
  predates a deleted and re-created log notices; ``toolruns`` — the runs that have a log (so
  ``clear`` needs no ``SCAN``).

Atomicity: ``write`` reads the counters under ``WATCH`` (in one pipelined round trip) and
commits the new document, the counters, the indexes and the pruning in one ``MULTI``/``EXEC``
(three round trips in all); if another writer got in between,
it retries with fresh numbers, so ``seq`` and ``revision`` are allocated once across machines and
without gaps. ``record_tool_result`` is one Lua script: ``HSETNX`` (the first record of a call
wins) and, only if it was new, the append to the order list; ``tool_results_since`` is another,
which reads only the records appended after a cursor ``(epoch, count)``, in one round trip.

Durability: a write is acknowledged once it is in the server's memory, which survives the
worker that wrote it (what a fleet needs). Surviving a crash of Redis itself needs the server's
own persistence (``appendonly yes``, ``appendfsync always``); the test servers run without it.
"""
from __future__ import annotations

import json
import secrets
from typing import Any, Callable

import redis

from ..checkpoints.document import ID_RE, Checkpoint, parse_checkpoint
from ..errors import CheckpointError
from .connection import RedisTarget, redis_errors

__all__ = ["RedisCheckpointBackend"]

# KEYS: log hash, order list, runs set, epoch; ARGV: call id, record JSON, run id, new epoch.
_RECORD_ONCE = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  if redis.call('RPUSH', KEYS[2], ARGV[1]) == 1 then redis.call('SET', KEYS[4], ARGV[4]) end
  redis.call('SADD', KEYS[3], ARGV[3])
  return 1
end
return 0
"""
# KEYS: log hash, order list, epoch; ARGV: the cursor's epoch ('' for none), its count.
# Returns {epoch, new count, record...}, or {false} when the log was replaced since the cursor.
_READ_SINCE = """
local epoch = redis.call('GET', KEYS[3]) or ''
local count = tonumber(ARGV[2])
if ARGV[1] ~= '' and (ARGV[1] ~= epoch or redis.call('LLEN', KEYS[2]) < count) then
  return {false}
end
local ids = redis.call('LRANGE', KEYS[2], count, -1)
local out = {epoch, count + #ids}
if #ids > 0 then
  local recs = redis.call('HMGET', KEYS[1], unpack(ids))
  for i = 1, #recs do out[#out + 1] = recs[i] end
end
return out
"""


class RedisCheckpointBackend:
    """Chapter 11's checkpoint backend on a Redis server, one namespace per tenant.

    Args:
        url: ``redis://[user:password@]host:port/db`` (``?tenant=`` or the user name may name
            the tenant; see ``agentlab.fleet.connection``).
        tenant: the tenant whose keys to use (overrides the URL).
    """

    def __init__(self, url: str, tenant: str | None = None) -> None:
        self.target = RedisTarget(url, tenant)
        self.tenant = self.target.tenant
        key = self.target.key
        self._seq, self._index, self._revisions = key("ckpt", "seq"), key("ckpt", "index"), \
            key("ckpt", "revisions")
        self._runs = key("toolruns")
        self._record_once = self.target.client.register_script(_RECORD_ONCE)
        self._read_since = self.target.client.register_script(_READ_SINCE)

    def _doc(self, checkpoint_id: str) -> str:
        return self.target.key("ckpt", "doc", checkpoint_id)

    def _run_index(self, run_id: str) -> str:
        return self.target.key("ckpt", "run", run_id)

    def _log_keys(self, run_id: str) -> list[str]:
        """The tool log of one run: records, order, epoch."""
        return [self.target.key(kind, run_id) for kind in ("toollog", "toolorder", "toolepoch")]

    def _errors(self, doing: str):
        return redis_errors(CheckpointError, self.target, doing)

    def where(self, checkpoint_id: str) -> str:
        """How messages name one checkpoint: the safe URL and its key."""
        return f"{self.target.safe_url}#{self._doc(checkpoint_id)}"

    # -- checkpoints
    def write(self, run_id: str, build: Callable[[int, int], tuple[dict, str]],
              max_keep: int | None) -> dict:
        run_index = self._run_index(run_id)
        with self._errors(f"save a checkpoint of run {run_id!r}"), \
                self.target.client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(self._seq, self._revisions, self._index, run_index)
                    with self.target.client.pipeline(transaction=False) as reads:  # one round trip
                        reads.get(self._seq)
                        reads.hget(self._revisions, run_id)
                        reads.zrange(run_index, 0, -1)
                        last_seq, last_revision, kept = reads.execute()
                    seq, revision = int(last_seq or 0) + 1, int(last_revision or 0) + 1
                    header, text = build(seq, revision)
                    data = text.encode("utf-8")
                    excess = 0 if max_keep is None else len(kept) + 1 - max_keep
                    drop = [d.decode() for d in kept[:max(excess, 0)]]
                    pipe.multi()
                    pipe.set(self._seq, seq)
                    pipe.hset(self._revisions, run_id, revision)
                    pipe.hset(self._doc(header["id"]), mapping={
                        "body": data, "header": json.dumps(header), "size": len(data)})
                    pipe.zadd(self._index, {header["id"]: seq})
                    pipe.zadd(run_index, {header["id"]: seq})
                    if drop:  # retention is per run: only this run's oldest go
                        pipe.zrem(self._index, *drop)
                        pipe.zrem(run_index, *drop)
                        pipe.delete(*map(self._doc, drop))
                    pipe.execute()
                    return {**header, "size_bytes": len(data)}
                except redis.WatchError:
                    continue  # another writer committed first: allocate again

    def read(self, checkpoint_id: str | None) -> Checkpoint | None:
        client = self.target.client
        with self._errors(f"load checkpoint {checkpoint_id or 'latest'!r}"):
            for _ in range(10):  # "latest" pruned by another writer in between: look again
                cid = checkpoint_id
                if cid is None:
                    newest = client.zrevrange(self._index, 0, 0)
                    if not newest:
                        return None
                    cid = newest[0].decode()
                body = client.hget(self._doc(cid), "body") if ID_RE.match(cid) else None
                if body is not None or checkpoint_id is not None:
                    break
        if body is None:
            raise CheckpointError("checkpoint_not_found", f"no checkpoint {cid!r} in "
                                  f"{self.target.safe_url} (tenant {self.tenant!r}); "
                                  "list_checkpoints() shows what exists",
                                  details={"id": cid, "tenant": self.tenant})
        return parse_checkpoint(body, self.where(cid))

    def headers(self) -> list[dict]:
        with self._errors("list checkpoints"):
            ids = [i.decode() for i in self.target.client.zrange(self._index, 0, -1)]
            with self.target.client.pipeline(transaction=False) as pipe:
                for cid in ids:
                    pipe.hmget(self._doc(cid), "header", "size")
                rows = pipe.execute()
        out = []
        for cid, (header, size) in zip(ids, rows):
            if header is None and size is None:
                continue  # deleted while we listed
            extra = {"path": self.where(cid), "size_bytes": int(size or 0)}
            try:
                out.append({**json.loads(header), **extra})
            except (TypeError, ValueError, RecursionError):  # RecursionError: nested too deeply
                out.append({"id": cid, **extra, "error": "checkpoint_corrupt"})
        return out

    def delete(self, checkpoint_id: str) -> bool:
        """Remove one checkpoint; the run's last one takes its tool-result log along."""
        if not ID_RE.match(checkpoint_id):
            return False
        client = self.target.client
        with self._errors(f"delete checkpoint {checkpoint_id!r}"):
            header = client.hget(self._doc(checkpoint_id), "header")
            run_id = _run_of(header)
            with client.pipeline() as pipe:
                pipe.zrem(self._index, checkpoint_id)
                pipe.delete(self._doc(checkpoint_id))
                if run_id is not None:
                    pipe.zrem(self._run_index(run_id), checkpoint_id)
                    pipe.zcard(self._run_index(run_id))
                replies = pipe.execute()
            if run_id is not None and replies[-1] == 0:  # the run has no checkpoint left
                client.delete(*self._log_keys(run_id))
                client.srem(self._runs, run_id)
        return replies[0] > 0

    def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of ``run_id`` and its tool-result log; checkpoints removed."""
        client = self.target.client
        with self._errors(f"delete run {run_id!r}"):
            ids = [i.decode() for i in client.zrange(self._run_index(run_id), 0, -1)]
            with client.pipeline() as pipe:
                if ids:
                    pipe.zrem(self._index, *ids)
                    pipe.delete(*map(self._doc, ids))
                pipe.delete(self._run_index(run_id), *self._log_keys(run_id))
                pipe.hdel(self._revisions, run_id)
                pipe.srem(self._runs, run_id)
                pipe.execute()
        return len(ids)

    def clear(self) -> int:
        client = self.target.client
        with self._errors("clear the checkpoint store"):
            ids = [i.decode() for i in client.zrange(self._index, 0, -1)]
            runs = {r.decode() for r in client.smembers(self._runs)} | \
                {r.decode() for r in client.hkeys(self._revisions)}
            keys = [self._seq, self._index, self._revisions, self._runs, *map(self._doc, ids),
                    *(k for run in runs for k in (self._run_index(run), *self._log_keys(run)))]
            client.delete(*keys)
        return len(ids)

    # -- the durable tool-result log
    def record_tool_result(self, record: dict) -> bool:
        run_id = record["run_id"]
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        log, order, epoch = self._log_keys(run_id)
        with self._errors(f"record the result of tool call {record['tool_call_id']!r}"):
            added = self._record_once(keys=[log, order, self._runs, epoch],
                                      args=[record["tool_call_id"], line, run_id,
                                            secrets.token_hex(8)])
        return added == 1

    def tool_results(self, run_id: str) -> dict[str, dict]:
        with self._errors(f"read the tool-result log of run {run_id!r}"), \
                self.target.client.pipeline() as pipe:
            pipe.lrange(self.target.key("toolorder", run_id), 0, -1)
            pipe.hgetall(self.target.key("toollog", run_id))
            order, records = pipe.execute()
        where = f"{self.target.safe_url}#{self.target.key('toollog', run_id)}"
        return {cid.decode(): _record(records[cid], where) for cid in order if cid in records}

    def tool_results_since(self, run_id: str, cursor: Any) -> tuple[list[dict] | None, Any]:
        """The records appended after ``cursor`` (``None``: all) and the new cursor; ``(None,
        None)`` when the log was deleted or replaced since that cursor (see the protocol)."""
        log, order, epoch = self._log_keys(run_id)
        seen_epoch, count = cursor if cursor is not None else ("", 0)
        with self._errors(f"read the tool-result log of run {run_id!r}"):
            reply = self._read_since(keys=[log, order, epoch], args=[seen_epoch, count])
        if not reply or reply[0] is None:
            return None, None
        new_epoch, new_count, *raw = reply
        where = f"{self.target.safe_url}#{log}"
        return [_record(r, where) for r in raw if r is not None], (new_epoch.decode()
                                                                   if new_epoch else "", new_count)

    def tool_result(self, run_id: str, tool_call_id: str) -> dict | None:
        """One recorded call (a single ``HGET``), or None if it never completed."""
        with self._errors(f"read the result of tool call {tool_call_id!r}"):
            raw = self.target.client.hget(self.target.key("toollog", run_id), tool_call_id)
        return None if raw is None else _record(raw, self.where(tool_call_id))

    def close(self) -> None:
        """Close the connection pool (it reopens on next use)."""
        self.target.close()

    def __repr__(self) -> str:
        return f"RedisCheckpointBackend({self.target.safe_url!r}, tenant={self.tenant!r})"


def _run_of(header: bytes | None) -> str | None:
    """The run id in a stored header, or None when it is missing or unreadable."""
    try:
        return json.loads(header)["run_id"] if header else None
    except (ValueError, KeyError, TypeError, RecursionError):
        return None


def _record(raw: bytes, where: str) -> Any:
    """One stored tool-result record (its shape is the manager's to check)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:  # not JSON, or nested too deeply to read
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise CheckpointError("checkpoint_corrupt", f"the tool-result log {where} holds a "
                              f"record that is not JSON ({why}); delete it and resume",
                              details={"where": where}) from None
