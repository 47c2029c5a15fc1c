"""OpenShiftUpi under Pulumi mocks: the whole program with the lab and guide stacks, and the
component alone with an ignition step that "ran" (mocked stdout) to follow its outputs."""

from __future__ import annotations

import base64
import json

import builders
import pulumi
import pytest
import yaml
from openshift_helpers import script_values, sections

from components.config import load_lab
from components.openshift.component import OpenShiftUpi, OpenShiftUpiArgs
from components.openshift.render import render_files
from components.secrets import LabSecrets, MissingSecretError
from tools import sdk_access
from tools.mockrun import FORMATTED_PLACEHOLDERS, run_program

TYPE = "gpu-lab:openshift:OpenShiftUpi"


def lab_config() -> dict:
    # Without the add-ons: they are another section's, and need the kubeconfig the installer
    # has not produced under mocks.
    config = builders.lab_stack()
    config.pop("gpu-lab:addons", None)
    return config


@pytest.fixture(scope="module")
def lab_run():
    return run_program(lab_config(), stack="lab")


@pytest.fixture(scope="module")
def guide_run():
    return run_program(builders.baremetal_stack(), stack="openshift")


def lab_run_with(**changes):
    config = lab_config()
    config["gpu-lab:openshift"].update(changes)
    return run_program(config, stack="lab")


def test_component_registers_the_contract_intent(lab_run):
    component = lab_run.named("openshift")
    assert component.type == TYPE
    props = component.plain()
    assert props["clusterName"] == "kub1" and props["baseDomain"] == "lab.local"
    assert props["controlPlaneCount"] == 3 and props["singleNode"] is False and props["bootstrap"] is True
    assert props["loadBalancer"]["frontends"] == [6443, 22623, 80, 443]
    assert props["loadBalancer"]["backends"]["6443"] == ["bs01", "m01", "m02", "m03"]
    assert props["loadBalancer"]["backends"]["80"] == ["w01", "w02", "w03", "w04"]


def test_children_are_named_after_the_component_and_parented_to_it(lab_run):
    children = lab_run.children_of("openshift")
    assert children and all(c.name.startswith("openshift-") for c in children)
    names = {c.name for c in children}
    assert names == {"openshift-ignition", "openshift-helper-host-key", "openshift-dns", "openshift-lb",
                     "openshift-ignition-access", "openshift-publish-bootstrap-ign", "openshift-publish-master-ign",
                     "openshift-publish-worker-ign", "openshift-pull-secret",
                     "openshift-ssh-key"}  # no PXE (no bare-metal node), no waits (opt-in)
    nodes = lab_run.children_of("openshift-nodes")
    assert sorted(c.name for c in nodes) == [f"openshift-nodes-{n}" for n in
                                             ("m01", "m02", "m03", "w01", "w02", "w03", "w04")]


def test_ignition_command_runs_the_installer_once_and_keeps_install_config_secret(lab_run):
    cmd = lab_run.named("openshift-ignition")
    assert cmd.type == "command:local:Command"
    inputs = cmd.plain()
    values = script_values(inputs["create"])
    assert values["CREATE_TARGET"] == "ignition-configs"
    assert values["INSTALL_DIR"] == "build/lab/openshift-install"
    assert values["INSTALLER"] == "openshift-install"
    assert values["MASTERS_SCHEDULABLE"] == "false"
    assert "stdin" in cmd.secret_paths()  # pull secret inside
    # no trigger: nothing but a deliberate rebuild makes a new cluster
    assert "triggers" not in inputs and "update" not in inputs
    assert yaml.safe_load(inputs["stdin"])["pullSecret"] == FORMATTED_PLACEHOLDERS["gpu-lab:pullSecret"]
    assert inputs["logging"] == "stderr"  # stdout carries ignition, kubeconfig and kubeadmin password


def test_helper_connection_is_secret_with_dial_limits(lab_run):
    remotes = [r for r in lab_run.children_of("openshift") if r.type.startswith("command:remote:")]
    assert len(remotes) == 6
    check = lab_run.named("openshift-helper-host-key")
    for r in remotes:
        assert "connection" in r.secret_paths(), r.name
        conn = r.plain()["connection"]
        assert conn["host"] == "172.16.7.5" and conn["user"] == "root"
        assert conn["privateKey"] == "<redacted>"  # the placeholder secret, present and wrapped
        assert conn["dialErrorLimit"] == 10 and conn["perDialTimeout"] == 30
        assert conn["hostKey"] == builders.HELPER_HOST_KEY
        assert check.urn in r.dependencies  # the host-key check first: nothing is sent to another host

