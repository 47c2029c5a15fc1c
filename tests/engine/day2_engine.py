"""A lab that runs, for day-2 changes under the real Pulumi engine and the real pulumi-command plugin.

Everything the program talks to is started here on loopback:

- the helper node: Debian's OpenSSH server on a 127.0.0.1 port (key login), whose sessions get a
  PATH with a recording `systemctl` in front, so the real helper scripts run, check their files
  with the real `dnsmasq --test` and `haproxy -c`, and install them under a private root;
- openshift-install and oc: recording stand-ins on the engine's PATH (the local Commands inherit
  it); the installer writes the files the real one does, and its calls are counted;
- the project: a copy of the working tree with a local file backend.

`Day2Lab` runs `pulumi up`, `pulumi preview --json` and `--expect-no-changes` on it, and edits
its stack configuration between runs. Needs the engine (`make setup-pulumi`) and the
pulumi-command plugin built by hand (docs/engine.md).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from loopback import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
# absolute: the harness runs the engine from other directories (a relative PULUMI_CACHE_DIR is the cwd's)
CACHE = Path(os.environ.get("PULUMI_CACHE_DIR", ROOT / ".cache" / "pulumi")).resolve()
PASSPHRASE = "day2-passphrase"

FAKE_INSTALLER = """\
#!/bin/sh
# openshift-install stand-in: --dir D create manifests|ignition-configs, --dir D wait-for S
set -eu
dir=$2
echo "$*" >> {log}/installer-calls
case "$3 $4" in
    "create manifests")
        mkdir -p "$dir/manifests"
        printf 'spec:\\n  mastersSchedulable: true\\n' > "$dir/manifests/cluster-scheduler-02-config.yml" ;;
    "create ignition-configs")
        rm "$dir/install-config.yaml"
        mkdir -p "$dir/auth"
        for role in bootstrap master worker; do
            printf '{{"ignition":{{"version":"3.2.0"}},"role":"%s","ca":"%s"}}\\n' "$role" "$(date +%s%N)" > "$dir/$role.ign"
        done
        printf 'apiVersion: v1\\nkind: Config\\n' > "$dir/auth/kubeconfig"
        echo kubeadmin-secret > "$dir/auth/kubeadmin-password"
        echo '{{"clusterName":"day2"}}' > "$dir/metadata.json"
        echo '{{}}' > "$dir/.openshift_install_state.json" ;;
    "wait-for "*) ;;
    *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"""

FAKE_OC = """\
#!{python}
# oc stand-in: every node of FAKE_OC_NODES has joined; calls and patch bodies are logged
import json, os, sys
args = [a for a in sys.argv[1:] if not a.startswith("--request-timeout")]
with open({log!r} + "/oc-calls", "a") as f:
    f.write(" ".join(args) + "\\n")
nodes = os.environ.get("FAKE_OC_NODES", "").split()
if args[:2] == ["get", "csr"]:
    pass
elif args[:2] == ["get", "nodes"]:
    print("\\n".join("node/" + n for n in nodes))
elif args[:2] == ["get", "node"]:
    sys.exit(0 if args[2] in nodes else 1)
elif args[0] == "patch":
    body = open(args[-1].split("=", 1)[1]).read()
    with open({log!r} + "/patches", "a") as f:
        f.write(json.dumps({{"target": " ".join(args[1:-1]), "body": json.loads(body)}}) + "\\n")
