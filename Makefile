# gpu_platform.cluster — every set-up step lives here; nothing is installed by hand.
#   make test   set up everything and run every test this machine can run
#   make demo   set up everything and run site.yml on the offline default inventory
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3.11
ROOT := $(CURDIR)
VENV := $(ROOT)/.venv
TOOLS := $(ROOT)/tools
BUILD := $(ROOT)/build
COLL_ROOT := $(BUILD)/collections
COLL_LINK := $(COLL_ROOT)/ansible_collections/gpu_platform/cluster
SHARED := $(abspath $(ROOT)/../shared)
export PATH := $(VENV)/bin:$(TOOLS)/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(COLL_ROOT)
export ANSIBLE_CONFIG := $(ROOT)/ansible.cfg
export HELM_BIN := $(TOOLS)/bin/helm3
PYTEST_ARGS ?=
# pytest never inherits a kubeconfig: each test picks its own cluster (the fake API server, the local control plane),
# and a KUBECONFIG or K8S_AUTH_KUBECONFIG left in the shell (docs/testing.md exports one for build/cluster) must not
# send a test elsewhere or turn the real tier into skips. tests/integration's [real] variants run on a cluster of
# yours only when it is named on purpose: GPU_PLATFORM_IT_KUBECONFIG=~/.kube/config (tests/integration/README.md).
PYTEST := env -u KUBECONFIG -u K8S_AUTH_KUBECONFIG pytest

.PHONY: setup venv tools collection demo test lint sanity sanity-prep pytest bench clean shared-check \
	system-deps host-image molecule-hosts molecule-gpu bench-hosts

# setup, demo, lint, sanity, package, cluster-build: none reads ../shared, so a fresh clone runs them as it is. The
# targets that do read it (the tests, the operators' build from their sources, the local cluster's CRDs) depend on
# shared-check, which names the target and stops in one line when it is missing.
setup: venv tools collection

venv: $(VENV)/.stamp $(VENV)/.local-gpu-cluster.stamp
$(VENV)/.stamp: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
	touch $@

# The local GPU cluster (local-gpu-cluster/, a Python package of its own: its README) installed in development mode:
# `python -m local_gpu_cluster` is what the cluster targets below call. Its dependencies are in the test lock.
$(VENV)/.local-gpu-cluster.stamp: $(VENV)/.stamp local-gpu-cluster/pyproject.toml
	$(VENV)/bin/pip install --quiet --no-deps -e local-gpu-cluster
	touch $@

tools: $(TOOLS)/bin/.stamp
$(TOOLS)/bin/.stamp: scripts/fetch_tools.py
	$(PYTHON) scripts/fetch_tools.py $(TOOLS)
	touch $@

# The checkout is importable as ansible_collections.gpu_platform.cluster through a symlink.
collection: $(COLL_LINK)
$(COLL_LINK):
	mkdir -p $(dir $@)
	ln -sfn ../../../.. $@

shared-check:
	@test -d $(SHARED)/upstream || { echo "make $(or $(MAKECMDGOALS),shared-check) needs ../shared/upstream beside the repository ($(SHARED)/upstream is missing; the tests, make operators-build and the local cluster's CRDs read it); make demo, setup, lint, sanity and package do not"; exit 1; }

# make demo in a copy of the checkout's files (tracked and untracked, as git ls-files lists them) in a temporary
# folder with no ../shared beside it, as a user who clones the collection has: it must pass, and docs/quickstart.md's
# table must name what it wrote (tests/docs/quickstart_bundle.py). The copy uses this checkout's virtualenv and tools
# (links; -o keeps make from rebuilding them), so it costs one demo run (9 to 23 s measured here).
.PHONY: demo-fresh-clone
demo-fresh-clone: setup
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; clone=$$tmp/gpu-platform; mkdir -p $$clone/tools; \
	git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} $$clone/; \
	ln -s $(VENV) $$clone/.venv; ln -s $(TOOLS)/bin $$clone/tools/bin; \
	test ! -e $$tmp/shared; \
	$(MAKE) --no-print-directory -C $$clone -o $$clone/.venv/.stamp -o $$clone/tools/bin/.stamp demo > $$tmp/demo.log 2>&1 \
	  || { tail -n 30 $$tmp/demo.log; echo "make demo failed in a fresh copy without ../shared (log above)"; exit 1; }; \
	tail -n 3 $$tmp/demo.log; echo "demo-fresh-clone: make demo passed in $$clone without ../shared"; \
	cd $(ROOT) && $(VENV)/bin/python -m tests.docs.quickstart_bundle $$clone/build/platform

