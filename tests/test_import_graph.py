"""The package's shape (issue #10): no import cycles, no hidden imports inside functions in the
runtime, checkpoint and observability chapters, modules under the size limit, and a chapter-06
loop that knows nothing of checkpoints or observers. Uses ``scripts/code_shape.py``."""
from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

from agentlab.runtime import AgentRuntime
from agentlab.runtime.steps import TurnSteps

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("code_shape", ROOT / "scripts" / "code_shape.py")
shape = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shape)

#: The modules this rule is enforced on here (the seam's chapters and chapter 05).
SEAM = ("agentlab/runtime/", "agentlab/checkpoints/", "agentlab/observe/", "agentlab/state/",
        "agentlab/atomic.py")


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


def test_the_loop_knows_nothing_of_checkpoints_or_observers():
    words = re.compile(r"checkpoint|observer|durable|tracer", re.I)
    for fn in (AgentRuntime._loop, *(f for _, f in inspect.getmembers(TurnSteps, inspect.isfunction))):
        code = "\n".join(line for line in inspect.getsource(fn).splitlines()
                         if not line.strip().startswith(("#", '"""')))
        assert not words.search(code.split('"""')[-1]), fn.__qualname__
    assert len(inspect.getsource(AgentRuntime._loop).splitlines()) <= 60


def test_no_module_reaches_into_the_runtimes_private_run_state():
    pattern = re.compile(r"\._durable\b|\._run\.(t0|deadline)|\brt\._[a-z]|\bruntime\._[a-z]")
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "agentlab").rglob("*.py")
                 if not str(p).startswith(str(ROOT / "agentlab" / "runtime"))
                 and pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
