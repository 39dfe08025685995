"""The import graph of evalkit, read from the source (every import, also those inside functions)."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# installed names of the top-level folders (pyproject's package-dir)
ROOTS = {"evalkit": "evalkit", "tasks": "evalkit.tasks", "judges": "evalkit.judges", "dashboards": "evalkit.dashboards"}


def modules() -> dict[str, Path]:
    out = {}
    for folder, pkg in ROOTS.items():
        base = REPO / folder
        for f in sorted(base.rglob("*.py")):
            rel = f.relative_to(base).with_suffix("")
            if any(p in ("tasks", "judges", "dashboards") for p in rel.parts[:1]) and folder == "evalkit":
                continue  # symlinks some checkouts keep inside evalkit/
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([pkg, *parts])] = f
    return out


def _resolve(name: str, mods: dict) -> str | None:
    while name:
        if name in mods:
            return name
        name = name.rpartition(".")[0]
    return None


def graph() -> dict[str, set[str]]:
    mods = modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        package = mod if is_pkg else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                subs = [f"{prefix}.{a.name}" for a in node.names]
                # ``from pkg import name``: the submodule when there is one, else the package itself
                targets = [t if t in mods else prefix for t in subs]
            for t in targets:
                hit = _resolve(t, mods)
                if hit and hit != mod:
                    edges[mod].add(hit)
    return edges


def closure(edges: dict, start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        for n in edges.get(m, ()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def cycles(edges: dict, ignore_package_inits: bool = True) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan). A package's ``__init__``
    importing its own submodules (and those naming the package) is not counted when asked."""
    def keep(a, b):
        if not ignore_package_inits:
            return True
        return not (b.startswith(a + ".") or a.startswith(b + "."))
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if not keep(v, w):
                continue
            if w not in index:
                strong(w)
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

    import sys
    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            strong(v)
    return out
