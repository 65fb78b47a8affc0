# instore: one-command set-up and runs. See README.md.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PROFILE ?= full
CORES ?= all
CONFIG ?=
STAMP := $(VENV)/.installed
EMULATED_STAMP := $(VENV)/.installed-emulated
DEV_STAMP := $(VENV)/.installed-dev
# Debian package groups `make system` checks (envs/apt-packages.txt): a real site's by default
SYSTEM ?= site
# Rules and notebooks call `instore` and `python`: the venv comes first on PATH.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: help setup system venv venv-emulated venv-dev apptainer test test-unit study lab lint docs bench lock clean-results clean-container

help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

system:  ## the Debian packages a study of a real site needs: installed as root, else named with the command an admin types (SYSTEM="site emulated test" for more)
	@envs/setup-system.sh $(SYSTEM)

# The locks go in with uv (pinned in envs/requirements-bootstrap.lock, put in by pip): the same
# packages, bytecode compiled as pip compiles it, in about a third of pip's time. The system's
# CA store, pip's timeout and its extra wheel directories hold for it as for pip (one that does
# not exist is left out: pip passes over it, uv would stop).
export UV_HTTP_TIMEOUT ?= $(or $(PIP_DEFAULT_TIMEOUT),180)
UV_INSTALL = $(BIN)/uv pip install -q --python $(BIN)/python --native-tls --compile-bytecode \
	$(foreach l,$(PIP_FIND_LINKS),$(if $(or $(findstring ://,$(l)),$(wildcard $(l))),--find-links $(l)))

$(STAMP): envs/requirements-bootstrap.lock envs/requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -r envs/requirements-bootstrap.lock
	$(UV_INSTALL) -r envs/requirements.lock
	$(UV_INSTALL) --no-deps -e .
	@touch $(STAMP)

$(EMULATED_STAMP): envs/requirements-emulated.lock $(STAMP)
	$(UV_INSTALL) -r envs/requirements-emulated.lock
	@touch $(EMULATED_STAMP)

$(DEV_STAMP): envs/requirements-dev.lock $(STAMP)
	$(UV_INSTALL) -r envs/requirements-dev.lock
	@touch $(DEV_STAMP)

venv: $(STAMP)  ## create the virtual environment from the study's lock (with the distribution's own python3)

venv-emulated: $(EMULATED_STAMP)  ## add what emulated sites need (NetfilterQueue)

venv-dev: $(DEV_STAMP)  ## add the tools of the tests, lint and docs

setup: system venv  ## what a study of a real site needs, no root (make study adds emulated sites' needs when it names one)

apptainer:  ## Apptainer for --runtime apptainer: a site's own on PATH, else built from source into build/apptainer
	@envs/setup-system.sh apptainer
	@envs/build-apptainer.sh

# The tests bring up emulated sites, check rendered pages in a browser and run jobs in Apptainer
# (built from source in the background where none is installed: tests/conftest.py): every group.
# The e2e and unit tests run beside the integration tests, in a CPU cgroup of the least weight
# (tests/beside.py): only a core the integration tests leave idle runs them (about half of one,
# while they wait on emulated links and disks), and they hold a lock the `quiet` integration
# tests wait for. The unit tests that time themselves (`quiet`) run last, alone. Every session's
# status counts.
BESIDE := build/tests-beside
test: SYSTEM = site emulated test apptainer
test: setup venv-emulated venv-dev  ## set up, then run the whole test suite (integration one at a time, e2e and unit tests beside them as background work, then the unit tests that time themselves)
	mkdir -p build; rm -f $(BESIDE).rc; \
	( $(BIN)/python -m tests.beside --lock $(BESIDE).lock --log $(BESIDE).log -- \
	    $(BIN)/python -m pytest -v --timeout=900 --durations=10 -n 2 --dist loadfile \
	    -m "not quiet" tests/e2e tests/unit; echo $$? > $(BESIDE).rc ) & \
	INSTORE_TEST_NEIGHBOUR_LOCK=$(BESIDE).lock \
	  $(BIN)/python -m pytest -v --timeout=900 --durations=25 tests/integration; \
	serial=$$?; \
	wait; cat $(BESIDE).log; beside=$$(cat $(BESIDE).rc 2>/dev/null || echo 1); \
	$(BIN)/python -m pytest -v --timeout=900 -n 2 -m quiet tests/e2e tests/unit; \
	quiet=$$?; \
	test $$serial -eq 0 && test $$beside -eq 0 && test $$quiet -eq 0

test-unit: venv venv-dev  ## unit tests only (no root, no servers)
	$(BIN)/python -m pytest -v tests/unit

study: $(if $(DRY_RUN),venv,setup)  ## set up, then run the whole default study (PROFILE=quick; CONFIG="sites=[mysite] run=LABEL"; DRY_RUN=1: say what it would do to each site, and stop)
ifneq ($(DRY_RUN),)
	$(BIN)/instore plan profile=$(PROFILE) $(CONFIG)
else
	@need=$$($(BIN)/python -m instore.needs profile=$(PROFILE) $(CONFIG)) || exit 1; \
	if [ -n "$$need" ]; then envs/setup-system.sh $(SYSTEM) $$need && $(MAKE) --no-print-directory venv-emulated; fi
	@if [[ "$(CONFIG)" == *runtime=apptainer* || "$$INSTORE_CONTAINER_RUNTIME" == apptainer ]]; then $(MAKE) --no-print-directory apptainer; fi
	$(BIN)/python -m instore.workflowlock
	$(BIN)/snakemake --cores $(CORES) --config profile=$(PROFILE) $(CONFIG) --rerun-incomplete
endif

lab: venv  ## JupyterLab on the results, bound to localhost
	$(BIN)/instore lab

lint: venv-dev  ## ruff, and the docs built with mkdocs --strict (into build/docs)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

docs: venv-dev  ## regenerate the generated docs pages (the schemas' enums from instore/vocabulary.py, reference from the schemas and parsers, results from bench/*.json and the study's reference run in docs/data/reference)
	$(BIN)/python -m instore.vocabulary
	$(BIN)/python docs/gen/reference.py docs
	$(BIN)/python docs/gen/results.py docs
	$(BIN)/python docs/gen/study.py docs

# The benchmarks start emulated sites and podman containers: their packages too.
bench: SYSTEM = site emulated
bench: setup venv-emulated  ## payload overhead and job-launch benchmarks; writes bench/results.json, bench/launch_results.json
	$(BIN)/python bench/payload_overhead.py
	$(BIN)/python bench/launch_overhead.py

clean-results:  ## delete the measurements and reports (results/, reports/); the next study remeasures
	rm -rf results reports

# Rootless podman's image files belong to the user's subordinate IDs: only `podman unshare` may
# remove them (a plain rm -rf of the checkout stops on "Permission denied").
clean-container:  ## delete the project's podman store (build/container/storage), as a user who is not root may too; the next study builds the image again
	if [ "$$(id -u)" != 0 ] && command -v podman >/dev/null; then \
		podman unshare rm -rf build/container/storage; else rm -rf build/container/storage; fi

lock:  ## refreeze the locks (bootstrap, study, emulated, dev) from the current venv, split by envs/*.in
	$(BIN)/python envs/lock.py
