# lab-vcsim: the vCenter simulator the vSphere tests, engine-sim and sim-preview run against
# (simulator/, docs/engine.md). Included from the Makefile.
#
#   make simulator        build/bin/lab-vcsim from simulator/ (govmomi pinned in simulator/go.mod)
#   make simulator-test   its Go tests: each handler through a govmomi client, on loopback

.PHONY: simulator simulator-test

simulator: ## build/bin/lab-vcsim: govmomi's vCenter simulator with what the program needs (simulator/)
	bash scripts/install-vcsim.sh

# -p=1: the machine's two cores are shared. -mod=readonly: go.mod and go.sum are the pins.
simulator-test: ## go test ./... of lab-vcsim: its handlers through a govmomi client, on loopback (simulator/)
	@command -v go >/dev/null || { echo "simulator-test: 'go' is not on PATH; install Go >= 1.25 first (simulator/go.mod)" >&2; exit 1; }
	cd simulator && GOFLAGS="$${GOFLAGS:-} -p=1 -mod=readonly" go test ./...
