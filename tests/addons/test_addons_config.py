"""The addons section: defaults, structure errors, and the rules across the lab."""

from __future__ import annotations

import copy

import pytest
from addons_harness import ALL_JOBS, LAB_ADDONS, VSPHERE, full_addons

from components.addons.model import AddonsConfig
from components.addons.rules import registry_auth_problems, required_secrets
from components.config import load_lab
from components.model import ConfigError


def lab_with(addons, vsphere=True):
    sections = {"addons": copy.deepcopy(addons)}
    if vsphere:
        sections["vsphere"] = copy.deepcopy(VSPHERE)
    return load_lab(sections)


def problems(addons, vsphere=True) -> dict[str, str]:
    """YAML key path -> its messages, joined."""
    found: dict[str, list[str]] = {}
    for p in _all_problems(addons, vsphere):
        found.setdefault(p.path, []).append(p.message)
    return {path: " | ".join(messages) for path, messages in found.items()}


def _all_problems(addons, vsphere=True):
    with pytest.raises(ConfigError) as err:
        lab_with(addons, vsphere)
    return err.value.problems


def test_nothing_is_installed_without_an_addons_block():
    lab = load_lab({"vsphere": copy.deepcopy(VSPHERE)})
    assert lab.addons == AddonsConfig()
    assert not lab.addons.any_enabled
    assert set(lab.addons.enabled_map().values()) == {False}


def test_one_switch_is_enough_to_enable_the_addons():
    assert lab_with({"nfd": {"enabled": True}}).addons.any_enabled
    assert lab_with({"mpiOperator": {"enabled": True}}).addons.any_enabled


def test_the_lab_stack_turns_on_the_guides_addons_but_not_bitfusion():
    lab = lab_with(LAB_ADDONS)
    on = lab.addons.enabled_map()
    assert on.pop("bitfusion") is False
    assert all(on.values()), on
    assert lab.addons.gpu_operator.vgpu.repository.startswith("registry.lab.local")
    assert lab.addons.gpu_operator.licensing.mode == "nls"
    assert lab.plan.addons.network.mode == "pvrdma"


def test_defaults_follow_the_platform_and_the_ip_plan():
    lab = lab_with({"network": {"enabled": True}, "jobs": {"ibWriteBw": True}})
    assert lab.plan.addons.network.mode == "pvrdma"
    assert list(lab.plan.addons.jobs.nodes) == ["w01", "w02", "w03", "w04"]
    # Upper half of 192.168.0.0/24: clear of the vmks (.24-.27) and the worker VMs (.51-.54).
    assert str(lab.plan.addons.network.pod_pool) == "192.168.0.128/25"
    assert list(lab.plan.addons.jobs.ib_write_bw_addresses) == ["192.168.0.253", "192.168.0.254"]
    bare = lab_with({"network": {"enabled": True}, "jobs": {"nodes": ["gpu01", "gpu02"]}}, vsphere=False)
    assert bare.plan.addons.network.mode == "sriov"
    rails = bare.addons.network.sriov.rails
    assert [(r.network_name, r.vlan, r.resource_name) for r in rails] == [
        ("sriov111", 111, "sriov_111"), ("sriov112", 112, "sriov_112")]
    assert bare.addons.network.sriov.num_vfs == 8


def test_structure_errors_name_the_yaml_key():
    found = problems({"bitfusion": {"enabled": True, "clientImage": "x", "fraction": 1.5},
                      "network": {"mode": "infiniband"}, "gpuOperator": {"gpudirect": True}})
    assert "addons.bitfusion.fraction" in found
    assert "addons.network.mode" in found
    assert "unknown key" in found["addons.gpuOperator.gpudirect"]


def test_jobs_need_the_addons_they_run_on():
    found = problems({"jobs": {"ncclRdma": True, "nvidiaSmi": True}})
    for needed in ("addons.network.enabled", "addons.mpiOperator.enabled", "addons.gpuOperator.enabled"):
        assert f"set {needed}: true" in found["addons.jobs.ncclRdma"]
    assert found["addons.jobs.nvidiaSmi"] == "requests nvidia.com/gpu; set addons.gpuOperator.enabled: true"


