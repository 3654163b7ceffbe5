"""Checkpoints and the durable tool-result log in Redis, shared by a fleet (chapter 13).

Part of ``notebooks/13_fleet.ipynb``. ``CheckpointManager(store="redis://host:port/0")`` picks
this backend through the backend factory's plug-in table (``agentlab.checkpoints.store``: the
``agentlab.checkpoint_stores`` entry point names it), so chapter 11 does not import the fleet.
It keeps chapter 11's backend contract (``CheckpointBackend``), for every worker at once:

Keys of tenant ``T`` (all under ``agentlab:T:``, the pattern its ACL user is limited to):

- ``ckpt:seq`` — the store's checkpoint counter; ``ckpt:revisions`` — hash run_id → last revision;
- ``ckpt:index`` — sorted set of checkpoint ids scored by ``seq`` (listing and "newest");
- ``ckpt:doc:<id>`` — hash: ``body`` (the chapter-11 document text), ``header``, ``size``;
- ``toollog:<run_id>`` — hash call id → record (JSON); ``toolorder:<run_id>`` — completion order;
  ``toolruns`` — the runs that have a log (so ``clear`` needs no ``SCAN``).

Atomicity: ``write`` reads the counters under ``WATCH`` and commits the new document, the
counters, the index and the pruning in one ``MULTI``/``EXEC``; if another writer got in between,
it retries with fresh numbers, so ``seq`` and ``revision`` are allocated once across machines and
without gaps. ``record_tool_result`` is one Lua script: ``HSETNX`` (the first record of a call
wins) and, only if it was new, the append to the order list.

Durability: a write is acknowledged once it is in the server's memory, which survives the
worker that wrote it (what a fleet needs). Surviving a crash of Redis itself needs the server's
own persistence (``appendonly yes``, ``appendfsync always``); the test servers run without it.
"""
from __future__ import annotations

import json
from typing import Callable

import redis

from ..checkpoints.document import ID_RE, Checkpoint, parse_checkpoint
from ..errors import CheckpointError
from .connection import RedisTarget, redis_errors

__all__ = ["RedisCheckpointBackend"]

# KEYS: log hash, order list, runs set; ARGV: call id, record JSON, run id.
_RECORD_ONCE = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  redis.call('SADD', KEYS[3], ARGV[3])
  return 1
end
return 0
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

    def _doc(self, checkpoint_id: str) -> str:
        return self.target.key("ckpt", "doc", checkpoint_id)

    def _errors(self, doing: str):
        return redis_errors(CheckpointError, self.target, doing)

    def where(self, checkpoint_id: str) -> str:
        """How messages name one checkpoint: the safe URL and its key."""
        return f"{self.target.safe_url}#{self._doc(checkpoint_id)}"

    # -- checkpoints
    def write(self, run_id: str, build: Callable[[int, int], tuple[dict, str]],
              max_keep: int | None) -> dict:
        with self._errors(f"save a checkpoint of run {run_id!r}"), \
                self.target.client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(self._seq, self._revisions, self._index)
                    seq = int(pipe.get(self._seq) or 0) + 1
                    revision = int(pipe.hget(self._revisions, run_id) or 0) + 1
                    header, text = build(seq, revision)
                    data = text.encode("utf-8")
                    excess = 0 if max_keep is None else pipe.zcard(self._index) + 1 - max_keep
                    drop = pipe.zrange(self._index, 0, excess - 1) if excess > 0 else []
                    pipe.multi()
                    pipe.set(self._seq, seq)
                    pipe.hset(self._revisions, run_id, revision)
                    pipe.hset(self._doc(header["id"]), mapping={
                        "body": data, "header": json.dumps(header), "size": len(data)})
                    pipe.zadd(self._index, {header["id"]: seq})
                    if drop:
                        pipe.zrem(self._index, *drop)
                        pipe.delete(*(self._doc(d.decode()) for d in drop))
                    pipe.execute()
                    return {**header, "size_bytes": len(data)}
                except redis.WatchError:
                    continue  # another writer committed first: allocate again

    def read(self, checkpoint_id: str | None) -> Checkpoint | None:
        client = self.target.client
        with self._errors(f"load checkpoint {checkpoint_id or 'latest'!r}"):
            if checkpoint_id is None:
                newest = client.zrevrange(self._index, 0, 0)
                if not newest:
                    return None
                checkpoint_id = newest[0].decode()
            body = client.hget(self._doc(checkpoint_id), "body") if ID_RE.match(checkpoint_id) \
                else None
        if body is None:
            raise CheckpointError("checkpoint_not_found", f"no checkpoint {checkpoint_id!r} in "
                                  f"{self.target.safe_url} (tenant {self.tenant!r}); "
                                  "list_checkpoints() shows what exists",
                                  details={"id": checkpoint_id, "tenant": self.tenant})
        return parse_checkpoint(body, self.where(checkpoint_id))

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
            except (TypeError, ValueError):
                out.append({"id": cid, **extra, "error": "checkpoint_corrupt"})
        return out

    def delete(self, checkpoint_id: str) -> bool:
        if not ID_RE.match(checkpoint_id):
            return False
        with self._errors(f"delete checkpoint {checkpoint_id!r}"), \
                self.target.client.pipeline() as pipe:
            pipe.zrem(self._index, checkpoint_id)
            pipe.delete(self._doc(checkpoint_id))
            removed, _ = pipe.execute()
        return removed > 0

    def clear(self) -> int:
        client = self.target.client
        with self._errors("clear the checkpoint store"):
            ids = [i.decode() for i in client.zrange(self._index, 0, -1)]
            runs = [r.decode() for r in client.smembers(self._runs)]
            keys = [self._seq, self._index, self._revisions, self._runs,
                    *map(self._doc, ids), *(self.target.key(kind, run) for run in runs
                                            for kind in ("toollog", "toolorder"))]
            client.delete(*keys)
        return len(ids)

    # -- the durable tool-result log
    def record_tool_result(self, record: dict) -> bool:
        run_id = record["run_id"]
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        with self._errors(f"record the result of tool call {record['tool_call_id']!r}"):
            added = self._record_once(
                keys=[self.target.key("toollog", run_id), self.target.key("toolorder", run_id),
                      self._runs], args=[record["tool_call_id"], line, run_id])
        return added == 1

    def tool_results(self, run_id: str) -> dict[str, dict]:
        with self._errors(f"read the tool-result log of run {run_id!r}"), \
                self.target.client.pipeline() as pipe:
            pipe.lrange(self.target.key("toolorder", run_id), 0, -1)
            pipe.hgetall(self.target.key("toollog", run_id))
            order, records = pipe.execute()
        return {cid.decode(): json.loads(records[cid]) for cid in order if cid in records}

    def tool_result(self, run_id: str, tool_call_id: str) -> dict | None:
        """One recorded call (a single ``HGET``), or None if it never completed."""
        with self._errors(f"read the result of tool call {tool_call_id!r}"):
            raw = self.target.client.hget(self.target.key("toollog", run_id), tool_call_id)
        return None if raw is None else json.loads(raw)

    def close(self) -> None:
        """Close the connection pool (it reopens on next use)."""
        self.target.close()

    def __repr__(self) -> str:
        return f"RedisCheckpointBackend({self.target.safe_url!r}, tenant={self.tenant!r})"
