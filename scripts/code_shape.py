"""The shape of the agentlab package: modules, lines, import cycles, longest functions.

    python scripts/code_shape.py [PROJECT_DIR] [--top 5]

Prints one table row per measure (for the closing note's before/after table): how many
modules, how many lines, how many import cycles (imports inside functions count: hiding a
cycle there does not remove it), modules over the 380-line limit (outside ``sim/ naive/ viz/
widgets/ exercises/``), imports inside functions not marked ``# lazy: heavy``, and the longest
functions. Run it on an older checkout to compare, e.g.::

    git worktree add /tmp/before 7cd065c && python scripts/code_shape.py /tmp/before

The functions here are also used by ``tests/test_import_graph.py``.
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

#: Folders the module-size limit does not apply to.
EXEMPT = ("sim", "naive", "viz", "widgets", "exercises")
MAX_LINES = 380
LAZY_MARK = "lazy: heavy"


def modules(root: Path) -> dict[str, Path]:
    """``{dotted module name: path}`` of every module of ``root/agentlab``."""
    out = {}
    for path in sorted((root / "agentlab").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """``{module: modules of the package it imports}``, imports anywhere in the file included."""
    mods = modules(root)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target and target not in (name, "agentlab"):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def functions(root: Path) -> list[tuple[int, str]]:
    """``(lines, "module.Class.function")`` of every function, longest first."""
    out = []
    for name, path in modules(root).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    qual = f"{prefix}.{child.name}"
                    out.append((child.end_lineno - child.lineno + 1, qual))
                    visit(child, qual)
                elif isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}.{child.name}")
        visit(tree, name)
    return sorted(out, key=lambda t: (-t[0], t[1]))


def function_imports(root: Path) -> list[tuple[str, int, str]]:
    """Imports inside functions not marked ``# lazy: heavy``: ``(path, line, source)``."""
    out = []
    for path in modules(root).values():
        lines = path.read_text(encoding="utf-8").splitlines()
        for fn in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) \
                        and LAZY_MARK not in lines[node.lineno - 1]:
                    out.append((str(path.relative_to(root)), node.lineno,
                                lines[node.lineno - 1].strip()))
    return sorted(set(out))


def oversized(root: Path) -> list[tuple[str, int]]:
    """Modules over ``MAX_LINES`` outside the exempt folders."""
    out = []
    for path in modules(root).values():
        rel = path.relative_to(root / "agentlab").parts
        n = len(path.read_text(encoding="utf-8").splitlines())
        if rel[0] not in EXEMPT and n > MAX_LINES:
            out.append((str(path.relative_to(root)), n))
    return sorted(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--top", type=int, default=5, help="longest functions to list")
    args = parser.parse_args(argv)
    root = Path(args.root)
    mods = modules(root)
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in mods.values())
    found = cycles(import_graph(root))
    fns = functions(root)
    big = oversized(root)
    rows = [("modules", str(len(mods))), ("total lines", str(lines)),
            ("import cycles", str(len(found))),
            (f"modules over {MAX_LINES} lines", str(len(big))),
            ("imports inside functions (unmarked)", str(len(function_imports(root)))),
            ("longest function", f"{fns[0][1]} ({fns[0][0]} lines)" if fns else "-")]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    for cycle in found:
        print("  cycle: " + " <-> ".join(cycle))
    for path, n in big:
        print(f"  over {MAX_LINES}: {path} {n}")
    print(f"longest {args.top} functions:")
    for n, qual in fns[: args.top]:
        print(f"  {n:>4}  {qual}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
