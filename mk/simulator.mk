# lab-vcsim: the vCenter simulator the vSphere tests, engine-sim and sim-preview run against
# (simulator/, docs/engine.md). Included from the Makefile.
#
#   make simulator   build/bin/lab-vcsim from simulator/ (govmomi pinned in simulator/go.mod)

.PHONY: simulator

simulator: ## build/bin/lab-vcsim: govmomi's vCenter simulator with what the program needs (simulator/)
	bash scripts/install-vcsim.sh
