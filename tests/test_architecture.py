"""The project's import graph: no cycles, and each layer imports only the layers below it.

Built from the source with `ast`, so imports under `if TYPE_CHECKING:` and inside functions count
too: a cycle hidden behind either is still a cycle for the next reader. The layers:

    labrules   the reference designs' rules (standard library only)
    policies   the CrossGuard pack: labrules and its own rules, never the program
    components the program's parts: labrules, never tools or policies
    tools      make plan / render / report: may use components
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("labrules", "components", "policies", "tools")
SECTION_CONFIGS = ("components.vsphere.config", "components.openshift.config",
                   "components.switch.model", "components.switch.plan", "components.switch.rules",
                   "components.addons.model", "components.addons.plan", "components.addons.rules")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    found["__main__"] = REPO / "__main__.py"
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module an import names (`a.b.c` may be module a.b's attribute c)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _package_of(module: str) -> str:
    return module.rpartition(".")[0] if MODULES[module].name != "__init__.py" else module


def _imports(module: str) -> set[str]:
    deps: set[str | None] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(), filename=str(MODULES[module]))):
        if isinstance(node, ast.Import):
            deps |= {_resolve(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's own package upwards
                base = _package_of(module).split(".")
                base = base[:len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            deps |= {_resolve(f"{prefix}.{a.name}") or _resolve(prefix) for a in node.names}
    return {d for d in deps if d is not None and d != module}


GRAPH = {module: _imports(module) for module in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _edges(source: str, target: str) -> list[tuple[str, str]]:
    return sorted((m, d) for m, deps in GRAPH.items() if m.split(".")[0] == source
                  for d in deps if d.split(".")[0] == target)


def test_the_graph_is_read_from_the_source():
    # guards the checks below against an empty or unresolved graph
    assert "components.lab_plan" in GRAPH["components.config"]
    assert "labrules.vsphere" in GRAPH["components.vsphere.config"]
    assert "policies.rules.props" in GRAPH["policies.rules.compute"]  # a relative import resolved


def test_no_import_cycle():
    # none allowed, tools/ included (the benchmark and its floor share tools/bench_lab.py instead)
    assert _cycles(GRAPH) == []


def test_a_cycle_would_be_found():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("source, target", [
    ("policies", "components"), ("policies", "tools"),
    ("components", "tools"), ("components", "policies"),
    ("labrules", "components"), ("labrules", "policies"), ("labrules", "tools"),
])
def test_layers_import_only_downwards(source, target):
    assert _edges(source, target) == []


def test_labrules_uses_the_standard_library_only():
    import sys

    for module, path in MODULES.items():
        if not module.startswith("labrules"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top in ("__future__", "labrules"), (module, name)


@pytest.mark.parametrize("section", SECTION_CONFIGS)
def test_section_configs_do_not_import_the_composition(section):
    assert not GRAPH[section] & {"components.config", "components.lab_plan"}
