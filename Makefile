# gpu_platform.cluster — every set-up step lives here; nothing is installed by hand.
#   make test   set up everything and run every test this machine can run
#   make demo   set up everything and run site.yml on the offline default inventory
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3.11
ROOT := $(CURDIR)
VENV := $(ROOT)/.venv
SANITY_VENV := $(ROOT)/.venv-sanity
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
sanity: setup sanity-venv
	rm -rf $(BUILD)/sanity && mkdir -p $(BUILD)/sanity/ansible_collections/gpu_platform/cluster
	git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} $(BUILD)/sanity/ansible_collections/gpu_platform/cluster/
	cd $(BUILD)/sanity/ansible_collections/gpu_platform/cluster && git init -q && git add -A && \
	  PATH=$(SANITY_VENV)/bin:$$PATH ansible-test sanity --local --python 3.11 --color no $(SANITY_ARGS)

# ansible-test's own pinned tools (pylint, pycodestyle, ...) live in their own virtualenv so they
# cannot disturb the pinned development one. (Its --venv mode downloads get-pip from a host this
# machine cannot reach; --requirements --local uses this venv's pip instead.)
sanity-venv: $(SANITY_VENV)/.stamp
$(SANITY_VENV)/.stamp: requirements-dev.txt
	$(PYTHON) -m venv $(SANITY_VENV)
	$(SANITY_VENV)/bin/pip install --quiet "$$(grep '^ansible-core==' requirements-dev.txt)"
	req=$$($(SANITY_VENV)/bin/python -c 'import ansible_test, os; print(os.path.join(os.path.dirname(ansible_test.__file__), "_data", "requirements"))') && \
	  $(SANITY_VENV)/bin/pip install --quiet $$(for f in $$req/sanity.*.txt; do printf -- '-r %s ' "$$f"; done)
	pipver=$$(grep -oP "pip='\K[0-9.]+" $(SANITY_VENV)/lib/python3.11/site-packages/ansible_test/_internal/python_requirements.py) && \
	  mkdir -p $$HOME/.ansible/test/cache && \
	  cp scripts/ansible_test_get_pip.py $$HOME/.ansible/test/cache/get_pip_$${pipver//./_}.py && \
	  $(PYTHON) scripts/pip_settings.py > $$HOME/.ansible/test/cache/pip-settings.ini
	touch $@

pytest: setup
	pytest $(PYTEST_ARGS)

test: setup lint sanity pytest demo

bench: setup
	python bench/helm_noop.py

clean:
	rm -rf $(BUILD) $(VENV) $(SANITY_VENV) $(TOOLS) .pytest_cache