"""

RECORDING_SYSTEMCTL = """\
#!/bin/sh
echo "$*" >> {log}/systemctl-calls
"""


class Server:
    """A process this harness started: `with` stops it however the block ends (a failing test too),
    and a start that fails half-way stops what it started before raising."""

    proc: subprocess.Popen

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        _end(self.proc)


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


@dataclass
class HelperNode(Server):
    """sshd on loopback playing the helper node; its files live under `root`."""

    dir: Path
    port: int
    proc: subprocess.Popen
    client_key: Path
    host_key_line: str
    root: Path

    @classmethod
    def start(cls, d: Path, sshd: str) -> HelperNode:
        d.mkdir(parents=True)
        d.chmod(0o755)
        for key in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", key, "-f", str(d / key)], check=True)
        (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
        (d / "bin").mkdir()
        _executable(d / "bin" / "systemctl", RECORDING_SYSTEMCTL.format(log=d))
        _executable(d / "bin" / "apachectl", RECORDING_SYSTEMCTL.replace("systemctl-calls", "apachectl-calls").format(log=d))
        root = d / "root"
        for boot_file in ("tftpboot/pxelinux.0", "tftpboot/grubx64.efi"):  # the helper's own
            (root / boot_file).parent.mkdir(parents=True, exist_ok=True)
            (root / boot_file).write_bytes(b"\0")
        port = free_port()
        (d / "sshd_config").write_text(textwrap.dedent(f"""\
            ListenAddress 127.0.0.1
            Port {port}
            HostKey {d}/host_key
            PidFile {d}/sshd.pid
            AuthorizedKeysFile {d}/authorized_keys
            AuthenticationMethods publickey
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PermitRootLogin prohibit-password
            StrictModes no
            UsePAM no
            SetEnv PATH={d}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
            # pulumi-command's CopyToRemote (gpu-lab before 0.2) copies over SFTP
            Subsystem sftp internal-sftp
            LogLevel ERROR
            """))
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        log = (d / "sshd.log").open("w")
        proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(d / "sshd_config")], stdout=subprocess.DEVNULL, stderr=log)
        try:
            wait_for_port(port, 10, proc, d / "sshd.log")
        except BaseException:
            _end(proc)
            raise
        host_key = (d / "host_key.pub").read_text().split()
        return cls(d, port, proc, d / "client_key", " ".join(host_key[:2]), root)

    def systemctl_calls(self) -> list[str]:
        path = self.dir / "systemctl-calls"
        return path.read_text().splitlines() if path.exists() else []

    def files(self) -> list[str]:
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file())


def openshift_section(helper: HelperNode, install_dir: Path, tools: Path) -> dict[str, Any]:
    """A bare-metal cluster on loopback addresses (never contacted), its helper the sshd above."""
    root = helper.root
    nodes = [{"name": "bootstrap", "role": "bootstrap", "address": "127.0.10.9", "mac": "52:54:00:00:0a:09"}]
    nodes += [{"name": f"cp-{i}", "role": "control-plane", "address": f"127.0.10.{10 + i}",
               "mac": f"52:54:00:00:0a:1{i}"} for i in range(3)]
    nodes += [{"name": f"dgx-{i}", "role": "worker", "address": f"127.0.10.{20 + i}",
               "mac": f"52:54:00:00:0a:2{i}"} for i in range(3)]
    return {
        "clusterName": "day2", "baseDomain": "example.test", "platform": "none",
        "networks": {"machineNetwork": ["127.0.10.0/24"]},
        "nodes": nodes,
        "helper": {
            "address": "127.0.0.1", "port": helper.port, "user": "root", "httpGroup": "root",
            "hostKey": helper.host_key_line,
            "paths": {"dnsmasqConf": f"{root}/etc/dnsmasq.d/openshift.conf", "hostsFile": f"{root}/etc/hosts.dnsmasq",
                      "haproxyCfg": f"{root}/etc/haproxy/haproxy.cfg", "tftpRoot": f"{root}/tftpboot",
                      "httpRoot": f"{root}/www", "staging": f"{root}/staging",
                      "httpdDropIn": f"{root}/etc/httpd/conf.d/gpu-lab-ignition.conf"},
        },
        "rhcos": {"kernel": "http://127.0.10.2:8080/rhcos/kernel", "initramfs": "http://127.0.10.2:8080/rhcos/initrd",
                  "rootfs": "http://127.0.10.2:8080/rhcos/rootfs.img"},
        "bootstrap": True,
        "approveCsrs": True,
        "installer": str(tools / "openshift-install"),
        "oc": str(tools / "oc"),
        "installDir": str(install_dir),
    }


@dataclass
class Step:
    op: str
    type: str
    name: str


@dataclass
class Day2Lab:
    """A copy of the project with one stack under the real engine; config edited between runs."""

    work: Path
    config: dict[str, Any]
    secrets: dict[str, str]
    stack: str = "day2"
    env: dict[str, str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, work: Path, config: dict[str, Any], secrets: dict[str, str], tools: Path,
               extra_env: dict[str, str] | None = None, tree: Path = ROOT, stack: str = "day2") -> Day2Lab:
        project = work / "project"
        copy_tree(tree, project)
        env = {**os.environ,
               "PATH": f"{CACHE}/bin:{tools}:{os.environ['PATH']}", "PULUMI_HOME": str(CACHE / "home"),
               "PULUMI_SKIP_UPDATE_CHECK": "1", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
               "PULUMI_BACKEND_URL": f"file://{work / 'state'}", "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
               **(extra_env or {})}
        (work / "state").mkdir()
        lab = cls(work, copy.deepcopy(config), dict(secrets), stack=stack, env=env)
        lab.pulumi("stack", "init", lab.stack)
        lab.write_config()
        return lab

    @property
    def project(self) -> Path:
        return self.work / "project"

    def pulumi(self, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
        started = time.monotonic()
        proc = subprocess.run(["pulumi", *args, "--non-interactive"] if args[0] in ("up", "preview", "destroy")
                              else ["pulumi", *args], cwd=self.project, env=self.env, input=stdin,
                              capture_output=True, text=True, timeout=1800)
        summary = f" {_summary(proc.stdout)}" if "--json" in args and args[0] in ("up", "destroy") else ""
        self.log.append(f"pulumi {' '.join(args)}: exit {proc.returncode} in {time.monotonic() - started:.1f}s{summary}")
        if check and proc.returncode != 0:
            raise AssertionError(f"pulumi {' '.join(args)} exited {proc.returncode}:\n{_errors(proc.stdout)}\n{proc.stderr}")
        return proc

    def write_config(self) -> None:
        """The stack file from `config`, then every secret through `pulumi config set --secret` (stdin)."""
        stack_file = self.project / f"Pulumi.{self.stack}.yaml"
        kept = {k: v for k, v in (yaml.safe_load(stack_file.read_text()) or {}).items() if k != "config"} \
            if stack_file.exists() else {}
        stack_file.write_text(yaml.safe_dump({**kept, "config": self.config}, sort_keys=False))
        for key, value in self.secrets.items():
            self.pulumi("config", "set", "--secret", *(("--path",) if "." in key.split(":", 1)[1] else ()), key,
                        stdin=value)

    def up(self) -> dict[str, int]:
        proc = self.pulumi("up", "--yes", "--skip-preview", "--json")
        return _summary(proc.stdout)

    def preview(self) -> list[Step]:
        """`pulumi preview --json`: every step that is not `same`."""
        proc = self.pulumi("preview", "--json")
        steps = json.loads(proc.stdout).get("steps", [])
        return [Step(s["op"], s.get("newState", s.get("oldState", {})).get("type", ""), s["urn"].rsplit("::", 1)[-1])
                for s in steps if s["op"] != "same"]

    def offline_ops(self, before: dict[str, Any], before_secrets: dict[str, str]) -> dict[str, str]:
        """What `make diff` says (tools.diff, under mocks) for the edit from `before` to the stack's
        config now: {name: op} of every resource it would not leave as it is."""
        from tools.diff import changes
        from tools.mockrun import run_program

        old = run_program(before, stack=self.stack, secrets=_as_config_secrets(before_secrets))
        new = run_program(self.config, stack=self.stack, secrets=_as_config_secrets(self.secrets))
        return {c["name"]: c["op"] for c in changes(old, new)}

    def expect_no_changes(self) -> None:
        self.pulumi("preview", "--expect-no-changes")

    def destroy(self) -> dict[str, int]:
        return _summary(self.pulumi("destroy", "--yes", "--skip-preview", "--json").stdout)


def _as_config_secrets(secrets: dict[str, str]) -> dict[str, Any]:
    """The secrets as tools.mockrun takes them (a `--path` key becomes its object)."""
    out: dict[str, Any] = {}
    for key, value in secrets.items():
        namespace, _, rest = key.partition(":")
        name, _, path = rest.partition(".")
        if path:
            out.setdefault(f"{namespace}:{name}", {})[path] = value
        else:
            out[key] = value
    return out


def copy_tree(tree: Path, project: Path) -> None:
    """The program of `tree` (a checkout: tracked and untracked files, not ignored) into `project`,
    replacing the program there; the stack file and the venv link stay."""
    if project.exists():
        for entry in project.iterdir():
            if entry.name != ".venv" and not entry.name.startswith("Pulumi."):
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    project.mkdir(parents=True, exist_ok=True)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=tree, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for rel in files:
        if rel and not rel.startswith((".venv/", ".cache/")) and not rel.startswith("Pulumi.") and (tree / rel).is_file():
            (project / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(tree / rel, project / rel)
    for rel in ("Pulumi.yaml",):
        shutil.copy2(tree / rel, project / rel)
    if not (project / ".venv").exists():
        (project / ".venv").symlink_to(ROOT / ".venv")


def _errors(stdout: str) -> str:
    """The error diagnostics of a `--json` event stream (the whole text otherwise)."""
    found = [json.loads(line)["diagnosticEvent"] for line in stdout.splitlines()
             if line.startswith("{") and '"diagnosticEvent"' in line and '"severity":"error"' in line]
    return "\n".join(f"{d.get('urn', '')}: {d['message'].strip()}" for d in found) if found else stdout


def _summary(stdout: str) -> dict[str, int]:
    """The change summary of `pulumi up|destroy --json`, a stream of engine events (op -> count)."""
    for line in stdout.splitlines():
        if line.startswith("{") and '"summaryEvent"' in line:
            return dict(json.loads(line)["summaryEvent"].get("resourceChanges") or {})
    return {}


def standins(tools: Path, log: Path) -> None:
    tools.mkdir(parents=True, exist_ok=True)
    log.mkdir(parents=True, exist_ok=True)
    _executable(tools / "openshift-install", FAKE_INSTALLER.format(log=log))
    _executable(tools / "oc", FAKE_OC.format(python=sys.executable, log=str(log)))


# ---------------------------------------------------------------- the vSphere half and a switch


@dataclass
class VcenterSim(Server):
    """lab-vcsim (make simulator) on a loopback port, with vcsim's default inventory."""

    proc: subprocess.Popen
    port: int
    user: str
    password: str

    @classmethod
    def start(cls, binary: Path, d: Path) -> VcenterSim:
        d.mkdir(parents=True, exist_ok=True)
        user, password = "lab-admin", f"sim-{os.urandom(6).hex()}"  # vcsim refuses user names with '@'
        out = (d / "vcsim.out").open("w")
        proc = subprocess.Popen([str(binary), "-l", "127.0.0.1:0", "-username", user, "-password", password],
                                stdout=out, stderr=(d / "vcsim.err").open("w"), stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            port = None
            while port is None:
                text = (d / "vcsim.out").read_text()
                for word in text.split():
                    if word.startswith("GOVC_URL=") and "@127.0.0.1:" in word:
                        port = int(word.rsplit(":", 1)[1].split("/")[0])
                if port is None:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"lab-vcsim did not start: {(d / 'vcsim.err').read_text()}")
                    time.sleep(0.05)
            sim = cls(proc, port, user, password)
            sim.seed()
        except BaseException:
            _end(proc)
            raise
        return sim

    def session(self):
        from components.dynamic import hostops

        return hostops.session("127.0.0.1", self.user, self.password, port=self.port, insecure=True)

    def seed(self) -> None:
        """ESXi has Net.PVRDMAVmknic (empty until PVRDMA is set up); the simulator's hosts get it too."""
        from pyVmomi import vim

        for attempt in range(100):
            try:
                with self.session() as si:
                    content = si.RetrieveContent()
                    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.HostSystem], True)
                    for host in view.view:
                        host.configManager.advancedOption.UpdateOptions(
                            changedValue=[vim.option.OptionValue(key="Net.PVRDMAVmknic", value="")])
                return
            except (ConnectionError, OSError):
                if attempt == 99:
                    raise
                time.sleep(0.1)

    def host_settings(self) -> dict[str, tuple[Any, ...]]:
        """Per host: graphics type, nmlx5_core options, pvrdma ruleset, Net.PVRDMAVmknic."""
        from pyVmomi import vim

        from components.dynamic import hostops

        found = {}
        with self.session() as si:
            content = si.RetrieveContent()
            view = content.viewManager.CreateContainerView(content.rootFolder, [vim.HostSystem], True)
            for host in view.view:
                found[host.name] = (hostops.get_graphics_type(host), hostops.get_module_options(host, "nmlx5_core"),
                                    hostops.get_ruleset_enabled(host, "pvrdma"),
                                    hostops.get_advanced_option(host, "Net.PVRDMAVmknic"))
        return found

    def vm_names(self) -> list[str]:
        return self._names("VirtualMachine")

    def network_names(self) -> list[str]:
        """Switches and port groups, a distributed switch's uplink port group included."""
        return self._names("DistributedVirtualSwitch") + self._names("Network")

    def _names(self, kind: str) -> list[str]:
        from pyVmomi import vim

        with self.session() as si:
            content = si.RetrieveContent()
            view = content.viewManager.CreateContainerView(content.rootFolder, [getattr(vim, kind)], True)
            return sorted(o.name for o in view.view)


