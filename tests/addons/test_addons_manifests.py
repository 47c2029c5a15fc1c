"""Pure builders of the add-ons: commands, CNI configs, licensing and token files, rendered files."""

from __future__ import annotations

import copy
import json
import re

import pytest
import yaml
from addons_harness import LAB_ADDONS, VSPHERE, full_addons, token_archive

from components.addons import versions
from components.addons.bitfusion import benchmark_command, bitfusion_wrap, client_config, sidecar_config, unpack_tokens
from components.addons.gpu import render_gridd_conf
from components.addons.jobs import ib_write_bw_command
from components.addons.mpi import mpirun
from components.addons.rdma import macvlan_config, rdma_shared_device_config
from components.addons.render import render_files
from components.config import load_lab


def test_bitfusion_wrap_prefixes_the_guides_run_line():
    assert bitfusion_wrap(["python", "train.py", "--epochs=1"], 1, 0.5) == [
        "bitfusion", "run", "-n", "1", "-p", "0.5", "--", "python", "train.py", "--epochs=1"]
    assert bitfusion_wrap(["nvidia-smi"], 2, 1.0)[:7] == ["bitfusion", "run", "-n", "2", "-p", "1", "--"]


@pytest.mark.parametrize("command, gpus, fraction, words", [
    ([], 1, 0.5, "needs a command"),
    (["x"], 0, 0.5, "gpus must be 1 or more"),
    (["x"], 1, 0, "fraction must be in (0, 1]"),
    (["x"], 1, 1.5, "fraction must be in (0, 1]"),
])
def test_bitfusion_wrap_refuses_what_bitfusion_would(command, gpus, fraction, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace("]", r"\]")):
        bitfusion_wrap(command, gpus, fraction)


def test_the_benchmark_command_is_reference_002s():
    cmd = benchmark_command(2)
    assert cmd[:2] == ["python", "benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py"]
    assert "--num_gpus=2" in cmd and "--use_nccl=false" in cmd


def test_tokens_archive_unpacks_to_the_three_client_files():
    files = unpack_tokens(token_archive())
    assert sorted(files) == ["ca.crt", "client.yaml", "servers.conf"]
    assert files["client.yaml"] == "id: client-1\n"


@pytest.mark.parametrize("value, words", [
    ("<redacted>", "not a base64 tar archive"),
    ("aGVsbG8=", "not a base64 tar archive"),
    (token_archive({"ca.crt": "x", "client.yaml": "y"}), "lacks servers.conf"),
])
def test_bad_tokens_archive_says_what_to_set(value, words):
    with pytest.raises(ValueError) as err:
        unpack_tokens(value)
    assert words in str(err.value)
    assert "gpu-lab:bitfusionClientToken" in str(err.value) and "base64 -w0" in str(err.value)


def test_gridd_conf_for_nls_and_the_legacy_server():
    def licensing(**raw):
        gpu = {"enabled": True, "vgpu": {"repository": "registry.lab.local:5000/nvidia"}, "licensing": raw}
        lab = load_lab({"vsphere": copy.deepcopy(VSPHERE), "addons": {"gpuOperator": gpu}})
        return lab.plan.addons.gpu_operator.licensing

    nls = render_gridd_conf(licensing())
    assert "FeatureType=1" in nls.splitlines() and "ServerAddress" not in nls
    legacy = render_gridd_conf(licensing(mode="legacy", serverAddress="172.16.7.5"))
    assert {"FeatureType=1", "ServerAddress=172.16.7.5", "ServerPort=7070"} <= set(legacy.splitlines())


def test_macvlan_attachments_on_the_pvrdma_nic():
    pooled = json.loads(macvlan_config("rdma-net", "ens224", 9000, {"type": "nv-ipam", "poolName": "rdma-pool"}))
    assert pooled == {"cniVersion": "0.3.1", "name": "rdma-net", "type": "macvlan", "master": "ens224",
                      "mode": "bridge", "mtu": 9000, "ipam": {"type": "nv-ipam", "poolName": "rdma-pool"}}
    static = json.loads(macvlan_config("rdma-static", "ens224", 9000, {"type": "static"}, static=True))
    # Multus passes the pod's requested address to static IPAM only with the ips capability.
    assert static["capabilities"] == {"ips": True} and static["ipam"] == {"type": "static"}


