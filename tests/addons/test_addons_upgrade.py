"""An operator upgrade brings its CRDs: Helm installs a chart's `crds/` once and never upgrades them
(Helm, "Custom Resource Definitions": https://helm.sh/docs/chart_best_practices/custom_resource_definitions/;
pulumi-kubernetes' Release upgrades through Helm's upgrade action, which renders without them). The
GPU and network operators' charts apply their CRDs from a pre-upgrade hook Job instead, as their upgrade
guides describe. Read from the real charts, pinned and one release earlier (tests/charts): every chart
whose CRDs change between the two must carry such a hook, on by default and left on by our values.
"""

from __future__ import annotations

import csv
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.addons import versions

CHARTS = Path(__file__).resolve().parents[1] / "charts"
UPGRADE_HOOKS = {
    # chart: (the hook's template, the value that turns it on)
    "gpu-operator": ("templates/upgrade_crd.yaml", ("operator", "upgradeCRD")),
    "network-operator": ("templates/upgrade-crd-hook.yaml", ("upgradeCRDs",)),
}
PINNED = (versions.NFD, versions.GPU_OPERATOR, versions.NETWORK_OPERATOR)


def chart_file(chart: str, role: str) -> Path:
    with open(CHARTS / "MANIFEST.tsv", newline="") as f:
        (row,) = [r for r in csv.DictReader(f, delimiter="\t")
                  if r["role"] == role and r["file"].rsplit("-", 1)[0] == chart]
    return CHARTS / row["file"]


def crds(path: Path) -> dict[str, dict]:
    """Every CRD the chart and its subcharts ship in crds/, by name."""
    found = {}
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            if "crds" in member.name.split("/")[:-1] and member.name.endswith((".yaml", ".yml")):
                for doc in yaml.safe_load_all(tar.extractfile(member).read()):  # type: ignore[union-attr]
                    if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                        found[doc["metadata"]["name"]] = doc
    return found


def chart_text(path: Path, name: str) -> str:
    with tarfile.open(path) as tar:
        (member,) = [m for m in tar.getmembers() if m.name.partition("/")[2] == name]
        return tar.extractfile(member).read().decode()  # type: ignore[union-attr]


def value_at(values: dict[str, Any], key: tuple[str, ...]) -> Any:
    for part in key:
        if not isinstance(values, dict) or part not in values:
            return None
        values = values[part]
    return values


def changed_crds(chart: str) -> list[str]:
    before, after = crds(chart_file(chart, "previous")), crds(chart_file(chart, "pinned"))
    return sorted(name for name, doc in after.items() if before.get(name) != doc)


def test_the_pinned_rows_are_the_pins():
    for chart in PINNED:
        assert chart_file(chart.chart, "pinned").name == f"{chart.chart}-{chart.version}.tgz"


@pytest.mark.parametrize("chart", PINNED, ids=lambda c: c.chart)
def test_an_upgrade_from_the_previous_release_brings_its_crds(chart, full_run):
    changed = changed_crds(chart.chart)
    if not changed:
        return
    assert chart.chart in UPGRADE_HOOKS, (
        f"{chart.chart} {chart.version} changes CRDs {changed} from the previous release, and Helm never upgrades "
        "a chart's crds/: apply them before the release (a CustomResourceDefinition resource per CRD, or a hook)")
    template, key = UPGRADE_HOOKS[chart.chart]
    pinned = chart_file(chart.chart, "pinned")
    text = chart_text(pinned, template)
    assert "pre-upgrade" in text and f".Values.{'.'.join(key)}" in text
    assert value_at(yaml.safe_load(chart_text(pinned, "values.yaml")), key) is True
    (release,) = [r for r in full_run.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == chart.chart]
    assert value_at(release.inputs["values"], key) in (None, True)


def test_the_gpu_and_network_operators_change_crds_between_the_two_releases():
    # so the hook branch above is exercised by the real charts, not only the equal-CRD branch
    assert changed_crds("gpu-operator") and changed_crds("network-operator")
    assert changed_crds("node-feature-discovery") == []
