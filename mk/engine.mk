# The real Pulumi engine, for the targets and tests that run it. Included from the Makefile.
#
#   make setup-pulumi   the engine into .cache/pulumi: Pulumi's installer where reachable, else
#                       built from Go modules (engine-bootstrap/; cold ~5 min on 2 cores, cached rerun ~2 s)
#   make pulumi-check   report what is installed, build nothing
#   make engine-sim     the real engine on components.dynamic against lab-vcsim (make
#                       simulator): preview with the policy pack, up, secrets check, update,
#                       destroy (~15 s)
#   make engine-upgrade the previous release's `up` on the same resources, then this tree's
#                       `preview --expect-no-changes` (scripts/engine-upgrade.sh)
#   make sim-preview    the whole program with the real provider plugins against lab-vcsim:
#                       preview --policy-pack of SIM_STACK (default sim); skips without the plugins
#   make engine-by-hand the engine tests that need the provider plugins built by hand
#                       (pytest -m built_by_hand tests/engine; ~6 min on 2 cores), every path absolute
#
# Other targets and tests run the engine as: $(PULUMI_ENV) pulumi ...  (docs/engine.md)

PULUMI_CACHE_DIR ?= $(CURDIR)/.cache/pulumi
# absolute, also when given relative (PULUMI_CACHE_DIR=.cache/pulumi): tests and scripts change directory
override PULUMI_CACHE_DIR := $(abspath $(PULUMI_CACHE_DIR))
PULUMI_BIN := $(PULUMI_CACHE_DIR)/bin
PULUMI_ENV := env PATH="$(PULUMI_BIN):$$PATH" PULUMI_HOME="$(PULUMI_CACHE_DIR)/home" \
	PULUMI_SKIP_UPDATE_CHECK=1 PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true

.PHONY: setup-pulumi engine-sim engine-upgrade pulumi-check sim-preview engine-by-hand

PLUGINS ?=
setup-pulumi: setup ## the Pulumi engine into .cache/pulumi: installer, or built from Go modules (engine-bootstrap/); PLUGINS=required fails without the provider plugins
	PULUMI_CACHE_DIR="$(PULUMI_CACHE_DIR)" PLUGINS="$(PLUGINS)" bash engine-bootstrap/setup-pulumi.sh

engine-sim: setup setup-pulumi simulator ## the real engine on our pyvmomi resources against lab-vcsim
	PULUMI_CACHE_DIR="$(PULUMI_CACHE_DIR)" bash scripts/engine-sim.sh

engine-upgrade: setup setup-pulumi simulator ## the real engine: up with the last release (release/releases.txt), this tree's preview --expect-no-changes
	PULUMI_CACHE_DIR="$(PULUMI_CACHE_DIR)" bash scripts/engine-upgrade.sh

pulumi-check: setup ## what of the Pulumi engine is installed, build nothing (PLUGINS=required: the provider plugins too)
	PULUMI_CACHE_DIR="$(PULUMI_CACHE_DIR)" PLUGINS="$(PLUGINS)" bash engine-bootstrap/setup-pulumi.sh --check

SIM_STACK ?= sim
sim-preview: setup setup-pulumi simulator ## the whole program, real provider plugins, lab-vcsim: preview --policy-pack (SIM_STACK)
	PULUMI_CACHE_DIR="$(PULUMI_CACHE_DIR)" bash scripts/sim-preview.sh --stack $(SIM_STACK)

engine-by-hand: setup setup-pulumi simulator ## the engine tests on provider plugins built by hand (pytest -m built_by_hand tests/engine)
	bash scripts/install-test-tools.sh
	PULUMI_CACHE_DIR="$(PULUMI_CACHE_DIR)" VCSIM="$(CURDIR)/build/bin/lab-vcsim" $(abspath $(PYTHON)) -m pytest -q -m built_by_hand tests/engine
