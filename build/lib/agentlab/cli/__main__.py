"""``python -m agentlab.cli``: the same as the ``agentlab`` command."""
import sys

from . import main

sys.exit(main())
