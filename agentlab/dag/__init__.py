"""Chapter 10 — dependency-aware tool execution: a DAG of calls run at the pace of its critical path.

Taught in ``notebooks/10_dag_execution.ipynb`` (article section 8).

``DependencyGraph`` holds "call X depends on calls Y, Z". ``topological_sort`` returns levels
with dependencies first (Kahn's algorithm: a node joins a level when its last dependency is
placed), ``detect_cycles`` returns a cycle's path (``["a", "b", "a"]``: a waits for b waits
for a) and a dependency on an id that is not in the graph is an ``unknown_dependency`` error.

``DependencyAwareExecutor`` runs a batch of ``ToolCall``s with a **ready queue**: a call is
started the moment its own dependencies have finished, on a bounded pool; the scheduler thread
blocks on "some call finished" (no spin-waiting), and a call only ever occupies a worker while
it runs (so any ``max_workers``, including 1, makes progress). Level-by-level execution, where
a whole level waits for its slowest member, is kept as ``strategy="levels"`` for comparison.
Among ready calls the one with the longest chain of work still behind it goes first
(``priority="critical_path"``, estimated from the timeout manager's p50 when it has one).

Every call goes through ``agentlab.executor.ToolExecutor.execute([call])``, so the timeout
learned by the ``AdaptiveTimeoutManager`` is enforced and every outcome is fed back to it.
A call whose dependency failed or timed out is not run: it gets ``error_code="dependency_failed"``
with a message naming that dependency, and so do its own dependents (transitively).

Dependency outputs reach a tool only through a parameter it declares: when the tool function
has a parameter named ``dependency_results`` (configurable), a dependent's arguments get
``{dependency_call_id: result_text}`` there. Nothing is kept between batches except
``last_schedule`` (start/end of every call of the last batch, for Gantt charts).

Three files: ``graph.py`` (``DependencyGraph``, ``critical_path``), ``schedule.py`` (the ready
queue shared by the executor and ``simulate_schedule``) and ``executor.py``
(``DependencyAwareExecutor``).
"""
from .executor import DependencyAwareExecutor
from .graph import DependencyGraph, critical_path
from .schedule import Schedule, ScheduledCall, simulate_schedule

__all__ = ["DependencyGraph", "DependencyAwareExecutor", "ScheduledCall", "Schedule",
           "critical_path", "simulate_schedule"]