def test_rdma_shared_device_plugin_selects_the_pvrdma_function():
    config = json.loads(rdma_shared_device_config("pvrdma"))
    (entry,) = config["configList"]
    assert entry["resourceName"] == "pvrdma"
    assert entry["selectors"] == {"vendors": ["15ad"], "deviceIDs": ["0820"]}


def test_ib_write_bw_commands_are_the_guides():
    assert ib_write_bw_command("vmw_pvrdma0") == ["ib_write_bw", "-R", "-d", "vmw_pvrdma0", "--report_gbits"]
    assert ib_write_bw_command(None, "10.10.11.11") == ["ib_write_bw", "-R", "--report_gbits", "10.10.11.11"]


def test_mpirun_exports_and_keeps_mpi_off_the_verbs_btl():
    cmd = mpirun(4, ["NCCL_IB_DISABLE=0", "PATH"], ["/bin/true"])
    assert cmd[:4] == ["mpirun", "--allow-run-as-root", "-np", "4"]
    assert cmd[cmd.index("NCCL_IB_DISABLE=0") - 1] == "-x"
    assert cmd[-7:] == ["-mca", "pml", "ob1", "-mca", "btl", "^openib", "/bin/true"]


def test_webhook_configuration_files_parse():
    sidecar = yaml.safe_load(sidecar_config())
    volumes = {v["name"]: v for v in sidecar["volumes"]}
    assert volumes["client-from-secret"]["secret"]["secretName"] == "bitfusion-secret"
    assert sidecar["initContainers"][0]["image"].startswith(versions.BITFUSION_IMAGE_REPO)
    clients = yaml.safe_load(client_config())["BitfusionClients"]
    assert {c["OSVersion"] for c in clients} == {"ubuntu18", "ubuntu20", "centos7", "centos8"}
    assert all(c["BinaryPath"].endswith("/usr/bin/bitfusion") for c in clients)


def test_render_files_of_the_lab():
    lab = load_lab({"vsphere": copy.deepcopy(VSPHERE), "addons": copy.deepcopy(LAB_ADDONS)})
    files = render_files(lab.plan.addons)
    assert set(files) == {"addons/versions.json", "addons/report-thresholds.txt", "addons/licensing/gridd.conf",
                          "addons/licensing/client_configuration_token.tok"}
    assert files["addons/licensing/client_configuration_token.tok"].strip() == "<redacted>"
    assert "FeatureType=1" in files["addons/licensing/gridd.conf"]
    data = json.loads(files["addons/versions.json"])
    assert data["helmCharts"]["gpuOperator"] == {"chart": "gpu-operator", "repo": "https://helm.ngc.nvidia.com/nvidia",
                                                 "version": versions.GPU_OPERATOR.version}
    assert data["enabled"]["bitfusion"] is False and data["enabled"]["ncclRdma"] is True
    assert "--nics-per-node 1" in files["addons/report-thresholds.txt"]


def test_render_files_without_addons_has_no_licensing():
    lab = load_lab({"vsphere": copy.deepcopy(VSPHERE)})
    assert set(render_files(lab.plan.addons)) == {"addons/versions.json", "addons/report-thresholds.txt"}
    bare = load_lab({"addons": full_addons(gpuOperator={"enabled": True}, bitfusion={"enabled": False},
                                           jobs={"nodes": ["gpu01", "gpu02"]})})
    assert "--nics-per-node 2" in render_files(bare.plan.addons)["addons/report-thresholds.txt"]


def test_versions_are_pinned(full_run):
    for chart in (versions.NFD, versions.GPU_OPERATOR, versions.NETWORK_OPERATOR):
        assert chart.version[0].isdigit() or chart.version.startswith("v")
        assert chart.repo.startswith("https://")
    # the MPI operator's manifest the program registers is a release tag's, not a branch's
    (mpi,) = [r for r in full_run.of_type("kubernetes:yaml/v2:ConfigFile") if r.name.endswith("mpi-operator")]
    assert re.search(r"/kubeflow\+mpi-operator/v\d+\.\d+\.\d+/", mpi.plain()["file"]), mpi.plain()["file"]
    assert versions.NETWORK_OPERATOR.version in versions.NETWORK_OPERATOR_COMPONENTS
    for image in (versions.CUDA_IMAGE, versions.NCCL_TESTS_IMAGE):
        assert not image.endswith(":latest") and ":" in image.rsplit("/", 1)[-1]
