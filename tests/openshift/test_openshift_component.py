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

from components import sdk_internals
from components.config import load_lab
from components.openshift.component import OpenShiftUpi, OpenShiftUpiArgs
from components.openshift.files import sha256
from components.openshift.render import render_files
from components.secrets import LabSecrets, MissingSecretError
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
    assert {"openshift-ignition", "openshift-dns", "openshift-lb", "openshift-publish-ignition",
            "openshift-approve-csrs"} <= names
    assert "openshift-pxe" not in names  # no bare-metal node in the lab
    assert "openshift-wait-bootstrap" not in names and "openshift-wait-install" not in names  # opt-in


def test_ignition_command_reruns_on_install_config_change_and_keeps_it_secret(lab_run):
    cmd = lab_run.named("openshift-ignition")
    assert cmd.type == "command:local:Command"
    inputs = cmd.plain()
    values = script_values(inputs["create"])
    assert values["CREATE_TARGET"] == "ignition-configs"
    assert values["INSTALL_DIR"] == "build/lab/openshift-install"
    assert values["INSTALLER"] == "openshift-install"
    assert "stdin" in cmd.secret_paths()  # pull secret inside
    # the placeholder secrets of the mock run flow into install-config, so its hash is the trigger;
    # a one-way hash, not secret (a secret in triggers breaks pulumi-command's preview)
    assert "triggers" not in cmd.secret_paths()
    assert inputs["triggers"] == [sha256(inputs["stdin"])]
    assert yaml.safe_load(inputs["stdin"])["pullSecret"] == FORMATTED_PLACEHOLDERS["gpu-lab:pullSecret"]
    assert inputs["logging"] == "stderr"  # stdout carries ignition and kubeconfig


def test_helper_connection_is_secret_with_dial_limits(lab_run):
    remotes = [r for r in lab_run.children_of("openshift") if r.type.startswith("command:remote:")]
    assert len(remotes) >= 8
    for r in remotes:
        assert "connection" in r.secret_paths(), r.name
        conn = r.plain()["connection"]
        assert conn["host"] == "172.16.7.5" and conn["user"] == "root"
        assert conn["privateKey"] == "<redacted>"  # the placeholder secret, present and wrapped
        assert conn["dialErrorLimit"] == 10 and conn["perDialTimeout"] == 30


def test_services_restart_only_on_a_change_of_their_own_files(lab_run):
    files = render_files(load_lab(sections("lab")).plan.cluster)
    dns = lab_run.named("openshift-dns").plain()
    lb = lab_run.named("openshift-lb").plain()
    assert dns["triggers"] == [sha256(files["openshift/dnsmasq.conf"]), sha256(files["openshift/hosts.dnsmasq"])]
    assert lb["triggers"] == [sha256(files["openshift/haproxy.cfg"])]
    assert "systemctl restart dnsmasq" in dns["create"] and "reload-or-restart haproxy" in lb["create"]
    # the commands do not embed file contents, so an unchanged file changes nothing
    paths = load_lab(sections("lab")).plan.cluster.config.helper.paths
    assert script_values(dns["create"]) == {"USE_SUDO": "no", "STAGING_DIR": paths.staging,
                                            "HOSTS_FILE": paths.hosts_file, "DNSMASQ_CONF": paths.dnsmasq_conf}
    assert "api.kub1" not in dns["create"] and "server " not in lb["create"]
    staged = lab_run.named("openshift-stage-haproxy-cfg").plain()
    assert staged["remotePath"] == "/var/tmp/gpu-lab-openshift/haproxy.cfg"
    assert staged["triggers"] == [sha256(files["openshift/haproxy.cfg"])]

    upstreams = lab_run_with(helper={"address": "172.16.7.5", "dnsUpstreams": ["172.16.31.1"]})
    assert upstreams.named("openshift-dns").plain()["triggers"] != dns["triggers"]
    assert upstreams.named("openshift-lb").plain()["triggers"] == lb["triggers"]
    ingress = lab_run_with(ingressNodes=["w01", "w02"])
    assert ingress.named("openshift-lb").plain()["triggers"] != lb["triggers"]
    assert ingress.named("openshift-dns").plain()["triggers"] == dns["triggers"]


