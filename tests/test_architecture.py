"""The project's import graph: no cycles, and each layer imports only the layers below it.

Built from the source with `ast`, so imports under `if TYPE_CHECKING:` and inside functions count
too: a cycle hidden behind either is still a cycle for the next reader. The layers:

    labrules   the reference designs' rules (standard library only)
    policies   the CrossGuard pack: labrules and its own rules, never the program
    components the program's parts: labrules, never tools or policies
    tools      make plan / render / report: may use components

Inside components/, docs/layout.md's floors (the loader, the parts, the plans, the model): no arrow up.
The SDK boundary: Pulumi's and pulumi-policy's internals are touched in one module per part
(components/, the pack, tools/ and tests/ alike), and pinned by tests/test_sdk_internals.py.
"""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
from pathlib import Path

import builders
import pulumi_policy
import pydantic
import pytest

from components.addons.model import AddonsConfig
from components.config import gpu_lab_sections, load_lab

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
    # none allowed, tools/ included (the benchmark and its floor share tools/bench/lab.py instead)
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


def _pydantic_values(value: object, path: str) -> list[str]:
    """The paths under `value` (dataclass fields, tuples, lists, dicts) holding a pydantic model."""
    if isinstance(value, pydantic.BaseModel):
        return [path]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [found for f in dataclasses.fields(value)
                for found in _pydantic_values(getattr(value, f.name), f"{path}.{f.name}")]
    if isinstance(value, (tuple, list, set, frozenset)):
        return [found for i, item in enumerate(value) for found in _pydantic_values(item, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _pydantic_values(item, f"{path}[{key!r}]")]
    return []


@pytest.mark.parametrize("stack", [builders.lab_stack, builders.baremetal_stack])
def test_the_lab_plan_holds_no_raw_model(stack):
    # The components read the lab plan; a raw section in it would let one decide a fact again.
    plan = load_lab(gpu_lab_sections(stack())).plan
    assert _pydantic_values(plan, "plan") == []


def test_a_raw_model_in_a_plan_would_be_found():
    @dataclasses.dataclass(frozen=True)
    class Holder:
        parts: tuple[object, ...]

    assert _pydantic_values(Holder((1, {"k": AddonsConfig()})), "plan") == ["plan.parts[1]['k']"]


# ---------------------------------------------------------------- no arrow up inside components/
#
# docs/layout.md's floors, top to bottom: a module imports its own floor and the ones below, never one
# above. The guard's provider process (components/dynamic/guard.py) loads what it judges with, not the
# loader that reads a stack file.

COMPONENT_FLOORS = (
    ("the loader", ("components.config",)),
    ("the parts", ()),  # every module not named on another floor: components, files, render, providers
    ("the plans", ("components.lab_plan", "components.*.plan", "components.*.rules", "components.identity_rules",
                   "components.switch.dialects")),
    ("the model", ("components.model", "components.facts", "components.mirror", "components.*.model",
                   "components.addons.versions")),
)
PARTS_FLOOR = 1


def _floor(module: str) -> int:
    """The index of `module`'s floor in COMPONENT_FLOORS (0 the top)."""
    for index, (_, patterns) in enumerate(COMPONENT_FLOORS):
        if any(fnmatch.fnmatchcase(module, pattern) for pattern in patterns):
            return index
    return PARTS_FLOOR


def _arrows_up(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) for each import under components/ of a module on a higher floor."""
    return sorted((module, dep) for module, deps in graph.items() if module.startswith("components.")
                  for dep in deps if dep.startswith("components.") and _floor(dep) < _floor(module))


def test_no_arrow_up_inside_components():
    assert _arrows_up(GRAPH) == []


def test_each_floor_names_modules_that_exist():
    # guards the floors against a pattern that matches nothing (a typo puts a module on the parts' floor)
    components = [m for m in MODULES if m.startswith("components.")]
    for _, patterns in COMPONENT_FLOORS:
        for pattern in patterns:
            assert any(fnmatch.fnmatchcase(m, pattern) for m in components), pattern
    assert _floor("components.config") == 0 and _floor("components.vsphere.vms") == PARTS_FLOOR
    assert _floor("components.vsphere.plan") == _floor("components.identity_rules") == 2
    assert _floor("components.openshift.model") == 3


def test_an_arrow_up_would_be_found():
    graph: dict[str, set[str]] = {
        "components.identity_rules": {"components.config", "components.vsphere.plan"},  # rules -> the loader
        "components.vsphere.plan": {"components.vsphere.model", "components.vsphere.fabric"},  # plan -> a part
        "components.vsphere.model": {"components.model", "components.lab_plan"},  # model -> a plan
        "components.dynamic.guard": {"components.identity_rules", "components.dynamic.provider"},
        "components.config": {"components.lab_plan", "components.secrets"},
        "tools.plan": {"components.config"},
    }
    assert _arrows_up(graph) == [
        ("components.identity_rules", "components.config"),
        ("components.vsphere.model", "components.lab_plan"),
        ("components.vsphere.plan", "components.vsphere.fabric"),
    ]


def test_the_guards_provider_process_does_not_load_the_config_loader():
    seen, todo = set(), ["components.dynamic.guard"]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(GRAPH[module])
    assert not seen & {"components.config", "components.lab_plan"}


# ---------------------------------------------------------------- the SDK boundary

SDK_INTERNAL_MODULES = ("pulumi.runtime.rpc", "pulumi.runtime.stack", "pulumi.runtime.settings",
                        "pulumi.runtime.config", "pulumi.runtime.sync_await", "pulumi.dynamic.__main__",
                        "pulumi.output")
"""The Pulumi SDK modules the project reaches into (none of them among `pulumi.runtime`'s exports, or,
for pulumi.output, only through `pulumi.Output`). Also internal: any private name or module under
`pulumi` (`pulumi._types`, `pulumi.log._...`), `gc.get_objects` (how the provider server's thread pool
is found), an assignment to an attribute of `pulumi.runtime` or `pulumi.log` (a patch of the SDK), and,
of pulumi-policy, anything but the names `pulumi_policy` exports (`pulumi_policy.policy`,
`pulumi_policy.deserialize`, `pulumi_policy.proxy`, ...: its servicer, wire coding and proxies)."""
PULUMI_POLICY_EXPORTS = frozenset(pulumi_policy.__all__)
SDK_BOUNDARY = {
    "pulumi": {"components": "components.sdk_internals", "__main__": "components.sdk_internals",
               "tools": "tools.sdk_access", "tests": "tools.sdk_access"},
    "pulumi_policy": {"policies": "policies.rules.pulumi_policy_internals",
                      "tools": "tools.policy_sdk_access", "tests": "tools.policy_sdk_access"},
}
"""Per SDK, where in each part its internals may be touched: the live run's (the pack's) in one module,
the tools' and tests' in another. A part without an entry touches none of that SDK's."""
SDK_PINS = frozenset({"tests.test_sdk_internals", "tests.policies.test_pulumi_policy_internals"})
"""The tests that pin what the internals are: they reach them to check them, so an upgrade fails there."""
def _test_modules() -> dict[str, Path]:
    return {".".join(path.relative_to(REPO).with_suffix("").parts): path
            for path in sorted((REPO / "tests").rglob("*.py"))}


