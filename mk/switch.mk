.PHONY: switch-test-tools test-switch

switch-test-tools: ## Debian packages for the switch end-to-end test (openssh-server, openssh-client)
	bash scripts/install-switch-test-tools.sh

test-switch: setup switch-test-tools ## the switch section's tests only
	$(PYTHON) -m pytest -q tests/switch
