"""Crash soak: agent runs killed at random points in child processes and resumed in new ones.

    python benchmarks/crash_soak.py [--runs 50] [--seed 0]    (e.g. --runs 500)

Each run is a 6-step job on the simulator (``AgentRuntime`` with a ``CheckpointManager``; the
steps one per turn, or steps 1-3 as one parallel batch), with a seeded random store (JSON or
SQLite), ``auto_save_interval`` (1-4) and one or two kills. A kill is ``os._exit`` at one of:

    tool-before   inside a step, before its side effect
    tool-after    inside a step, after its side effect, before it returns
    after-record  right after a tool result was recorded durably
    after-save    right after a checkpoint was written
    mid-save      while a checkpoint is written (JSON: half a temp file; SQLite: inside the
                  transaction)

Every process is forked from this one (so a "new process" has none of the dead one's memory)
and resumes with ``run(task, resume_from="latest")`` until the run finishes. Checked:

- every run finishes, with the run_id it started with, and the same token total as a run that
  was never killed (the budget is carried across processes);
- no step whose result had been recorded ran again (the step itself asks the durable log);
- each step's side effect happened exactly once (the tool's guard on its idempotency key);
- no temp file of a killed writer is left in the checkpoint folder once the run finished
  (they are swept when a store is opened).

Each run works in its own folder (``run-0000``, ``run-0001``, ...; the two uninterrupted
baselines in ``baseline-serial`` and ``baseline-parallel``), a progress bar (``tqdm``) shows
the runs, and the last line is the verdict, e.g.
``crash_soak: 500/500 finished, 0 completed steps re-executed``.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tqdm import tqdm

from agentlab import sim
from agentlab.checkpoints.store import JSONBackend, SQLiteBackend
from agentlab.checkpoints import CheckpointManager
from agentlab.errors import CheckpointError
from agentlab.runtime import AgentRuntime
from agentlab.tools import ToolRegistry

TASK = "run the 6 steps"
KINDS = ("tool-before", "tool-after", "after-record", "after-save", "mid-save")
KILLED = 17


def _die() -> None:
    os._exit(KILLED)


def _policy(shape: str) -> sim.Script:
    calls = [sim.call("step", {"n": i}) for i in range(1, 7)]
    if shape == "parallel":
        calls = [calls[:3], *calls[3:]]
    return sim.Script(calls + [sim.text("all 6 steps done")])


def _registry(cfg: dict, kill: tuple[str, int] | None) -> ToolRegistry:
    reg = ToolRegistry()
    store = CheckpointManager("cp", store=cfg["store"])  # a second handle, to ask the log

    @reg.tool(side_effects=True)
    def step(n: int, idempotency_key: str = "") -> str:
        """Run step n of the job.

        Args:
            n: which step.
        """
        run_id, _, call_id = idempotency_key.partition(":")
        recorded = store.get_tool_result(run_id, call_id) is not None
        with open("executions.log", "a") as fh:  # every execution, and whether it was done
            fh.write(f"{n} {int(recorded)}\n")
        if kill == ("tool-before", n):
            _die()
        done = open("effects.log").read().split() if os.path.exists("effects.log") else []
        if idempotency_key not in done:  # the tool's own guard: one effect per key
            with open("effects.log", "a") as fh:
                fh.write(f"{n} {idempotency_key}\n")
                fh.flush()
                os.fsync(fh.fileno())
        if kill == ("tool-after", n):
            _die()
        time.sleep(0.002 * (7 - n))  # parallel steps finish in reverse order
        return f"step {n} done"
    return reg


def _arm(cm: CheckpointManager, kill: tuple[str, int] | None) -> None:
    """Patch this process's manager to die at the k-th record / save."""
    if kill is None or kill[0].startswith("tool"):
        return
    kind, k = kill
    count = Counter()  # saves seen, for the two mid-save kills below

    def die_after(obj, method: str) -> None:
        """Wrap ``obj.method`` so the process dies right after its k-th call returns."""
        original, calls = getattr(obj, method), Counter()

        def wrapped(*a, **kw):
            out = original(*a, **kw)
            calls["n"] += 1
            if calls["n"] == k:
                _die()
            return out
        setattr(obj, method, wrapped)

    if kind == "after-record":
        die_after(cm, "record_tool_result")
    elif kind == "after-save":
        die_after(cm, "save")
    elif isinstance(cm.backend, JSONBackend):
        write = cm.backend.write_file

        def torn_write(path, data):
            count["s"] += 1
            if count["s"] == k:
                tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
                tmp.write_bytes(data[: len(data) // 2])
                _die()
            return write(path, data)
        cm.backend.write_file = torn_write  # type: ignore[method-assign]
    else:
        assert isinstance(cm.backend, SQLiteBackend)
        write = cm.backend.write

        def die_in_transaction(run_id, build, max_keep):
            count["s"] += 1
            if count["s"] != k:
                return write(run_id, build, max_keep)
            return write(run_id, lambda seq, rev: (build(seq, rev), _die()), max_keep)
        cm.backend.write = die_in_transaction  # type: ignore[method-assign]


def _attempt(workdir: str, cfg: dict, attempt: int) -> None:
    """One process: start (attempt 0) or resume the run; maybe die at the planned point."""
    os.chdir(workdir)
    kill = tuple(cfg["kills"][attempt]) if attempt < len(cfg["kills"]) else None
    cm = CheckpointManager("cp", auto_save_interval=cfg["interval"], store=cfg["store"])
    _arm(cm, kill)
    rt = AgentRuntime(sim.Simulator(_policy(cfg["shape"])).llm(), _registry(cfg, kill),
                      checkpoints=cm)
    try:
        try:
            r = rt.run(TASK, resume_from=None if attempt == 0 else "latest")
        except CheckpointError as exc:  # died before the run's first checkpoint: nothing ran
            if exc.code != "checkpoint_not_found":
                raise
            r = rt.run(TASK)
        out = {"state": r.state.value, "run_id": r.run_id, "turns": r.turns,
               "tokens": r.total_tokens, "errors": [e["code"] for e in r.errors]}
    except CheckpointError as exc:  # died after the run's last checkpoint was written
        if exc.code != "run_finished":
            raise
        cp = cm.load()
        out = {"state": "finished", "run_id": cp.run_id, "turns": cp.turn,
               "tokens": cp.metadata["usage"]["total_tokens"], "errors": []}
    Path("result.json").write_text(json.dumps(out))
    os._exit(0)


def _plan(rng: random.Random) -> dict:
    kills = []
    for _ in range(1 + (rng.random() < 0.3)):
        kind = rng.choice(KINDS)
        k = rng.randint(1, 6) if kind.startswith("tool") or kind == "after-record" else rng.randint(1, 3)
        kills.append((kind, k))
    return {"store": rng.choice(["json", "sqlite"]), "interval": rng.randint(1, 4),
            "shape": rng.choice(["serial", "parallel"]), "kills": kills}


def soak_run(root: Path, name: str, cfg: dict, ctx) -> dict:
    workdir = root / name  # one folder per run: names never collide, whatever --runs is
    workdir.mkdir()
    attempts, kills = 0, Counter()
    while attempts < 6:
        p = ctx.Process(target=_attempt, args=(str(workdir), cfg, attempts))
        p.start()
        p.join(60)
        attempts += 1
        if p.exitcode == KILLED:
            kills[cfg["kills"][attempts - 1][0]] += 1
            continue
        break
    if p.exitcode != 0:
        return {"ok": False, "why": f"attempt {attempts} exited with {p.exitcode}", "kills": kills}
    out = json.loads((workdir / "result.json").read_text())
    first = CheckpointManager(workdir / "cp", store=cfg["store"], max_checkpoints=None)
    runs = {c["run_id"] for c in first.list_checkpoints()}
    execs = [tuple(map(int, line.split())) for line in
             (workdir / "executions.log").read_text().splitlines()]
    effects = Counter(int(line.split()[0]) for line in
                      (workdir / "effects.log").read_text().splitlines())
    orphans = len(list((workdir / "cp").glob(".*.tmp")))
    return {"ok": out["state"] == "finished" and runs == {out["run_id"]}, "out": out,
            "attempts": attempts, "kills": kills, "executions": len(execs),
            "reexecuted_done": sum(done for _, done in execs), "orphans": orphans,
            "effects_ok": effects == Counter(range(1, 7)), "why": ""}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    ctx = multiprocessing.get_context("fork")
    from agentlab.tokens import count_text_tokens
    count_text_tokens("warm up", "gpt-4o")  # children inherit the loaded encoding...
    sim.Simulator(_policy("serial")).llm().chat([{"role": "user", "content": "hi"}])  # ...and SDK
    rng = random.Random(args.seed)
    plans = [_plan(rng) for _ in range(args.runs)]
    root = Path(tempfile.mkdtemp(prefix="agentlab-soak-"))
    t0 = time.perf_counter()
    results = []
    try:
        base = soak_run(root, "baseline-serial", {"store": "json", "interval": 3, "shape": "serial",
                                                  "kills": []}, ctx)
        baseline = {"serial": base["out"]["tokens"]}
        par = soak_run(root, "baseline-parallel", {"store": "json", "interval": 3,
                                                   "shape": "parallel", "kills": []}, ctx)
        baseline["parallel"] = par["out"]["tokens"]
        with tqdm(total=len(plans), unit="run", desc="crash_soak", file=sys.stdout,
                  mininterval=0.5 if sys.stdout.isatty() else 10.0) as progress:
            for i, cfg in enumerate(plans):
                res = soak_run(root, f"run-{i:04d}", cfg, ctx)
                res["tokens_ok"] = res.get("out", {}).get("tokens") == baseline[cfg["shape"]]
                results.append(res)
                progress.set_postfix(kills=sum(sum(r["kills"].values()) for r in results),
                                     reexecuted=sum(r.get("reexecuted_done", 0) for r in results),
                                     refresh=False)
                progress.update()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    wall = time.perf_counter() - t0
    kills = sum((r["kills"] for r in results), Counter())
    finished = sum(r["ok"] for r in results)
    print()
    print(f"Crash soak: {len(results)} runs (seed {args.seed}), {wall:.1f} s")
    print(f"  runs finished with their first run_id   {finished}/{len(results)}")
    print(f"  processes started                       {sum(r.get('attempts', 0) for r in results)}"
          f" ({sum(kills.values())} killed)")
    print("  kills by point                          " + ", ".join(f"{k} {kills[k]}" for k in KINDS))
    print(f"  step executions                         {sum(r.get('executions', 0) for r in results)}"
          f" (6 per run + the steps running when a process died)")
    print(f"  completed steps re-executed             {sum(r.get('reexecuted_done', 0) for r in results)}")
    print(f"  runs with each side effect exactly once {sum(r.get('effects_ok', False) for r in results)}/{len(results)}")
    print(f"  runs with the uninterrupted token total {sum(r['tokens_ok'] for r in results)}/{len(results)}")
    orphans = sum(r.get("orphans", 0) for r in results)
    print(f"  temp files left by killed writers       {orphans}")
    bad = [(i, r["why"]) for i, r in enumerate(results) if not r["ok"]]
    for i, why in bad:
        print(f"  run {i}: NOT finished: {why} {plans[i]}")
    reexecuted = sum(r.get("reexecuted_done", 0) for r in results)
    ok = (not bad and all(r["effects_ok"] and r["tokens_ok"] for r in results)
          and reexecuted == 0 and orphans == 0)
    print(f"crash_soak: {finished}/{len(results)} finished, {reexecuted} completed steps "
          f"re-executed, {orphans} temp files left: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
