"""The engine orders a resource's delete before its provider's dependencies' deletes.

The add-ons declare no dependency on the nodes and VMs themselves: their Kubernetes provider does,
and every add-on uses it (components/addons/component.py). That keeps them deleted before the node
they run on only if the engine counts a provider reference as a dependency when it schedules
deletes, also when the provider itself stays. This runs that shape on the real engine with the real
pulumi-command plugin: local Commands stand in for two nodes and two add-on objects, an explicit
command Provider for the Kubernetes one, and each delete appends its name to a log.
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
        return local.Command(name, create=f"true {name}", delete=f"echo {name} >> {log}", opts=opts)

    machines = [step(f"node-{n}") for n in nodes]
    # the add-ons' provider: the one resource that lists the nodes
    provider = Provider("addons-provider", opts=pulumi.ResourceOptions(depends_on=machines))
    for n in nodes:
        step(f"addon-{n}", pulumi.ResourceOptions(provider=provider))
''')


def _installed(name: str, version: str) -> bool:
    return (CACHE / "home" / "plugins" / f"resource-{name}-v{version}" / f"pulumi-resource-{name}").is_file()


def test_an_add_on_goes_before_its_node_when_only_its_provider_lists_the_node(tmp_path):
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
    # take-down: every add-on before the provider's dependencies
    log.unlink()
    pulumi("destroy", "--yes", "--skip-preview", "--parallel", "8", nodes="a,c")
    order = log.read_text().split()
    assert sorted(order) == ["addon-a", "addon-c", "node-a", "node-c"]
    assert max(order.index("addon-a"), order.index("addon-c")) < min(order.index("node-a"), order.index("node-c"))
