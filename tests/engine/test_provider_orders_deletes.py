"""How the add-ons are ordered against the nodes, on the real engine.

The add-ons' Kubernetes provider depends on every node and VM, and every add-on uses it; an add-on
object pinned to one node also depends on that node (components/addons/component.py). This runs that
shape with the real pulumi-command plugin: local Commands stand in for the nodes, the pinned add-on
objects and one shared add-on, an explicit command Provider for the Kubernetes one, and each delete
appends its name to a log. It shows why the pinned objects need their own edge: when a node is
removed and the provider stays, the engine schedules the deletes with the provider's new
dependencies, which no longer name that node (without the edge, node-b went first).
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.built_by_hand

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("PULUMI_CACHE_DIR", ROOT / ".cache" / "pulumi")).resolve()

PROGRAM = textwrap.dedent('''\
    import os
    import pulumi
    from pulumi_command import Provider, local

    nodes = [n for n in os.environ["NODES"].split(",") if n]
    log = os.environ["DELETE_LOG"]

    def step(name, opts=None):
        # an add-on's delete is slow: were it not ordered before a node's, the node's would log first
        pause = "sleep 1; " if name.startswith("addon-") else ""
        return local.Command(name, create=f"true {name}", delete=f"{pause}echo {name} >> {log}", opts=opts)

    machines = {n: step(f"node-{n}") for n in nodes}
    # the add-ons' provider: the one resource that lists every node
    provider = Provider("addons-provider", opts=pulumi.ResourceOptions(depends_on=list(machines.values())))
    step("addon-shared", pulumi.ResourceOptions(provider=provider))
    for n, machine in machines.items():  # pinned to one node: that node too
        step(f"addon-{n}", pulumi.ResourceOptions(provider=provider, depends_on=[machine]))
''')


def _installed(name: str, version: str) -> bool:
    return (CACHE / "home" / "plugins" / f"resource-{name}-v{version}" / f"pulumi-resource-{name}").is_file()


def test_add_ons_go_before_the_nodes_they_run_on(tmp_path):
    (version,) = re.findall(r"^pulumi-command==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M)
    if not (CACHE / "bin" / "pulumi").is_file() or not _installed("command", version):
        pytest.skip(f"the Pulumi CLI and the command {version} plugin are not installed in {CACHE} "
                    "(make setup-pulumi; docs/engine.md, Provider plugins)")
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(
        f"name: provider-order\nruntime:\n  name: python\n  options:\n    virtualenv: {ROOT / '.venv'}\n")
    (project / "__main__.py").write_text(PROGRAM)
    (tmp_path / "state").mkdir()
    log = tmp_path / "deletes.log"
    env = {**os.environ, "PATH": f"{CACHE / 'bin'}:{os.environ['PATH']}", "PULUMI_HOME": str(CACHE / "home"),
           "PULUMI_SKIP_UPDATE_CHECK": "1", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
           "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "PULUMI_CONFIG_PASSPHRASE": "order",
           "DELETE_LOG": str(log)}

    def pulumi(*args: str, nodes: str) -> None:
        done = subprocess.run(["pulumi", *args, "--non-interactive"], cwd=project, env={**env, "NODES": nodes},
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    subprocess.run(["pulumi", "stack", "init", "order", "--non-interactive"], cwd=project, env=env, check=True,
                   capture_output=True)
    pulumi("up", "--yes", "--skip-preview", "--parallel", "8", nodes="a,b,c")
    assert not log.exists()
    # day 2: one node and its add-on removed; the provider stays, with one dependency fewer
    pulumi("up", "--yes", "--skip-preview", "--parallel", "8", nodes="a,c")
    assert log.read_text().split() == ["addon-b", "node-b"]
    # take-down: every add-on, pinned or shared, before any node
    log.unlink()
    pulumi("destroy", "--yes", "--skip-preview", "--parallel", "8", nodes="a,c")
    order = log.read_text().split()
    assert sorted(order) == ["addon-a", "addon-c", "addon-shared", "node-a", "node-c"]
    add_ons, machines = [order.index(a) for a in ("addon-a", "addon-c", "addon-shared")], \
        [order.index(n) for n in ("node-a", "node-c")]
    assert max(add_ons) < min(machines), order
