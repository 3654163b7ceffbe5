"""The run lease, its fencing token and the tool semaphore, against a real Redis (no workers)."""
from __future__ import annotations

import threading
import time

from agentlab.fleet.connection import RedisTarget
from agentlab.fleet.lease import Heartbeat, RunLease
from agentlab.fleet.ledger import max_overlap, takeover_gaps
from agentlab.fleet.limits import ToolSemaphore


def test_one_holder_and_a_takeover_only_after_expiry_with_a_newer_token(redis_url):
    client = RedisTarget(redis_url).client
    a, b = (RunLease(client, "run-1", ttl_s=0.3, prefix="t:", holder=h) for h in "ab")
    assert a.acquire() and not b.acquire()
    assert a.check() and not b.check()
    time.sleep(0.45)                      # a stops renewing (its process died)
    assert b.acquire() and b.token == a.token + 1
    assert not a.check()                  # the old holder is fenced off...
    assert not a.release() and b.current_holder() == b.holder   # ...and cannot free b's lease
    assert b.release() and b.current_holder() is None


def test_check_and_the_heartbeat_keep_a_lease_alive_past_its_ttl(redis_url):
    client = RedisTarget(redis_url).client
    lease = RunLease(client, "run-2", ttl_s=0.2, prefix="t:", holder="w")
    assert lease.acquire()
    with Heartbeat(lease) as beat:
        time.sleep(0.6)
        assert lease.check() and not beat.lost
    other = RunLease(client, "run-2", ttl_s=0.2, prefix="t:", holder="x")
    assert not other.acquire()


def test_the_semaphore_bounds_concurrent_holders_and_frees_a_dead_holders_slot(redis_url):
    client = RedisTarget(redis_url).client
    spans, lock = [], threading.Lock()

    def call() -> None:
        with ToolSemaphore(client, "web_search", 2, prefix="t:"):
            t0 = time.time()
            time.sleep(0.05)
            with lock:
                spans.append((t0, time.time()))

    threads = [threading.Thread(target=call) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max_overlap(spans) == 2 and ToolSemaphore(client, "web_search", 2, prefix="t:").peak() == 2
    dead = ToolSemaphore(client, "read_url", 1, ttl_s=0.1, prefix="t:")
    assert dead.acquire()                 # never released: its holder was killed
    assert ToolSemaphore(client, "read_url", 1, prefix="t:").acquire(timeout_s=1.0)


def test_takeover_gaps_measure_from_the_old_holders_last_step():
    steps = [{"token": 1, "t": 0.0}, {"token": 1, "t": 1.0}, {"token": 2, "t": 6.5},
             {"token": 2, "t": 7.0}]
    assert takeover_gaps(steps) == [5.5]
    assert max_overlap([(0, 1), (1, 2)]) == 1 and max_overlap([(0, 2), (1, 3)]) == 2


def test_a_cancel_stops_the_calls_of_a_turn_that_have_not_started(redis_url):
    from agentlab.executor import ToolExecutor
    from agentlab.executor.batch import ToolBatch
    from agentlab.fleet.guarded import GuardedExecutor
    from agentlab.fleet.ledger import Ledger
    from agentlab.llm import ToolCall
    from agentlab.tools import ToolRegistry

    client, ran, flag = RedisTarget(redis_url).client, [], threading.Event()
    reg = ToolRegistry()

    def step(n: int) -> str:
        """One step.

        Args:
            n: which one.
        """
        ran.append(n)
        if n == 2:
            flag.set()  # the cancel arrives while call 2 runs: calls 3 and 4 must not start
        return f"step {n}"

    reg.register(step)
    ledger = Ledger(client, "t:")
    guarded = GuardedExecutor(ToolExecutor(reg), "run-c", lambda: True, ledger,
                              should_stop=flag.is_set, prefix="t:")
    calls = [ToolCall(id=f"c{n}", name="step", arguments={"n": n}) for n in (1, 2, 3, 4)]
    results = guarded.run(ToolBatch.of(calls))
    assert ran == [1, 2] and [r.success for r in results] == [True, True, False, False]
    assert results[2].error_code == "not_executed" and "cancelled" in results[2].result
    assert sorted(ledger.executions("run-c")) == ["run-c:c1", "run-c:c2"]


def test_a_lease_check_that_cannot_reach_redis_is_a_lost_lease_for_good():
    from agentlab.fleet.server import RedisServer
    server = RedisServer.start(appendonly=True)   # a restart keeps the lease key
    lease = RunLease(RedisTarget(server.url, socket_timeout_s=0.5).client, "run-u", ttl_s=60,
                     prefix="t:")
    assert lease.acquire() and lease.holds()
    server.kill()
    assert not lease.holds() and lease.unreachable and lease.lost
    server.restart()
    assert not lease.holds()             # Redis is back and the key is ours: still lost
    assert lease.check()                 # (the raw check would say otherwise)
    server.stop()
