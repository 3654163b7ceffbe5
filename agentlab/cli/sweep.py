"""``agentlab sweep SPEC.toml``: run an experiment (chapter 14) and save its tables.

    agentlab sweep data/sweeps/timeouts.toml --workers 2 --out sweeps/timeouts
    agentlab sweep SPEC.toml --dry-run        # the plan and the cost estimate, nothing runs

Cells already finished in the output directory are not run again (an interrupted sweep
resumes); cells that raised run again (``--no-retry-errors`` keeps their errors). Finished
cells made by other code (another agentlab version, git commit, uncommitted changes or
scenario source) are refused unless ``--force``. The output directory is ``--out``, else the
spec's ``[run] out``, else ``sweeps/<name>`` (relative to the current directory).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import AgentError
from ..experiments import Experiment, get_scenario
from ..experiments.store import SweepStore, check_identity, code_identity

__all__ = ["add_parser", "output_dir"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run an experiment spec: a grid of settings x seeds x tasks")
    p.add_argument("spec", help="the experiment, a TOML file (see data/sweeps/)")
    p.add_argument("--workers", type=int, default=None,
                   help="processes in the pool (default: [run] workers, else the CPU count; "
                        "1 runs in this process)")
    p.add_argument("--fleet", action="store_true", help="run the cells on the chapter 13 "
                   "Celery fleet (needs AGENTLAB_REDIS_URL)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and the cost "
                   "estimate; run nothing")
    p.add_argument("--out", default=None, help="output directory (journal, Parquet, CSV, "
                   "manifest)")
    p.add_argument("--cost-cap", type=float, default=None, dest="cost_cap_usd",
                   help="hard cap on the sweep's spend in USD")
    p.add_argument("--force", action="store_true", help="reuse an output directory that "
                   "holds another experiment, or cells made by other code")
    p.add_argument("--retry-errors", action=argparse.BooleanOptionalAction, default=True,
                   help="run the cells that raised on an earlier run again (default: yes)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def output_dir(exp: Experiment, out: str | None) -> Path:
    """Where a sweep of ``exp`` writes: ``out``, else ``[run] out``, else ``sweeps/<name>``."""
    return Path(out or exp.run_options.get("out") or Path("sweeps") / exp.name)


def run(args: argparse.Namespace) -> int:
    try:
        exp = Experiment.from_toml(Path(args.spec))
        out = output_dir(exp, args.out)
        cap = args.cost_cap_usd if args.cost_cap_usd is not None else exp.run_options.get(
            "cost_cap_usd")
        if args.dry_run:
            store = SweepStore(out)
            store.check_compatible(exp.spec_hash, args.force)
            records = {k: r for k, r in store.records().items()
                       if not (args.retry_errors and r.get("status") == "error")}
            check_identity(records, code_identity(
                {t.scenario: get_scenario(t.scenario) for t in exp.tasks}), args.force, out)
            print(exp.plan(records, cap))
            if all(c.settings.get("endpoint", "sim") == "sim" for c in exp.cells()):
                # The simulator counts tokens like the API, so the dollars are list prices;
                # say that nothing is charged here, or "$60" reads like a bill.
                print("  on the simulator: that is what a real provider would charge for "
                      "these tokens; the simulator itself costs $0")
            print(f"output: {out}")
            return 0
        results = exp.run(workers=args.workers, fleet=args.fleet, out=out,
                          progress=not args.no_progress, force=args.force, cost_cap_usd=cap,
                          retry_errors=args.retry_errors)
    except AgentError as exc:
        print(f"agentlab sweep: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        done = len(SweepStore(out).records())
        print(f"\nagentlab sweep: interrupted; {done} finished cell(s) are in {out}. Run the "
              "same command again to resume.", file=sys.stderr)
        return 130
    m = results.manifest
    session = (m.get("sessions") or [{}])[-1]
    on_sim = all(t["settings"].get("endpoint", "sim") == "sim" for t in m["tasks"])
    print(f"{m['name']}: {m['cells']} cells, {session.get('ran')} ran, {session.get('reused')} "
          f"reused, status {m['counts']}; {m.get('runs_per_s')} runs/s; tokens worth "
          f"${m['cost']['spent_usd']:.4f} at list prices"
          + (" (simulator: nothing charged)" if on_sim else ""))
    print(f"tables in {out} (runs.parquet, tool_calls.parquet, CSV, manifest.json); "
          f"next: agentlab report {out}")
    return 1 if m["counts"].get("error") else 0
