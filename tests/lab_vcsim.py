"""lab-vcsim (the project's vCenter simulator, simulator/) on a loopback port, for the tests of
components/vsphere (tests/vsphere) and of the dynamic providers (tests/dynamic).

vcsim's default inventory: one datacenter DC0 with a standalone host DC0_H0 and a cluster
DC0_C0 of hosts DC0_C0_H0..H2; powered-on VMs DC0_H0_VM0/1 and DC0_C0_RP0_VM0/1. Each host
has, as on ESXi, its own graphics manager (default type ``shared``), kernel module system
(nmlx5_core without options), firewall rulesets and ``Net.PVRDMAVmknic`` (empty).
Build it with ``make simulator``. The fixtures that start it (vcsim, si, conn_props) are in
tests/conftest.py; `configured` gives a dynamic provider the connection its explicit provider holds.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from procs import stop
from pulumi.dynamic import Config, ConfigureRequest
from required_tools import missing

from components.dynamic.provider import CLUSTER_CONFIG, VCENTER_CONFIG

ROOT = Path(__file__).resolve().parents[1]

# The simulator rejects a user containing "@" (it compares the URL-escaped form), so no SSO domain.
VCSIM_USER = "lab-admin"
VCSIM_PASSWORD = "vcsim-only-password"  # the simulator accepts exactly this pair; test data only
_START_TIMEOUT_S = 20


def provider_config(conn: dict, *, kubeconfig: str | None = None, oc: str | None = None) -> dict:
    """An explicit provider's configuration (components/dynamic/provider.py, `vcenter_provider` and
    `node_roll_provider`) as a dynamic provider's Configure receives it: ``conn`` holds server, user,
    password, insecure and port."""
    config = {VCENTER_CONFIG[key]: conn[key] for key in VCENTER_CONFIG if key in conn}
    if kubeconfig is not None:
        config[CLUSTER_CONFIG["kubeconfig"]] = kubeconfig
    if oc is not None:
        config[CLUSTER_CONFIG["oc"]] = oc
    return config


def configured_with(provider, config: dict):
    """``provider`` configured with ``config`` as the engine's dynamic provider process configures it
    (`get_provider` in pulumi.dynamic.__main__: `configure(ConfigureRequest(Config(...)))` once, before any call)."""
    provider.configure(ConfigureRequest(Config(config, "gpu-lab")))
    return provider


def configured(provider, conn: dict, *, kubeconfig: str | None = None, oc: str | None = None):
    """``provider`` configured with the connection ``conn`` (and a cluster's kubeconfig and oc)."""
    return configured_with(provider, provider_config(conn, kubeconfig=kubeconfig, oc=oc))


def configure_server(stub, config: dict, timeout: float = 60) -> None:
    """A provider server (`python -m pulumi.dynamic`) configured with ``config``, as the engine configures it
    with the explicit provider's inputs before the first resource request."""
    from google.protobuf import struct_pb2
    from pulumi.runtime.proto import provider_pb2

    args = struct_pb2.Struct()
    args.update(config)
    stub.Configure(provider_pb2.ConfigureRequest(args=args), timeout=timeout)


@dataclass(frozen=True)
class Vcsim:
    server: str
    port: int
    user: str
    password: str

    def connection(self) -> dict:
        """Its admin's connection, as the tests hand it to `provider_config` and `configured`."""
        return {"server": self.server, "user": self.user, "password": self.password, "insecure": True,
                "port": self.port}


def lab_vcsim_binary() -> str | None:
    built = ROOT / "build" / "bin" / "lab-vcsim"
    return str(built) if built.is_file() else None


@contextmanager
def running_lab_vcsim(tmp_path_factory: pytest.TempPathFactory, name: str, *flags: str) -> Iterator[Vcsim]:
    """lab-vcsim on a loopback port with the test admin and `flags`; the admin's connection, stopped on exit."""
    binary = lab_vcsim_binary()
    if binary is None:
        missing("lab-vcsim is not built (build/bin/lab-vcsim): run make simulator")
    logs = tmp_path_factory.mktemp(name)
    out_path, err_path = logs / "stdout", logs / "stderr"
    # Port 0: the kernel picks a free port and the simulator prints it, so two runs never race.
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [binary, "-l", "127.0.0.1:0", "-username", VCSIM_USER, "-password", VCSIM_PASSWORD, *flags],
            stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    try:
        port = _wait_for_port(proc, out_path, err_path)
        sim = Vcsim("127.0.0.1", port, VCSIM_USER, VCSIM_PASSWORD)
        _wait_until_answering(proc, sim, err_path)
        yield sim
    finally:
        stop(proc)


def _wait_for_port(proc: subprocess.Popen, out_path: Path, err_path: Path) -> int:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        match = re.search(r"GOVC_URL=https://[^@]*@127\.0\.0\.1:(\d+)/sdk", out_path.read_text(errors="replace"))
        if match:
            return int(match.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    pytest.fail(f"lab-vcsim did not start (exit {proc.poll()}): {err_path.read_text(errors='replace')[-2000:]}")


def _wait_until_answering(proc: subprocess.Popen, sim: Vcsim, err_path: Path) -> None:
    from components.dynamic import hostops

    deadline = time.monotonic() + _START_TIMEOUT_S
    last: Exception | None = None
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with hostops.session(sim.server, sim.user, sim.password, port=sim.port, insecure=True) as si:
                si.CurrentTime()
            return
        except Exception as exc:  # noqa: BLE001 - retried until the deadline
            last = exc
            time.sleep(0.1)
    pytest.fail(f"lab-vcsim never answered a login: {last!r}; {err_path.read_text(errors='replace')[-2000:]}")


def vm_named(si, name: str):
    """The simulator's VM of that name."""
    from pyVmomi import vim

    from components.dynamic import hostops

    return next(vm for vm in hostops._inventory(si, vim.VirtualMachine) if vm.name == name)