TEST_MODULES = _test_modules()


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
    if parts[0] == "pulumi_policy":  # an export, a dunder (its __all__) or internal
        return len(parts) > 1 and not (parts[1].startswith("__") and parts[1].endswith("__")) \
            and (parts[1] not in PULUMI_POLICY_EXPORTS
                 or any(p.startswith("_") and not p.endswith("__") for p in parts[2:]))
    if parts[0] != "pulumi":
        return False
    return any(name == m or name.startswith(f"{m}.") for m in SDK_INTERNAL_MODULES) \
        or any(p.startswith("_") and not p.endswith("__") for p in parts[1:])  # private, not a dunder


def _sdk_of(name: str) -> str:
    """The SDK an internal name belongs to (gc.get_objects finds the Pulumi provider server's pool)."""
    return "pulumi_policy" if name.startswith("pulumi_policy") else "pulumi"


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


def sdk_boundary_offenders(modules: dict[str, str]) -> dict[str, list[str]]:
    """{module: the internals it touches outside its part's boundary module} for {module: source}."""
    offenders = {}
    for module, source in modules.items():
        if module in SDK_PINS:
            continue
        part = module.split(".")[0]
        used = sorted(name for name in sdk_internals_used(source)
                      if SDK_BOUNDARY[_sdk_of(name)].get(part) != module)
        if used:
            offenders[module] = used
    return offenders


def test_only_the_sdk_boundary_modules_touch_sdk_internals():
    # the program, the pack, the tools and the tests
    sources = {module: path.read_text() for module, path in {**MODULES, **TEST_MODULES}.items()}
    assert sdk_boundary_offenders(sources) == {}


