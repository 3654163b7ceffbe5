"""``python -m agentlab.cli``: the same as the ``agentlab`` command."""
from . import entry

entry()
