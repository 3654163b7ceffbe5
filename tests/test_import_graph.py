"""The package's shape (issues #10, #19): no import cycles, no hidden imports inside functions in
the runtime, checkpoint and observability chapters, modules under the size limit, and a
chapter 06-07 runtime that imports no later chapter (09-14), directly or through another
module, at module level or inside a function: checked on the import graph, not on words.
Uses ``scripts/code_shape.py``."""
from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

from agentlab.runtime import AgentRuntime, turn

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("code_shape", ROOT / "scripts" / "code_shape.py")
shape = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shape)

#: The modules this rule is enforced on here (the seam's chapters and chapter 05).
SEAM = ("agentlab/runtime/", "agentlab/checkpoints/", "agentlab/observe/", "agentlab/state/",
        "agentlab/atomic.py")
#: The modules of chapters 09-14, which the runtime (chapters 06-07) must not reach.
LATER_CHAPTERS = ("agentlab.timeouts", "agentlab.dag", "agentlab.checkpoints", "agentlab.observe",
                  "agentlab.fleet", "agentlab.experiments", "agentlab.approval")


def later_chapter_paths(graph: dict[str, set[str]], start: str = "agentlab.runtime") -> list[list[str]]:
    """Import paths from a module of ``start`` to a module of chapters 09-14 (transitively)."""
    def later(module: str) -> bool:
        return any(module == c or module.startswith(c + ".") for c in LATER_CHAPTERS)
    found = []
    for source in sorted(m for m in graph if m == start or m.startswith(start + ".")):
        seen, todo = {source}, [[source]]
        while todo:
            path = todo.pop()
            for target in sorted(graph.get(path[-1], ())):
                if later(target):
                    found.append([*path, target])
                elif target not in seen:
                    seen.add(target)
                    todo.append([*path, target])
    return found


def test_the_package_has_no_import_cycles():
    assert shape.cycles(shape.import_graph(ROOT)) == []


def test_a_cycle_hidden_in_a_function_is_still_found(tmp_path):
    pkg = tmp_path / "agentlab"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import x  # hidden\n")
    assert shape.cycles(shape.import_graph(tmp_path)) == [["agentlab.a", "agentlab.b"]]
    assert [line for _, line, _ in shape.function_imports(tmp_path)] == [2]


def test_no_imports_inside_functions_in_the_seam_modules():
    hidden = [f for f in shape.function_imports(ROOT) if f[0].startswith(SEAM)]
    assert hidden == []


def test_seam_modules_are_under_the_size_limit():
    assert [m for m in shape.oversized(ROOT) if m[0].startswith(SEAM)] == []


def test_the_runtime_imports_no_later_chapter():
    assert later_chapter_paths(shape.import_graph(ROOT)) == []
    dynamic = re.compile(r"\bimportlib\b|__import__")  # an import the graph could not see
    assert [p.name for p in (ROOT / "agentlab" / "runtime").glob("*.py")
            if dynamic.search(p.read_text(encoding="utf-8"))] == []


def test_the_guard_finds_a_later_chapter_imported_through_a_lazy_import(tmp_path):
    pkg = tmp_path / "agentlab"
    (pkg / "runtime").mkdir(parents=True)
    for name in ("__init__.py", "runtime/__init__.py", "approval.py", "executor.py"):
        (pkg / name).write_text("")
    (pkg / "runtime" / "loop.py").write_text("from ..executor import run\n")
    assert later_chapter_paths(shape.import_graph(tmp_path)) == []
    (pkg / "executor.py").write_text("def run():\n    from .approval import Approval  # lazy\n")
    assert later_chapter_paths(shape.import_graph(tmp_path)) == [
        ["agentlab.runtime.loop", "agentlab.executor", "agentlab.approval"]]


def test_the_loop_and_its_turn_read_in_one_sitting():
    lines = lambda *fns: sum(len(inspect.getsource(f).splitlines()) for f in fns)  # noqa: E731
    assert lines(AgentRuntime._loop, turn.call_model, turn.stream_reply, turn.run_tools) <= 120
    assert lines(turn.gate_tools, AgentRuntime._ask_gates_before_model) <= 25  # the gates' seam


def test_no_module_reaches_into_the_runtimes_private_run_state():
    pattern = re.compile(r"\._durable\b|\._run\.(t0|deadline)|\brt\._[a-z]|\bruntime\._[a-z]")
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "agentlab").rglob("*.py")
                 if not str(p).startswith(str(ROOT / "agentlab" / "runtime"))
                 and pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