def test_the_rule_covers_the_tests_and_pulumi_policy():
    # guards the rule against a part or an SDK it does not read
    assert {"tests.test_architecture", "tests.policies.policy_helpers", "tests.tools.test_plan_render"} <= set(TEST_MODULES)
    assert sdk_boundary_offenders({
        "tests.tools.test_x": "from pulumi.runtime import rpc\nkey = rpc._special_sig_key\n",
        "tests.policies.test_y": "from pulumi_policy.proxy import unknown_checking_proxy\n",
        "tools.policy_check": "from pulumi_policy.deserialize import serialize_properties\n",
        "policies.rules.compute": "import pulumi_policy.policy as sdk\n",
        "policies.rules.network": "from pulumi.runtime import rpc\n",  # the pack has no Pulumi SDK boundary
        "tests.test_sdk_internals": "from pulumi.runtime import rpc\n",  # the pins
        "tools.sdk_access": "from pulumi.runtime import rpc\n",
        "tools.policy_sdk_access": "import pulumi_policy.policy\n",
        "tests.policies.test_z": "from pulumi_policy import PolicyPack, Secret\nimport pulumi_policy\n",
    }) == {
        "tests.tools.test_x": ["pulumi.runtime.rpc", "pulumi.runtime.rpc._special_sig_key"],
        "tests.policies.test_y": ["pulumi_policy.proxy.unknown_checking_proxy"],
        "tools.policy_check": ["pulumi_policy.deserialize.serialize_properties"],
        "policies.rules.compute": ["pulumi_policy.policy"],
        "policies.rules.network": ["pulumi.runtime.rpc"],
    }


def test_the_sdk_boundary_modules_are_where_the_internals_are():
    # guards the rule against a list that matches nothing
    assert sdk_internals_used(MODULES["components.sdk_internals"].read_text()) >= {
        "pulumi.runtime.rpc", "pulumi.runtime.settings.SETTINGS", "pulumi.output.Unknown", "gc.get_objects",
        "pulumi.runtime.stack.wait_for_rpcs (assigned)", "pulumi.log.debug (assigned)"}
    assert sdk_internals_used(MODULES["tools.sdk_access"].read_text()) >= {
        "pulumi.runtime.sync_await._sync_await", "pulumi._types.input_type_to_dict", "pulumi.runtime.rpc"}
    assert sdk_internals_used(MODULES["tools.policy_sdk_access"].read_text()) >= {
        "pulumi_policy.policy", "pulumi_policy.deserialize.serialize_properties",
        "pulumi_policy.proxy.unknown_checking_proxy"}
    assert sdk_internals_used(MODULES["policies.rules.pulumi_policy_internals"].read_text()) >= {
        "pulumi_policy.policy", "pulumi_policy.deserialize._deserialize_property", "pulumi_policy.version.VERSION"}


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
    ("from pulumi_policy.deserialize import serialize_properties\n", {"pulumi_policy.deserialize.serialize_properties"}),
    ("import pulumi_policy.policy as sdk\nsdk.deserialize_properties = None\n",
     {"pulumi_policy.policy", "pulumi_policy.policy.deserialize_properties"}),
    ("from pulumi_policy import deserialize\n", {"pulumi_policy.deserialize"}),
    ("import pulumi_policy\nx = pulumi_policy.Secret(1)\nfrom pulumi_policy import PolicyPack\n", set()),
])
def test_the_rule_would_catch_a_violation(source, found):
    assert sdk_internals_used(source) == found


# ---------------------------------------------------------------- the tests mirror the source tree

SIMULATOR_TESTS = "test_lab_vcsim*.py"
"""lab-vcsim's own tests (simulator/): they talk to it through components.dynamic.hostops, their only import."""


def _components_imported(path: Path) -> set[str]:
    """The components modules a test file imports, at any depth: what its tests are about."""
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {_resolve(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {_resolve(f"{node.module}.{a.name}") or _resolve(node.module) for a in node.names}
    return {m for m in found if m is not None and m.split(".")[0] == "components"}


def test_the_dynamic_providers_tests_live_in_tests_dynamic():
    # tests/<area> holds the tests of components/<area>: a test of tests/vsphere whose only subject is
    # a dynamic provider (components/dynamic) belongs in tests/dynamic, lab-vcsim's own tests aside
    assert (REPO / "components" / "dynamic" / "__init__.py").is_file()
    assert {p.name for p in (REPO / "tests" / "dynamic").glob("test_*.py")} >= {
        "test_dynamic_providers.py", "test_node_roll.py", "test_hostops_vcsim.py"}
    stray = []
    for path in sorted((REPO / "tests" / "vsphere").glob("test_*.py")):
        subjects = _components_imported(path)
        if subjects and all(m.startswith("components.dynamic.") for m in subjects) \
                and not fnmatch.fnmatch(path.name, SIMULATOR_TESTS):
            stray.append(path.name)
    assert stray == []


def test_the_mirror_rule_reads_a_test_s_subjects():
    # guards the rule above against a reading that finds nothing
    assert _components_imported(REPO / "tests" / "dynamic" / "test_node_roll.py") >= {
        "components.dynamic.hostops", "components.dynamic.roll"}
    assert _components_imported(REPO / "tests" / "vsphere" / "test_lab_vcsim.py") == {"components.dynamic.hostops"}
    assert "components.vsphere.vms" in _components_imported(REPO / "tests" / "vsphere" / "test_day2_vsphere.py")
    # a provider's test left in tests/vsphere would be found
    assert all(m.startswith("components.dynamic.")
               for m in _components_imported(REPO / "tests" / "dynamic" / "test_pending_reboot.py"))
