"""Chapter 14 — experiments: sweeps over configurations and seeds, with percentiles you can trust.

Taught in ``notebooks/14_experiments.ipynb``. One question ("is the adaptive timeout really
better than a fixed 30 s?") becomes a grid of settings x seeds x tasks; every cell is one run
on the simulator (or a real endpoint), executed by a process pool, journaled as it finishes
and summarised with intervals that cover what they claim:

- ``spec.py``: ``Experiment`` (grid, seeds, tasks; from a TOML file too) and ``Task``;
- ``scenarios.py``: what a cell runs (``tools``, ``research``, ``dag``), built from settings;
- ``workloads.py``: seeded latency tools keyed by call number, timeouts decided on the
  simulated clock (``SimulatedTimeouts``), random DAGs;
- ``cells.py``: ``Cell`` (picklable) and ``run_cell`` (what a worker runs);
- ``runner.py``: the pool, resume, the cost cap, progress, the fleet hook;
- ``store.py``: the journal, the manifest, the code identity and the machine's load;
  ``results.py``: ``Results`` (DataFrames, files), ``MEASURED``, ``LOAD_SENSITIVE``,
  ``comparison_metrics``;
- ``stats.py``: exact percentile intervals, t and Clopper-Pearson intervals, the one
  enough-samples rule (``min_samples``), paired differences, Holm;
- ``coverage.py``: how often those intervals hold the truth (``bench_coverage``);
- ``ratelimit.py``: ``TokenBucket``, ``RateLimiter``, ``LimitedLLM``; ``cost.py``/``pricing.py``:
  the cost estimate and prices;
- ``report.py``: the markdown report of ``agentlab report DIR``.
"""
from ..extras import require

require("experiments")  # one line with the pip command when the extra is missing
from .cells import Cell, get_scenario, run_cell
from .cost import CostEstimate, estimate_cost, worst_case_usd
from .ratelimit import LimitedLLM, RateLimiter, TokenBucket
from .results import LOAD_SENSITIVE, MEASURED, Results, comparison_metrics
from .rows import CellOutput
from .runner import (CellExecutor, InProcessCells, ProcessPoolCells, fleet_executor,
                     register_fleet, run)
from .scenarios import SCENARIOS, Scenario, register_scenario
from .spec import Experiment, Task
from .stats import (FewSamplesWarning, PairedDifference, min_samples, paired_difference,
                    percentile_interval, percentile_table)
from .workloads import WORKLOADS, KeyedTool, SimulatedTimeouts, random_dag

__all__ = ["Experiment", "Task", "Results", "MEASURED", "LOAD_SENSITIVE", "comparison_metrics",
           "Cell", "CellOutput", "run_cell",
           "get_scenario", "run", "CellExecutor", "InProcessCells", "ProcessPoolCells",
           "register_fleet", "fleet_executor", "SCENARIOS", "Scenario", "register_scenario",
           "FewSamplesWarning", "PairedDifference", "min_samples", "paired_difference",
           "percentile_interval", "percentile_table", "TokenBucket", "RateLimiter", "LimitedLLM",
           "CostEstimate", "estimate_cost", "worst_case_usd", "WORKLOADS", "KeyedTool",
           "SimulatedTimeouts", "random_dag"]
