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
SECTION_CONFIGS = ("components.vsphere.model", "components.vsphere.plan", "components.vsphere.rules",
                   "components.openshift.model", "components.openshift.plan", "components.openshift.rules",
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
    assert "labrules.vsphere" in GRAPH["components.vsphere.rules"]
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


# ---------------------------------------------------------------- components take plans, not raw models
#
# A section's model.py is what the stack file says; its plan.py turns that into the facts its
# components read, once. A component that imports a model can decide a fact a second time (where a
# VM goes, which address it has), and the two can drift apart.

SECTIONS = ("vsphere", "openshift", "switch", "addons")
MODEL_READERS = frozenset({"components.config", "components.lab_plan", "components.identity_rules",
                           "components.identity"})
"""What may read whole raw sections besides their own model/plan/rules: the loader, the lab plan and
the identity guard (it compares the section a lab was built from with the edited one)."""
SECTION_OWN = ("model", "plan", "rules")

def _raw_model_imports(graph: dict[str, set[str]], sections=SECTIONS) -> list[tuple[str, str]]:
    """(component, raw model) for each module under components/ that imports a section's raw model,
    other than MODEL_READERS and each section's own model, plan and rules."""
    raw = {f"components.{section}.model" for section in sections}
    exempt = MODEL_READERS | raw | {f"components.{section}.{own}" for section in sections for own in SECTION_OWN}
    return sorted((module, dep) for module, deps in graph.items()
                  if module.startswith("components.") and module not in exempt
                  for dep in deps if dep in raw)


def test_components_import_no_raw_section_model():
    assert _raw_model_imports(GRAPH) == []


def test_a_component_importing_a_raw_model_would_be_found():
    graph: dict[str, set[str]] = {
        "components.vsphere.model": set(),
        "components.vsphere.plan": {"components.vsphere.model"},
        "components.vsphere.rules": {"components.vsphere.model", "components.vsphere.plan"},
        "components.vsphere.vms": {"components.vsphere.plan", "components.vsphere.model"},
        "components.vsphere.fabric": {"components.vsphere.plan"},
        "components.roce.host": {"components.vsphere.model"},
        "components.lab_plan": {"components.vsphere.model", "components.openshift.model"},
        "components.openshift.plan": {"components.openshift.model", "components.vsphere.plan"},
        "components.openshift.files.pxe": {"components.openshift.plan"},
        "tools.report": {"components.vsphere.model"},
    }
    assert _raw_model_imports(graph, ("vsphere", "openshift")) == [
        ("components.roce.host", "components.vsphere.model"),  # another package's component
        ("components.vsphere.vms", "components.vsphere.model"),  # the section's own component
    ]


# ---------------------------------------------------------------- the SDK boundary

SDK_INTERNAL_MODULES = ("pulumi.runtime.rpc", "pulumi.runtime.stack", "pulumi.runtime.settings",
                        "pulumi.runtime.config", "pulumi.runtime.sync_await", "pulumi.dynamic.__main__",
                        "pulumi.output")
"""The Pulumi SDK modules the project reaches into (none of them among `pulumi.runtime`'s exports, or,
for pulumi.output, only through `pulumi.Output`). Also internal: any private name or module under
`pulumi` (`pulumi._types`, `pulumi.log._...`), `gc.get_objects` (how the provider server's thread pool
is found), and an assignment to an attribute of `pulumi.runtime` or `pulumi.log` (a patch of the SDK)."""
SDK_BOUNDARY = {"components": "components.sdk_internals", "__main__": "components.sdk_internals",
                "tools": "tools.sdk_access"}
"""Where, in each part, the internals may be touched: the live run's in one module, the tools' in another."""


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _is_sdk_internal(name: str) -> bool:
    parts = name.split(".")
    if parts[0] == "gc":
        return name.startswith("gc.get_objects")
    if parts[0] != "pulumi":
        return False
    return any(name == m or name.startswith(f"{m}.") for m in SDK_INTERNAL_MODULES) \
        or any(p.startswith("_") and not p.endswith("__") for p in parts[1:])  # private, not a dunder


def sdk_internals_used(source: str) -> set[str]:
    """What in `source` touches the SDK's internals, by dotted name."""
    used: set[str] = set()
    aliases: dict[str, str] = {}  # local name -> the dotted module or object it stands for
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                aliases[local] = alias.name if alias.asname else local
                if _is_sdk_internal(alias.name):
                    used.add(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                aliases[alias.asname or alias.name] = full
                if _is_sdk_internal(node.module) or _is_sdk_internal(full):
                    used.add(full)
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}  # a.b of a.b.c
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner and (dotted := _dotted(node)) is not None:
            head, _, rest = dotted.partition(".")
            full = f"{aliases.get(head, head)}.{rest}" if rest else aliases.get(head, head)
            if _is_sdk_internal(full):
                used.add(full)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                dotted = _dotted(target) if isinstance(target, ast.Attribute) else None
                if dotted is None:
                    continue
                head, _, rest = dotted.partition(".")
                full = f"{aliases.get(head, head)}.{rest}"
                if full.startswith(("pulumi.runtime.", "pulumi.log.")):
                    used.add(f"{full} (assigned)")
    return used


def test_only_the_sdk_boundary_modules_touch_sdk_internals():
    offenders = {}
    for module, path in MODULES.items():
        part = module.split(".")[0]
        if part not in SDK_BOUNDARY or module == SDK_BOUNDARY[part]:
            continue
        used = sdk_internals_used(path.read_text())
        if used:
            offenders[module] = sorted(used)
    assert offenders == {}


def test_the_sdk_boundary_modules_are_where_the_internals_are():
    # guards the rule against a list that matches nothing
    assert sdk_internals_used(MODULES["components.sdk_internals"].read_text()) >= {
        "pulumi.runtime.rpc", "pulumi.runtime.settings.SETTINGS", "pulumi.output.Unknown", "gc.get_objects",
        "pulumi.runtime.stack.wait_for_rpcs (assigned)", "pulumi.log.debug (assigned)"}
    assert sdk_internals_used(MODULES["tools.sdk_access"].read_text()) >= {
        "pulumi.runtime.sync_await._sync_await", "pulumi._types.input_type_to_dict", "pulumi.runtime.rpc"}


@pytest.mark.parametrize("source, found", [
    ("from pulumi.runtime import rpc\n", {"pulumi.runtime.rpc"}),
    ("import pulumi.runtime.stack\n", {"pulumi.runtime.stack"}),
    ("from pulumi.runtime.settings import SETTINGS\n", {"pulumi.runtime.settings.SETTINGS"}),
    ("import pulumi\nx = pulumi.runtime.config.CONFIG\n", {"pulumi.runtime.config.CONFIG"}),
    ("import pulumi.log\npulumi.log.debug = print\n", {"pulumi.log.debug (assigned)"}),
    ("import pulumi\npulumi.log._log(1)\n", {"pulumi.log._log"}),
    ("import pulumi.dynamic.__main__ as server\n", {"pulumi.dynamic.__main__"}),
    ("import gc\nobjects = gc.get_objects()\n", {"gc.get_objects"}),
    ("from pulumi._types import input_type_to_dict\n", {"pulumi._types.input_type_to_dict"}),
    ("import pulumi\npulumi.runtime.set_all_config({}, [])\nx = pulumi.Output.from_input(1)\n", set()),
    ("import gc\ngc.freeze()\nfrom pulumi.dynamic import ResourceProvider\n", set()),
])
def test_the_rule_would_catch_a_violation(source, found):
    assert sdk_internals_used(source) == found
