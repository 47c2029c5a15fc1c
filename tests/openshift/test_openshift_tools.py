"""The rendered files checked by the real tools: haproxy, dnsmasq, ignition-validate, grub.

HAProxy and dnsmasq run on 127.0.0.1 ports with the rendered configuration; only the
endpoints (address:port), the hosts-file path and the TFTP lines are rewritten for loopback.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import dns.exception
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.reversename
import pytest
from openshift_helpers import sections, tool
from openshift_servers import (
    LOOPBACK,
    TcpResponder,
    TlsApiResponder,
    free_port,
    https_get,
    make_cert,
    remap_endpoints,
    stop,
    tcp_read,
    wait_for_port,
)

from components.config import load_lab
from components.openshift.files.dnsmasq import render_dnsmasq_conf, render_hosts
from components.openshift.files.haproxy import MCS_PORT, render_haproxy_cfg
from components.openshift.files.pxe import render_grub_cfg
from components.openshift.render import render_files
from labrules.openshift import API_PORT, HTTP_PORT, HTTPS_PORT


def lab_of(stack: str, **openshift_changes):
    raw = sections(stack)
    raw["openshift"].update(openshift_changes)
    return load_lab(raw)


def with_macs(raw_sections: dict) -> dict:
    """A MAC for every node: bare-metal ones listed, VMs through the vsphere section."""
    for i, node in enumerate(raw_sections["openshift"].get("nodes", [])):
        node["mac"] = f"52:54:00:00:00:{i:02x}"
    vs = raw_sections.get("vsphere")
    if vs:
        vs["bootstrap"]["mac"] = "00:50:56:00:00:ff"
        for key, base in (("controlPlane", 0x10), ("workers", 0x20)):
            vs[key]["macs"] = [f"00:50:56:00:00:{base + i:02x}" for i in range(len(vs[key]["names"]))]
    return raw_sections


# ---------------------------------------------------------------- haproxy -c


@pytest.mark.parametrize("stack", ["lab", "baremetal"])
@pytest.mark.parametrize("bootstrap", [True, False])
def test_haproxy_accepts_rendered_config(tmp_path, stack, bootstrap):
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(render_haproxy_cfg(lab_of(stack, bootstrap=bootstrap).plan.cluster))
    result = subprocess.run([tool("haproxy"), "-c", "-f", str(cfg)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ALERT" not in result.stdout + result.stderr


def test_haproxy_rejects_a_broken_config(tmp_path):
    # The check above is only worth something if haproxy -c does fail on bad input.
    text = render_haproxy_cfg(lab_of("baremetal").plan.cluster).replace("mode tcp", "mode tcpx", 1)
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(text)
    result = subprocess.run([tool("haproxy"), "-c", "-f", str(cfg)], capture_output=True, text=True, timeout=30)
    assert result.returncode != 0


# ---------------------------------------------------------------- live HAProxy


class LiveProxy:
    """The rendered haproxy.cfg on loopback, each node port served by a local stand-in."""

    def __init__(self, tmp_path: Path, lab, unhealthy: frozenset[str] = frozenset()):
        self.plan = lab.plan.cluster
        by_address = {n.address: n.name for n in self.plan.nodes}
        cert, key = make_cert(tmp_path)
        self.servers: dict[tuple[str, int], object] = {}

        def target(address: str, port: int) -> int:
            if address == self.plan.lb_address:  # a frontend
                return free_port()
            name = by_address[address]
            if port == API_PORT:
                server = TlsApiResponder(name, cert, key, healthy=name not in unhealthy)
            else:
                server = TcpResponder(name)
            self.servers[(name, port)] = server
            return server.port

        text, mapping = remap_endpoints(render_haproxy_cfg(self.plan), target)
        if os.geteuid() != 0:  # only root may switch to the haproxy user
            text = re.sub(r"(?m)^\s+(user|group) haproxy\n", "", text)
        self.frontends = {port: local for (addr, port), local in mapping.items() if addr == self.plan.lb_address}
        cfg = tmp_path / "haproxy.cfg"
        cfg.write_text(text)
        self.proc = subprocess.Popen([tool("haproxy"), "-db", "-f", str(cfg)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            for port in self.frontends.values():
                wait_for_port(port, proc=self.proc)
        except Exception:
            self.close()
            raise

    def api_responders(self, requests: int) -> list[str]:
        return [https_get(self.frontends[API_PORT], "/whoami") for _ in range(requests)]

    def tcp_responders(self, port: int, requests: int) -> list[str]:
        return [tcp_read(self.frontends[port]) for _ in range(requests)]

    def close(self) -> None:
        stop(self.proc)
        for server in self.servers.values():
            server.close()


@pytest.fixture
def live_proxy(tmp_path):
    started: list[LiveProxy] = []

    def start(lab, unhealthy=frozenset()) -> LiveProxy:
        proxy = LiveProxy(tmp_path, lab, frozenset(unhealthy))
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.close()


def reaches_exactly(fetch_round, expected: set[str], timeout_s: float = 10) -> None:
    """Rounds of requests reach only `expected`, and one round reaches all of it. A backend whose
    first health check timed out on a loaded machine is down for a moment, so one round alone
    may miss it; a name outside `expected` fails at once."""
    deadline = time.monotonic() + timeout_s
    while True:
        seen = set(fetch_round())
        assert seen <= expected, f"traffic reached {sorted(seen - expected)}"
        if seen == expected:
            return
        assert time.monotonic() < deadline, f"only {sorted(seen)} answered, expected {sorted(expected)}"
        time.sleep(0.3)


def test_haproxy_sends_api_and_machine_config_traffic_to_bootstrap_and_control_plane(live_proxy):
    proxy = live_proxy(lab_of("baremetal"))
    expected = {"bootstrap", "cp-0", "cp-1", "cp-2"}
    reaches_exactly(lambda: proxy.api_responders(8), expected)
    reaches_exactly(lambda: proxy.tcp_responders(MCS_PORT, 8), expected)
    # The API health check really is an HTTPS GET /readyz against each backend (checks are
    # spread over the 2 s interval).
    deadline = time.monotonic() + 6
    while not all(proxy.servers[(name, API_PORT)].readyz_hits for name in expected):
        assert time.monotonic() < deadline, "HAProxy did not GET /readyz on every API backend"
        time.sleep(0.1)


def test_haproxy_sends_ingress_traffic_to_workers_only(live_proxy):
    proxy = live_proxy(lab_of("baremetal"))
    reaches_exactly(lambda: proxy.tcp_responders(HTTP_PORT, 6), {"dgx-0", "dgx-1"})
    reaches_exactly(lambda: proxy.tcp_responders(HTTPS_PORT, 6), {"dgx-0", "dgx-1"})


def test_haproxy_without_bootstrap_reaches_only_the_control_plane(live_proxy):
    proxy = live_proxy(lab_of("baremetal", bootstrap=False))
    assert "bootstrap" not in {name for name, _ in proxy.servers}
    reaches_exactly(lambda: proxy.api_responders(9), {"cp-0", "cp-1", "cp-2"})
    reaches_exactly(lambda: proxy.tcp_responders(MCS_PORT, 9), {"cp-0", "cp-1", "cp-2"})


def test_haproxy_takes_a_control_plane_node_failing_readyz_out(live_proxy):
    proxy = live_proxy(lab_of("baremetal", bootstrap=False), unhealthy={"cp-2"})
    # inter 2s, fall 2: down within a few seconds; then rounds of requests never reach it
    deadline = time.monotonic() + 15
    clean_rounds = 0
    while clean_rounds < 2:
        assert time.monotonic() < deadline, "cp-2 kept receiving traffic although /readyz fails"
        seen = set(proxy.api_responders(4))
        clean_rounds = clean_rounds + 1 if seen == {"cp-0", "cp-1"} else 0
        time.sleep(0.3)
    assert proxy.servers[("cp-2", API_PORT)].readyz_hits >= 1


# ---------------------------------------------------------------- live dnsmasq


class LiveDns:
    def __init__(self, tmp_path: Path, lab):
        self.plan = lab.plan.cluster
        hosts = tmp_path / "hosts.dnsmasq"
        hosts.write_text(render_hosts(self.plan))
        conf = render_dnsmasq_conf(self.plan)
        conf = re.sub(r"(?m)^addn-hosts=.*$", f"addn-hosts={hosts}", conf)
        # TFTP would bind port 69 and need its root directory; not what this test is about.
        conf = re.sub(r"(?m)^(enable-tftp|tftp-root=.*)\n", "", conf)
        path = tmp_path / "dnsmasq.conf"
        path.write_text(conf)
        self.port = free_port()
        self.proc = subprocess.Popen(
            [tool("dnsmasq"), "--no-daemon", "-p", str(self.port), "--listen-address", LOOPBACK,
             "--bind-interfaces", "-C", str(path), "--pid-file=", "--user=" + _user()],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + 5
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dnsmasq exited: {self.proc.stderr.read()}")
            try:
                self.query("api." + self.plan.domain, "A")
                return
            except dns.exception.Timeout:
                if time.monotonic() > deadline:
                    raise

    def query(self, name: str, rdtype: str) -> dns.message.Message:
        return dns.query.udp(dns.message.make_query(name, rdtype), LOOPBACK, port=self.port, timeout=0.5)

    def answers(self, name: str, rdtype: str) -> list[str]:
        response = self.query(name, rdtype)
        return sorted(rr.to_text() for rrset in response.answer for rr in rrset
                      if rrset.rdtype == dns.rdatatype.from_text(rdtype))

    def close(self) -> None:
        stop(self.proc)


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


@pytest.fixture
def live_dns(tmp_path):
    started: list[LiveDns] = []

    def start(lab) -> LiveDns:
        server = LiveDns(tmp_path, lab)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def test_dnsmasq_answers_nodes_api_and_apps_wildcard(live_dns):
    server = live_dns(lab_of("baremetal"))
    d = "pod1.nvidia.com"
    assert server.answers(f"cp-0.{d}", "A") == ["10.33.3.50"]
    assert server.answers("dgx-1", "A") == ["10.33.3.46"]
    assert server.answers(f"bootstrap.{d}", "A") == ["10.33.3.53"]
    assert server.answers(f"api.{d}", "A") == ["10.33.3.54"]
    assert server.answers(f"api-int.{d}", "A") == ["10.33.3.54"]
    assert server.answers(f"console-openshift-console.apps.{d}", "A") == ["10.33.3.54"]
    assert server.answers(f"oauth-openshift.apps.{d}", "A") == ["10.33.3.54"]
    assert server.answers(f"etcd-2.{d}", "A") == ["10.33.3.52"]
    # the cluster domain is local: an unknown name is NXDOMAIN, not forwarded
    assert server.query(f"nothing-here.{d}", "A").rcode() == dns.rcode.NXDOMAIN


def test_dnsmasq_answers_reverse_and_etcd_srv(live_dns):
    server = live_dns(lab_of("baremetal"))
    d = "pod1.nvidia.com"
    for address, name in (("10.33.3.50", "cp-0"), ("10.33.3.44", "dgx-0"), ("10.33.3.53", "bootstrap")):
        assert server.answers(dns.reversename.from_address(address).to_text(), "PTR") == [f"{name}.{d}."]
    srv = server.answers(f"_etcd-server-ssl._tcp.{d}", "SRV")
    assert srv == [f"0 10 2380 etcd-{i}.{d}." for i in range(3)]


def test_dnsmasq_for_the_lab_resolves_vms_and_forgets_bootstrap_when_it_is_off(live_dns):
    on = live_dns(lab_of("lab"))
    assert on.answers("w03.kub1.lab.local", "A") == ["172.16.7.53"]
    assert on.answers("bs01.kub1.lab.local", "A") == ["172.16.7.10"]
    assert on.answers(dns.reversename.from_address("172.16.7.11").to_text(), "PTR") == ["m01.kub1.lab.local."]
    on.close()
    off = live_dns(lab_of("lab", bootstrap=False))
    assert off.query("bs01.kub1.lab.local", "A").rcode() == dns.rcode.NXDOMAIN
    assert off.answers("m01.kub1.lab.local", "A") == ["172.16.7.11"]


@pytest.mark.parametrize("stack", ["lab", "baremetal"])
def test_dnsmasq_accepts_config_with_dhcp_reservations_and_pxe(tmp_path, stack):
    raw = with_macs(sections(stack))
    raw["openshift"]["dhcp"] = {"enabled": True}
    raw["openshift"]["networks"]["gateway"] = "10.33.3.1" if stack == "baremetal" else "172.16.7.1"
    text = render_dnsmasq_conf(load_lab(raw).plan.cluster)
    assert text.count("dhcp-host=") == len(load_lab(raw).plan.cluster.nodes)
    conf = tmp_path / "dnsmasq.conf"
    conf.write_text(text)
    result = subprocess.run([tool("dnsmasq"), "--test", "-C", str(conf)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    conf.write_text(text + "dhcp-range=not-an-address\n")  # and it does reject nonsense
    assert subprocess.run([tool("dnsmasq"), "--test", "-C", str(conf)], capture_output=True, timeout=30).returncode


# ---------------------------------------------------------------- ignition-validate and GRUB


@pytest.mark.parametrize("stack", ["lab", "baremetal"])
def test_ignition_validate_accepts_every_pointer(tmp_path, stack):
    files = {k: v for k, v in render_files(lab_of(stack).plan.cluster).items() if k.startswith("openshift/ignition/")}
    assert sorted(Path(k).name for k in files) == ["bootstrap.ign", "master.ign", "worker.ign"]
    for rel, text in files.items():
        path = tmp_path / Path(rel).name
        path.write_text(text)
        result = subprocess.run([tool("ignition-validate"), str(path)], capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, f"{rel}: {result.stdout}{result.stderr}"


def test_ignition_validate_rejects_a_bad_pointer(tmp_path):
    text = render_files(lab_of("baremetal").plan.cluster)["openshift/ignition/master.ign"]
    doc = json.loads(text)
    doc["ignition"]["config"]["merge"][0]["source"] = "10.33.3.18:8080/master.ign"  # no scheme
    path = tmp_path / "bad.ign"
    path.write_text(json.dumps(doc))
    assert subprocess.run([tool("ignition-validate"), str(path)], capture_output=True, timeout=30).returncode != 0


@pytest.mark.parametrize("stack", ["lab", "baremetal"])
def test_grub_cfg_is_valid_grub_script(tmp_path, stack):
    raw = with_macs(sections(stack))
    for text in (render_grub_cfg(load_lab(raw).plan.cluster), render_files(lab_of(stack).plan.cluster)["openshift/pxe/grub.cfg"]):
        path = tmp_path / "grub.cfg"
        path.write_text(text)
        result = subprocess.run([tool("grub-script-check"), str(path)], capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stdout + result.stderr
