"""Renderers: parse what they produce, and run the shell steps against stand-in tools."""

from __future__ import annotations

import base64
import grp
import json
import os
import re
import shutil
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from openshift_helpers import sections, tool

from components.config import load_lab
from components.openshift.files.cluster_nodes import render_csr_script, render_remove_node_script
from components.openshift.files.common import file_bundle
from components.openshift.files.dnsmasq import render_dnsmasq_conf, render_hosts
from components.openshift.files.haproxy import load_balancer_intent, render_haproxy_cfg
from components.openshift.files.helper_steps import helper_files, render_helper_step, render_ignition_publish
from components.openshift.files.ignition import network_kargs, render_pointer_ignition, vm_extra_config
from components.openshift.files.install_config import masters_schedulable, render_install_config
from components.openshift.files.installer import (
    install_dir_bundle,
    parse_ignition_stdout,
    render_ignition_script,
    render_wait_script,
)
from components.openshift.files.patches import (
    patch_bundle,
    pull_secret_patches,
    render_patch_script,
    ssh_key_patches,
    vcenter_credential_patches,
)
from components.openshift.files.pxe import (
    pxelinux_mac_name,
    render_grub_cfg,
    render_pxelinux_default,
    render_pxelinux_node,
)
from components.openshift.render import render_files

PULL = '{"auths":{"registry.example":{"auth":"c2VjcmV0"}}}'
SSH = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample core@lab"


def lab_of(stack: str, mutate=None):
    raw = sections(stack)
    if mutate:
        mutate(raw)
    return load_lab(raw)


def guide(**changes):
    return lab_of("baremetal", lambda raw: raw["openshift"].update(changes)).plan.cluster


def lab(**changes):
    return lab_of("lab", lambda raw: raw["openshift"].update(changes)).plan.cluster


def haproxy_sections(text: str) -> dict[str, dict]:
    """listen name -> {bind, servers: [(name, address:port, options)], lines}."""
    out: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("listen "):
            current = out.setdefault(line.split()[1], {"servers": [], "lines": []})
        elif current is not None and line.startswith("    "):
            words = line.split()
            current["lines"].append(line.strip())
            if words[0] == "bind":
                current["bind"] = words[1]
            elif words[0] == "server":
                current["servers"].append((words[1], words[2], " ".join(words[3:])))
        elif not line.strip():
            current = None
    return out


# ---------------------------------------------------------------- install-config


def test_install_config_carries_the_guide_cluster_and_the_secrets_passed_in():
    doc = yaml.safe_load(render_install_config(guide(), PULL, SSH))
    assert doc["baseDomain"] == "nvidia.com" and doc["metadata"]["name"] == "pod1"
    assert doc["controlPlane"] == {"name": "master", "hyperthreading": "Enabled", "replicas": 3}
    assert doc["compute"] == [{"name": "worker", "hyperthreading": "Enabled", "replicas": 0}]
    assert doc["networking"] == {
        "networkType": "OVNKubernetes",
        "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
        "serviceNetwork": ["172.30.0.0/16"],
        "machineNetwork": [{"cidr": "10.33.3.0/24"}],
    }
    assert doc["platform"] == {"none": {}}
    assert json.loads(doc["pullSecret"]) == json.loads(PULL)
    assert doc["sshKey"] == SSH
    assert "bootstrapInPlace" not in doc


def test_install_config_counts_the_control_plane_and_leaves_the_workers_out():
    # openshift-install takes controlPlane.replicas as the number of control-plane machines and
    # sizes etcd from it (openshift/installer pkg/asset/ignition/bootstrap/common.go,
    # getTemplateData); 0 is refused (pkg/types/validation/installconfig.go, validateControlPlane).
    # Compute replicas stay 0 as in Red Hat's sample install-config for user-provisioned
    # infrastructure: the workers join by themselves, and a worker added later must not change
    # what the (once-only) install saw. On platform vsphere a non-zero count would also make the
    # installer create a MachineSet of that many more VMs (pkg/asset/machines/worker.go).
    def dgx(raw):
        raw["openshift"]["nodes"] = [
            {"name": "dgx-0", "role": "worker", "address": "172.16.7.60", "mac": "0c:42:a1:00:00:60"},
        ]

    def to_vsphere(raw):
        raw["openshift"].update(platform="vsphere", vcenter={"server": "vc1.lab.local", "user": "admin@lab"})

    for cluster in (lab(), lab_of("lab", dgx).plan.cluster, lab_of("lab", to_vsphere).plan.cluster):
        doc = yaml.safe_load(render_install_config(cluster, PULL, SSH, "vc-pass"))
        assert (doc["controlPlane"]["replicas"], doc["compute"][0]["replicas"]) == (3, 0)


def test_install_config_is_the_same_with_one_worker_more():
    def more(raw):
        raw["vsphere"]["workers"]["names"].append("sckubw09")
    assert render_install_config(lab_of("lab", more).plan.cluster, PULL, SSH) == render_install_config(lab(), PULL, SSH)


def test_control_plane_is_schedulable_only_without_workers():
    # With compute replicas 0 openshift-install writes mastersSchedulable: true
    # (openshift/installer pkg/asset/manifests/scheduler.go); clusters with workers take it back.
    assert masters_schedulable(lab()) is False and masters_schedulable(guide()) is False
    assert masters_schedulable(lab_of("baremetal", lambda raw: raw["openshift"].update(
        nodes=[n for n in raw["openshift"]["nodes"] if n["role"] != "worker"])).plan.cluster) is True


def test_install_config_for_vsphere_platform_names_vcenter_and_topology():
    def to_vsphere(raw):
        raw["openshift"].update(platform="vsphere", vcenter={"server": "vc1.lab.local", "user": "admin@lab"})
    p = lab_of("lab", to_vsphere).plan.cluster
    doc = yaml.safe_load(render_install_config(p, PULL, SSH, "vc-pass"))
    vc = doc["platform"]["vsphere"]["vcenters"][0]
    assert vc == {"server": "vc1.lab.local", "user": "admin@lab", "password": "vc-pass", "datacenters": ["dc1"]}
    topology = doc["platform"]["vsphere"]["failureDomains"][0]["topology"]
    assert topology["computeCluster"] == "/dc1/host/gpu-cluster"
    assert topology["datastore"] == "/dc1/datastore/vsanDatastore"


