.PHONY: openshift-test-tools test-openshift

openshift-test-tools: setup ## tools for the OpenShift tests (haproxy, dnsmasq, ignition-validate, grub-script-check, apache2, dnspython)
	bash scripts/install-openshift-test-tools.sh

test-openshift: setup openshift-test-tools ## the OpenShift section's tests only
	$(PYTHON) -m pytest -q tests/openshift