def test_vgpu_workers_need_the_guest_driver():
    found = problems({"gpuOperator": {"enabled": True}})
    assert "grid_v100-16c" in found["addons.gpuOperator.vgpu"]
    assert "private registry" in found["addons.gpuOperator.vgpu"]


def test_vgpu_workers_carry_one_gpu_each():
    found = problems(full_addons(bitfusion={"enabled": False}, jobs={**ALL_JOBS, "gpusPerWorker": 8}))
    assert "use 1" in found["addons.jobs.gpusPerWorker"]


def test_legacy_licensing_needs_the_server():
    addons = {"gpuOperator": {"enabled": True, "vgpu": {"repository": "r"}, "licensing": {"mode": "legacy"}}}
    assert "7070" in problems(addons)["addons.gpuOperator.licensing.serverAddress"]
    addons["gpuOperator"]["licensing"]["serverAddress"] = "172.16.7.5"
    assert lab_with(addons).addons.gpu_operator.licensing.server_port == 7070


def test_gpudirect_rdma_is_refused_on_pvrdma():
    found = problems({"gpuOperator": {"enabled": True, "vgpu": {"repository": "r"}, "gpudirectRdma": True},
                      "network": {"enabled": True}})
    assert "sriov" in found["addons.gpuOperator.gpudirectRdma"]


def test_pvrdma_needs_vsphere():
    found = problems({"network": {"enabled": True, "mode": "pvrdma"}, "jobs": {"nodes": ["a", "b"]}},
                     vsphere=False)
    assert "vsphere section" in found["addons.network.mode"]


@pytest.mark.parametrize("pool, words", [
    ("10.0.0.0/24", "not inside the RDMA network"),
    ("192.168.0.0/26", "contains 192.168.0.24 of host esx01"),
    ("192.168.0.48/28", "contains 192.168.0.51 of VM w01"),
])
def test_pod_pool_stays_clear_of_the_lab(pool, words):
    found = problems({"network": {"enabled": True, "podPool": pool}})
    assert words in found["addons.network.podPool"]


def test_ib_write_bw_addresses_are_checked_against_the_lab():
    base = {"network": {"enabled": True}, "jobs": {"ibWriteBw": True}}
    for addresses, key, words in (
        (["192.168.0.51", "192.168.0.60"], "addons.jobs.ibWriteBwAddresses[0]", "VM w01"),
        (["192.168.0.60", "10.1.1.1"], "addons.jobs.ibWriteBwAddresses[1]", "not a usable address"),
        (["192.168.0.60", "192.168.0.60"], "addons.jobs.ibWriteBwAddresses", "different addresses"),
    ):
        addons = copy.deepcopy(base)
        addons["jobs"]["ibWriteBwAddresses"] = addresses
        assert words in problems(addons)[key]


def test_two_node_jobs_need_two_nodes_once_each():
    addons = {"network": {"enabled": True}, "jobs": {"ibWriteBw": True, "nodes": ["gpu01"]}}
    assert "at least 2" in problems(addons, vsphere=False)["addons.jobs.nodes"]
    addons["jobs"]["nodes"] = ["gpu01", "gpu01"]
    assert "more than once" in problems(addons, vsphere=False)["addons.jobs.nodes"]
    addons["jobs"]["nodes"] = None
    assert "no GPU worker nodes" in problems(addons, vsphere=False)["addons.jobs.nodes"]
    network_only = {"network": {"enabled": True}}
    assert "no GPU worker nodes" in problems(network_only, vsphere=False)["addons.jobs.nodes"]


def test_sriov_rails_are_one_vlan_and_one_subnet_each():
    rails = [{"pfName": "enp5s0", "vlan": 111, "networkName": "sriov111", "resourceName": "sriov_111",
              "cidr": "10.10.11.0/24"},
             {"pfName": "enp132s0", "vlan": 111, "networkName": "sriov112", "resourceName": "sriov_112",
              "cidr": "10.10.11.128/25"}]
    messages = [str(p) for p in _all_problems(
        {"network": {"enabled": True, "sriov": {"rails": rails}}, "jobs": {"nodes": ["a", "b"]}}, vsphere=False)]
    assert any("vlan 111" in m for m in messages)
    assert any(m.startswith("addons.network.sriov.rails[0].cidr") and "overlaps" in m for m in messages)