def test_install_config_single_node_installs_in_place():
    def one_node(raw):
        oc = raw["openshift"]
        oc["nodes"] = [n for n in oc["nodes"] if n["name"] in ("cp-0",)]
        oc.update(singleNode=True, bootstrap=False)
    doc = yaml.safe_load(render_install_config(lab_of("baremetal", one_node).plan.cluster, PULL, SSH))
    assert doc["controlPlane"]["replicas"] == 1
    assert doc["bootstrapInPlace"] == {"installationDisk": "/dev/vda"}


@pytest.mark.parametrize("stack", ["lab", "baremetal"])
def test_render_files_writes_the_layout_with_secrets_redacted(stack):
    files = render_files(lab_of(stack).plan.cluster)
    expected = {
        "openshift/install-config.yaml", "openshift/dnsmasq.conf", "openshift/hosts.dnsmasq",
        "openshift/haproxy.cfg", "openshift/pxe/pxelinux.cfg/default", "openshift/pxe/grub.cfg",
        "openshift/ignition/bootstrap.ign", "openshift/ignition/master.ign", "openshift/ignition/worker.ign",
        "openshift/httpd/gpu-lab-ignition.conf",
    }
    assert set(files) == expected
    doc = yaml.safe_load(files["openshift/install-config.yaml"])
    assert doc["pullSecret"] == "<redacted>" and doc["sshKey"] == "<redacted>"


def test_render_files_adds_a_pxelinux_file_per_bare_metal_mac():
    def macs(raw):
        raw["openshift"]["nodes"][4]["mac"] = "0C:42:A1:00:00:44"
    files = render_files(lab_of("baremetal", macs).plan.cluster)
    assert "openshift/pxe/pxelinux.cfg/01-0c-42-a1-00-00-44" in files


# ---------------------------------------------------------------- DNS


def test_hosts_file_puts_each_node_name_first_then_its_fqdn():
    lines = [line.split() for line in render_hosts(guide()).splitlines() if not line.startswith("#")]
    by_address = {words[0]: words[1:] for words in lines}
    assert by_address["10.33.3.50"] == ["cp-0", "cp-0.pod1.nvidia.com", "etcd-0.pod1.nvidia.com"]
    assert by_address["10.33.3.52"][2] == "etcd-2.pod1.nvidia.com"
    assert by_address["10.33.3.44"] == ["dgx-0", "dgx-0.pod1.nvidia.com"]
    assert by_address["10.33.3.53"] == ["bootstrap", "bootstrap.pod1.nvidia.com"]
    assert by_address["10.33.3.54"] == ["api.pod1.nvidia.com", "api-int.pod1.nvidia.com"]
    assert "10.33.3.53" not in render_hosts(guide(bootstrap=False))


def test_dnsmasq_conf_has_wildcard_ptr_srv_and_pxe_for_the_guide():
    lines = render_dnsmasq_conf(guide()).splitlines()
    assert "address=/apps.pod1.nvidia.com/10.33.3.54" in lines
    assert "local=/pod1.nvidia.com/" in lines
    assert "addn-hosts=/etc/hosts.dnsmasq" in lines
    assert "ptr-record=50.3.33.10.in-addr.arpa,cp-0.pod1.nvidia.com" in lines
    assert [x for x in lines if x.startswith("srv-host=")] == [
        f"srv-host=_etcd-server-ssl._tcp.pod1.nvidia.com,etcd-{i}.pod1.nvidia.com,2380,0,10" for i in range(3)]
    assert "dhcp-match=set:efi-x86_64,option:client-arch,7" in lines
    assert "dhcp-match=set:efi-x86_64,option:client-arch,9" in lines
    assert "dhcp-boot=tag:efi-x86_64,grubx64.efi" in lines
    assert "dhcp-boot=tag:!efi-x86_64,pxelinux.0" in lines
    assert not [x for x in lines if x.startswith(("dhcp-range", "dhcp-host"))]  # DHCP is opt-in


def test_dnsmasq_conf_for_the_lab_has_no_pxe_and_upstreams_when_given():
    text = render_dnsmasq_conf(lab())
    assert "enable-tftp" not in text and "dhcp-boot" not in text
    lines = render_dnsmasq_conf(lab(helper={"address": "172.16.7.5", "dnsUpstreams": ["172.16.31.1"]})).splitlines()
    assert "no-resolv" in lines and "server=172.16.31.1" in lines


def test_dnsmasq_dhcp_reserves_by_mac_only():
    def dhcp(raw):
        oc = raw["openshift"]
        oc["dhcp"] = {"enabled": True, "leaseTime": "1h"}
        oc["networks"]["gateway"] = "10.33.3.1"
        oc["nodes"][4]["mac"] = "0c:42:a1:00:00:44"
    lines = render_dnsmasq_conf(lab_of("baremetal", dhcp).plan.cluster).splitlines()
    assert "dhcp-range=set:machine0,10.33.3.0,static,255.255.255.0,1h" in lines
    assert "dhcp-option=tag:machine0,option:router,10.33.3.1" in lines
    assert "dhcp-option=option:dns-server,10.33.3.18" in lines
    assert [x for x in lines if x.startswith("dhcp-host=")] == ["dhcp-host=0c:42:a1:00:00:44,10.33.3.44,dgx-0,1h"]


# ---------------------------------------------------------------- HAProxy


def test_haproxy_backends_follow_the_guide():
    listens = haproxy_sections(render_haproxy_cfg(guide()))
    assert set(listens) == {"api-server", "machine-config-server", "ingress-http", "ingress-https"}
    assert listens["api-server"]["bind"] == "10.33.3.54:6443"
    assert [(n, a) for n, a, _ in listens["api-server"]["servers"]] == [
        ("bootstrap", "10.33.3.53:6443"), ("cp-0", "10.33.3.50:6443"),
        ("cp-1", "10.33.3.51:6443"), ("cp-2", "10.33.3.52:6443")]
    assert [n for n, _, _ in listens["machine-config-server"]["servers"]] == ["bootstrap", "cp-0", "cp-1", "cp-2"]
    assert [(n, a) for n, a, _ in listens["ingress-https"]["servers"]] == [
        ("dgx-0", "10.33.3.44:443"), ("dgx-1", "10.33.3.46:443")]
    assert [a for _, a, _ in listens["ingress-http"]["servers"]] == ["10.33.3.44:80", "10.33.3.46:80"]


def test_haproxy_checks_api_readyz_over_tls_and_uses_addresses_only():
    text = render_haproxy_cfg(guide())
    listens = haproxy_sections(text)
    api = listens["api-server"]
    assert "http-check send meth GET uri /readyz" in api["lines"]
    assert "http-check expect status 200" in api["lines"]
    assert all(opts == "check check-ssl verify none" for _, _, opts in api["servers"])
    assert all(opts == "check" for listen in ("machine-config-server", "ingress-http", "ingress-https")
               for _, _, opts in listens[listen]["servers"])
    assert "mode tcp" in text
    for listen in listens.values():
        for _, address, _ in listen["servers"]:
            assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+:\d+", address)


