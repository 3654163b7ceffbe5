"""An experiment: a grid of settings x seeds x tasks, as a Python object or a TOML file.

Taught in ``notebooks/14_experiments.ipynb``::

    exp = Experiment(grid={"timeouts": ["fixed", "adaptive"]}, seeds=10, tasks=["tools"],
                     settings={"time_scale": 0.005})
    results = exp.run(workers=2, out="sweeps/timeouts")

is the same experiment as this ``timeouts.toml`` (``Experiment.from_toml("timeouts.toml")``)::

    name = "timeouts"
    seeds = 10                        # or a list: [0, 1, 2]
    tasks = ["tools"]                 # or [[tasks]] tables: name, scenario, prompt
    [settings]                        # the same for every cell
    time_scale = 0.005
    [grid]                            # every combination of these is one configuration
    timeouts = ["fixed", "adaptive"]
    [run]                             # how to run it (not part of what is measured)
    workers = 2
    cost_cap_usd = 1.0
    [[compare]]                       # the primary comparisons of `agentlab report`
    metric = "wasted_s"
    a = "timeouts=fixed"
    b = "timeouts=adaptive"

``[[compare]]`` is the pre-registration: the comparisons chosen before the data are seen,
which the report labels *primary*; without it the report's default comparisons are labelled
*exploratory* (see ``agentlab.experiments.report``).

A cell's settings are its scenario's defaults (``SCENARIOS[name].defaults``), then
``settings``, then its grid point. A setting no task's scenario knows is refused (typos cost
whole sweeps), and so is a value of the wrong type.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

from ..errors import ConfigError
from .cells import Cell, cell_id, get_scenario
from .cost import CostEstimate, estimate_cost, worst_case_usd
from .runner import run

__all__ = ["Task", "Experiment", "RUN_OPTIONS"]

#: Keys of the ``[run]`` table: how a sweep runs, never what it measures.
RUN_OPTIONS = ("workers", "cost_cap_usd", "requests_per_minute", "tokens_per_minute", "out",
               "fleet")
_TOP = {"name", "seeds", "tasks", "settings", "grid", "run", "compare"}


@dataclass(frozen=True)
class Task:
    """What the agent is asked to do: a ``scenario`` and its ``prompt`` ("" = the default)."""

    name: str
    scenario: str = "tools"
    prompt: str = ""

    @classmethod
    def coerce(cls, item: Any) -> "Task":
        """A ``Task`` from a Task, a dict, or a scenario name (``"research"``)."""
        if isinstance(item, Task):
            return item
        if isinstance(item, str):
            get_scenario(item)  # fails early with the list of scenarios
            return cls(item, item)
        if isinstance(item, dict):
            unknown = set(item) - {"name", "scenario", "prompt"}
            if unknown or "name" not in item:
                raise ConfigError("invalid_spec", f"a task is {{name, scenario, prompt}}, got "
                                  f"{item!r}")
            return cls(str(item["name"]), str(item.get("scenario", "tools")),
                       str(item.get("prompt", "")))
        raise ConfigError("invalid_spec", f"a task is a scenario name, a dict or a Task, "
                          f"not {item!r}")


def _label(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _type_ok(default: Any, value: Any) -> bool:
    if default is None or value is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and (isinstance(default, float)
                                                    or isinstance(value, int))
    return isinstance(value, type(default))


class Experiment:
    """A sweep: every grid configuration x task x seed is one cell (one run).

    Args:
        grid: ``{setting: [values]}``; the configurations are every combination, in order.
        seeds: an int n (seeds 0..n-1) or a list of ints.
        tasks: scenario names, ``Task``s or dicts (``{"name", "scenario", "prompt"}``).
        settings: settings shared by every cell.
        name: used in manifests, progress bars and reports.
        compare: ``[{"metric", "a", "b"}]`` the primary (pre-registered) paired comparisons
            the report shows; optional ``"stat": "median"``.
        run_options: defaults for ``run()`` (the TOML ``[run]`` table).
    """

    def __init__(self, grid: dict[str, Any] | None = None, seeds: int | Iterable[int] = 5,
                 tasks: Iterable[Any] = ("tools",), *, settings: dict[str, Any] | None = None,
                 name: str = "experiment", compare: list[dict] | None = None,
                 run_options: dict[str, Any] | None = None) -> None:
        self.name = str(name)
        self.grid = {str(k): list(v) if isinstance(v, (list, tuple)) else [v]
                     for k, v in (grid or {}).items()}
        if isinstance(seeds, bool) or not isinstance(seeds, (int, list, tuple, range)):
            raise ConfigError("invalid_spec", f"seeds is an int or a list of ints, not {seeds!r}")
        self.seeds = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
        self.tasks = [Task.coerce(t) for t in (tasks if not isinstance(tasks, str) else [tasks])]
        self.settings = dict(settings or {})
        self.compare = [dict(c) for c in (compare or [])]
        self.run_options = dict(run_options or {})
        self._check()

    def _check(self) -> None:
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ConfigError("invalid_spec", f"seeds must be non-empty and distinct: {self.seeds}")
        if not self.tasks or len({t.name for t in self.tasks}) != len(self.tasks):
            raise ConfigError("invalid_spec", "tasks must be non-empty with distinct names")
        empty = [k for k, v in self.grid.items() if not v]
        if empty:
            raise ConfigError("invalid_spec", f"grid setting(s) {empty} have no values")
        defaults: dict[str, Any] = {}
        for task in self.tasks:
            defaults.update(get_scenario(task.scenario).defaults)
        for source, values in (("settings", {k: [v] for k, v in self.settings.items()}),
                               ("grid", self.grid)):
            for key, vals in values.items():
                if key not in defaults:
                    raise ConfigError("invalid_spec", f"unknown {source} key {key!r}; the "
                                      f"scenarios of this experiment read: "
                                      f"{', '.join(sorted(defaults))}")
                bad = [v for v in vals if not _type_ok(defaults[key], v)]
                if bad:
                    raise ConfigError("invalid_spec", f"{source} {key!r}: {bad[0]!r} is not a "
                                      f"{type(defaults[key]).__name__} like its default "
                                      f"{defaults[key]!r}")
        unknown = set(self.run_options) - set(RUN_OPTIONS)
        if unknown:
            raise ConfigError("invalid_spec", f"unknown [run] option(s) {sorted(unknown)}; use "
                              f"{', '.join(RUN_OPTIONS)}")
        for c in self.compare:
            if set(c) - {"metric", "a", "b", "stat"} or not {"metric", "a", "b"} <= set(c):
                raise ConfigError("invalid_spec", f"a comparison is {{metric, a, b}}, got {c!r}")

    # -- the plan -----------------------------------------------------------------------------
    @property
    def configs(self) -> list[tuple[str, dict]]:
        """``[(label, grid values)]`` for every grid point, e.g. ``("timeouts=fixed", {...})``."""
        keys = list(self.grid)
        out = []
        for combo in itertools.product(*(self.grid[k] for k in keys)):
            point = dict(zip(keys, combo))
            out.append((", ".join(f"{k}={_label(v)}" for k, v in point.items()) or "default",
                        point))
        return out

    def settings_for(self, task: Task, point: dict) -> dict:
        """The resolved settings of one cell: defaults, then ``settings``, then ``point``."""
        defaults = get_scenario(task.scenario).defaults
        merged = {**defaults, **self.settings, **point}
        return {k: merged[k] for k in defaults}

    def cells(self, *, cost_cap_usd: float | None = None, limits: dict | None = None) -> list[Cell]:
        """Every cell, in order: configuration, then task, then seed.

        With a cost cap, each cell gets its worst case as its own budget (``budget_usd``).
        """
        out = []
        for label, point in self.configs:
            for task in self.tasks:
                settings = self.settings_for(task, point)
                uses_llm = get_scenario(task.scenario).uses_llm
                for seed in self.seeds:
                    tdict = asdict(task)
                    budget = (worst_case_usd(settings, uses_llm) if cost_cap_usd is not None
                              else None)
                    out.append(Cell(cell_id(settings, seed, tdict), len(out), label, point, tdict,
                                    seed, settings, budget, dict(limits or {})))
        return out

    @property
    def spec_hash(self) -> str:
        """A hash of what the experiment measures (not its name or run options)."""
        text = json.dumps({k: v for k, v in self.to_dict().items()
                           if k in ("seeds", "tasks", "settings", "grid")}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def estimate_cost(self, records: dict | None = None,
                      cost_cap_usd: float | None = None) -> CostEstimate:
        """Worst-case cost of the cells not yet in ``records`` (``agentlab.experiments.cost``)."""
        uses = {t.scenario: get_scenario(t.scenario).uses_llm for t in self.tasks}
        return estimate_cost(self.cells(), uses, records, cost_cap_usd)

    def plan(self, records: dict | None = None, cost_cap_usd: float | None = None) -> str:
        """What ``run()`` would do, as text (``agentlab sweep --dry-run``)."""
        records = records or {}
        cells = self.cells()
        done = sum(c.cell_id in records for c in cells)
        lines = [f"experiment {self.name!r}: {len(self.configs)} configuration(s) x "
                 f"{len(self.tasks)} task(s) x {len(self.seeds)} seed(s) = {len(cells)} cells"
                 + (f" ({done} already finished)" if done else "")]
        for label, _ in self.configs:
            lines.append(f"  config {label}")
        for t in self.tasks:
            lines.append(f"  task {t.name} (scenario {t.scenario})")
        seeds = self.seeds if len(self.seeds) <= 8 else [*self.seeds[:3], "...", self.seeds[-1]]
        lines.append(f"  seeds {', '.join(map(str, seeds))}")
        return "\n".join(lines + self.estimate_cost(records, cost_cap_usd).lines())

    def run(self, workers: int | None = None, fleet: Any = False, **options: Any) -> Any:
        """Run every cell and return ``Results`` (see ``agentlab.experiments.runner.run``)."""
        return run(self, workers=workers, fleet=fleet, **options)

    # -- as data ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "seeds": list(self.seeds),
                "tasks": [asdict(t) for t in self.tasks], "settings": dict(self.settings),
                "grid": {k: list(v) for k, v in self.grid.items()},
                "compare": [dict(c) for c in self.compare], "run": dict(self.run_options)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Experiment":
        unknown = set(data) - _TOP
        if unknown:
            raise ConfigError("invalid_spec", f"unknown top-level key(s) {sorted(unknown)}; a "
                              f"spec has {', '.join(sorted(_TOP))}")
        return cls(data.get("grid"), data.get("seeds", 5), data.get("tasks", ["tools"]),
                   settings=data.get("settings"), name=data.get("name", "experiment"),
                   compare=data.get("compare"), run_options=data.get("run"))

    @classmethod
    def from_toml(cls, source: str | Path) -> "Experiment":
        """Read a spec from a ``.toml`` path, or from TOML text."""
        text = source
        if isinstance(source, Path) or (isinstance(source, str) and source.endswith(".toml")
                                        and "\n" not in source):
            path = Path(source)
            if not path.exists():
                raise ConfigError("invalid_spec", f"no spec file {path}")
            text = path.read_text(encoding="utf-8")
        try:
            data = tomllib.loads(str(text))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError("invalid_spec", f"the spec is not valid TOML: {exc}") from None
        return cls.from_dict(data)

    def __repr__(self) -> str:
        return (f"Experiment({self.name!r}, {len(self.configs)} configs x {len(self.tasks)} "
                f"tasks x {len(self.seeds)} seeds)")
