"""Chapter 16 — time travel: a run's revisions, forks with one change, read-only replay, and
counterfactual sweeps. Taught in ``notebooks/16_time_travel.ipynb``.

Built on chapter 11's checkpoints (every checkpoint is a revision of a run) through the public
``CheckpointManager`` only, so every store works (JSON, SQLite, the fleet's Redis):

- ``history.py``: list a run's revisions, load one read-only;
- ``edits.py``: the change a fork applies (a message, a tool result, the model, the config);
- ``fork.py``: a new run from any revision, with its parent and task recorded;
- ``compat.py``: is a runtime compatible with a saved run (task, tools, policy)?
- ``replay.py``: run a run again read-only: logged results answer, side effects need approval;
- ``sweep.py``: fork many runs at one revision with each setting of a grid; paired statistics.
"""
from .compat import (CapabilitySnapshot, IncompatibleRunError, check_compatible, differences,
                     snapshot)
from .edits import (AppendMessage, Edit, EditMessage, ReplaceToolResult, SetConfig, SetModel,
                    apply_edits)
from .fork import Fork, continue_fork, fork, lineage
from .history import Revision, format_history, history, load_revision
from .replay import REEXECUTION_REQUIRED, ReplayOutcome, replay
from .sweep import SweepResult, counterfactual_sweep

__all__ = [
    "Revision", "history", "load_revision", "format_history",
    "Edit", "EditMessage", "AppendMessage", "ReplaceToolResult", "SetModel", "SetConfig",
    "apply_edits", "Fork", "fork", "continue_fork", "lineage",
    "CapabilitySnapshot", "IncompatibleRunError", "snapshot", "differences", "check_compatible",
    "replay", "ReplayOutcome", "REEXECUTION_REQUIRED", "counterfactual_sweep", "SweepResult",
]
