"""ipywidgets controls for the notebooks: one widget per chapter, each built in a ``Panel``.

Every widget function returns a ``Panel`` (an ``ipywidgets.VBox``) whose display bundle also
carries a PNG snapshot of what it shows and a one-line hint, so a notebook opened without a
kernel (untrusted, on GitHub, in nbconvert) shows a picture instead of ``VBox(children=...``.
Next to each widget is the plain function it runs, for deterministic prints in notebooks.

=====  ==========================  ==================================================
 ch.   widget                      what it runs
=====  ==========================  ==================================================
00/06  ``run_panel()``             ``run_with_settings()``, ``summarize_result()``
01     ``retry_explorer()``        ``run_fault_plan()``, ``format_attempts()``
02     ``schema_explorer()``       ``explain_arguments()``
03     ``hung_batch_explorer()``   ``run_hung_batch()``, ``format_hung_batch()``
04     ``budget_explorer()``       ``survivors()``, ``format_survivors()``
05     ``crash_explorer()``        ``crash_write()``, ``format_crash_writes()``
07     ``stream_viewer()``         ``stream_run()``, ``format_stream_run()``
08     ``research_explorer()``     ``ask_researcher()``, ``format_research()``
09     ``multiplier_explorer()``   ``explain_multiplier()``, ``default_traces()``
10     ``dag_editor()``            ``plan_dag()``, ``format_plan()``
11     ``kill_point_explorer()``   ``kill_and_resume()``, ``format_kill_and_resume()``
12     ``latency_explorer()``      ``observe_runs()``, ``tool_percentiles()``, ``cost_per_turn()``
14     ``sweep_explorer()``        ``small_sweep()``
16     ``timeline_explorer()``     ``revision_view()``, ``fork_beside()``
=====  ==========================  ==================================================

``from agentlab import widgets`` imports ipywidgets (and the chapters' modules); ``import
agentlab`` does not.
"""
from ..extras import require

require("notebooks", "agentlab.widgets (the notebooks' widgets)")  # else: the pip command
from .panel import *  # noqa: F401,F403
from .llm import *  # noqa: F401,F403
from .tools import *  # noqa: F401,F403
from .executor import *  # noqa: F401,F403
from .messages import *  # noqa: F401,F403
from .state import *  # noqa: F401,F403
from .runtime import *  # noqa: F401,F403
from .streaming import *  # noqa: F401,F403
from .research import *  # noqa: F401,F403
from .timeouts import *  # noqa: F401,F403
from .dag import *  # noqa: F401,F403
from .checkpoints import *  # noqa: F401,F403
from .observe import *  # noqa: F401,F403
from .experiments import *  # noqa: F401,F403
from .timetravel import *  # noqa: F401,F403


from . import (  # noqa: E402  (the submodules, to collect their __all__)
    panel, llm, tools, executor, messages, state, runtime, streaming, research, timeouts,
    dag, checkpoints, observe, experiments, timetravel
)

__all__ = [name for module in (
    panel, llm, tools, executor, messages, state, runtime, streaming, research, timeouts,
    dag, checkpoints, observe, experiments, timetravel
) for name in module.__all__]
