"""The modules one tool call crosses, from the model's reply to its result appended and checkpointed.

    python scripts/tool_path.py [--frames]

Runs one checkpointed run on the simulator (one tool call, then an answer) under
``sys.settrace`` (all threads) and prints the agentlab call stack at four moments of the call's
path: the executor starting the tool (``ToolExecutor._start``), the result written to the
durable tool log (the JSON backend's ``record_tool_result``), the result appended to the
history (``MessageManager.extend``) and the checkpoint written at the end of the turn (the JSON
backend's ``write``). It prints, for each, the frames and the module-to-module hops, then the
distinct modules on those paths (issue #19 asks for at most ~10). Utilities those steps call
below the stacks printed (token counting, redaction, atomic writes) are not on the path.
"""
from __future__ import annotations

import sys
import tempfile
import threading

from agentlab import sim
from agentlab.checkpoints import CheckpointManager
from agentlab.runtime import AgentRuntime
from agentlab.tools import ToolRegistry

MOMENTS = {("agentlab.executor.executor", "_start"),
           ("agentlab.checkpoints.json_backend", "record_tool_result"),
           ("agentlab.messages.manager", "extend")}
CHECKPOINT = ("agentlab.checkpoints.json_backend", "write")


def trace() -> dict[tuple[str, str], list[str]]:
    reg = ToolRegistry()
    reg.register(lambda key: f"value {key}", name="lookup", description="Look a key up.")
    llm = sim.Simulator(sim.Script([sim.call("lookup", {"key": "a"}), sim.text("done")])).llm()
    rt = AgentRuntime(llm, reg, checkpoints=CheckpointManager(tempfile.mkdtemp(),
                                                              auto_save_interval=1))
    stacks: dict[tuple[str, str], list[str]] = {}
    tool_ran = threading.Event()

    def tracer(frame, event, arg):
        key = (frame.f_globals.get("__name__", ""), frame.f_code.co_name)
        if event != "call" or key in stacks:
            return None
        if key in MOMENTS or (key == CHECKPOINT and tool_ran.is_set()):
            chain, f = [], frame
            while f is not None:
                module = f.f_globals.get("__name__", "")
                if module.startswith("agentlab"):
                    chain.append(f"{module}:{f.f_code.co_name}")
                f = f.f_back
            stacks[key] = chain[::-1]
        return None

    rt.on("tool_end", lambda e: tool_ran.set())  # the next checkpoint is the turn's
    threading.settrace(tracer)
    sys.settrace(tracer)
    try:
        rt.run("look it up")
    finally:
        sys.settrace(None)
        threading.settrace(None)
    return stacks


def main(argv: list[str] | None = None) -> int:
    frames = "--frames" in (argv if argv is not None else sys.argv[1:])
    modules: list[str] = []
    for (module, fn), chain in trace().items():
        path = [c.split(":")[0] for c in chain]
        hops = sum(a != b for a, b in zip(path, path[1:]))
        print(f"{module}.{fn}: {len(chain)} frames, {hops} module hops")
        for entry in chain if frames else ():
            print("   ", entry)
        modules += [m for m in dict.fromkeys(path) if m not in modules]
    print(f"{len(modules)} modules on the path:",
          ", ".join(m.removeprefix("agentlab.") for m in modules))
    return 0


if __name__ == "__main__":
    sys.exit(main())
