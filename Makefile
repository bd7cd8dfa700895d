# The two commands a user needs: `make preview` (offline, on stacks/Pulumi.$(STACK).yaml) and
# `make test`. Both create venv/ (the same folder Pulumi.yaml names) on first use: `make preview`
# installs what the program runs with (requirements.txt, all that `pulumi up` installs) and what the
# preview adds (requirements-preview.txt: the schemas; plus the pack's SDK pulumi-policy, since the
# preview runs the policy pack in-process); `make test` adds the dev tools (requirements-dev.txt)
# and the policy pack's own policies/venv and the component package's provider/venv. Each is reinstalled when
# its requirements change.
#
# uv installs them, from a lock per virtualenv compiled from those requirements files with every
# package's hashes (`make lock` rewrites the locks; tests/ci/test_locks.py fails on a stale one), and
# refuses a download whose hash the lock does not name: it takes seconds where pip takes a minute and a
# half, and its cache (~/.cache/uv) makes the next virtualenv nearly free.
SHELL := /bin/bash
PYTHON ?= python3
VENV := venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
# uv's pin lives in requirements-uv.txt; `make preview` installs uv alone first, by pip from its lock with
# hashes required (pip, "Secure installs": https://pip.pypa.io/en/stable/topics/secure-installs/).
UV_STAMP := $(VENV)/.installed-uv
# Hash-checking mode: every requirement pinned with --hash, or nothing is installed (uv's `--require-hashes`,
# https://docs.astral.sh/uv/reference/cli/#uv-pip-install).
UV_INSTALL := $(UV) pip install --quiet --require-hashes
# The repository's own package (`-e .`, `-e ..`) has no hash to check: it is this checkout. Its dependencies
# came from the lock (--no-deps), and its build backend is requirements-build.lock's setuptools, refused
# without a matching hash (--build-constraints, --require-build-hashes: same page).
UV_LOCAL := $(UV) pip install --quiet --no-deps --require-build-hashes --build-constraints $(CURDIR)/requirements-build.lock
# Each lock is `uv pip compile --generate-hashes` of its input, one resolution for CPython 3.11 and up on any
# platform (--universal); the local package is left out of it (--no-emit-package), its dependencies kept
# (https://docs.astral.sh/uv/reference/cli/#uv-pip-compile).
UV_COMPILE := $(UV) pip compile --quiet --universal --python-version 3.11 --generate-hashes --no-emit-package oke-gpu-rdma
# actionlint, built from its Go module at this tag (`go install pkg@version` checks every module it downloads
# against the checksum database: https://go.dev/ref/mod#go-install, https://go.dev/ref/mod#checksum-database)
# into a folder of this checkout's own.
ACTIONLINT_VERSION := v1.7.12
ACTIONLINT := build/tools/actionlint-$(ACTIONLINT_VERSION)/actionlint
# The component package's consumers (make consumers): the SDKs Pulumi's own code generators make from the
# package's schema (tools/sdkgen, its versions pinned by tools/sdkgen/go.mod and go.sum) in build/sdks, and
# the TypeScript and Python examples type-checked against them; the TypeScript one's npm packages exactly as
# its package-lock.json pins them.
SDKGEN := build/tools/sdkgen
CONSUMER_TS := examples/package-consumer/typescript
CONSUMER_TS_STAMP := $(CONSUMER_TS)/node_modules/.installed
STACK ?= dev
# Every stack the offline preview renders: the examples and the user's own (stacks/).
STACKS := $(sort $(patsubst examples/Pulumi.%.yaml,%,$(wildcard examples/Pulumi.*.yaml)) $(patsubst stacks/Pulumi.%.yaml,%,$(wildcard stacks/Pulumi.*.yaml)))
RUNTIME_STAMP := $(VENV)/.installed-runtime
DEV_STAMP := $(VENV)/.installed-dev
# The plan starts from rendered/<stack>/ as committed at this git ref; CI passes the pull request's
# base commit. SUMMARY=<file> adds each stack's plan there as Markdown (a CI job summary; stacks
# without changes share one closing line). SHOW_SAMES=1 lists unchanged resources in the tree too.
BASE ?= HEAD
PLAN_ARGS = --base $(BASE) $(if $(SUMMARY),--summary "$(SUMMARY)") $(if $(SHOW_SAMES),--show-sames)
# The policy pack runs from policies/ with a virtualenv of its own, as the Pulumi CLI starts it.
PACK_VENV := policies/venv
PACK_STAMP := $(PACK_VENV)/.installed
# The pack's SDK at the version the pack pins.
PACK_SDK := $(shell grep -E '^pulumi-policy==' policies/requirements.txt)
# The component package (provider/) runs from its folder with a virtualenv of its own, as the CLI starts it.
PROVIDER_VENV := provider/venv
PROVIDER_STAMP := $(PROVIDER_VENV)/.installed
# The PromQL parser the tests run (Prometheus' own grammar, @prometheus-io/lezer-promql from npm), installed
# exactly as tools/promql/package-lock.json pins it.
PROMQL_STAMP := tools/promql/node_modules/.installed
# A self-contained copy of the pack for `pulumi policy publish` (tools/build_pack.py).
PACK_OUT ?= build/policy-pack
# Its version: the release tag vX.Y.Z on HEAD unless given.
PACK_VERSION ?=
# pytest-xdist workers, by measurement on this machine: `make bench-test SWEEP=1` times the suite serial, with
# one worker per core and with two, and writes the fastest count to $(JOBS_FILE), which `make test` then
# uses. Unmeasured, one per core: on 2 shared cores it measured serial 121 s, 2 workers 67 s, 4 workers
# 76 s (the suite waits on subprocesses and started policy packs, so workers pay even there). Each test
# file stays on one worker, so module fixtures (a started policy pack, a built one with its venv) are
# made once. `make test JOBS=n` overrides.
JOBS_FILE := $(VENV)/.test-jobs
JOBS ?= $(shell cat $(JOBS_FILE) 2>/dev/null || nproc)

