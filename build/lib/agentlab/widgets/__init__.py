"""ipywidgets controls for the notebooks. Every function returns an ipywidgets object.

One submodule per chapter, re-exported here (``from agentlab import widgets``).
"""
# Chapter widget modules are appended below.
from .llm import *  # noqa: F401,F403
from .tools import *  # noqa: F401,F403
from .messages import *  # noqa: F401,F403
from .runtime import *  # noqa: F401,F403