def test_haproxy_without_bootstrap_has_no_bootstrap_server():
    text = render_haproxy_cfg(guide(bootstrap=False))
    assert "bootstrap" not in text
    listens = haproxy_sections(text)
    assert [n for n, _, _ in listens["api-server"]["servers"]] == ["cp-0", "cp-1", "cp-2"]


def test_haproxy_ingress_nodes_override_and_compact_cluster():
    listens = haproxy_sections(render_haproxy_cfg(guide(ingressNodes=["dgx-1"])))
    assert [n for n, _, _ in listens["ingress-http"]["servers"]] == ["dgx-1"]

    def compact(raw):
        raw["openshift"]["nodes"] = [n for n in raw["openshift"]["nodes"] if n["role"] != "worker"]
    listens = haproxy_sections(render_haproxy_cfg(lab_of("baremetal", compact).plan.cluster))
    assert [n for n, _, _ in listens["ingress-https"]["servers"]] == ["cp-0", "cp-1", "cp-2"]


def test_load_balancer_intent_matches_the_config():
    intent = load_balancer_intent(guide(bootstrap=False))
    assert intent["frontends"] == [6443, 22623, 80, 443]
    assert intent["backends"]["6443"] == ["cp-0", "cp-1", "cp-2"]
    assert intent["backends"]["443"] == ["dgx-0", "dgx-1"]
    assert "bootstrap" in load_balancer_intent(guide())["backends"]["22623"]


# ---------------------------------------------------------------- PXE and ignition


def _pxelinux_entries(text: str) -> dict[str, dict[str, str]]:
    entries: dict[str, dict[str, str]] = {}
    label = None
    for line in text.splitlines():
        words = line.split(None, 1)
        if not words:
            continue
        if words[0] == "LABEL":
            label = words[1]
            entries[label] = {}
        elif label and len(words) == 2:
            entries[label][words[0]] = words[1]
    return entries


def _kargs(append: str) -> dict[str, str]:
    return dict(arg.split("=", 1) for arg in append.split() if "=" in arg)


def test_pxelinux_has_one_entry_per_role_with_coreos_arguments():
    text = render_pxelinux_default(guide())
    assert text.splitlines()[2] == "DEFAULT local"
    entries = _pxelinux_entries(text)
    assert entries["local"]["LOCALBOOT"] == "0"
    for label in ("bootstrap", "master", "worker"):
        assert entries[label]["KERNEL"] == "http://10.33.3.18:8080/rhcos/rhcos-live-kernel-x86_64"
        args = _kargs(entries[label]["APPEND"])
        assert args["initrd"] == "http://10.33.3.18:8080/rhcos/rhcos-live-initramfs.x86_64.img"
        assert args["coreos.live.rootfs_url"] == "http://10.33.3.18:8080/rhcos/rhcos-live-rootfs.x86_64.img"
        assert args["coreos.inst.ignition_url"] == f"http://10.33.3.18:8080/{label}.ign"
    assert _kargs(entries["master"]["APPEND"])["coreos.inst.install_dev"] == "/dev/vda"
    # every worker of the guide installs to /dev/sda, so the role entry does too
    assert _kargs(entries["worker"]["APPEND"])["coreos.inst.install_dev"] == "/dev/sda"


def test_pxe_selects_a_known_machine_by_mac():
    def macs(raw):
        raw["openshift"]["nodes"][5].update(mac="0c:42:a1:00:00:46", installDevice="/dev/nvme0n1")
    p = lab_of("baremetal", macs).plan.cluster
    worker1 = next(n for n in p.nodes if n.name == "dgx-1")
    assert pxelinux_mac_name(worker1.mac) == "01-0c-42-a1-00-00-46"
    entries = _pxelinux_entries(render_pxelinux_node(p, worker1))
    assert _kargs(entries["dgx-1"]["APPEND"])["coreos.inst.install_dev"] == "/dev/nvme0n1"
    assert _kargs(entries["dgx-1"]["APPEND"])["coreos.inst.ignition_url"] == "http://10.33.3.18:8080/worker.ign"
    grub = render_grub_cfg(p)
    assert 'if [ "${net_default_mac}" = "0c:42:a1:00:00:46" ]; then\n    set default=dgx-1' in grub
    assert "menuentry 'Install RHCOS: dgx-1 (worker)' --id dgx-1 {" in grub


def test_grub_cfg_fetches_over_http_with_the_same_arguments():
    grub = render_grub_cfg(guide())
    assert "set default=local" in grub
    linux = re.search(r"--id master \{\n\s+linux (\S+) (.*)\n\s+initrd (\S+)", grub)
    assert linux.group(1) == "(http,10.33.3.18:8080)/rhcos/rhcos-live-kernel-x86_64"
    assert linux.group(3) == "(http,10.33.3.18:8080)/rhcos/rhcos-live-initramfs.x86_64.img"
    args = _kargs(linux.group(2))
    assert args["coreos.inst.ignition_url"] == "http://10.33.3.18:8080/master.ign"
    assert args["coreos.inst.install_dev"] == "/dev/vda"


def test_absolute_image_urls_are_used_as_given():
    p = guide(rhcos={"kernel": "http://mirror.lab:8000/k", "initramfs": "i.img", "rootfs": "https://m.lab/r.img"})
    entries = _pxelinux_entries(render_pxelinux_default(p))
    assert entries["worker"]["KERNEL"] == "http://mirror.lab:8000/k"
    assert _kargs(entries["worker"]["APPEND"])["coreos.live.rootfs_url"] == "https://m.lab/r.img"
    assert "linux (http,mirror.lab:8000)/k" in render_grub_cfg(p)


def test_pointer_ignition_merges_the_full_config_from_the_helper():
    doc = json.loads(render_pointer_ignition(lab(), "control-plane"))
    assert doc == {"ignition": {"version": "3.2.0", "config": {"merge": [{"source": "http://172.16.7.5:8080/master.ign"}]}}}


