# The test cluster (tests/kube_cluster.py): etcd, the Kubernetes control plane, kubectl and kwok,
# built from the Go modules pinned in kubecluster/ (docs/tests.md). Included from the Makefile.
#
#   make kubecluster        build/kubecluster/bin/: kube-apiserver, kube-controller-manager,
#                           kube-scheduler, kubectl (k8s.io/kubernetes v1.35.4), etcd (v3.6.6), kwok
#                           Measured on two shared cores: 9 min 50 s cold (empty Go caches; 1.1 GB of
#                           modules, 3.7 GB of build cache), 26 s in a fresh clone with a warm build
#                           cache (it only links), 2 s when nothing changed.
#   make test-kubecluster   the harness's own tests (tests/kubecluster)

.PHONY: kubecluster test-kubecluster

kubecluster: ## build/kubecluster/bin/: etcd, kube-apiserver, -controller-manager, -scheduler, kubectl, kwok for the test cluster (kubecluster/)
	bash scripts/install-kubecluster.sh

test-kubecluster: setup kubecluster ## the test cluster's own tests: Deployments, Jobs, drain against a PodDisruptionBudget, node power
	$(PYTHON) -m pytest -q tests/kubecluster