def bundle_of(stdin: str) -> dict[str, str]:
    return {path: base64.b64decode(data).decode() for path, data in (line.split(" ") for line in stdin.splitlines())}


def test_helper_steps_carry_their_files_and_undo_what_they_installed(lab_run):
    files = render_files(load_lab(sections("lab")).plan.cluster)
    dns = lab_run.named("openshift-dns").plain()
    lb = lab_run.named("openshift-lb").plain()
    assert bundle_of(dns["stdin"]) == {"dnsmasq.conf": files["openshift/dnsmasq.conf"],
                                       "hosts.dnsmasq": files["openshift/hosts.dnsmasq"]}
    assert bundle_of(lb["stdin"]) == {"haproxy.cfg": files["openshift/haproxy.cfg"]}
    # an update installs again (no `update`: pulumi-command runs `create`), a delete takes it back
    for step in (dns, lb):
        assert "triggers" not in step and "update" not in step
        assert script_values(step["create"])["ACTION"] == "install"
        assert script_values(step["delete"])["ACTION"] == "remove"
        assert script_values(step["create"]) == {**script_values(step["delete"]), "ACTION": "install"}
    # the scripts do not embed file contents: a change reaches only the step whose files changed
    upstreams = lab_run_with(helper={**lab_config()["gpu-lab:openshift"]["helper"], "dnsUpstreams": ["172.16.31.1"]})
    assert upstreams.named("openshift-dns").plain()["stdin"] != dns["stdin"]
    assert upstreams.named("openshift-lb").plain() == lb
    ingress = lab_run_with(ingressNodes=["w01", "w02"])
    assert ingress.named("openshift-lb").plain()["stdin"] != lb["stdin"]
    assert ingress.named("openshift-dns").plain() == dns


def test_ignition_files_reach_the_helper_as_secrets_one_command_each(lab_run):
    for role in ("bootstrap", "master", "worker"):
        publish = lab_run.named(f"openshift-publish-{role}-ign")
        assert publish.type == "command:remote:Command"
        inputs = publish.plain()
        assert "stdin" in publish.secret_paths()  # the installer's ignition, certificates inside
        values = script_values(inputs["create"])
        assert (values["ACTION"], values["FILE_NAME"], values["HTTP_ROOT"]) == ("install", f"{role}.ign", "/var/www/html")
        assert values["WEB_GROUP"] == "apache"
        assert script_values(inputs["delete"])["ACTION"] == "remove"
        assert "triggers" not in inputs


def test_credentials_of_the_running_cluster_are_patched_on_update_only(lab_run):
    for role in ("pull-secret", "ssh-key"):
        rotation = lab_run.named(f"openshift-{role}")
        inputs = rotation.plain()
        assert "create" not in inputs and "delete" not in inputs  # creating it runs nothing
        assert "PATCHES" in script_values(inputs["update"])
        assert "stdin" in rotation.secret_paths()
        assert set(bundle_of(inputs["stdin"])) > {"kubeconfig"}
    vsphere = lab_run_with(platform="vsphere", vcenter={"server": "vc1.lab.local", "user": "admin@lab"})
    patches = script_values(vsphere.named("openshift-vcenter-credentials").plain()["update"])["PATCHES"]
    assert patches.splitlines() == ["secret/vsphere-creds kube-system vsphere-creds.json",
                                    "kubecontrollermanager/cluster - kube-controller-manager.json"]


def preview_before_the_installer_ran(config: dict):
    """The program as a first `pulumi preview` runs it: the ignition step has not run, so its stdout
    (and all derived from it) is unknown. Under mocks, an output the mock leaves out is unknown
    during preview, as the engine makes it."""
    import tools.mockrun as mockrun

    class InstallerNotRun(mockrun.LabMocks):
        def new_resource(self, args):
            id_, outputs = super().new_resource(args)
            if args.typ == "command:local:Command" and args.name.endswith("-ignition"):
                outputs.pop("stdout", None)
            return id_, outputs

    original = mockrun.LabMocks
    mockrun.LabMocks = InstallerNotRun
    try:
        return run_program(config, stack="lab", preview=True)
    finally:
        mockrun.LabMocks = original