def test_vsphere_nodes_get_static_network_kernel_arguments():
    p = lab(networks={"machineNetwork": ["172.16.7.0/24"], "gateway": "172.16.7.1"})
    nodes = {n.name: n for n in p.nodes}
    assert network_kargs(p, nodes["m01"]) == (
        "ip=172.16.7.11::172.16.7.1:255.255.255.0:m01.kub1.lab.local:ens192:none nameserver=172.16.7.5")
    # workers: the PVRDMA NIC too, with the RDMA network's jumbo MTU and no gateway
    assert network_kargs(p, nodes["w02"]).split() == [
        "ip=172.16.7.52::172.16.7.1:255.255.255.0:w02.kub1.lab.local:ens192:none",
        "ip=192.168.0.52:::255.255.255.0::ens224:none:9000",
        "nameserver=172.16.7.5",
    ]


def test_vm_extra_config_is_base64_ignition_and_kargs():
    extra = vm_extra_config('{"ignition":{}}', "ip=1.2.3.4::::h:ens192:none")
    assert base64.b64decode(extra["guestinfo.ignition.config.data"]) == b'{"ignition":{}}'
    assert extra["guestinfo.ignition.config.data.encoding"] == "base64"
    assert extra["guestinfo.afterburn.initrd.network-kargs"] == "ip=1.2.3.4::::h:ens192:none"


# ---------------------------------------------------------------- the ignition step, with a stand-in installer


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


FAKE_INSTALLER = textwrap.dedent("""\
    #!/bin/sh
    # stand-in for openshift-install: --dir D create manifests|ignition-configs
    set -eu
    dir=$2
    printf '%s\\n' "$*" >> "$dir/../installer-calls"
    if [ "$4" = manifests ]; then
        # what the real one writes with compute replicas 0 (pkg/asset/manifests/scheduler.go)
        mkdir -p "$dir/manifests"
        printf 'apiVersion: config.openshift.io/v1\\nkind: Scheduler\\nspec:\\n  mastersSchedulable: true\\n' \\
            > "$dir/manifests/cluster-scheduler-02-config.yml"
        exit 0
    fi
    test -f "$dir/install-config.yaml"
    name=$(awk '/^metadata:/ {getline; sub(/^  name: /, ""); print}' "$dir/install-config.yaml")
    rm "$dir/install-config.yaml"
    cp "$dir/manifests/cluster-scheduler-02-config.yml" "$dir/../scheduler-seen"
    mkdir -p "$dir/auth"
    for role in bootstrap master worker; do echo "{\\"$role\\": \\"$name\\"}" > "$dir/$role.ign"; done
    echo "kubeconfig-of-$name" > "$dir/auth/kubeconfig"
    echo "password-of-$name" > "$dir/auth/kubeadmin-password"
    echo "{\\"clusterName\\": \\"$name\\"}" > "$dir/metadata.json"
    echo '{"*installconfig.InstallConfig": {}}' > "$dir/.openshift_install_state.json"
    echo "INFO Ignition-Configs created" >&2
    """)


def run_ignition_script(tmp_path: Path, schedulable: bool) -> tuple[subprocess.CompletedProcess, Path]:
    (tmp_path / "open shift").mkdir()
    installer = executable(tmp_path / "open shift" / "openshift-install", FAKE_INSTALLER)
    install_dir = tmp_path / "it's an $install dir"  # blanks, a quote and a dollar reach the installer intact
    install_dir.mkdir()
    (install_dir / "stale.ign").write_text("from an earlier cluster")
    script = render_ignition_script(str(install_dir), str(installer), schedulable_control_plane=schedulable)
    result = subprocess.run(["sh", "-c", script], input=render_install_config(guide(), PULL, SSH),
                            capture_output=True, text=True, timeout=30)
    return result, install_dir


def test_ignition_script_runs_the_installer_and_returns_what_the_cluster_needs_later(tmp_path):
    result, install_dir = run_ignition_script(tmp_path, schedulable=False)
    assert result.returncode == 0, result.stderr
    files = parse_ignition_stdout(result.stdout)
    assert files == {
        "bootstrap": '{"bootstrap": "pod1"}\n', "master": '{"master": "pod1"}\n',
        "worker": '{"worker": "pod1"}\n', "kubeconfig": "kubeconfig-of-pod1\n",
        "kubeadminPassword": "password-of-pod1\n", "metadata": '{"clusterName": "pod1"}\n',
        "installState": '{"*installconfig.InstallConfig": {}}\n'}
    assert (tmp_path / "installer-calls").read_text().splitlines() == [
        f"--dir {install_dir} create manifests", f"--dir {install_dir} create ignition-configs"]
    assert not (install_dir / "stale.ign").exists()  # every run starts from an empty dir
    assert (install_dir / "install-config.yaml.orig").read_text() == render_install_config(guide(), PULL, SSH)
    assert "INFO Ignition-Configs created" in result.stderr  # installer chatter stays off stdout
    assert stat.S_IMODE((install_dir / "install-config.yaml.orig").stat().st_mode) == 0o600
    # a cluster with workers keeps its control plane for itself
    assert "mastersSchedulable: false" in (tmp_path / "scheduler-seen").read_text()


