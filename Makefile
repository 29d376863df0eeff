# Two commands on a fresh clone: `make preview` (the main job) and `make test`.
# Both bootstrap .venv from the package registries when it is missing or stale.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.bootstrapped
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# pytest workers: the suite is mostly subprocesses (kubectl, helm, torchrun).
PYTEST_WORKERS ?= 2

.PHONY: help venv preview render validate lint merge-preview run-local diff argocd chart schemas test bench image lock clean

help:
	@echo "make preview        render, validate and lint every target; print the summary table"
	@echo "make test           run the test suite"
	@echo "make run-local TARGET=overlays/ddp [ARGS='--max-steps 20 --kill POD@step=8']  run a target's pods locally"
	@echo "make render|validate|lint|merge-preview|argocd|chart|schemas|diff [BASE=ref]|image|bench"

$(STAMP): requirements.lock scripts/bootstrap.py
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(PY) scripts/bootstrap.py --venv $(VENV)
	@touch $(STAMP)

venv: $(STAMP)

preview: $(STAMP)
	$(PY) scripts/preview.py

render: $(STAMP)
	$(PY) scripts/render.py $(ARGS)

validate: $(STAMP)
	$(PY) scripts/validate.py $(ARGS)

lint: $(STAMP)
	$(PY) scripts/lint.py $(ARGS)

merge-preview: $(STAMP)
	$(PY) scripts/merge_preview.py $(ARGS)

# Start a target's pods as local processes, as the operator would (docs/run-local.md): TARGET=overlays/ddp ARGS=...
run-local: $(STAMP)
	@test -n "$(TARGET)" || { echo "make run-local: set TARGET, e.g. TARGET=overlays/ddp" >&2; exit 2; }
	$(PY) scripts/run.py $(TARGET) $(ARGS)

# Expand deploy/argocd's ApplicationSet offline and render, validate and lint every Application.
argocd: $(STAMP)
	$(PY) scripts/argocd.py $(ARGS)

# The chart: helm lint --strict on the defaults and every ci values file, README current, packaged into dist/.
chart: $(STAMP)
	$(VENV)/bin/helm lint --strict charts/trainer
	for f in charts/trainer/ci/*.yaml; do $(VENV)/bin/helm lint --strict charts/trainer -f $$f || exit 1; done
	$(PY) scripts/gen_chart_readme.py --check
	$(PY) scripts/gen_chart_schema.py --check
	$(VENV)/bin/helm package charts/trainer --destination dist/

# Regenerate the Kubeflow / JobSet JSON schemas from the official API packages (a test fails when they are stale).
schemas: $(STAMP)
	$(PY) scripts/kdt/schemas/generate.py

# The training image (docs/image.md): docker buildx, tag from the git revision; IMAGE=, PUSH=1, TARGET=gpu|cpu.
# Standard library only, so no .venv is needed. Without a Docker engine it says so and exits non-zero.
image:
	IMAGE="$(IMAGE)" PUSH="$(PUSH)" TARGET="$(TARGET)" PLATFORM="$(PLATFORM)" $(PYTHON) scripts/image.py

# Benchmarks: they print measured figures and ratios (not part of make test).
bench: $(STAMP)
	$(PY) bench/validate.py
	$(PY) bench/lint_precision.py
	$(PY) bench/recovery.py

# make diff BASE=<ref>  (default: the merge base with main, against the working tree)
diff: $(STAMP)
	$(PY) scripts/diff.py $(if $(BASE),--base $(BASE)) $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -n $(PYTEST_WORKERS) $(ARGS)

lock:
	rm -rf .lockvenv && $(PYTHON) -m venv .lockvenv && .lockvenv/bin/pip install --quiet -r requirements.txt
	{ echo "# Full resolved set of requirements.txt, installed by the bootstrap (make lock regenerates it)."; \
	  .lockvenv/bin/pip freeze | grep -v '^pkg.resources'; } > requirements.lock
	rm -rf .lockvenv

clean:
	rm -rf $(VENV) .pytest_cache