# pip compiles the bytecode of all it installs (most of its time: pulumi-oci is 330 MB of Python);
# uv leaves it to the first import. So let Python write it then, even where PYTHONDONTWRITEBYTECODE
# is set (as on this project's machines), or every process would parse pulumi-oci's modules again
# (15 s instead of 4 s to import what the program uses).
export PYTHONDONTWRITEBYTECODE :=

.PHONY: help preview render topology docs test lint typecheck unit e2e drill bench bench-test venvs pack org-pack clean lock consumers package-source

help:
	@echo "make preview [STACK=dev] [BASE=HEAD] [SHOW_SAMES=1]  offline preview of stacks/ or examples/Pulumi.<stack>.yaml: plan against rendered/<stack>/ at BASE, rendered/<stack>/, policy findings"
	@echo "make render               make preview for every stack: rendered/<stack>/ for all of them"
	@echo "make topology SLICES=<file> [NODE=<node>] [SHAPE=<shape>] [NODES=<file>]  the shapeTopologies entry of a node's shape, from \`kubectl get resourceslices -o yaml\` (the shape: SHAPE=, or NODES=\`kubectl get nodes -o yaml\`, when the slices do not name it)"
	@echo "make docs                 docs/reference/ from the stack config model and the policy registry"
	@echo "make test                 ruff, mypy, actionlint and pytest"
	@echo "make e2e                  the rendered stacks applied to a control plane built from the Go modules (kube-apiserver, scheduler, controller-manager, Kueue)"
	@echo "make drill [ROUNDS=1000]  the rail agent's seeded fault drill in both mark modes (issue 35's acceptance; make test runs 60 rounds)"
	@echo "make bench                benchmarks under benchmarks/ (print their figures)"
	@echo "make bench-test [SWEEP=1] make test on a fresh clone of HEAD, by phase, with the tests over 5 s (SWEEP=1: also the worker count make test then uses)"
	@echo "make venvs                the program's and the policy pack's virtualenvs only (what pulumi up runs with)"
	@echo "make lock                 every virtualenv's lock (and the OCI CLI's) from its requirements, with hashes"
	@echo "make pack [PACK_OUT=dir] [PACK_VERSION=X.Y.Z]  the policy pack with the domain library vendored, ready to publish (version: the release tag on HEAD)"
	@echo "make org-pack PACK=<dir> [STACK=dev] [PACK_CONFIG=<file>] [PACK_PYTHON=<python>] [PACK_CONFIG_OUT=<file>]  your own policy pack on rendered/<stack>/, started as the CLI starts it (docs/own-policy-pack.md)"
	@echo "make consumers            the component package's TypeScript and Python examples type-checked (tsc, mypy) against the SDKs generated from its schema"
	@echo "make package-source       the pulumi package add command for this repository at its release tag (docs/component-package.md)"

$(UV_STAMP): requirements-uv.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-uv.lock
	touch $@

# The preview's requirements and the pack's SDK at the pack's pin (requirements-preview.lock), then the
# local package.
$(RUNTIME_STAMP): requirements-preview.lock requirements-build.lock pyproject.toml | $(UV_STAMP)
	$(UV_INSTALL) --python $(PY) -r requirements-preview.lock
	$(UV_LOCAL) --python $(PY) -e .
	touch $@