demo: setup
	cd $(ROOT) && ansible-playbook site.yml -i inventories/local

lint: setup
	ansible-lint --profile production

# The inner loop (docs/testing.md), under a minute here (16 to 22 s measured): lint of the files that differ from HEAD, then the unit,
# schema and docs tests on both cores. .pre-commit-config.yaml runs the same before each commit. The full gate is
# make test.
.PHONY: check
check: venv collection shared-check
	python scripts/check_changed.py
	$(PYTEST) -q -p no:cacheprovider -n 2 tests/unit tests/schema tests/docs

# checkov's Kubernetes checks on the demo bundle (build/platform), in a virtualenv of its own (its pins would
# fight the collection's); every finding left is listed with its reason in tests/security/checkov_accepted.yml.
CHECKOV_VERSION := 3.3.30
CHECKOV_VENV := $(BUILD)/checkov-$(CHECKOV_VERSION)
.PHONY: checkov
checkov: demo $(CHECKOV_VENV)/.stamp
	cd $(ROOT) && $(VENV)/bin/python -m tests.security.checkov_scan $(CHECKOV_VENV)/bin/checkov $(BUILD)/platform
$(CHECKOV_VENV)/.stamp:
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/pip install --quiet checkov==$(CHECKOV_VERSION)
	touch $@

# ansible-test needs a real ansible_collections/<ns>/<name> directory (it resolves symlinks),
# so sanity runs on a copy of the tracked files.
sanity: setup sanity-prep
	rm -rf $(BUILD)/sanity && mkdir -p $(BUILD)/sanity/ansible_collections/gpu_platform/cluster
	git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} $(BUILD)/sanity/ansible_collections/gpu_platform/cluster/
	cd $(BUILD)/sanity/ansible_collections/gpu_platform/cluster && git init -q && git add -A && \
	  ansible-test sanity --local --python 3.11 --color no $(SANITY_ARGS)

