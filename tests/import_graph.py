"""The import graph of pcbench, from its sources (ast, nothing imported): which module imports which.

    python tests/import_graph.py            # bench -> analysis edges, every import circle, the counts

Every `import` / `from ... import` counts, lazy ones inside functions too (a circle through a lazy
import is still a circle). `from pcbench.analysis import regime` is an edge to pcbench.analysis.regime
when that is a module, else to the package. tests/test_imports.py asserts zero circles and no
import of pcbench.bench from pcbench.analysis.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "pcbench"


def modules(root: Path = ROOT) -> dict[str, Path]:
    """{dotted name: file} of every module of the package (packages by their __init__)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that `name` is or lies in (pcbench.a.b.func -> pcbench.a.b)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """{module: modules of pcbench it imports}."""
    known = modules(root)
    edges: dict[str, set[str]] = {m: set() for m in known}
    for mod, path in known.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for t in targets:
                hit = _resolve(t, known) if t.startswith("pcbench") else None
                if hit and hit != mod:
                    edges[mod].add(hit)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def between(edges: dict[str, set[str]], src: str, dst: str) -> list[tuple[str, str]]:
    """Edges from modules of package `src` to modules of package `dst`."""
    inside = lambda m, p: m == p or m.startswith(p + ".")  # noqa: E731
    return sorted((a, b) for a, bs in edges.items() for b in bs if inside(a, src) and inside(b, dst))


def main() -> int:
    edges = graph()
    short = lambda m: m.removeprefix("pcbench.")  # noqa: E731
    for src, dst in (("pcbench.bench", "pcbench.analysis"), ("pcbench.analysis", "pcbench.bench")):
        pairs = between(edges, src, dst)
        print(f"{short(src)} -> {short(dst)}: {len(pairs)} edge(s)")
        for a, b in pairs:
            print(f"  {short(a)} -> {short(b)}")
    found = cycles(edges)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} edges, {len(found)} import circle(s)")
    for comp in found:
        print("  circle: " + " <-> ".join(map(short, comp)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
