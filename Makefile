# gpu-lab: the commands a user touches. `make help` lists them.
SHELL := /bin/bash
STACK ?= lab
OUT ?= build/$(STACK)
VENV ?= .venv
PYTHON ?= $(VENV)/bin/python
export PATH := $(CURDIR)/.cache/bin:$(PATH)

.PHONY: help setup lint test plan diff baseline render bench clean lock

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

$(VENV)/.installed: requirements.lock pyproject.toml
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install -q --upgrade pip
	$(PYTHON) -m pip install -q --require-hashes -r requirements.lock
	# the project itself, editable and without dependencies: the policy pack imports labrules from here
	# (the locked setuptools builds it offline)
	$(PYTHON) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

setup: $(VENV)/.installed ## virtualenv with the locked dependencies and the project (editable)

lint: setup ## ruff and mypy, configured in pyproject.toml (CI runs it before the tests)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy policies

test: setup ## every test; installs the Debian test tools (root or sudo) and builds lab-vcsim; skips the engine test without setup-pulumi
	bash scripts/install-test-tools.sh
	$(PYTHON) -m pytest -q

plan: setup ## offline plan under mocks: resource tree, plan.json, policy verdicts (STACK, OUT)
	$(PYTHON) -m tools.plan --stack $(STACK) --out $(OUT)

BASE ?= HEAD
FAIL_ON ?=
diff: setup ## what the engine would do to a lab built from BASE (default HEAD): table, diff.json; FAIL_ON=rerun,reboot,migrate,network,replace,delete,refused exits 1 (a refused step always does)
	$(PYTHON) -m tools.diff --stack $(STACK) --base "$(BASE)" --fail-on "$(FAIL_ON)" --out $(OUT)

baseline: setup ## re-record the upgrade gate's baselines (release/baselines/<stack>.json) of the shipped stacks: at a release
	$(PYTHON) -m tools.upgrade record

render: setup ## every generated file for review, secrets redacted (STACK, OUT)
	$(PYTHON) -m tools.render --stack $(STACK) --out $(OUT)

SIZES ?= 4,64,512
TIME_LIMIT ?= 0
bench: setup ## program vs floor vs make plan at SIZES workers (default 4,64,512), TIME_LIMIT seconds (0: none); the real preview where plugins are installed
	$(PYTHON) -m tools.bench --sizes $(SIZES) --time-limit $(TIME_LIMIT)
	PULUMI_CACHE_DIR=$${PULUMI_CACHE_DIR:-$(CURDIR)/.cache/pulumi} $(PYTHON) -m tools.bench_preview || [ $$? = 77 ]

clean: ## remove build output
	rm -rf build

-include mk/*.mk

lock: ## re-pin requirements.lock (with hashes) from requirements.txt
	python3 -m venv .cache/piptools && .cache/piptools/bin/pip install -q pip-tools
	.cache/piptools/bin/pip-compile -q --generate-hashes --strip-extras --allow-unsafe -o requirements.lock requirements.txt