def _secret_wrapped_unknowns(value, path, inside_secret=False):
    if sdk_access.is_secret_value(value):
        yield from _secret_wrapped_unknowns(value["value"], path, True)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _secret_wrapped_unknowns(v, f"{path}.{k}", inside_secret)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _secret_wrapped_unknowns(v, f"{path}[{i}]", inside_secret)
    elif inside_secret and (isinstance(value, sdk_access.Unknown) or value == sdk_access.UNKNOWN):
        yield path


def test_preview_before_the_installer_ran_puts_no_secret_unknown_into_command_triggers():
    # pulumi-command stops a preview on a secret wrapping an unknown value in `triggers`
    # ("malformed RPC secret: missing value for \"triggers\"", seen with the real pulumi-command
    # 1.2.1 provider): every trigger must be plain, and may be unknown.
    run = preview_before_the_installer_ran(lab_config())
    commands = [r for r in run.resources if r.type.startswith("command:")]
    found = [f"{r.name}: {path}" for r in commands
             for path in _secret_wrapped_unknowns(r.inputs.get("triggers"), "triggers")]
    assert found == []
    assert not [r.name for r in commands if "triggers" in r.secret_paths()]


def test_preview_before_the_installer_ran_sends_the_ignition_on_stdin_not_as_a_copy():
    # pulumi-command 1.2.1's CopyToRemote check fails on an unknown source ("either asset or archive
    # must be set"; provider/pkg/provider/remote/copyController.go, seen with the real provider), so
    # what exists only after the installer ran goes over a Command's stdin, which may be unknown.
    run = preview_before_the_installer_ran(lab_config())
    assert not run.of_type("command:remote:CopyToRemote")
    stdin = run.named("openshift-publish-master-ign").inputs["stdin"]
    assert isinstance(stdin.get("value") if isinstance(stdin, dict) else stdin, sdk_access.Unknown)


def test_each_node_approves_its_own_csrs_and_is_drained_when_it_leaves(lab_run):
    for name in ("m01", "w03"):
        node = lab_run.named(f"openshift-nodes-{name}")
        inputs = node.plain()
        assert script_values(inputs["create"])["WANTED_NODES"] == name
        assert script_values(inputs["create"])["ALLOWED_NODES"] == f"{name} {name}.kub1.lab.local"
        assert "xargs" not in inputs["create"]  # never the guide's approve-everything pipeline
        assert script_values(inputs["delete"])["NODE_NAMES"] == f"{name} {name}.kub1.lab.local"
        assert "stdin" in node.secret_paths()  # the admin kubeconfig
    assert "openshift-nodes-bs01" not in {r.name for r in lab_run.resources}  # the bootstrap node never joins
    without = lab_run_with(approveCsrs=False).named("openshift-nodes-w01").plain()
    assert "create" not in without and "delete" in without


def test_vms_get_ignition_and_network_kargs(lab_run):
    vms = {r.name: r for r in lab_run.of_type("vsphere:index/virtualMachine:VirtualMachine")}
    bootstrap = vms["vms-bs01"].plain()["extraConfig"]
    pointer = json.loads(base64.b64decode(bootstrap["guestinfo.ignition.config.data"]))
    assert pointer["ignition"]["config"]["merge"] == [{"source": "http://172.16.7.5:8080/bootstrap.ign"}]
    assert bootstrap["guestinfo.ignition.config.data.encoding"] == "base64"
    assert bootstrap["guestinfo.afterburn.initrd.network-kargs"].startswith("ip=172.16.7.10::")
    worker = vms["vms-w01"]
    assert "extraConfig" in worker.secret_paths()  # the installer's worker.ign
    assert "ip=192.168.0.51:::255.255.255.0::ens224:none:9000" in \
        worker.plain()["extraConfig"]["guestinfo.afterburn.initrd.network-kargs"]