# ansible-test --local still makes one virtualenv per sanity test, bootstrapping pip in each with a
# get-pip script from a host this machine cannot reach; scripts/ansible_test_get_pip.py does that job
# offline (ensurepip, then PyPI) and gets this environment's pip settings, which ansible-test filters out.
ANSIBLE_TEST_VENV ?= $(VENV)
sanity-prep: venv
	pipver=$$(grep -oP "pip='\K[0-9.]+" $(ANSIBLE_TEST_VENV)/lib/python3.11/site-packages/ansible_test/_internal/python_requirements.py) && \
	  mkdir -p $$HOME/.ansible/test/cache && \
	  cp scripts/ansible_test_get_pip.py $$HOME/.ansible/test/cache/get_pip_$${pipver//./_}.py && \
	  $(PYTHON) scripts/pip_settings.py > $$HOME/.ansible/test/cache/pip-settings.ini

# Two sessions: the tests that do not need the local control plane on two workers (pytest-xdist), then those that
# do, in a session of their own, so the control plane runs only while they do (tests/conftest.py).
PYTEST_WORKERS ?= 2
.PHONY: pytest-fast pytest-cluster
pytest: pytest-fast pytest-cluster

pytest-fast: setup shared-check system-deps
	$(PYTEST) -n $(PYTEST_WORKERS) --dist loadgroup -m "not local_control_plane" --durations=25 $(PYTEST_ARGS)

pytest-cluster: setup shared-check system-deps
	rm -f $(BUILD)/awx/report.json
	$(PYTEST) -m "local_control_plane and not upgrade" --durations=15 -p local_gpu_cluster.lane_times $(PYTEST_ARGS)
	@if [ -f $(BUILD)/awx/report.json ]; then $(AWX_REPORT); fi

# playbooks/upgrade.yml from release 0.2.0 (tests/upgrade: its own checkout installs its stack on a cluster that runs
# both releases' operators, built from their sources like the pins' and cached the same way; this checkout upgrades it).
.PHONY: upgrade-test previous-release-build
PREVIOUS_RELEASE := $(BUILD)/release-0.2.0
upgrade-test: setup shared-check system-deps cluster-build previous-release-build
	$(PYTEST) -m upgrade --durations=5 tests/upgrade $(PYTEST_ARGS)
# Release 0.2.0's checkout and its operators (each a cache entry of its own, as the pins' are).
previous-release-build: venv tools shared-check
	cd $(ROOT) && $(VENV)/bin/python -m tests.upgrade.release $(PREVIOUS_RELEASE)
	cd $(ROOT) && CLUSTER_PREVIOUS_RELEASE=$(PREVIOUS_RELEASE)/gpu_platform.cluster $(LOCAL_CLUSTER) build \
	  --operators $(filter-out all,$(OPERATORS))

# Debian packages the tests need, as command:package. podman, runc and debootstrap run molecule/hosts
# (host roles in Debian bookworm containers, systemd as PID 1, an image built here from deb.debian.org by
# scripts/build_host_image.sh; no registry needed); promtool (from prometheus) checks and unit-tests the
# monitoring layer's alert rules; ip (iproute2) brings up the loopback of the network namespace a KAI Scheduler
# process runs in on the local cluster. Package scripts may not start services here (policy-rc.d says no).
SYSTEM_TOOLS := podman:podman runc:runc debootstrap:debootstrap promtool:prometheus ip:iproute2
HOST_CONTAINERS_CONF := $(ROOT)/molecule/hosts/containers.conf
# the platforms of molecule/hosts/molecule.yml, each with its own apt archive cache
HOST_PLATFORMS := gpu-host predriver-host

system-deps:
	@missing=""; for pair in $(SYSTEM_TOOLS); do command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  echo "installing$$missing"; \
	  printf '#!/bin/sh\nexit 101\n' | $$sudo tee /usr/sbin/policy-rc.d >/dev/null; $$sudo chmod 755 /usr/sbin/policy-rc.d; \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq; \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold $$missing >/dev/null; \
	  $$sudo rm -f /usr/sbin/policy-rc.d; \
	fi

# Under a lock that tests/remote/ssh_host.py takes too: make test's two lanes may both need the image first.
host-image: system-deps
	mkdir -p $(BUILD) && flock $(BUILD)/host-image.lock scripts/build_host_image.sh

molecule-hosts: setup host-image
	mkdir -p $(addprefix $(BUILD)/apt-cache/,$(HOST_PLATFORMS))
	cd $(ROOT) && CONTAINERS_CONF=$(HOST_CONTAINERS_CONF) \
	  GPU_PLATFORM_HOST_IMAGE=$$(scripts/build_host_image.sh --image-name) \
	  molecule test -s hosts

# molecule/gpu: the same roles on a real GPU host you name (GPU_HOST=...); see molecule/gpu/README.md.
molecule-gpu: setup
	@test -n "$${GPU_HOST:-}" || { echo "molecule-gpu needs a GPU host: GPU_HOST=<address> [GPU_HOST_USER=ubuntu] make molecule-gpu"; exit 2; }
	cd $(ROOT) && molecule test -s gpu

# molecule/kind: site.yml in direct mode on a kind cluster with fake GPU nodes; see molecule/kind/README.md.
.PHONY: molecule-kind
molecule-kind: setup
	@docker info >/dev/null 2>&1 || { echo "molecule-kind needs a running Docker engine: 'docker info' failed (is Docker installed and started, and may this user use it?)"; exit 2; }
	@kind version >/dev/null 2>&1 || { echo "molecule-kind needs kind v0.31.0 or newer on the PATH: https://kind.sigs.k8s.io/docs/user/quick-start/#installation"; exit 2; }
	cd $(ROOT) && molecule test -s kind

# make test: two lanes, timed; the table at the end (also in build/test-times.txt) says where the time went.
# TEST_STEPS run first, one after another (setting up and building what both lanes use). Then TEST_LANE runs in the
# background, its steps in turn, beside TEST_STEPS_BESIDE in the foreground. The control-plane pytest session mostly
# waits on its cluster's controllers (about 60% of both cores idle, measured), so it starts as early as it can, and
# each step beside it uses a cluster of its own (or none). The lane's output is printed when it ends, and a failure in
# either lane fails the run after both have ended. molecule-cluster is not in it: its converge, idempotence and check
# are the ones pytest-cluster runs on the same inventory, and pytest-cluster runs its verify.yml too.
TEST_STEPS := setup shared-check system-deps cluster-build flux-build operators-build previous-release-build
TEST_STEPS_BESIDE := lint sanity pytest-fast gitops-test gitops-test-aks upgrade-test demo demo-fresh-clone checkov package \
	ee-introspect ee-requirements requirement-floors
TEST_LANE := pytest-cluster molecule-hosts
TIMED = t0=$$(date +%s); rc=0; $(MAKE) --no-print-directory $$step || rc=$$?; \
	  printf '%-18s %5ds%s\n' "$$step" $$(( $$(date +%s) - t0 )) "$$suffix" >> $(BUILD)/test-times.txt
test:
	@unset KUBECONFIG K8S_AUTH_KUBECONFIG; \
	mkdir -p $(BUILD); : > $(BUILD)/test-times.txt; start=$$(date +%s); suffix=""; \
	for step in $(TEST_STEPS); do $(TIMED); [ $$rc = 0 ] || exit $$rc; done; \
	lane=$(BUILD)/test-lane.log; echo "make test: $(TEST_LANE) run beside the next steps ($$lane)"; \
	( suffix="  (beside)"; for step in $(TEST_LANE); do $(TIMED); [ $$rc = 0 ] || exit $$rc; done ) > $$lane 2>&1 & \
	lane_pid=$$!; \
	beside=0; for step in $(TEST_STEPS_BESIDE); do $(TIMED); [ $$rc = 0 ] || { beside=$$rc; break; }; done; \
	lane_rc=0; wait $$lane_pid || lane_rc=$$?; \
	echo "make test: the output of $(TEST_LANE)"; cat $$lane; \
	printf '%-18s %5ds\n' total $$(( $$(date +%s) - start )) >> $(BUILD)/test-times.txt; \
	echo "make test: time per step"; cat $(BUILD)/test-times.txt; \
	[ $$beside = 0 ] && [ $$lane_rc = 0 ]

# The local control plane (docs/testing.md): etcd, kube-apiserver, kube-controller-manager, kube-scheduler
# and KWOK built from the Go modules pinned in local_gpu_cluster/go/{cluster,kwok}, cached under
# $${XDG_CACHE_HOME:-~/.cache}/gpu-platform keyed by the pins; fake GPU nodes; the test charts on a loopback
# Helm repository; the operators' part played by local_gpu_cluster/live.py. build/cluster/kubeconfig reaches it.
LOCAL_CLUSTER := $(VENV)/bin/python -m local_gpu_cluster
.PHONY: cluster-build cluster-up cluster-down cluster-status molecule-cluster flux-build cluster-up-gitops
cluster-build: venv
	cd $(ROOT) && $(LOCAL_CLUSTER) build

# The Flux controllers (source-, kustomize- and helm-controller, pinned in local_gpu_cluster/go/flux) in a cache entry of their
# own, keyed by their go.mod/go.sum only: `up --gitops` (and tests/cluster/test_flux.py) run them.
flux-build: venv
	cd $(ROOT) && $(LOCAL_CLUSTER) build --gitops

# The operators (GPU Operator, Network Operator, Kueue, Volcano, KAI Scheduler, the DRA driver's controller) built
# from their pinned upstream sources (../shared/upstream/src; Kueue from the Go module proxy), each with its real chart
# packaged, one cache entry per operator keyed by its source's sha256 (local_gpu_cluster/operators.py).
# OPERATORS names those to build (default: the ones the local cluster runs, local_gpu_cluster's DEFAULT_OPERATORS);
# OPERATORS=all builds every one.
OPERATORS ?= gpu-operator network-operator kueue volcano kai-scheduler dra-driver
.PHONY: operators-build
operators-build: venv tools shared-check
	cd $(ROOT) && $(LOCAL_CLUSTER) build --operators $(filter-out all,$(OPERATORS))

cluster-up-gitops: setup shared-check cluster-build flux-build
	cd $(ROOT) && $(LOCAL_CLUSTER) up --gitops

# The GitOps bundle on the real reconciler (tests/gitops_bundle.py): site.yml renders the platform, it is pushed to a
# loopback git server, one Kustomization at its root bootstraps it on a cluster of its own (build/gitops-cluster) with
# the real Flux controllers; ends with "gitops: K/N Kustomizations Ready, H/M HelmReleases Ready" (read / the bundle's) and
# build/gitops/status.json.
.PHONY: gitops-test
gitops-test: setup shared-check cluster-build flux-build previous-release-build
	cd $(ROOT) && $(VENV)/bin/python -m tests.gitops_bundle

# inventories/aks's bundle on the bare AKS ND H100 v5 pool (CLUSTER_PROFILE=aks-nd-h100-v5, 2 GPU nodes) through the
# same Flux controllers: rendered with the cluster's connection.yml, pushed, bootstrapped and converged alone
# (tests/gitops_bundle.py --inventory), in build/gitops-cluster-aks; the same last line, build/gitops-aks/status.json.
# The NCCL image stands in for the user's, pinned by digest as the inventory asks (the fake fleet pulls nothing).
GITOPS_AKS_NCCL_IMAGE := registry.example.com/hpc/nccl-tests@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
.PHONY: gitops-test-aks
gitops-test-aks: setup shared-check cluster-build flux-build
	cd $(ROOT) && $(VENV)/bin/python -m tests.gitops_bundle --inventory inventories/aks --profile aks-nd-h100-v5 \
	  --gpu-nodes 2 -e smoke_tests_nccl_image=$(GITOPS_AKS_NCCL_IMAGE)

# The AWX tier's counts (jobs, events and files scanned, secret hits), from the report its tests write.
AWX_REPORT = python -c "import json; r=json.load(open('$(BUILD)/awx/report.json')); print('awx: %d jobs, %d events and %d files scanned, %d secret hits' % (r['jobs'], r['events_scanned'], r['files_scanned'], r['secret_hits']))"

# The AWX tier alone (docs/awx.md, section 8): every job template of meta/awx run by ansible-runner from the Galaxy
# artifact on a local control plane of its own, with AWX's credentials; counts in build/awx/report.json. make test
# runs it in the local control plane's pytest session.
.PHONY: awx-test
awx-test: setup shared-check cluster-build
	$(PYTEST) -p no:cacheprovider tests/unit/test_awx_data.py tests/awx/test_awx_render.py tests/awx/test_awx_jobs.py $(PYTEST_ARGS)
	@$(AWX_REPORT)

cluster-up: setup shared-check cluster-build
	cd $(ROOT) && $(LOCAL_CLUSTER) up

cluster-down: venv
	cd $(ROOT) && $(LOCAL_CLUSTER) down

cluster-status: venv
	cd $(ROOT) && $(LOCAL_CLUSTER) status

# A node agent's fault on the running cluster: make cluster-fault FAULT=<agent>:<state>[:<node>]
# (states: never-ready, stuck, failed, slow, ok; agents: local_gpu_cluster/node_agents.py)
.PHONY: cluster-fault
cluster-fault: venv
	@test -n "$(FAULT)" || { echo "make cluster-fault: set FAULT=<agent>:<state>[:<node>]"; exit 2; }
	cd $(ROOT) && $(LOCAL_CLUSTER) fault "$(FAULT)"

# molecule/cluster: site.yml converges, stays idempotent and verifies on the local control plane
# (its own CLUSTER_DIR, started and stopped by the scenario's create and destroy).
molecule-cluster: setup shared-check cluster-build
	cd $(ROOT) && molecule test -s cluster

# The Galaxy artifact, as AWX or an execution environment installs it; build_ignore in galaxy.yml
# keeps tests, molecule, scripts, bench and local tooling out of it.
DIST := $(BUILD)/dist
EE_COLLECTIONS := $(BUILD)/ee-collections
.PHONY: package ee-introspect

# The version galaxy.yml, the changelog's newest release and README name (tests/unit/test_release_version.py).
VERSION := $(shell sed -n 's/^version: *//p' $(ROOT)/galaxy.yml)
package: venv
	rm -f $(DIST)/gpu_platform-cluster-*.tar.gz
	ansible-galaxy collection build --force --output-path $(DIST)
	@test -f $(DIST)/gpu_platform-cluster-$(VERSION).tar.gz || \
	  { echo "make package: no $(DIST)/gpu_platform-cluster-$(VERSION).tar.gz (galaxy.yml says version $(VERSION))"; exit 1; }

# ansible-builder's view of the artifact: installed on its own (not through the symlinked checkout,
# which ansible-galaxy would take for an installed copy), then introspected as an image build does;
# the collection's kubernetes requirement must come out of it.
ee-introspect: package
	rm -rf $(EE_COLLECTIONS)
	ANSIBLE_COLLECTIONS_PATH=$(EE_COLLECTIONS) ansible-galaxy collection install --no-deps --force \
	  -p $(EE_COLLECTIONS) $(DIST)/gpu_platform-cluster-*.tar.gz
	ansible-builder introspect $(EE_COLLECTIONS) > $(BUILD)/ee-introspect.yml
	cat $(BUILD)/ee-introspect.yml
	@grep -Eq "^- '?kubernetes[=<>~!].*# from collection gpu_platform\.cluster'?$$" $(BUILD)/ee-introspect.yml || \
	  { echo "ansible-builder introspect does not list gpu_platform.cluster's kubernetes requirement"; exit 1; }

# ---------------------------------------------------------------- requirement ranges (README, "Requirements")
# requirements.txt gives ranges, from the lowest version tested to below the next major; requirements-dev.txt (the
# test lock) pins the newest tested, which every other step runs with.
# ee-requirements: this collection's Python requirements and kubernetes.core's as an image build of
# execution-environment.yml combines them (ansible-builder create, then the context's own introspect step), installed
# together from PyPI into a fresh virtualenv (tests/ee_requirements.py).
# requirement-floors: tests/unit, tests/modules, the render-mode site.yml and ansible-test sanity (on a copy of its own,
# as make sanity does) with every requirement at the floor of its
# range at once and ansible-core at requires_ansible's floor (meta/runtime.yml), the lock's other pins unchanged
# (scripts/requirement_floors.py), in a virtualenv cached under
# $${XDG_CACHE_HOME:-~/.cache}/gpu-platform keyed by requirements.txt, requirements-dev.txt, meta/runtime.yml and that script.
GPU_PLATFORM_CACHE := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gpu-platform
FLOORS_VENV = $(GPU_PLATFORM_CACHE)/venv-floors-$(shell cat requirements.txt requirements-dev.txt meta/runtime.yml \
	scripts/requirement_floors.py | sha256sum | cut -c1-16)
.PHONY: ee-requirements requirement-floors
ee-requirements: package
	$(VENV)/bin/python -m tests.ee_requirements $(DIST)/gpu_platform-cluster-*.tar.gz

requirement-floors: venv collection shared-check
	@if [ ! -f $(FLOORS_VENV)/.stamp ]; then \
	  echo "requirement-floors: building $(FLOORS_VENV)"; rm -rf $(FLOORS_VENV); \
	  $(PYTHON) -m venv $(FLOORS_VENV); \
	  $(FLOORS_VENV)/bin/pip install --quiet --upgrade pip; \
	  $(PYTHON) scripts/requirement_floors.py lock > $(FLOORS_VENV)/requirements.txt; \
	  $(FLOORS_VENV)/bin/pip install --quiet -r $(FLOORS_VENV)/requirements.txt; \
	  touch $(FLOORS_VENV)/.stamp; \
	fi
	$(FLOORS_VENV)/bin/python scripts/requirement_floors.py check
	PATH=$(FLOORS_VENV)/bin:$$PATH $(PYTEST) -p no:cacheprovider -n $(PYTEST_WORKERS) -m "not local_control_plane" \
	  tests/unit tests/modules $(PYTEST_ARGS)
	cd $(ROOT) && PATH=$(FLOORS_VENV)/bin:$$PATH ansible-playbook site.yml -i inventories/local \
	  -e gpu_platform_render_to=$(BUILD)/platform-floors
	$(MAKE) --no-print-directory sanity-prep ANSIBLE_TEST_VENV=$(FLOORS_VENV)
	rm -rf $(BUILD)/sanity-floors && mkdir -p $(BUILD)/sanity-floors/ansible_collections/gpu_platform/cluster
	git ls-files -z --cached --others --exclude-standard | \
	  xargs -0 -I{} cp --parents {} $(BUILD)/sanity-floors/ansible_collections/gpu_platform/cluster/
	cd $(BUILD)/sanity-floors/ansible_collections/gpu_platform/cluster && git init -q && git add -A && \
	  PATH=$(FLOORS_VENV)/bin:$$PATH ansible-test sanity --local --python 3.11 --color no $(SANITY_ARGS)

bench: setup
	python bench/helm_noop.py --helm $(TOOLS)/bin/helm3
	python bench/helm_noop.py --helm $(TOOLS)/bin/helm4
	python bench/mig_rollout.py

# site.yml's no-op at 10, 100 and 1,000 fake GPU nodes against the Ansible floor (tens of minutes).
.PHONY: bench-site
bench-site: setup
	python bench/site_noop.py --render

# The host roles' converge and idempotent re-run in the molecule/hosts container (minutes).
bench-hosts: setup host-image
	CONTAINERS_CONF=$(HOST_CONTAINERS_CONF) python bench/host_noop.py

clean:
	-test ! -f $(BUILD)/cluster/state.json || $(LOCAL_CLUSTER) down
	rm -rf $(BUILD) $(VENV) $(TOOLS)/bin .pytest_cache