def test_bitfusion_needs_a_client_image():
    assert "clientImage" in " ".join(problems({"bitfusion": {"enabled": True}}))


def test_required_secrets_follow_the_switches():
    lab = lab_with(full_addons())
    needed = dict(required_secrets(lab.addons_lab))
    assert set(needed) == {"kubeconfig", "registry_auth", "nvidia_license_token", "bitfusion_client_token"}
    assert "gpu-lab" not in needed["kubeconfig"] and "OpenShift" in needed["kubeconfig"]
    legacy = full_addons(bitfusion={"enabled": False},
                         gpuOperator={"enabled": True, "vgpu": {"repository": "r"},
                                      "licensing": {"mode": "legacy", "serverAddress": "172.16.7.5"}})
    assert set(dict(required_secrets(lab_with(legacy).addons_lab))) == {"kubeconfig", "registry_auth"}
    assert required_secrets(load_lab({"vsphere": copy.deepcopy(VSPHERE)}).addons_lab) == []


# The API server parses .dockerconfigjson as JSON (kubernetes pkg/apis/core/validation, ValidateSecret);
# the kubelet reads `auths` as registry -> entry object (pkg/credentialprovider/config.go).
@pytest.mark.parametrize("value, message", [
    ("user:password", "is not JSON (Expecting value at character 0); give the registry's auth file"),
    ('{"registry.lab.local": {"auth": "dXNlcjpwYXNz"}}', 'needs a non-empty "auths" object'),
    ('{"auths": {}}', 'needs a non-empty "auths" object'),
    ('["auths"]', 'needs a non-empty "auths" object'),
    ('{"auths": {"registry.lab.local": "dXNlcjpwYXNz"}}', "registry 'registry.lab.local' needs an object of credentials"),
])
def test_a_registry_auth_that_is_not_a_docker_config_is_refused_naming_the_key(value, message):
    [problem] = registry_auth_problems(value)
    assert problem.path == "gpu-lab:registryAuth" and message in problem.message
    assert "dXNlcjpwYXNz" not in problem.message and "password" not in problem.message


def test_a_docker_config_passes():
    assert registry_auth_problems('{"auths": {"registry.lab.local:5000": {"auth": "dXNlcjpwYXNz"}}}') == []
    assert registry_auth_problems('{"auths": {"r.lab": {"username": "u", "password": "p"}}, "credsStore": "x"}') == []


def test_registry_auth_is_checked_only_where_the_add_ons_use_it():
    assert "registryAuth" in lab_with(full_addons()).secret_format_rules()
    assert "registryAuth" not in lab_with({"nfd": {"enabled": True}}).secret_format_rules()


# ---------------------------------------------------------------- nv-ipam's block per node


def test_adding_a_worker_leaves_every_pools_block_size():
    """nv-ipam keeps a node's range only while the pool's perNodeBlockSize stays (Mellanox/nvidia-k8s-ipam at
    network-operator-v26.4.1, pkg/ipam-controller/allocator/allocator.go): the block is fixed, never the pool
    divided among the workers."""
    from addons_harness import by_name, run_addons

    four = by_name(run_addons(full_addons()), "IPPool", "rdma-pool")["spec"]
    vsphere = copy.deepcopy(VSPHERE)
    vsphere["workers"]["names"] = [*vsphere["workers"]["names"], "w05"]
    five = by_name(run_addons(full_addons(), vsphere=vsphere), "IPPool", "rdma-pool")["spec"]
    assert five["perNodeBlockSize"] == four["perNodeBlockSize"] == 8
    assert five["nodeSelector"] != four["nodeSelector"]


@pytest.mark.parametrize("block, fits", [(31, True), (32, False)])
def test_the_blocks_must_fit_the_pool(block, fits):
    # 192.168.0.128/25 holds 126 addresses: four blocks of 31, not of 32
    addons = {"network": {"enabled": True, "podPool": "192.168.0.128/25", "podAddressesPerNode": block}}
    if fits:
        lab_with(addons)
        return
    assert problems(addons)["addons.network.podAddressesPerNode"] == (
        "32 addresses for each of 4 nodes do not fit addons.network.podPool 192.168.0.128/25 (126 addresses, "
        "3 blocks): give a larger pool, or a smaller block before any RDMA pod runs")