$(DEV_STAMP): requirements-dev.lock $(RUNTIME_STAMP)
	$(UV_INSTALL) --python $(PY) -r requirements-dev.lock
	touch $@

# From policies/, so that its `-e ..` is the repository root, as when the CLI installs it.
$(PACK_STAMP): policies/requirements.lock requirements-build.lock pyproject.toml | $(UV_STAMP)
	test -x $(PACK_VENV)/bin/python || $(PYTHON) -m venv $(PACK_VENV)
	cd policies && ../$(UV_INSTALL) --python venv/bin/python -r requirements.lock
	cd policies && ../$(UV_LOCAL) --python venv/bin/python -e ..
	touch $@

# From provider/, so that its `-e ..` is the repository root, as when the CLI installs it.
$(PROVIDER_STAMP): provider/requirements.lock requirements-build.lock pyproject.toml | $(UV_STAMP)
	test -x $(PROVIDER_VENV)/bin/python || $(PYTHON) -m venv $(PROVIDER_VENV)
	cd provider && ../$(UV_INSTALL) --python venv/bin/python -r requirements.lock
	cd provider && ../$(UV_LOCAL) --python venv/bin/python -e ..
	touch $@

# Every lock from its input, each header naming the input (requirements files are read relative to the
# folder uv runs in, so the pack's and the component package's from their folders). The runtime lock adds the
# pack's SDK pin (stdin), the dev lock keeps every version the runtime lock has (-c).
lock: | $(UV_STAMP)
	$(UV_COMPILE) requirements-uv.txt -o requirements-uv.lock
	$(UV_COMPILE) requirements-build.txt -o requirements-build.lock
	echo '$(PACK_SDK)' | $(UV_COMPILE) requirements-preview.txt - -o requirements-preview.lock
	$(UV_COMPILE) requirements-dev.txt -c requirements-preview.lock -o requirements-dev.lock
	cd policies && ../$(UV_COMPILE) requirements.txt -o requirements.lock
	cd provider && ../$(UV_COMPILE) requirements.txt -o requirements.lock
	cd .github/actions/oci-cli && $(CURDIR)/$(UV_COMPILE) requirements.txt -o requirements.lock
	cd oke_gpu_rdma/health/remediation && $(CURDIR)/$(UV_COMPILE) requirements-repair.txt -o repair.lock

$(ACTIONLINT):
	@command -v go >/dev/null || { echo "make lint: needs Go on PATH to build actionlint $(ACTIONLINT_VERSION)" >&2; exit 2; }
	GOBIN=$(CURDIR)/$(dir $(ACTIONLINT)) go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

$(PROMQL_STAMP): tools/promql/package.json tools/promql/package-lock.json
	@command -v npm >/dev/null || { echo "make test: needs Node and npm on PATH for the PromQL tests (tools/promql: Prometheus' own grammar from npm)" >&2; exit 2; }
	cd tools/promql && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(SDKGEN): tools/sdkgen/go.mod tools/sdkgen/go.sum tools/sdkgen/main.go
	@command -v go >/dev/null || { echo "make consumers: needs Go on PATH to build tools/sdkgen" >&2; exit 2; }
	cd tools/sdkgen && go build -mod=readonly -trimpath -o $(CURDIR)/$@ .