def test_ignition_script_keeps_the_install_dir_and_its_credentials_private(tmp_path):
    # The runner keeps build/<stack>/openshift-install after the job: the kubeconfig, the kubeadmin
    # password and the installer's state in it must not be readable by the runner's other users,
    # even when the caller's umask is 022, the dir does not exist yet, and the installer picks
    # world-readable modes for a file of its own.
    (tmp_path / "bin").mkdir()
    installer = executable(tmp_path / "bin" / "openshift-install",
                           FAKE_INSTALLER + 'echo log > "$dir/.openshift_install.log"; chmod 644 "$dir/.openshift_install.log"\n')
    install_dir = tmp_path / "build" / "lab" / "openshift-install"
    script = render_ignition_script(str(install_dir), str(installer))
    result = subprocess.run(["sh", "-c", f"umask 022; {script}"], input=render_install_config(guide(), PULL, SSH),
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(install_dir.stat().st_mode) == 0o700
    found = {p.relative_to(install_dir).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in install_dir.rglob("*")}
    assert {"auth/kubeconfig", "auth/kubeadmin-password", ".openshift_install_state.json",
            ".openshift_install.log", "manifests"} <= set(found)
    assert {path: mode for path, mode in found.items() if mode & 0o077} == {}
    assert stat.S_IMODE(install_dir.parent.stat().st_mode) & 0o077 == 0  # the parents it made, too


def test_ignition_script_keeps_a_compact_control_plane_schedulable(tmp_path):
    result, _ = run_ignition_script(tmp_path, schedulable=True)
    assert result.returncode == 0, result.stderr
    assert "mastersSchedulable: true" in (tmp_path / "scheduler-seen").read_text()


def test_ignition_script_names_a_missing_installer(tmp_path):
    script = render_ignition_script(str(tmp_path / "install"), str(tmp_path / "no-such-openshift-install"))
    result = subprocess.run(["sh", "-c", script], input="x", capture_output=True, text=True, timeout=30)
    assert result.returncode == 127
    assert "openshift-install not found" in result.stderr and "gpu-lab:openshift.installer" in result.stderr
    assert not (tmp_path / "install").exists()


def test_parse_ignition_stdout_of_a_stack_built_before_the_assets_were_kept():
    old = {k: base64.b64encode(v.encode()).decode() for k, v in
           {"bootstrap": "b", "master": "m", "worker": "w", "kubeconfig": "k"}.items()}
    assert parse_ignition_stdout(json.dumps(old)) == {"bootstrap": "b", "master": "m", "worker": "w", "kubeconfig": "k"}


FAKE_WAIT_INSTALLER = textwrap.dedent("""\
    #!/bin/sh
    # stand-in for openshift-install: --dir D wait-for STAGE; records what it found in D
    find "$2" -type f | sort > "$2/../found"
    cat "$2/auth/kubeconfig" > "$2/../kubeconfig-seen"
    """)


def test_wait_script_puts_a_missing_install_dir_back_and_keeps_what_is_there(tmp_path):
    installer = executable(tmp_path / "openshift-install", FAKE_WAIT_INSTALLER)
    install_dir = tmp_path / "install"
    generated = {"kubeconfig": "kube", "kubeadminPassword": "pw", "metadata": "{}", "installState": "{}",
                 "master": "m", "worker": "w", "bootstrap": "b"}
    bundle = install_dir_bundle(generated)
    script = render_wait_script(str(install_dir), str(installer), "install-complete")
    result = subprocess.run(["sh", "-c", script], input=bundle, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "found").read_text().split() == sorted(str(install_dir / p) for p in (
        ".openshift_install_state.json", "auth/kubeadmin-password", "auth/kubeconfig", "bootstrap.ign",
        "master.ign", "metadata.json", "worker.ign"))
    assert stat.S_IMODE((install_dir / "auth/kubeconfig").stat().st_mode) == 0o600
    (install_dir / "auth/kubeconfig").write_text("kube-of-this-machine")
    result = subprocess.run(["sh", "-c", script], input=bundle, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and (tmp_path / "kubeconfig-seen").read_text() == "kube-of-this-machine"


def test_bundles_refuse_paths_that_leave_their_directory():
    for bad in ("/etc/passwd", "../x", "a b"):
        with pytest.raises(ValueError):
            file_bundle({bad: "x"})


def test_parse_ignition_stdout_before_the_command_ran():
    assert parse_ignition_stdout(None) == {} and parse_ignition_stdout("") == {}


# ---------------------------------------------------------------- CSR approval, with a stand-in oc


FAKE_OC = textwrap.dedent("""\
    #!/usr/bin/env python3
    # stand-in for oc: pending CSRs and nodes in files of the state directory; every call logged
    import json, os, sys
    state = os.environ["FAKE_OC_STATE"]
    def load(name):
        with open(os.path.join(state, name)) as f:
            return json.load(f)
    def save(name, value):
        with open(os.path.join(state, name), "w") as f:
            json.dump(value, f)
    args = [a for a in sys.argv[1:] if not a.startswith("--request-timeout")]
    with open(os.environ["KUBECONFIG"]) as f:
        assert f.read() == "kubeconfig of the lab", "the kubeconfig from stdin"
    with open(os.path.join(state, "calls"), "a") as f:
        f.write(" ".join(args) + "\\n")
    if os.path.exists(os.path.join(state, "unreachable")):
        sys.exit("Unable to connect to the server: dial tcp: i/o timeout")
    if args[:2] == ["get", "csr"]:
        for csr in load("pending.json"):
            print(csr["name"], csr["user"], csr["request"])
    elif args[:2] == ["get", "nodes"]:
        for node in load("nodes.json"):
            print("node/" + node)
    elif args[:2] == ["get", "node"]:
        if args[2] not in load("nodes.json"):
            sys.exit('Error from server (NotFound): nodes "%s" not found' % args[2])
        print("node/" + args[2])
    elif args[:3] == ["adm", "certificate", "approve"]:
        pending, nodes, approved = load("pending.json"), load("nodes.json"), load("approved.json")
        csr = next(c for c in pending if c["name"] == args[3])
        pending.remove(csr)
        approved.append(csr["name"])
        if csr.get("joins"):  # a client CSR: the node registers, then asks for a serving cert
            nodes.append(csr["joins"])
            pending.append({"name": csr["name"] + "-serving", "user": "system:node:" + csr["joins"], "request": "x"})
        save("pending.json", pending); save("nodes.json", nodes); save("approved.json", approved)
    elif args[:2] == ["adm", "drain"] and os.path.exists(os.path.join(state, "drain-fails")):
        # as oc 4.x reports a pod a PodDisruptionBudget protects, once --timeout has passed
        sys.exit('error when evicting pods/"train-0" -n "ml" (will retry after 5s): Cannot evict pod as it '
                 "would violate the pod disruption budget; there are pending nodes to be drained: " + args[2])
    elif args[:2] in (["adm", "cordon"], ["adm", "drain"]):
        pass
    elif args[:2] == ["delete", "node"]:
        save("nodes.json", [n for n in load("nodes.json") if n != args[2]])
    elif args[0] == "patch":
        patch = args[-1].split("=", 1)[1]
        with open(patch) as f:
            body = f.read()
        with open(os.path.join(state, "patches"), "a") as f:
            f.write(json.dumps({"target": " ".join(args[1:-1]), "body": json.loads(body)}) + "\\n")
    else:
        sys.exit("unexpected oc call: %s" % args)
    """)

BOOTSTRAPPER = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
KUBECONFIG_TEXT = "kubeconfig of the lab"


def csr_request(tmp_path: Path, common_name: str) -> str:
    pem = subprocess.run(
        [tool("openssl"), "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(tmp_path / "key.pem"), "-subj", f"/O=system:nodes/CN={common_name}"],
        check=True, capture_output=True, timeout=30).stdout
    return base64.b64encode(pem).decode()


def fake_oc(tmp_path: Path, pending: list[dict], nodes: list[str]) -> tuple[Path, Path]:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    (state / "pending.json").write_text(json.dumps(pending))
    (state / "nodes.json").write_text(json.dumps(nodes))
    (state / "approved.json").write_text("[]")
    return executable(tmp_path / "oc", FAKE_OC), state


def run_oc_script(script: str, state: Path, stdin: str = KUBECONFIG_TEXT) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", script], input=stdin, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "FAKE_OC_STATE": str(state)})


def run_csr(tmp_path: Path, pending: list[dict], nodes: list[str], names: list[str], timeout_s: int = 20):
    oc, state = fake_oc(tmp_path, pending, nodes)
    script = render_csr_script(guide(), str(oc), names, timeout_s=timeout_s, interval_s=0)
    return run_oc_script(script, state), json.loads((state / "approved.json").read_text())


def test_csr_approval_is_limited_to_the_named_nodes(tmp_path):
    masters = ["cp-0", "cp-1", "cp-2"]
    pending = [
        {"name": "csr-w0", "user": BOOTSTRAPPER, "request": csr_request(tmp_path, "system:node:dgx-0"),
         "joins": "dgx-0"},
        {"name": "csr-w1", "user": BOOTSTRAPPER,
         "request": csr_request(tmp_path, "system:node:dgx-1.pod1.nvidia.com"),
         "joins": "dgx-1.pod1.nvidia.com"},
        {"name": "csr-intruder", "user": BOOTSTRAPPER, "request": csr_request(tmp_path, "system:node:intruder")},
        {"name": "csr-two-names", "user": BOOTSTRAPPER,
         "request": csr_request(tmp_path, "system:node:dgx-0 dgx-1")},
        {"name": "csr-serving-evil", "user": "system:node:evil", "request": "x"},
        {"name": "csr-lookalike", "user": "system:node:dgx-0x", "request": "x"},
        {"name": "csr-other", "user": "system:serviceaccount:default:builder", "request": "x"},
    ]
    result, approved = run_csr(tmp_path, pending, masters, ["dgx-0", "dgx-1"])
    assert result.returncode == 0, result.stderr
    assert sorted(approved) == ["csr-w0", "csr-w0-serving", "csr-w1", "csr-w1-serving"]
    assert "leaving CSR csr-intruder of 'intruder' pending" in result.stderr
    assert "leaving CSR csr-serving-evil of 'evil' pending" in result.stderr
    assert "leaving CSR csr-two-names of 'dgx-0 dgx-1' pending" in result.stderr
    assert "every configured node has joined" in result.stdout


def test_a_new_node_approves_its_own_csrs_only(tmp_path):
    pending = [
        {"name": "csr-w0", "user": BOOTSTRAPPER, "request": csr_request(tmp_path, "system:node:dgx-0"),
         "joins": "dgx-0"},
        {"name": "csr-w1", "user": BOOTSTRAPPER, "request": csr_request(tmp_path, "system:node:dgx-1"),
         "joins": "dgx-1"},
    ]
    result, approved = run_csr(tmp_path, pending, ["cp-0"], ["dgx-1"])
    assert result.returncode == 0, result.stderr
    assert sorted(approved) == ["csr-w1", "csr-w1-serving"]


def test_csr_approval_gives_up_naming_the_missing_node(tmp_path):
    result, approved = run_csr(tmp_path, [], ["cp-0", "cp-1", "cp-2", "dgx-0"], ["dgx-0", "dgx-1"], timeout_s=1)
    assert result.returncode == 1
    assert "nodes not joined: dgx-1" in result.stderr
    assert approved == []


def test_a_node_that_leaves_is_drained_then_deleted(tmp_path):
    oc, state = fake_oc(tmp_path, [], ["cp-0", "dgx-0", "dgx-1.pod1.nvidia.com"])
    for node in ("dgx-0", "dgx-1"):
        result = run_oc_script(render_remove_node_script(guide(), str(oc), node), state)
        assert result.returncode == 0, result.stderr
    assert json.loads((state / "nodes.json").read_text()) == ["cp-0"]
    calls = (state / "calls").read_text().splitlines()
    drain = [c for c in calls if c.split()[0] in ("adm", "delete")]
    assert drain == [
        "adm cordon dgx-0", "adm drain dgx-0 --ignore-daemonsets --delete-emptydir-data --timeout=900s",
        "delete node dgx-0",
        "adm cordon dgx-1.pod1.nvidia.com",
        "adm drain dgx-1.pod1.nvidia.com --ignore-daemonsets --delete-emptydir-data --timeout=900s",
        "delete node dgx-1.pod1.nvidia.com"]
    # a node an answering cluster does not list is nothing to undo
    again = run_oc_script(render_remove_node_script(guide(), str(oc), "dgx-0"), state)
    assert again.returncode == 0 and "nothing to drain" in again.stderr


def test_a_cluster_that_does_not_answer_stops_the_removal_before_the_machine_goes(tmp_path, monkeypatch):
    """It cannot tell whether the node still runs pods: exit 1, so the VM's delete (which waits for this
    one) does not run; only GPU_LAB_CLUSTER_GONE=1 for that `pulumi up` lets it go undrained."""
    oc, state = fake_oc(tmp_path, [], ["cp-0", "dgx-0"])
    (state / "unreachable").touch()
    stopped = run_oc_script(render_remove_node_script(guide(), str(oc), "dgx-0"), state)
    assert stopped.returncode == 1
    assert "does not answer" in stopped.stderr and "its machine is not touched" in stopped.stderr
    assert "GPU_LAB_CLUSTER_GONE=1 pulumi up" in stopped.stderr
    assert json.loads((state / "nodes.json").read_text()) == ["cp-0", "dgx-0"]
    monkeypatch.setenv("GPU_LAB_CLUSTER_GONE", "1")
    gone = run_oc_script(render_remove_node_script(guide(), str(oc), "dgx-0"), state)
    assert gone.returncode == 0 and "the cluster is not asked" in gone.stderr


def test_a_node_whose_drain_fails_stays_in_the_cluster_and_the_removal_fails(tmp_path):
    """No --force: a pod protected by a PodDisruptionBudget stops the drain, and then nothing else happens:
    exit non-zero (the engine fails the delete, so the VM's delete, which waits for it, does not run)."""
    oc, state = fake_oc(tmp_path, [], ["cp-0", "dgx-0"])
    (state / "drain-fails").touch()
    result = run_oc_script(render_remove_node_script(guide(), str(oc), "dgx-0", drain_timeout_s=120), state)
    assert result.returncode == 1
    calls = (state / "calls").read_text().splitlines()
    assert [c for c in calls if c.split()[0] in ("adm", "delete")] == [
        "adm cordon dgx-0", "adm drain dgx-0 --ignore-daemonsets --delete-emptydir-data --timeout=120s"]
    assert json.loads((state / "nodes.json").read_text()) == ["cp-0", "dgx-0"]
    assert "drained and deleted" not in result.stdout
    assert "node dgx-0 could not be drained within 120 s" in result.stderr
    assert "its machine is not touched" in result.stderr


def test_rotated_credentials_are_patched_into_the_running_cluster(tmp_path):
    oc, state = fake_oc(tmp_path, [], [])
    rotations = (
        pull_secret_patches(PULL),
        ssh_key_patches(SSH + "\n# a comment\nssh-rsa AAAAB3NzaC1yc2E second@lab\n"),
        vcenter_credential_patches("vc1.lab.local", "admin@lab", "new-pass"),
    )
    for patches in rotations:
        result = run_oc_script(render_patch_script(str(oc), patches), state, patch_bundle(KUBECONFIG_TEXT, patches))
        assert result.returncode == 0, result.stderr
    patches = [json.loads(line) for line in (state / "patches").read_text().splitlines()]
    targets = [p["target"] for p in patches]
    assert targets == [
        "secret/pull-secret -n openshift-config --type=merge",
        "machineconfig/99-master-ssh --type=merge",
        "machineconfig/99-worker-ssh --type=merge",
        "secret/vsphere-creds -n kube-system --type=merge",
        "kubecontrollermanager/cluster --type=merge",
    ]
    bodies = [p["body"] for p in patches]
    assert base64.b64decode(bodies[0]["data"][".dockerconfigjson"]).decode() == PULL
    assert bodies[1]["spec"]["config"]["passwd"]["users"] == [
        {"name": "core", "sshAuthorizedKeys": [SSH, "ssh-rsa AAAAB3NzaC1yc2E second@lab"]}]
    assert base64.b64decode(bodies[3]["data"]["vc1.lab.local.password"]).decode() == "new-pass"
    assert bodies[4]["spec"]["forceRedeploymentReason"].startswith("gpu-lab-vcenter-credentials-")
    # the script's text is the same for every value: only stdin carries them
    assert render_patch_script("oc", pull_secret_patches(PULL)) == render_patch_script("oc", pull_secret_patches("x"))


def test_a_rotation_fails_when_the_cluster_does_not_answer(tmp_path):
    oc, state = fake_oc(tmp_path, [], [])
    (state / "unreachable").touch()
    patches = pull_secret_patches(PULL)
    result = run_oc_script(render_patch_script(str(oc), patches), state, patch_bundle(KUBECONFIG_TEXT, patches))
    assert result.returncode != 0 and "Unable to connect" in result.stderr


# ---------------------------------------------------------------- helper-node steps, with stand-in systemctl


@pytest.fixture
def helper_root(tmp_path, monkeypatch):
    """Helper paths under tmp_path, real dnsmasq/haproxy for the checks, systemctl recorded."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable(bin_dir / "systemctl", f'#!/bin/sh\necho "$@" >> {tmp_path}/systemctl-calls\n')
    for name in ("dnsmasq", "haproxy"):
        (bin_dir / name).symlink_to(tool(name))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    root = tmp_path / "helper's $root"  # paths with blanks, a quote and a dollar sign
    paths = {
        "dnsmasqConf": f"{root}/etc/dnsmasq.d/openshift.conf", "hostsFile": f"{root}/etc/hosts.dnsmasq",
        "haproxyCfg": f"{root}/etc/haproxy/haproxy.cfg", "tftpRoot": f"{root}/tftpboot",
        "httpRoot": f"{root}/www", "staging": f"{root}/staging",
    }
    return tmp_path, root, paths


# The test user's own group stands in for the web server's (install -g needs one that exists).
WEB_GROUP = grp.getgrgid(os.getgid()).gr_name


def helper_plan(paths: dict, **changes):
    helper = {"address": "10.33.3.18", "loadBalancerAddress": "10.33.3.54", "paths": paths, "httpGroup": WEB_GROUP}
    return guide(helper={**helper, **changes.pop("helper", {})}, **changes)


def step(p, name: str, action: str = "install", files: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """One helper step as its Command runs it: the script, and its files on stdin."""
    stdin = file_bundle(helper_files(p)[name] if files is None else files) if action == "install" else ""
    return subprocess.run(["sh", "-c", render_helper_step(p, name, action)], input=stdin,
                          capture_output=True, text=True, timeout=30)


def leftovers(root: Path) -> list[str]:
    staging = root / "staging"
    return sorted(str(x.relative_to(staging)) for x in staging.rglob("*")) if staging.exists() else []


def test_dns_and_lb_steps_check_install_and_restart_leaving_nothing_staged(helper_root):
    tmp_path, root, paths = helper_root
    p = helper_plan(paths)
    dns = step(p, "dns")
    assert dns.returncode == 0, dns.stderr
    assert (root / "etc/hosts.dnsmasq").read_text() == render_hosts(p)
    assert (root / "etc/dnsmasq.d/openshift.conf").read_text() == render_dnsmasq_conf(p)
    lb = step(p, "lb")
    assert lb.returncode == 0, lb.stderr
    assert (root / "etc/haproxy/haproxy.cfg").read_text() == render_haproxy_cfg(p)
    assert (tmp_path / "systemctl-calls").read_text().splitlines() == [
        "enable dnsmasq", "restart dnsmasq", "enable haproxy", "reload-or-restart haproxy"]
    assert leftovers(root) == []


def test_lb_step_leaves_the_live_config_alone_when_the_check_fails(helper_root):
    tmp_path, root, paths = helper_root
    p = helper_plan(paths)
    result = step(p, "lb", files={"haproxy.cfg": "listen broken\n    mode nonsense\n"})
    assert result.returncode != 0
    assert not (root / "etc/haproxy/haproxy.cfg").exists()
    assert not (tmp_path / "systemctl-calls").exists()
    assert leftovers(root) == []


def test_removing_the_steps_takes_back_what_they_installed(helper_root):
    tmp_path, root, paths = helper_root
    p = helper_plan(paths)
    distribution_cfg = "global\n    log /dev/log local0\n"  # the package's own haproxy.cfg
    (root / "etc/haproxy").mkdir(parents=True)
    (root / "etc/haproxy/haproxy.cfg").write_text(distribution_cfg)
    for name in ("dns", "lb"):
        assert step(p, name).returncode == 0
    assert step(p, "lb").returncode == 0  # a second install keeps the distribution's copy, not ours
    for name in ("dns", "lb"):
        removed = step(p, name, "remove")
        assert removed.returncode == 0, removed.stderr
    assert not (root / "etc/dnsmasq.d/openshift.conf").exists() and not (root / "etc/hosts.dnsmasq").exists()
    assert (root / "etc/haproxy/haproxy.cfg").read_text() == distribution_cfg
    assert sorted(x.name for x in (root / "etc/haproxy").iterdir()) == ["haproxy.cfg"]
    assert (tmp_path / "systemctl-calls").read_text().splitlines()[-2:] == [
        "restart dnsmasq", "reload-or-restart haproxy"]
    # without a distribution copy, HAProxy stops with our file gone
    assert step(p, "lb").returncode == 0
    (root / "etc/haproxy/haproxy.cfg.gpu-lab-original").unlink()
    assert step(p, "lb", "remove").returncode == 0
    assert not (root / "etc/haproxy/haproxy.cfg").exists()
    assert (tmp_path / "systemctl-calls").read_text().splitlines()[-1] == "disable --now haproxy"


def test_copies_an_earlier_gpu_lab_left_staged_are_removed(helper_root):
    tmp_path, root, paths = helper_root
    p = helper_plan(paths)
    (root / "staging/pxelinux.cfg").mkdir(parents=True)
    for name in ("dnsmasq.conf", "hosts.dnsmasq", "haproxy.cfg", "master.ign", "pxelinux.cfg/default"):
        (root / "staging" / name).write_text("staged by gpu-lab 0.1")
    for name in ("dns", "lb"):
        assert step(p, name).returncode == 0
    publish = subprocess.run(["sh", "-c", render_ignition_publish(p, "master.ign", "install")], input="{}",
                             capture_output=True, text=True, timeout=30)
    assert publish.returncode == 0, publish.stderr
    assert leftovers(root) == ["pxelinux.cfg", "pxelinux.cfg/default"]


def test_pxe_step_names_missing_boot_files_then_installs_and_removes_menus(helper_root):
    tmp_path, root, paths = helper_root
    nodes = sections("baremetal")["openshift"]["nodes"]
    for i, node in enumerate(n for n in nodes if n["role"] == "worker"):
        node["mac"] = f"52:54:00:00:00:2{i}"  # each DGX picks its menu by MAC
    p = helper_plan(paths, nodes=nodes)
    first = step(p, "pxe")
    assert first.returncode == 1
    assert f"{root}/tftpboot/pxelinux.0" in first.stderr and f"{root}/www/rhcos/rhcos-live-rootfs.x86_64.img" in first.stderr
    for rel in ("tftpboot/pxelinux.0", "tftpboot/grubx64.efi", "www/rhcos/rhcos-live-kernel-x86_64",
                "www/rhcos/rhcos-live-initramfs.x86_64.img", "www/rhcos/rhcos-live-rootfs.x86_64.img"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"\0")
    second = step(p, "pxe")
    assert second.returncode == 0, second.stderr
    assert (root / "tftpboot/pxelinux.cfg/default").read_text() == render_pxelinux_default(p)
    assert (root / "tftpboot/grub.cfg").read_text() == render_grub_cfg(p)
    assert sorted(x.name for x in (root / "tftpboot/pxelinux.cfg").iterdir()) == [
        "01-52-54-00-00-00-20", "01-52-54-00-00-00-21", "default"]
    assert leftovers(root) == []
    # a node that leaves takes its menu along on the next install
    fewer = helper_plan(paths, nodes=[n for n in nodes if n["name"] != "dgx-1"])
    assert step(fewer, "pxe").returncode == 0
    assert sorted(x.name for x in (root / "tftpboot/pxelinux.cfg").iterdir()) == ["01-52-54-00-00-00-20", "default"]
    assert step(fewer, "pxe", "remove").returncode == 0
    assert sorted(str(x.relative_to(root / "tftpboot")) for x in (root / "tftpboot").rglob("*") if x.is_file()) == [
        "grubx64.efi", "pxelinux.0"]  # the helper's own boot loaders stay


def test_ignition_files_are_published_for_the_web_server_group_only_and_withdrawn(helper_root):
    tmp_path, root, paths = helper_root
    p = helper_plan(paths)
    published = subprocess.run(["sh", "-c", render_ignition_publish(p, "bootstrap.ign", "install")],
                               input='{"ignition": {}}', capture_output=True, text=True, timeout=30)
    assert published.returncode == 0, published.stderr
    target = root / "www/bootstrap.ign"
    assert target.read_text() == '{"ignition": {}}'
    assert stat.S_IMODE(target.stat().st_mode) == 0o640 and target.stat().st_gid == os.getgid()
    assert leftovers(root) == []
    withdrawn = subprocess.run(["sh", "-c", render_ignition_publish(p, "bootstrap.ign", "remove")],
                               capture_output=True, text=True, timeout=30)
    assert withdrawn.returncode == 0 and not target.exists()


def test_helper_steps_use_sudo_for_a_non_root_user(helper_root):
    tmp_path, root, paths = helper_root
    # stand-in sudo: records its arguments, then runs the command as the test user
    executable(tmp_path / "bin" / "sudo",
               f'#!/bin/sh\necho "$*" >> {tmp_path}/sudo-calls\n[ "$1" = -n ] && shift\nexec "$@"\n')
    as_root = helper_plan(paths, helper={"user": "root"})
    for name in ("dns", "lb"):
        assert step(as_root, name).returncode == 0
    assert not (tmp_path / "sudo-calls").exists()
    assert len((tmp_path / "systemctl-calls").read_text().splitlines()) == 4

    shutil.rmtree(root / "etc")
    as_core = helper_plan(paths, helper={"user": "core"})
    for name in ("dns", "lb"):
        done = step(as_core, name)
        assert done.returncode == 0, done.stderr
    calls = (tmp_path / "sudo-calls").read_text().splitlines()
    # every privileged command goes through sudo -n; reading stdin and the private copy do not
    assert [c.split()[1] for c in calls] == [
        "dnsmasq", "cmp", "install", "install", "systemctl", "systemctl",
        "haproxy", "cmp", "test", "install", "systemctl", "systemctl"]
    assert all(c.startswith("-n ") for c in calls)


def test_an_update_that_changes_no_file_restarts_nothing(helper_root):
    tmp_path, root, paths = helper_root
    p = helper_plan(paths)
    for name in ("dns", "lb"):
        assert step(p, name).returncode == 0
    before = (tmp_path / "systemctl-calls").read_text()
    for name in ("dns", "lb"):  # what a rotated helper login runs: the same files again
        again = step(p, name)
        assert again.returncode == 0 and "unchanged" in again.stdout
    assert (tmp_path / "systemctl-calls").read_text() == before
    changed = helper_plan(paths, ingressNodes=["dgx-0"])
    assert step(changed, "lb").returncode == 0
    assert (tmp_path / "systemctl-calls").read_text().splitlines()[-1] == "reload-or-restart haproxy"
