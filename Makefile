# The two commands a user needs: `make preview` (offline, on stacks/Pulumi.$(STACK).yaml) and
# `make test`. Both create venv/ (the same folder Pulumi.yaml names) and install the pinned
# requirements on first use.
SHELL := /bin/bash
PYTHON ?= python3
VENV := venv
PY := $(VENV)/bin/python
STACK ?= dev
# Every stack the offline preview renders: the examples and the user's own (stacks/).
STACKS := $(sort $(patsubst examples/Pulumi.%.yaml,%,$(wildcard examples/Pulumi.*.yaml)) $(patsubst stacks/Pulumi.%.yaml,%,$(wildcard stacks/Pulumi.*.yaml)))
STAMP := $(VENV)/.installed
# The plan starts from rendered/<stack>/ as committed at this git ref; CI passes the pull request's
# base commit. SUMMARY=<file> appends each stack's plan there as Markdown (a CI job summary).
BASE ?= HEAD
PLAN_ARGS = --base $(BASE) $(if $(SUMMARY),--summary "$(SUMMARY)")
# The policy pack runs from policies/ with a virtualenv of its own, as the Pulumi CLI starts it.
PACK_VENV := policies/venv
PACK_STAMP := $(PACK_VENV)/.installed

.PHONY: help preview render test lint typecheck unit bench clean

help:
	@echo "make preview [STACK=dev] [BASE=HEAD]  offline preview of stacks/ or examples/Pulumi.<stack>.yaml: plan against rendered/<stack>/ at BASE, rendered/<stack>/, policy findings"
	@echo "make render               make preview for every stack: rendered/<stack>/ for all of them"
	@echo "make test                 ruff, mypy, actionlint and pytest"
	@echo "make bench                benchmarks under benchmarks/ (print their figures)"

# Reinstall whenever a requirements file or the package metadata changes.
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(STAMP)

$(PACK_STAMP): policies/requirements.txt pyproject.toml
	test -x $(PACK_VENV)/bin/python || $(PYTHON) -m venv $(PACK_VENV)
	cd policies && venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $(PACK_STAMP)

preview: $(STAMP)
	$(PY) -m tools.preview --stack $(STACK) $(PLAN_ARGS)

render: $(STAMP)
	@for stack in $(STACKS); do echo "== $$stack"; $(PY) -m tools.preview --stack $$stack $(PLAN_ARGS) || exit 1; done

test: lint typecheck unit

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/actionlint .github/workflows/*.yml

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP) $(PACK_STAMP)
	$(VENV)/bin/pytest

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) $(PACK_VENV) .pytest_cache .mypy_cache .ruff_cache