$(CONSUMER_TS_STAMP): $(CONSUMER_TS)/package.json $(CONSUMER_TS)/package-lock.json
	cd $(CONSUMER_TS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The schema as the plugin serves it, the SDKs `pulumi package add` generates from it, then each consumer
# checked against its SDK (tools/consumers/: where the SDK sits instead of the program's sdks/). Not part of
# `make test`: a fresh checkout builds the code generator first (about a minute on 2 cores).
consumers: $(DEV_STAMP) $(SDKGEN) $(CONSUMER_TS_STAMP)
	$(PY) -m tools.package_schema build/sdks/schema.json
	$(SDKGEN) -schema build/sdks/schema.json -out build/sdks
	$(CONSUMER_TS)/node_modules/.bin/tsc -p tools/consumers/tsconfig.json
	MYPYPATH=build/sdks/python/oke-gpu-rdma-oke-gpu-rdma $(VENV)/bin/mypy --config-file tools/consumers/mypy.ini --cache-dir build/consumers/mypy-cache examples/package-consumer/python/__main__.py

package-source: $(RUNTIME_STAMP)
	@$(PY) -m tools.package_source

# What `pulumi up` and `pulumi preview` run in CI: the program's venv/ and the pack's policies/venv, by uv.
venvs: $(RUNTIME_STAMP) $(PACK_STAMP)

preview: $(RUNTIME_STAMP)
	$(PY) -m preview --stack $(STACK) $(PLAN_ARGS)

render: $(RUNTIME_STAMP)
	@for stack in $(STACKS); do echo "== $$stack"; $(PY) -m preview --stack $$stack $(PLAN_ARGS) || exit 1; done

# Onboard a shape from a live cluster: its ResourceSlices in, a shapeTopologies entry for a stack file out.
topology: $(RUNTIME_STAMP)
	@test -n "$(SLICES)" || { echo "make topology: set SLICES=<file>, the output of kubectl get resourceslices -o yaml" >&2; exit 2; }
	@$(PY) -m tools.make_topology "$(SLICES)" $(if $(NODE),--node "$(NODE)") $(if $(SHAPE),--shape "$(SHAPE)") $(if $(NODES),--nodes "$(NODES)")

# The reference pages are printed from the code (tools/gen_docs.py); a test fails when they are stale.
docs: $(RUNTIME_STAMP)
	$(PY) -m tools.gen_docs

# An organisation's own policy pack (PACK=, importing oke_rdma_policies) on rendered/$(STACK)/ with PACK_CONFIG=
# over the stack's policy-pack-config.json, as `pulumi preview --policy-pack` starts it (preview/org_pack.py).
# A pack without a virtualenv of its own runs with policies/venv.
org-pack: $(RUNTIME_STAMP) $(PACK_STAMP)
	@test -n "$(PACK)" || { echo "make org-pack: set PACK=<dir>, the folder of your pack's PulumiPolicy.yaml (examples/org-policy-pack is one)" >&2; exit 2; }
	@$(PY) -m preview.org_pack --pack "$(PACK)" --stack "$(STACK)" $(if $(PACK_CONFIG),--config "$(PACK_CONFIG)") $(if $(PACK_PYTHON),--python "$(PACK_PYTHON)") $(if $(PACK_CONFIG_OUT),--write-config "$(PACK_CONFIG_OUT)")

pack: $(RUNTIME_STAMP)
	$(PY) -m tools.build_pack --out $(PACK_OUT) $(if $(PACK_VERSION),--version $(PACK_VERSION))

test: lint typecheck unit

lint: $(DEV_STAMP) $(ACTIONLINT)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(ACTIONLINT) .github/workflows/*.yml

typecheck: $(DEV_STAMP)
	$(VENV)/bin/mypy

unit: $(DEV_STAMP) $(PACK_STAMP) $(PROVIDER_STAMP) $(PROMQL_STAMP)
	$(VENV)/bin/pytest -n $(JOBS) --dist loadfile

# The e2e tests (tests/e2e/): kube-apiserver, kube-controller-manager, kube-scheduler, etcd and Kueue's manager
# built from their Go modules (tests/e2e/cluster/go.mod, and the MPI operator from tests/e2e/mpi-operator/go.mod)
# into build/e2e/bin; Go's build cache makes a warm build take seconds. One control plane per stack, on
# loopback. Its last line names the passed scenarios and the versions the binaries report.
e2e: $(DEV_STAMP)
	@command -v go >/dev/null || { echo "make e2e: needs Go (1.26, the version tests/e2e/cluster/go.mod names) on PATH" >&2; exit 2; }
	rm -f build/e2e/summary.json
	$(VENV)/bin/pytest --e2e tests/e2e -p no:xdist -p no:cacheprovider -rx; status=$$?; \
	  $(PY) -m tests.e2e.summary build/e2e/summary.json && exit $$status

# The rail agent (components/health/scripts/rail-health.sh) under seeded random faults, checked against the model of
# docs/rail-agent-faults.md (tests/components/health/rail_drill.py); about 0.05 s a round on 2 cores, 2 minutes in all.
ROUNDS ?= 1000
drill: $(DEV_STAMP)
	$(PY) -m tests.components.health.rail_drill --rounds $(ROUNDS)

bench: $(RUNTIME_STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# `make test` on a fresh clone of HEAD, by phase, and the tests over 5 s with their reasons; SWEEP=1 also
# times the suite by worker count here and keeps the fastest for `make test`.
bench-test: $(DEV_STAMP) $(PACK_STAMP) $(PROVIDER_STAMP) $(PROMQL_STAMP)
	$(PY) benchmarks/bench_make_test.py $(if $(SWEEP),--sweep --write $(JOBS_FILE))

clean:
	rm -rf $(VENV) $(PACK_VENV) $(PROVIDER_VENV) tools/promql/node_modules $(CONSUMER_TS)/node_modules build .pytest_cache .mypy_cache .ruff_cache
