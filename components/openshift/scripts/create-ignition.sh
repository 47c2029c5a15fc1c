#!/bin/sh
# Create a cluster's ignition configs with openshift-install: install-config.yaml on stdin, and
# on stdout one JSON object {key: base64 of the file} of the installer's output files that the
# stack keeps (ignition, auth, metadata, the installer's state).
# openshift-install consumes install-config.yaml and bakes 24-hour certificates into the
# ignition, and an install dir is not meant to be re-used, so the run starts from an empty
# directory. The component runs this once per cluster. Runs under /bin/sh (pulumi-command's
# local.Command).

set -eu
: "${INSTALL_DIR?directory openshift-install works in, emptied first}"
: "${INSTALLER?openshift-install as a command name or a path}"
: "${CREATE_TARGET?what to create: ignition-configs or single-node-ignition-config}"
: "${MASTERS_SCHEDULABLE?true or false: whether workloads may run on the control plane}"
: "${OUTPUTS?the files to return, one line of <key> <path under INSTALL_DIR> each}"

if ! command -v "$INSTALLER" >/dev/null 2>&1; then
    echo "openshift-install not found as '$INSTALLER': download it for your OpenShift release" \
         "and set gpu-lab:openshift.installer to its path" >&2
    exit 127
fi
case "$INSTALL_DIR" in ""|/) echo "refusing to use '$INSTALL_DIR' as the install dir" >&2; exit 2;; esac
case "$MASTERS_SCHEDULABLE" in true|false) ;; *) echo "MASTERS_SCHEDULABLE is '$MASTERS_SCHEDULABLE'" >&2; exit 2;; esac
# The install dir receives the kubeconfig, the kubeadmin password and the installer's state: it
# and everything in it are private to the runner's user from the moment it exists.
umask 077
rm -rf "$INSTALL_DIR"
mkdir -p "$INSTALL_DIR"
chmod 700 "$INSTALL_DIR"
cat > "$INSTALL_DIR/install-config.yaml"
# the installer deletes install-config.yaml; keep the copy the guide recommends
cp "$INSTALL_DIR/install-config.yaml" "$INSTALL_DIR/install-config.yaml.orig"
if [ "$CREATE_TARGET" = ignition-configs ]; then
    # With compute replicas 0 (workers are added by us, not by a MachineSet) the installer makes
    # the control plane schedulable; a cluster with workers keeps it for the control plane only.
    "$INSTALLER" --dir "$INSTALL_DIR" create manifests >&2
    scheduler="$INSTALL_DIR/manifests/cluster-scheduler-02-config.yml"
    if [ "$MASTERS_SCHEDULABLE" = false ]; then
        sed -i.orig 's/mastersSchedulable: true/mastersSchedulable: false/' "$scheduler"
        rm -f "$scheduler.orig"
        grep -q 'mastersSchedulable: false' "$scheduler" || {
            echo "could not set mastersSchedulable: false in $scheduler" >&2; exit 1; }
    fi
fi
"$INSTALLER" --dir "$INSTALL_DIR" create "$CREATE_TARGET" >&2
# whatever modes the installer chose for its files, they stay the runner user's alone
chmod -R go-rwx "$INSTALL_DIR"
sep='{'
while read -r key path; do
    if [ -n "$key" ] && [ -f "$INSTALL_DIR/$path" ]; then
        printf '%s"%s":"%s"' "$sep" "$key" "$(base64 < "$INSTALL_DIR/$path" | tr -d '\n')"
        sep=','
    fi
done <<END_OF_OUTPUTS
$OUTPUTS
END_OF_OUTPUTS
if [ "$sep" = '{' ]; then printf '{'; fi
printf '}\n'
