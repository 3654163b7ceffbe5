"""Is a runtime compatible with a saved run? Task, capability snapshot and policy (chapter 16).

Book chapter on runtimes, 1.4: before resuming or replaying, compare the task version, the
capability (tool) snapshot and the policy. ``notebooks/16_time_travel.ipynb`` shows it.

- ``CapabilitySnapshot()`` is an extension (``AgentRuntime(..., extensions=[CapabilitySnapshot()],
  checkpoints=cm)``): at the start of every run it puts ``snapshot(runtime)`` in the run's
  extension state, which chapter 11's checkpoints save with every revision
  (``metadata["extensions"]["capabilities"]``). It writes nothing itself.
- ``snapshot(runtime)``: each tool's schema digest and version (the function's ``__version__``
  when it has one, else a digest of its source), and the policy: model, ``RuntimeConfig``,
  which tools have side effects and which need approval.
- ``differences(saved, current, task_ok)`` names every difference in words;
  ``check_compatible`` raises ``IncompatibleRunError`` listing them unless the categories that
  differ are explicitly allowed (``allow=("tools",)``, ``("policy",)``, ``("task",)``).

A revision saved without a snapshot (the extension was not attached) is compared on what every
checkpoint holds: tool names and the model; the message says so.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
from typing import Any, Iterable

from ..checkpoints.document import Checkpoint
from ..checkpoints.resume_checks import task_digest
from ..errors import CheckpointError

__all__ = ["CapabilitySnapshot", "IncompatibleRunError", "snapshot", "differences", "tool_version",
           "check_compatible", "saved_snapshot", "CATEGORIES"]

#: What ``allow=`` may name.
CATEGORIES = ("task", "tools", "policy")


class IncompatibleRunError(CheckpointError):
    """A revision does not fit the runtime asked to continue or replay it.

    ``details["differences"]`` lists ``{"category", "what", "saved", "now"}`` records."""


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def tool_version(fn: Any) -> str:
    """A tool's version: its ``__version__`` when it declares one, else a digest of its source."""
    declared = getattr(fn, "__version__", None)
    if declared is not None:
        return str(declared)
    try:
        return "src:" + hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:12]
    except (OSError, TypeError):  # a builtin or a function without source
        return "name:" + getattr(fn, "__qualname__", type(fn).__name__)


def snapshot(runtime: Any) -> dict:
    """The runtime's capabilities and policy, as JSON (see the module doc)."""
    reg = runtime.registry
    tools, effects, approval = {}, [], []
    for name in reg.list_tools():
        tools[name] = {"schema": _digest(reg.get_schema(name)),
                       "version": tool_version(reg.get_function(name))}
        if reg.get_options(name).get("side_effects"):
            effects.append(name)
        if reg.requires_approval(name, {}):
            approval.append(name)
    config = {k: v for k, v in dataclasses.asdict(runtime.config).items()}
    policy = {"model": getattr(runtime.llm, "model", None), "config": config,
              "side_effects": effects, "requires_approval": approval}
    return {"tools": tools, "policy": policy}


class CapabilitySnapshot:
    """Extension: each run's checkpoints carry the runtime's ``snapshot`` (see the module doc)."""

    name = "capabilities"

    def attach(self, runtime: Any) -> "CapabilitySnapshot":
        self.runtime = runtime
        runtime.on("run_start", self._run_start)
        return self

    def _run_start(self, event: dict) -> None:
        # the extension's own state, saved and restored by chapter 11 (RunContext.extensions)
        self.runtime.context.extensions[self.name] = snapshot(self.runtime)


def saved_snapshot(cp: Checkpoint) -> dict:
    """What ``cp`` recorded: the full snapshot, or only tool names and model when it has none."""
    found = (cp.metadata.get("extensions") or {}).get(CapabilitySnapshot.name)
    if found:
        return found
    return {"tools": {n: None for n in cp.metadata.get("tools") or []},
            "policy": {"model": cp.metadata.get("model")}, "partial": True}


def _policy_with(saved: dict, overrides: dict) -> dict:
    policy = json.loads(json.dumps(saved.get("policy") or {}))
    if "model" in overrides:
        policy["model"] = overrides["model"]
    if overrides.get("config") and "config" in policy:
        policy["config"].update(overrides["config"])
    return policy


def differences(saved: dict, current: dict, *, task_ok: bool = True,
                overrides: dict | None = None) -> list[dict]:
    """Every way ``current`` differs from ``saved`` (with a fork's ``overrides`` applied)."""
    out = []
    if not task_ok:
        out.append({"category": "task", "what": "task digest", "saved": "other", "now": "this"})
    old, new = saved.get("tools") or {}, current.get("tools") or {}
    for name in sorted(set(old) | set(new)):
        if name not in new:
            out.append({"category": "tools", "what": f"tool {name}", "saved": "registered",
                        "now": "missing"})
        elif name not in old:
            out.append({"category": "tools", "what": f"tool {name}", "saved": "absent",
                        "now": "registered"})
        elif old[name] is not None:
            for key in ("schema", "version"):
                if old[name].get(key) != new[name].get(key):
                    out.append({"category": "tools", "what": f"tool {name} {key}",
                                "saved": old[name].get(key), "now": new[name].get(key)})
    policy, now = _policy_with(saved, overrides or {}), current.get("policy") or {}
    for key in sorted(policy):
        if key == "config":
            for field, value in sorted(policy["config"].items()):
                if now.get("config", {}).get(field) != value:
                    out.append({"category": "policy", "what": f"config.{field}", "saved": value,
                                "now": now.get("config", {}).get(field)})
        elif policy[key] != now.get(key):
            out.append({"category": "policy", "what": key, "saved": policy[key], "now": now.get(key)})
    return out


def check_compatible(cp: Checkpoint, runtime: Any, task: str | None = None, *,
                     allow: Iterable[str] = (), overrides: dict | None = None) -> list[dict]:
    """Raise ``IncompatibleRunError`` naming each difference the ``allow`` list does not cover.

    Returns the allowed differences (empty when everything matches)."""
    allow = set(allow)
    if allow - set(CATEGORIES):
        raise CheckpointError("invalid_argument", f"allow= names {sorted(allow - set(CATEGORIES))}; "
                              f"it takes {', '.join(CATEGORIES)}")
    saved = saved_snapshot(cp)
    digest = cp.metadata.get("task_sha256")
    task_ok = task is None or digest is None or digest == task_digest(task)
    found = differences(saved, snapshot(runtime), task_ok=task_ok, overrides=overrides)
    refused = [d for d in found if d["category"] not in allow]
    if refused:
        where = f"run {cp.run_id} revision {cp.revision}"
        listed = "; ".join(f"{d['what']}: {d['saved']} -> {d['now']}" for d in refused)
        partial = " (the revision has no capability snapshot: only tool names and model " \
                  "were compared)" if saved.get("partial") else ""
        raise IncompatibleRunError(
            "checkpoint_incompatible", f"{where} does not fit this runtime: {listed}{partial}. "
            f"Fix the runtime, or pass allow={tuple(sorted({d['category'] for d in refused}))} "
            "to go on anyway", details={"run_id": cp.run_id, "revision": cp.revision,
                                        "differences": refused})
    return found
