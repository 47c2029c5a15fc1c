# gpu-lab: the commands a user touches. `make help` lists them.
SHELL := /bin/bash
STACK ?= lab
OUT ?= build/$(STACK)
VENV ?= .venv
PYTHON ?= $(VENV)/bin/python
export PATH := $(CURDIR)/.cache/bin:$(PATH)

# ---------------------------------------------------------------- values given to make
# A value from the command line or the environment is pasted into recipes, rule targets such as
# $(VENV)/.installed and mk/*.mk as they are read: each is refused (exit 2) unless it matches its
# pattern, here, before any of them. The raw text is checked ($(value ...)): expanding it would
# already run a `$(shell ...)` in it.
_ALNUM := a b c d e f g h i j k l m n o p q r s t u v w x y z A B C D E F G H I J K L M N O P Q R S T U V W X Y Z 0 1 2 3 4 5 6 7 8 9
_comma := ,
_NAME_CHARS := $(_ALNUM) . _ -
_PATH_CHARS := $(_NAME_CHARS) / + @ % :
_REV_CHARS := $(_NAME_CHARS) / ~ ^ @ { } +
# $(1) with every character listed in $(2) removed
_without = $(if $(2),$(call _without,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,$(words $(2)),$(2))),$(1))
# the text of variable $(1) as given: raw from the command line or the environment, expanded from a makefile
_given = $(if $(filter command% environment%,$(origin $(1))),$(value $(1)),$($(1)))
# _check VAR,CHARS,WHAT[,words]: $(error) unless VAR is one word of CHARS not starting with '-' (with
# `words`: words of CHARS separated by single spaces, no tab or newline); an undefined VAR passes
_check = $(if $(filter undefined,$(origin $(1))),,$(if $(strip \
  $(if $(4),$(subst $(strip $(call _given,$(1))),,$(call _given,$(1))),\
    $(if $(filter 1,$(words $(call _given,$(1)))),,x)$(filter -%,$(call _given,$(1)))) \
  $(call _without,$(call _given,$(1)),$(2))),\
  $(error $(1)=$(call _given,$(1)) is refused: $(1) must be $(3))))
_check_empty_ok = $(if $(call _given,$(1)),$(call _check,$(1),$(2),$(3),$(4)))

$(call _check,STACK,$(_NAME_CHARS),a stack name of letters$(_comma) digits and . _ -)
$(call _check,SIM_STACK,$(_NAME_CHARS),a stack name of letters$(_comma) digits and . _ -)
$(call _check,OUT,$(_PATH_CHARS),a path of letters$(_comma) digits and . _ - / + @ % :)
$(call _check,VENV,$(_PATH_CHARS),a path of letters$(_comma) digits and . _ - / + @ % :)
$(call _check,PYTHON,$(_PATH_CHARS),a path of letters$(_comma) digits and . _ - / + @ % :)
$(call _check,PULUMI_CACHE_DIR,$(_PATH_CHARS),a path of letters$(_comma) digits and . _ - / + @ % :)
$(call _check_empty_ok,LOGS,$(_PATH_CHARS),a path of letters$(_comma) digits and . _ - / + @ % :)
$(call _check,BASE,$(_REV_CHARS),a release (v0.1.0) or a git revision (HEAD$(_comma) main$(_comma) a commit): letters$(_comma) digits and . _ - / ~ ^ @ { } +)
$(call _check_empty_ok,FAIL_ON,$(_ALNUM) $(_comma),effects separated by commas (make help))
$(call _check_empty_ok,PLUGINS,$(_ALNUM),empty or required)
$(call _check,ACCEPTANCE_NS,$(_ALNUM) -,a Kubernetes namespace (letters$(_comma) digits and -))
$(call _check,SIZES,0 1 2 3 4 5 6 7 8 9 $(_comma),worker counts separated by commas)
$(call _check,TIME_LIMIT,0 1 2 3 4 5 6 7 8 9 .,a number of seconds)
$(call _check_empty_ok,REPORT_ARGS,$(_PATH_CHARS) =,tools.report options: words of letters$(_comma) digits and . _ - / + @ % : = separated by spaces,words)

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

.PHONY: test-user
test-user: setup ## every test without root: installs no Debian package (builds lab-vcsim and the test cluster); a test whose Debian tool is missing skips (README)
	bash scripts/install-test-tools.sh --no-apt
	$(PYTHON) -m pytest -q

plan: setup ## offline plan under mocks: resource tree, plan.json, policy verdicts (STACK, OUT)
	$(PYTHON) -m tools.plan --stack $(STACK) --out $(OUT)

BASE ?= HEAD
FAIL_ON ?=
# BASE reaches tools.diff through the environment: the shell never parses it (tools.diff checks it)
diff: export GPU_LAB_BASE := $(value BASE)
diff: setup ## what the engine would do to a lab built from BASE (default HEAD): table, diff.json; FAIL_ON=rerun,reboot,migrate,network,replace,delete,undrained,refused exits 1 (a refused step always does)
	$(PYTHON) -m tools.diff --stack $(STACK) --base "$$GPU_LAB_BASE" --fail-on "$(FAIL_ON)" --out $(OUT)

baseline: setup ## re-record the upgrade gate's baselines (release/baselines/<stack>.json) of the shipped stacks: at a release
	$(PYTHON) -m tools.upgrade record

render: setup ## every generated file for review, secrets redacted (STACK, OUT)
	$(PYTHON) -m tools.render --stack $(STACK) --out $(OUT)

SIZES ?= 4,64,512
TIME_LIMIT ?= 0
bench: setup ## program vs floor vs make plan at SIZES workers (default 4,64,512), TIME_LIMIT seconds (0: none); the real preview where plugins are installed
	$(PYTHON) -m tools.bench --sizes $(SIZES) --time-limit $(TIME_LIMIT)
	PULUMI_CACHE_DIR=$${PULUMI_CACHE_DIR:-$(CURDIR)/.cache/pulumi} $(PYTHON) -m tools.bench.preview || [ $$? = 77 ]

clean: ## remove build output
	rm -rf build

-include mk/*.mk

lock: ## re-pin requirements.lock (with hashes) from requirements.txt
	python3 -m venv .cache/piptools && .cache/piptools/bin/pip install -q pip-tools
	.cache/piptools/bin/pip-compile -q --generate-hashes --strip-extras --allow-unsafe -o requirements.lock requirements.txt