def test_bootstrap_false_removes_bootstrap_vm_backend_and_files():
    run = lab_run_with(bootstrap=False)
    props = run.named("openshift").plain()
    assert props["bootstrap"] is False
    assert all("bs01" not in names for names in props["loadBalancer"]["backends"].values())
    assert "vms-bs01" not in {r.name for r in run.of_type("vsphere:index/virtualMachine:VirtualMachine")}
    names = {r.name for r in run.resources}
    assert "openshift-publish-bootstrap-ign" not in names  # its delete withdraws bootstrap.ign
    assert {"openshift-publish-master-ign", "openshift-publish-worker-ign"} <= names


def test_guide_stack_deploys_pxe_and_runs_the_install_lifecycle(guide_run):
    names = {r.name for r in guide_run.resources}
    assert not guide_run.of_type("vsphere:index/virtualMachine:VirtualMachine")
    assert "openshift-pxe" in names
    pxe = guide_run.named("openshift-pxe").plain()
    assert {"pxelinux.cfg/default", "grub.cfg"} <= set(bundle_of(pxe["stdin"]))
    wait_bootstrap = guide_run.named("openshift-wait-bootstrap")
    wait_install = guide_run.named("openshift-wait-install")
    assert wait_install.parent_name == "openshift-nodes"
    assert script_values(wait_bootstrap.plain()["create"])["WAIT_STAGE"] == "bootstrap-complete"
    assert script_values(wait_install.plain()["create"])["WAIT_STAGE"] == "install-complete"
    assert wait_install.plain()["logging"] == "none"  # it prints the kubeadmin password
    for wait in (wait_bootstrap, wait_install):
        assert "stdin" in wait.secret_paths()  # the install dir, put back where it is missing
        assert "auth/kubeconfig" in bundle_of(wait.plain()["stdin"])
    props = guide_run.named("openshift").plain()
    assert props["clusterName"] == "pod1" and props["controlPlaneCount"] == 3


# ---------------------------------------------------------------- the component alone, ignition "done"

FAKE_FILES = {
    "bootstrap": '{"ignition":{"version":"3.2.0"},"storage":{}}',
    "master": '{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"https://api-int:22623/config/master"}]}}}',
    "worker": '{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"https://api-int:22623/config/worker"}]}}}',
    "kubeconfig": "apiVersion: v1\nkind: Config\n",
}


class IgnitionRan(pulumi.runtime.Mocks):
    """Every resource echoes its inputs; the ignition Command also has the installer's stdout."""

    def __init__(self):
        self.resources: dict[str, dict] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        outputs = dict(args.inputs)
        if args.typ == "command:local:Command" and args.name.endswith("-ignition"):
            outputs["stdout"] = json.dumps({k: base64.b64encode(v.encode()).decode() for k, v in FAKE_FILES.items()})
        self.resources[args.name] = outputs
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


def secrets(**missing) -> LabSecrets:
    values = {k: pulumi.Output.secret(f"test-{k}") for k in
              ("pull_secret", "ssh_public_key", "helper_ssh_private_key", "vcenter_password")}
    values.update(missing)
    return LabSecrets(**values)


def resolve(output):
    return sdk_access.resolved(output)


@pytest.fixture
def mocks():
    pulumi.runtime.reset_options()  # a new root Stack and no outstanding work from earlier tests
    m = IgnitionRan()
    pulumi.runtime.set_mocks(m, project="gpu-lab", stack="lab", preview=False)
    return m


def test_outputs_come_from_the_installer_and_stay_secret(mocks):
    component = OpenShiftUpi("openshift", OpenShiftUpiArgs(cluster=load_lab(sections("lab")).plan.cluster, secrets=secrets()))
    kubeconfig, secret = resolve(component.kubeconfig)
    assert kubeconfig == FAKE_FILES["kubeconfig"] and secret
    extra, secret = resolve(pulumi.Output.from_input(component.vm_extra_config["m02"]))
    assert secret
    assert base64.b64decode(extra["guestinfo.ignition.config.data"]).decode() == FAKE_FILES["master"]
    assert "ip=172.16.7.12::" in extra["guestinfo.afterburn.initrd.network-kargs"]
    extra, _ = resolve(pulumi.Output.from_input(component.vm_extra_config["w03"]))
    assert base64.b64decode(extra["guestinfo.ignition.config.data"]).decode() == FAKE_FILES["worker"]
    assert set(component.vm_extra_config) == {n.name for n in load_lab(sections("lab")).plan.cluster.nodes}
    assert component.api_url == "https://api.kub1.lab.local:6443"


