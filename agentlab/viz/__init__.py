"""Plots for the notebooks. Every function returns a matplotlib ``Figure``.

One submodule per chapter; everything public is re-exported here, so notebooks write
``from agentlab import viz; viz.plot_trace(...)``. matplotlib is imported by the submodules,
never at ``import agentlab``.
"""
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
