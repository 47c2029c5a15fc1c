# Add-ons: the fabric acceptance report, and fetching the jobs' logs it reads.
LOGS ?=
REPORT_ARGS ?=
ACCEPTANCE_NS ?= gpu-lab-acceptance

.PHONY: report acceptance-logs mirror-list

MIRROR_FORMAT ?= plain

report: setup ## judge the acceptance jobs' logs against the line rate of STACK's nodes (LOGS=dir, STACK, REPORT_ARGS)
	@test -n "$(LOGS)" || { echo "usage: make report LOGS=<dir of ib_write_bw / nccl-tests / Horovod logs> [STACK=lab]"; exit 2; }
	$(PYTHON) -m tools.report $(LOGS) --stack $(STACK) $(REPORT_ARGS)

acceptance-logs: ## save the acceptance jobs' logs from the cluster into LOGS=dir (needs kubectl or oc)
	@test -n "$(LOGS)" || { echo "usage: make acceptance-logs LOGS=<dir>"; exit 2; }
	mkdir -p $(LOGS)
	kubectl -n $(ACCEPTANCE_NS) logs job/ib-write-bw-client > $(LOGS)/ib-write-bw-client.log
	# The MPI operator runs each MPIJob's mpirun as the Job <name>-launcher.
	for job in nccl-allreduce-rdma nccl-allreduce-tcp horovod-resnet50-rdma horovod-resnet50-tcp; do \
	  kubectl -n $(ACCEPTANCE_NS) logs job/$$job-launcher > $(LOGS)/$$job.log || exit 1; \
	done

mirror-list: setup ## every chart and image STACK installs, to fill its mirror (MIRROR_FORMAT=plain or oc-mirror)
	$(PYTHON) -m tools.mirror_list --stack $(STACK) --format $(MIRROR_FORMAT)