def test_install_dir_and_installer_are_configurable(mocks):
    raw = sections("lab")
    raw["openshift"]["installer"] = "/opt/ocp/4.16/openshift-install"
    component = OpenShiftUpi("openshift", OpenShiftUpiArgs(cluster=load_lab(raw).plan.cluster, secrets=secrets(),
                                                           install_dir="/srv/ocp/kub1"))
    resolve(component.kubeconfig)  # the ignition Command has been registered once this resolves
    cmd = mocks.resources["openshift-ignition"]
    values = script_values(cmd["create"])
    assert values["INSTALLER"] == "/opt/ocp/4.16/openshift-install"
    assert values["INSTALL_DIR"] == "/srv/ocp/kub1"
    assert cmd["delete"] == "rm -rf /srv/ocp/kub1"
    assert component.install_dir == "/srv/ocp/kub1"


def test_missing_helper_key_is_named():
    with pytest.raises(MissingSecretError, match="gpu-lab:helperSshPrivateKey"):
        OpenShiftUpi("openshift", OpenShiftUpiArgs(cluster=load_lab(sections("baremetal")).plan.cluster,
                                                   secrets=secrets(helper_ssh_private_key=None)))


def test_missing_pull_secret_fails_the_program():
    config = builders.baremetal_stack()
    from tools.mockrun import placeholder_secrets

    values = placeholder_secrets(config)
    values["gpu-lab:pullSecret"] = None
    with pytest.raises(Exception, match="gpu-lab:pullSecret"):
        run_program(config, stack="openshift", secrets=values)


@pytest.mark.parametrize("key, value, fragment", [
    # openshift/installer pkg/validate/validate.go, ImagePullSecret (JSON, non-empty auths)
    ("gpu-lab:pullSecret", '{"auths": {}}', 'gpu-lab:pullSecret: needs a non-empty "auths" object'),
    # openshift/installer pkg/validate/validate.go, SSHPublicKey
    ("gpu-lab:sshPublicKey", "-----BEGIN OPENSSH PRIVATE KEY----- c2VjcmV0", "gpu-lab:sshPublicKey: line 1: no key type"),
])
def test_malformed_install_config_secret_stops_the_program_without_showing_it(key, value, fragment):
    # openshift-install would reject it and print the value whole into the Command's logged stderr.
    config = builders.baremetal_stack()
    from tools.mockrun import placeholder_secrets

    values = placeholder_secrets(config)
    values[key] = value
    with pytest.raises(Exception, match="values not shown") as err:
        run_program(config, stack="openshift", secrets=values)
    assert fragment in str(err.value)
    assert value not in str(err.value) and "c2VjcmV0" not in str(err.value)


def test_whole_lab_runs_once_mocks_give_the_ignition_step_its_stdout(monkeypatch):
    # What tools.mockrun.LabMocks needs so the add-ons get the kubeconfig under mocks.
    import tools.mockrun as mockrun
    from components.openshift.files.installer import parse_ignition_stdout, placeholder_ignition_stdout

    class WithIgnition(mockrun.LabMocks):
        def new_resource(self, args):
            rid, outputs = super().new_resource(args)
            if args.typ == "command:local:Command" and args.name.endswith("-ignition"):
                outputs = {**outputs, "stdout": placeholder_ignition_stdout()}
            return rid, outputs

    monkeypatch.setattr(mockrun, "LabMocks", WithIgnition)
    run = run_program(builders.lab_stack())
    assert run.named("openshift").type == TYPE
    assert set(parse_ignition_stdout(placeholder_ignition_stdout())) == {
        "bootstrap", "master", "worker", "kubeconfig", "kubeadminPassword", "metadata", "installState"}
    master = run.named("vms-m01").plain()["extraConfig"]["guestinfo.ignition.config.data"]
    assert json.loads(base64.b64decode(master)) == {"ignition": {"version": "3.2.0"}}
