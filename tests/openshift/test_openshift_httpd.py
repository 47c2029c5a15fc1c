"""The ignition access rule (components/openshift/files/httpd.py) in Debian's Apache 2.4 on loopback.

The rendered drop-in goes into a server configured like the guide's RHEL httpd (httpd.conf's
`<Directory />` denied, the web root granted, `IncludeOptional conf.d/*.conf` last), with
Debian's apache2 binary and modules (apache2-bin: scripts/install-openshift-test-tools.sh).
The test plan's node addresses are rewritten to 127.0.0.x, so requests sent from those loopback
source addresses come from a node, and from another 127.0.0.x from a machine that is not one.
Run as root, the server's children run as www-data and the ignition files are root:www-data
0640, as the helper installs them (root:<httpGroup>).
"""

from __future__ import annotations

import dataclasses
import grp
import http.client
import os
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from openshift_helpers import sections
from openshift_servers import LOOPBACK, free_port, stop, wait_for_port
from required_tools import require_path, require_tool

from components.config import load_lab
from components.openshift.files.httpd import render_ignition_access
from components.openshift.plan import ClusterPlan

HINT = "run scripts/install-openshift-test-tools.sh (Debian package apache2-bin)"
MODULES = Path("/usr/lib/apache2/modules")  # Debian's apache2-bin
# Where the plan's nodes live for the test, by name; NOT_A_NODE is any other machine.
ADDRESSES = {"bootstrap": "127.0.0.2", "cp-0": "127.0.0.3", "cp-1": "127.0.0.4", "cp-2": "127.0.0.5",
             "dgx-0": "127.0.0.6", "dgx-1": "127.0.0.7"}
NOT_A_NODE = "127.0.0.9"
WEB_GROUP = "www-data"  # Debian's apache2 user and group (RHEL's httpd: apache, the HelperNode default)


@pytest.fixture(scope="module")
def apache2() -> str:
    require_path(MODULES / "mod_authz_host.so", "Apache's modules", HINT)
    return require_tool("apache2", HINT)


