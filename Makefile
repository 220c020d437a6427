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

.PHONY: setup venv tools collection demo test lint sanity unit pytest bench clean shared-check docs-check build-artifact

setup: venv tools collection shared-check

venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
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
	@test -d $(SHARED)/upstream || { echo "../shared/upstream is missing beside the repository (tests need it)"; exit 1; }

demo: setup
	cd $(ROOT) && ansible-playbook site.yml -i inventories/local

lint: setup
	ansible-lint --profile production

# ansible-test needs a real ansible_collections/<ns>/<name> directory (it resolves symlinks),
# so sanity runs on a copy of the tracked files.
sanity: setup
	rm -rf $(BUILD)/sanity && mkdir -p $(BUILD)/sanity/ansible_collections/gpu_platform/cluster
	git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} $(BUILD)/sanity/ansible_collections/gpu_platform/cluster/
	cd $(BUILD)/sanity/ansible_collections/gpu_platform/cluster && git init -q && git add -A && \
	  ansible-test sanity --python 3.11 --requirements --venv --color no $(SANITY_ARGS)

pytest: setup
	pytest $(PYTEST_ARGS)

test: setup lint sanity pytest demo

bench: setup
	python bench/helm_noop.py

clean:
	rm -rf $(BUILD) $(VENV) $(TOOLS) .pytest_cache