SWITCH_USER = "gpulabsw"
SWITCH_SHELL = """\
#!/bin/bash
# ForceCommand of the stand-in Cumulus switch: bash runs the command text, the model answers `nv`.
PATH="{bin}:$PATH" exec /bin/bash -c "$SSH_ORIGINAL_COMMAND"
"""


@dataclass
class CumulusStandIn(Server):
    """A Cumulus switch on loopback for the real pulumi-command: sshd with password login for a
    throwaway local user whose sessions run bash with the NVUE model's `nv` first on PATH."""

    dir: Path
    port: int
    proc: subprocess.Popen
    host_key_line: str
    box: Any

    @classmethod
    def start(cls, sshd: str, password: str) -> CumulusStandIn:
        from switch_sim import CumulusBox  # the switch tests' NVUE model

        # readable by the switch user (a pytest tmp dir is root's alone); removed by stop(), or here
        # with the user and the sshd when the start fails
        d = Path(tempfile.mkdtemp(prefix="gpu-lab-switch-", dir="/tmp"))
        try:
            return cls._start_in(d, sshd, password, CumulusBox)
        except BaseException:
            cls._remove(d)
            raise

    @classmethod
    def _start_in(cls, d: Path, sshd: str, password: str, CumulusBox) -> CumulusStandIn:  # noqa: N803
        d.chmod(0o755)
        box = CumulusBox(d / "cumulus")
        for path in (d / "cumulus", d / "cumulus" / "bin", d / "cumulus" / "bin" / "nv"):
            path.chmod(0o755)
        _executable(d / "switch-shell", SWITCH_SHELL.format(bin=d / "cumulus" / "bin"))
        if subprocess.run(["id", SWITCH_USER], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/bash", SWITCH_USER], check=True)
        cls.set_password(password)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "host_key")], check=True)
        port = free_port()
        (d / "sshd_config").write_text(textwrap.dedent(f"""\
            ListenAddress 127.0.0.1
            Port {port}
            HostKey {d}/host_key
            PidFile {d}/sshd.pid
            AuthenticationMethods password
            PasswordAuthentication yes
            KbdInteractiveAuthentication no
            PubkeyAuthentication no
            UsePAM no
            AllowUsers {SWITCH_USER}
            ForceCommand {d}/switch-shell
            LogLevel ERROR
            """))
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(d / "sshd_config")], stdout=subprocess.DEVNULL,
                                stderr=(d / "sshd.log").open("w"))
        try:
            wait_for_port(port, 10, proc, d / "sshd.log")
        except BaseException:
            _end(proc)
            raise
        return cls(d, port, proc, " ".join((d / "host_key.pub").read_text().split()[:2]), box)

    @staticmethod
    def set_password(password: str) -> None:
        subprocess.run(["chpasswd"], input=f"{SWITCH_USER}:{password}", text=True, check=True)

    def stop(self) -> None:
        try:
            _end(self.proc)
        finally:
            self._remove(self.dir)

    @staticmethod
    def _remove(d: Path) -> None:
        subprocess.run(["userdel", SWITCH_USER], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


def sim_lab_config(vcenter: VcenterSim, helper: HelperNode, switch: CumulusStandIn, install_dir: Path,
                   tools: Path) -> dict[str, Any]:
    """The sim stack's vSphere half on lab-vcsim, OpenShift on its VMs with the helper above, and
    one Cumulus switch facing the three worker hosts; every address a documentation range or loopback."""
    # vcsim's default inventory: datacenter DC0, cluster DC0_C0 with hosts DC0_C0_H0..H2 (their
    # free NIC vmnic1 the RoCE uplink), the standalone DC0_H0 with its "VM Network", LocalDS_0,
    # and DC0_H0_VM0 as the template; addresses from the documentation ranges (RFC 5737)
    vsphere = {
        "datacenter": "DC0", "cluster": "DC0_C0", "datastore": "LocalDS_0", "template": "DC0_H0_VM0",
        "managementHost": "DC0_H0",
        "workerHosts": [{"name": f"DC0_C0_H{i}", "rdmaUplinks": ["vmnic1"]} for i in range(3)],
        "vmkAddresses": {"first": "203.0.113.24"},
        "networks": {
            "management": {"hostCidr": "192.0.2.0/24", "vmCidr": "198.51.100.0/24", "portGroup": "lab-management",
                           "vlan": 7, "managementHostNetwork": "VM Network"},
            "rdma": {"cidr": "203.0.113.0/24", "portGroup": "lab-rdma", "vlan": 0, "mtu": 9000, "pfcPriority": 3,
                     "trust": "dscp"},
        },
        "vds": {"name": "lab-roce-vds", "version": "6.6.0", "mtu": 9000, "lacp": False},
        "controlPlane": {"names": ["simcp01", "simcp02", "simcp03"], "sizing": {"cpus": 4, "memoryGb": 16, "diskGb": 50},
                         "managementAddresses": {"first": "198.51.100.11"}},
        "workers": {"names": ["simw01", "simw02", "simw03"], "sizing": {"cpus": 4, "memoryGb": 24, "diskGb": 50},
                    "managementAddresses": {"first": "198.51.100.51"}, "rdmaAddresses": {"first": "203.0.113.51"},
                    "vgpuProfile": "grid_v100-16c"},
    }
    vsphere["bootstrap"] = {"name": "simbs01", "managementAddress": "198.51.100.10",
                            "sizing": {"cpus": 4, "memoryGb": 16, "diskGb": 100}}
    openshift = openshift_section(helper, install_dir, tools)
    openshift.update(clusterName="sim", networks={"machineNetwork": [vsphere["networks"]["management"]["vmCidr"]]},
                     nodes=[])
    return {
        "vsphere:vsphereServer": f"127.0.0.1:{vcenter.port}",
        "vsphere:user": vcenter.user,
        "vsphere:allowUnverifiedSsl": "true",
        "gpu-lab:vsphere": vsphere,
        "gpu-lab:openshift": openshift,
        "gpu-lab:switches": [{
            "name": "simsw01", "os": "cumulus", "managementAddress": "127.0.0.1", "sshPort": switch.port,
            "user": SWITCH_USER, "hostKey": switch.host_key_line, "connectTimeoutSeconds": 5,
            "ports": {"hosts": ["swp1", "swp2", "swp3"]},
            "roce": {"trafficClass": 3, "ecnMinKb": 150, "ecnMaxKb": 1500, "pfcMode": "lossless", "pfcPriority": 3,
                     "trust": "dscp", "mtu": 9216, "bufferKb": 16384},
        }],
    }