@pytest.fixture(scope="module")
def site() -> Iterator[Path]:
    """A directory every user can traverse (the server's children run as www-data under root)."""
    directory = Path(tempfile.mkdtemp(prefix="gpu-lab-httpd-"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        shutil.rmtree(directory)


def loopback_plan(www: Path, **changes) -> ClusterPlan:
    """The guide's bare-metal cluster with its nodes on loopback addresses and its web root at `www`."""
    raw = sections("baremetal")
    raw["openshift"].update(changes)
    plan = load_lab(raw).plan.cluster
    helper = dataclasses.replace(plan.helper, paths=dataclasses.replace(plan.helper.paths, http_root=str(www)))
    nodes = tuple(dataclasses.replace(n, address=ADDRESSES[n.name]) for n in plan.nodes)
    return dataclasses.replace(plan, helper=helper, nodes=nodes)


def quoted(path: Path) -> str:
    """A path as one argument of an Apache directive (ap_getword_conf: double quotes, backslash escapes)."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def server_config(d: Path, www: Path, port: int) -> str:
    run_as = f"User {WEB_GROUP}\nGroup {WEB_GROUP}\n" if os.geteuid() == 0 else ""
    return textwrap.dedent(f"""\
        ServerRoot "{d}"
        ServerName {LOOPBACK}
        Listen {LOOPBACK}:{port}
        LoadModule mpm_event_module {MODULES}/mod_mpm_event.so
        LoadModule authz_core_module {MODULES}/mod_authz_core.so
        LoadModule authz_host_module {MODULES}/mod_authz_host.so
        PidFile "{d}/httpd.pid"
        ErrorLog "{d}/error.log"
        LogLevel warn
        DocumentRoot {quoted(www)}
        <Directory />
            AllowOverride None
            Require all denied
        </Directory>
        <Directory {quoted(www)}>
            Require all granted
        </Directory>
        IncludeOptional "{d}/conf.d/*.conf"
        """) + run_as


def publish(www: Path, names: list[str]) -> None:
    """The files as the helper installs them: owned by root and the web server's group, mode 0640."""
    www.mkdir(parents=True, exist_ok=True)
    www.chmod(0o755)
    for name in names:
        path = www / name
        path.write_text(f"content of {name}\n")
        if os.geteuid() == 0:
            os.chown(path, 0, grp.getgrnam(WEB_GROUP).gr_gid)
        path.chmod(0o640)


@contextmanager
def serving(apache2: str, d: Path, plan: ClusterPlan) -> Iterator[int]:
    """Apache on a loopback port with the rendered rule as its drop-in; yields the port."""
    www = Path(plan.helper.paths.http_root)
    (d / "conf.d").mkdir(parents=True, exist_ok=True)
    (d / "conf.d" / "gpu-lab-ignition.conf").write_text(render_ignition_access(plan))
    port = free_port()
    (d / "httpd.conf").write_text(server_config(d, www, port))
    proc = subprocess.Popen([apache2, "-f", str(d / "httpd.conf"), "-DFOREGROUND"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc=proc)
        yield port
    finally:
        stop(proc)


def status(port: int, source: str, name: str) -> int:
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=5, source_address=(source, 0))
    try:
        connection.request("GET", f"/{name}")
        return connection.getresponse().status
    finally:
        connection.close()


FILES = ["bootstrap.ign", "master.ign", "worker.ign", "left-over.ign", "rhcos-kernel"]


def test_the_rule_passes_apaches_own_syntax_check(apache2, site):
    d = site / "syntax"
    publish(d / "www", [])
    plan = loopback_plan(d / "www")
    (d / "conf.d").mkdir(parents=True)
    (d / "conf.d" / "gpu-lab-ignition.conf").write_text(render_ignition_access(plan))
    (d / "httpd.conf").write_text(server_config(d, Path(plan.helper.paths.http_root), free_port()))
    # what `apache2ctl -t` runs: the server binary's configuration test
    done = subprocess.run([apache2, "-t", "-f", str(d / "httpd.conf")], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "Syntax OK" in done.stderr, done.stderr


def test_a_web_root_with_blanks_and_quotes_stays_one_argument(apache2, site):
    www = site / 'odd "web" root\\dir'
    publish(www, ["bootstrap.ign"])
    plan = loopback_plan(www)
    assert f'<Directory "{site}/odd \\"web\\" root\\\\dir">' in render_ignition_access(plan)
    with serving(apache2, site / "odd", plan) as port:
        assert status(port, ADDRESSES["bootstrap"], "bootstrap.ign") == 200
        assert status(port, NOT_A_NODE, "bootstrap.ign") == 403


def test_each_node_gets_only_its_roles_file_and_nobody_else_any(apache2, site):
    www = site / "install" / "www"
    publish(www, FILES)
    with serving(apache2, site / "install", loopback_plan(www)) as port:
        expected = {
            "bootstrap": {"bootstrap.ign": 200, "master.ign": 403, "worker.ign": 403},
            "cp-1": {"bootstrap.ign": 403, "master.ign": 200, "worker.ign": 403},
            "dgx-0": {"bootstrap.ign": 403, "master.ign": 403, "worker.ign": 200},
        }
        for node, by_file in expected.items():
            got = {name: status(port, ADDRESSES[node], name) for name in by_file}
            assert got == by_file, node
        # not a node: no ignition file at all; an .ign no role owns: nobody
        assert {name: status(port, NOT_A_NODE, name) for name in FILES[:4]} == dict.fromkeys(FILES[:4], 403)
        assert status(port, ADDRESSES["bootstrap"], "left-over.ign") == 403
        # the rest of the web root (the RHCOS images PXE boots from) stays open
        assert status(port, NOT_A_NODE, "rhcos-kernel") == 200


def test_once_bootstrap_is_over_its_file_has_no_reader(apache2, site):
    www = site / "installed" / "www"
    publish(www, FILES)
    plan = loopback_plan(www, bootstrap=False)
    assert "bootstrap" not in {n.name for n in plan.nodes}
    with serving(apache2, site / "installed", plan) as port:
        assert status(port, ADDRESSES["bootstrap"], "bootstrap.ign") == 403
        assert status(port, ADDRESSES["cp-0"], "master.ign") == 200


@pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as another user only when started as root")
def test_files_not_readable_by_the_servers_group_are_not_served(apache2, site):
    www = site / "mode" / "www"
    publish(www, ["master.ign"])
    os.chown(www / "master.ign", 0, 0)  # root:root 0640: the group is not the web server's
    with serving(apache2, site / "mode", loopback_plan(www)) as port:
        assert status(port, ADDRESSES["cp-0"], "master.ign") == 403
