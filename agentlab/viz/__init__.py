"""Plots for the notebooks. Every function returns a matplotlib ``Figure``.

One submodule per chapter; everything public is re-exported here, so notebooks write
``from agentlab import viz; viz.plot_trace(...)``. matplotlib is imported by the submodules
when a plot is drawn, never at ``import agentlab``. Every call state (ok, failed, timed out,
abandoned, not run, replayed) has one colour and one legend word, defined once in
``agentlab.viz.states`` and used by every plot and widget.
"""
from ..extras import require

require("notebooks", "agentlab.viz (the notebooks' plots)")  # else one line: the pip command
# Chapter plot modules are appended below.
from .llm import *  # noqa: F401,F403
from .timeouts import *  # noqa: F401,F403
from .dag import *  # noqa: F401,F403
from .executor import *  # noqa: F401,F403
from .messages import *  # noqa: F401,F403
from .observe import *  # noqa: F401,F403
from .runtime import *  # noqa: F401,F403
from .checkpoints import *  # noqa: F401,F403
from .experiments import *  # noqa: F401,F403
from .state import *  # noqa: F401,F403
from .states import *  # noqa: F401,F403
from .timetravel import *  # noqa: F401,F403


from . import (  # noqa: E402  (the submodules, to collect their __all__)
    llm, timeouts, dag, executor, messages, observe, runtime, checkpoints, state, states,
    experiments, timetravel,
)

__all__ = [name for module in (
    llm, timeouts, dag, executor, messages, observe, runtime, checkpoints, state, states,
    experiments, timetravel,
) for name in module.__all__]
