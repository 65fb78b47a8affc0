# instore: one-command set-up and runs. See README.md.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PROFILE ?= full
CORES ?= all
CONFIG ?=
STAMP := $(VENV)/.installed
# Rules and notebooks call `instore` and `python`: the venv comes first on PATH.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: help setup system venv apptainer test test-unit study lab lint docs bench lock clean-results

help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

system:  ## install missing Debian packages (as root) or say which are missing
	@envs/setup-system.sh

$(STAMP): envs/requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r envs/requirements.lock
	$(BIN)/pip install -q --no-deps -e .
	@touch $(STAMP)

venv: $(STAMP)  ## create the virtual environment from the lock

setup: system venv  ## everything a run needs

apptainer:  ## Apptainer for --runtime apptainer: a site's own on PATH, else built from source into build/apptainer
	@envs/build-apptainer.sh

test: setup  ## set up, then run the whole test suite (integration one at a time, then e2e beside the unit tests on 2 processes)
	$(BIN)/python -m pytest -v --timeout=900 --durations=25 tests/integration; \
	serial=$$?; \
	$(BIN)/python -m pytest -v --timeout=900 --durations=10 -n 2 --dist loadfile tests/e2e tests/unit; \
	parallel=$$?; \
	test $$serial -eq 0 && test $$parallel -eq 0

test-unit: venv  ## unit tests only (no root, no servers)
	$(BIN)/python -m pytest -v tests/unit

study: setup  ## set up, then run the whole default study (PROFILE=quick; CONFIG="sites=[mysite]")
	@if [[ "$(CONFIG)" == *runtime=apptainer* || "$$INSTORE_CONTAINER_RUNTIME" == apptainer ]]; then envs/build-apptainer.sh; fi
	$(BIN)/python -m instore.workflowlock
	$(BIN)/snakemake --cores $(CORES) --config profile=$(PROFILE) $(CONFIG) --rerun-incomplete

lab: venv  ## JupyterLab on the results, bound to localhost
	$(BIN)/instore lab

lint: venv  ## ruff, and the docs built with mkdocs --strict (into build/docs)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

docs: venv  ## regenerate the generated docs pages (the schemas' enums from instore/vocabulary.py, reference from the schemas and parsers, results from bench/*.json and the study's reference run in docs/data/reference)
	$(BIN)/python -m instore.vocabulary
	$(BIN)/python docs/gen/reference.py docs
	$(BIN)/python docs/gen/results.py docs
	$(BIN)/python docs/gen/study.py docs

bench: setup  ## payload overhead and job-launch benchmarks; writes bench/results.json, bench/launch_results.json
	$(BIN)/python bench/payload_overhead.py
	$(BIN)/python bench/launch_overhead.py

clean-results:  ## delete the measurements and reports (results/, reports/); the next study remeasures
	rm -rf results reports

lock:  ## refreeze envs/requirements.lock from the current venv
	$(BIN)/pip freeze --exclude-editable | grep -v '^instore' > envs/requirements.lock.new && mv envs/requirements.lock.new envs/requirements.lock
