"""The tests keep off the real stacks: only tests/test_real_stacks.py reads them.

Editing the real lab (a host renamed, a VM added) must break that smoke test and nothing else,
so no other test file names a real stack file, and none carries a host, VM, switch or cluster
name of the production stacks (lab, openshift): tests take their names from tests/builders.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SMOKE = TESTS / "test_real_stacks.py"
# The stacks that describe real sites (sim is vcsim's inventory, which tests of vcsim must name).
PRODUCTION = ("lab", "openshift")
STACK_FILES = [f"Pulumi.{stack}.yaml" for stack in ("lab", "openshift", "sim")]
# Words a stack uses as names that are also the program's own vocabulary (a node role).
VOCABULARY = {"bootstrap"}


def checked_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*") if p.is_file() and p.suffix in (".py", ".json", ".md", ".yaml", ".sh")
                  and p not in (SMOKE, Path(__file__).resolve()) and "__pycache__" not in p.parts)


def production_names() -> set[str]:
    """Host, VM, switch, datacenter, cluster and node names of the production stacks."""
    names: set[str] = set()
    for stack in PRODUCTION:
        config = yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text())["config"]
        vsphere = config.get("gpu-lab:vsphere") or {}
        names.update(str(vsphere[k]) for k in ("datacenter", "cluster", "managementHost") if k in vsphere)
        names.update(h["name"] for h in vsphere.get("workerHosts", []))
        for group in ("controlPlane", "workers"):
            names.update(vsphere.get(group, {}).get("names", []))
        if "bootstrap" in vsphere:
            names.add(vsphere["bootstrap"]["name"])
        if config.get("vsphere:vsphereServer"):
            names.add(str(config["vsphere:vsphereServer"]).split(".")[0])
        names.update(s["name"] for s in config.get("gpu-lab:switches") or [])
        openshift = config.get("gpu-lab:openshift") or {}
        if "clusterName" in openshift:
            names.add(openshift["clusterName"])
        names.update(n["name"] for n in openshift.get("nodes", []))
    return names - VOCABULARY


def test_the_rule_knows_the_production_names():
    names = production_names()
    # a broken extraction would make the next test pass vacuously
    assert len(names) >= 15, sorted(names)


def test_only_the_smoke_test_names_a_real_stack_file():
    offenders = {str(p.relative_to(REPO)): [f for f in STACK_FILES if f in p.read_text(errors="replace")]
                 for p in checked_files()}
    assert {k: v for k, v in offenders.items() if v} == {}, (
        "read the real stacks only in tests/test_real_stacks.py; build a stack with tests/builders.py")


def test_no_test_carries_a_production_name():
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(production_names(), key=len, reverse=True)))
                         + r")(?![\w-])", re.IGNORECASE)
    found = {}
    for path in checked_files():
        hits = sorted({m.group(0) for m in pattern.finditer(path.read_text(errors="replace"))})
        if hits:
            found[str(path.relative_to(REPO))] = hits
    assert found == {}, "take names from tests/builders.py, not from the production stacks"