def test_ignition_files_reach_the_helper_as_secrets(lab_run):
    for role in ("bootstrap", "master", "worker"):
        stage = lab_run.named(f"openshift-stage-{role}-ign")
        assert stage.type == "command:remote:Command"
        inputs = stage.plain()
        assert f"cat > /var/tmp/gpu-lab-openshift/{role}.ign.tmp" in inputs["create"]
        assert "umask 077" in inputs["create"]
        assert "stdin" in stage.secret_paths()  # the installer's ignition, certificates inside
        assert "triggers" not in stage.secret_paths()
        assert inputs["triggers"] == [sha256(inputs["stdin"])]
    publish = lab_run.named("openshift-publish-ignition")
    assert "triggers" not in publish.secret_paths()
    values = script_values(publish.plain()["create"])
    assert values["HTTP_ROOT"] == "/var/www/html"
    assert values["IGNITION_FILES"].splitlines() == ["bootstrap.ign", "master.ign", "worker.ign"]


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
    from pulumi.output import Unknown
    from pulumi.runtime import rpc

    if rpc.is_rpc_secret(value):
        yield from _secret_wrapped_unknowns(value["value"], path, True)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _secret_wrapped_unknowns(v, f"{path}.{k}", inside_secret)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _secret_wrapped_unknowns(v, f"{path}[{i}]", inside_secret)
    elif inside_secret and (isinstance(value, Unknown) or value == rpc.UNKNOWN):
        yield path


def test_preview_before_the_installer_ran_puts_no_secret_unknown_into_command_triggers():
    # pulumi-command stops a preview on a secret wrapping an unknown value in `triggers`
    # ("malformed RPC secret: missing value for \"triggers\"", seen with the real pulumi-command
    # 1.2.1 provider): every trigger must be plain, and may be unknown.
    run = preview_before_the_installer_ran(lab_config())
    commands = [r for r in run.resources if r.type.startswith("command:")]
    stage = run.named("openshift-stage-bootstrap-ign")
    from pulumi.output import Unknown
    assert isinstance(stage.inputs["triggers"][0], Unknown)  # the simulation does make it unknown
    found = [f"{r.name}: {path}" for r in commands
             for path in _secret_wrapped_unknowns(r.inputs.get("triggers"), "triggers")]
    assert found == []
    assert not [r.name for r in commands if "triggers" in r.secret_paths()]


def test_preview_before_the_installer_ran_gives_copy_to_remote_only_known_sources():
    # pulumi-command 1.2.1's CopyToRemote check fails on an unknown source ("either asset or archive
    # must be set"; provider/pkg/provider/remote/copyController.go, seen with the real provider), so
    # what exists only after the installer ran goes over a Command's stdin instead.
    from pulumi.output import Unknown

    run = preview_before_the_installer_ran(lab_config())
    copies = run.of_type("command:remote:CopyToRemote")
    assert copies
    for r in copies:
        source = r.plain()["source"]
        assert not isinstance(source, Unknown) and source is not None, r.name


def test_csr_approval_names_only_the_configured_nodes(lab_run):
    script = lab_run.named("openshift-approve-csrs").plain()["create"]
    values = script_values(script)
    assert values["WANTED_NODES"] == "m01 m02 m03 w01 w02 w03 w04"
    assert "bs01" not in script
    assert values["KUBECONFIG"] == "build/lab/openshift-install/auth/kubeconfig"
    assert "xargs" not in script  # never the guide's approve-everything pipeline


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
    assert "openshift-stage-bootstrap-ign" not in names
    published = script_values(run.named("openshift-publish-ignition").plain()["create"])["IGNITION_FILES"]
    assert published.splitlines() == ["master.ign", "worker.ign"]


def test_guide_stack_deploys_pxe_and_runs_the_install_lifecycle(guide_run):
    names = {r.name for r in guide_run.resources}
    assert not guide_run.of_type("vsphere:index/virtualMachine:VirtualMachine")
    assert {"openshift-pxe", "openshift-stage-pxelinux-cfg-default", "openshift-stage-grub-cfg"} <= names
    wait_bootstrap = guide_run.named("openshift-wait-bootstrap")
    guide_run.named("openshift-approve-csrs")  # raises unless exactly one is registered
    wait_install = guide_run.named("openshift-wait-install")
    assert script_values(wait_bootstrap.plain()["create"])["WAIT_STAGE"] == "bootstrap-complete"
    assert script_values(wait_install.plain()["create"])["WAIT_STAGE"] == "install-complete"
    assert wait_install.plain()["logging"] == "none"  # it prints the kubeadmin password
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
    return sdk_internals.resolved(output)


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
    from components.openshift.files import parse_ignition_stdout, placeholder_ignition_stdout

    class WithIgnition(mockrun.LabMocks):
        def new_resource(self, args):
            rid, outputs = super().new_resource(args)
            if args.typ == "command:local:Command" and args.name.endswith("-ignition"):
                outputs = {**outputs, "stdout": placeholder_ignition_stdout()}
            return rid, outputs

    monkeypatch.setattr(mockrun, "LabMocks", WithIgnition)
    run = run_program(builders.lab_stack())
    assert run.named("openshift").type == TYPE
    assert set(parse_ignition_stdout(placeholder_ignition_stdout())) == {"bootstrap", "master", "worker", "kubeconfig"}
    master = run.named("vms-m01").plain()["extraConfig"]["guestinfo.ignition.config.data"]
    assert json.loads(base64.b64decode(master)) == {"ignition": {"version": "3.2.0"}}
