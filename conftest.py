"""Repo-wide pytest setup: tests and notebooks run offline on the simulator.

A real key in the environment would send notebooks (run by nbval in kernels that inherit this
process's environment) to a real endpoint. Tests must be reproducible and free, so the key is
removed unless AGENTLAB_LIVE_TESTS=1 asks for live cells.
"""
import os

if os.environ.get("AGENTLAB_LIVE_TESTS") != "1":
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENTLAB_MODEL"):
        os.environ.pop(var, None)
