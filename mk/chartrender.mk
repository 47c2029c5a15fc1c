# chart-render (chartrender/main.go): Helm's own renderer, built from helm.sh/helm/v3 pinned in
# chartrender/go.mod, for make mirror-list and the tests that render the pinned charts
# (tests/charts/). Included from the Makefile.
#
#   make chartrender   build/bin/chart-render
#                      Measured on two shared cores: 19 min 14 s cold (empty Go caches: 431 MB of modules
#                      from the proxy, 752 MB of build cache; the cores were busy with other builds, load
#                      average 15-20, so an idle machine takes less), 20 s without the binary but with a
#                      warm build cache (a fresh clone: it only links), 2 s when nothing changed.

.PHONY: chartrender

CHART_RENDER := build/bin/chart-render

# go build is incremental (a rerun with nothing changed only checks), so it runs every time.
# -mod=readonly: go.mod and go.sum are the pins. nice: the two cores are shared.
# The Kubernetes version a chart sees unless told (.Capabilities.KubeVersion) is stamped, as Helm's own
# release build stamps it, from the client libraries it is built with (k8s.io/client-go v0.33.x ->
# v1.33.0); unstamped it is v1.20.0, which the network operator chart refuses (kubeVersion >= 1.21).
chartrender: ## build/bin/chart-render: Helm's renderer from helm.sh/helm/v3 pinned in chartrender/ (make mirror-list, the tests)
	@command -v go >/dev/null || { echo "chartrender: 'go' is not on PATH; install Go >= 1.24 (chartrender/go.mod)" >&2; exit 1; }
	mkdir -p build/bin
	cd chartrender && export GOFLAGS="$$GOFLAGS -mod=readonly" && \
	  minor=$$(go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2) && \
	  nice -n 10 go build -trimpath -o ../$(CHART_RENDER) \
	    -ldflags "-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$$minor" .

# make mirror-list renders the charts with it (tools/mirror_list.py)
mirror-list: chartrender
