# Two commands on a fresh clone: `make preview` (the main job) and `make test`.
# Both bootstrap .venv from the package registries when it is missing or stale, each only as far as it
# needs: `make preview` (and validate, lint, render, merge-preview, diff, argocd, chart, schemas) the
# tooling environment (requirements-tooling.lock, the project itself editable, helm); `make test`,
# `make run-local` and `make bench` add the tests' tools and the training samples (requirements.lock).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TOOLING := $(VENV)/.tooling
FULL := $(VENV)/.full
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# This checkout's own package first, also when .venv is shared with another checkout.
export PYTHONPATH := $(CURDIR)/src$(if $(PYTHONPATH),:$(PYTHONPATH))
PIP := $(PY) -m pip install --quiet --disable-pip-version-check
KDT := $(PY) -m kdt
# pytest workers: the suite is mostly subprocesses (kubectl, helm, torchrun), which also wait (rendezvous,
# paced training steps, restarts): on 2 cores, 2 workers left them 9 to 13 % idle; a third fills that
# (the whole suite 330 s against 356 s, same machine, same commit).
PYTEST_WORKERS ?= 3

.PHONY: help venv venv-full preview render validate lint merge-preview migrate run-local diff argocd chart schemas test bench image lock clean live judge cluster-up cluster-down image-deps test-images

help:
	@echo "make preview        render, validate and lint every target; print the summary table"
	@echo "make test           run the test suite"
	@echo "make run-local TARGET=overlays/ddp [ARGS='--max-steps 20 --kill POD@step=8']  run a target's pods locally"
	@echo "make migrate [ARGS='--to 2.1 --output migrated']  move PyTorchJobs to Trainer v2, proved pod by pod (docs/migration.md)"
	@echo "make live           build the live control plane (Kubernetes, etcd, the operators' managers) into the user's cache"
	@echo "make judge          every target against the real API server and operators (docs/live.md)"
	@echo "make cluster-up|cluster-down   a local control plane for kubectl and --live (kdt cluster)"
	@echo "make render|validate|lint|merge-preview|argocd|chart|schemas|diff [BASE=ref]|image|bench"

$(TOOLING): requirements-tooling.lock pyproject.toml scripts/bootstrap.py src/kdt/tools.py
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) -r requirements-tooling.lock
	$(PIP) --no-deps --no-build-isolation --editable .
	$(PY) scripts/bootstrap.py --venv $(VENV)
	@touch $@

$(FULL): $(TOOLING) requirements.lock
	$(PIP) -r requirements.lock
	@touch $@

venv: $(TOOLING)
venv-full: $(FULL)

preview: $(TOOLING)
	$(KDT) preview $(ARGS)

render: $(TOOLING)
	$(KDT) render $(ARGS)

validate: $(TOOLING)
	$(KDT) validate $(ARGS)

lint: $(TOOLING)
	$(KDT) lint $(ARGS)

merge-preview: $(TOOLING)
	$(KDT) merge-preview $(ARGS)

# Move every PyTorchJob target to a TrainJob (and a TrainJob between Trainer shapes), proved by the merge preview
# pod by pod (docs/migration.md). ARGS: --to 2.1|2.3, --output DIR, --check, -o markdown, paths.
migrate: $(TOOLING)
	$(KDT) migrate $(ARGS)

# Start a target's pods as local processes, as the operator would (docs/run-local.md): TARGET=overlays/ddp ARGS=...
run-local: $(FULL)
	@test -n "$(TARGET)" || { echo "make run-local: set TARGET, e.g. TARGET=overlays/ddp" >&2; exit 2; }
	$(KDT) run $(TARGET) $(ARGS)

# Expand deploy/argocd's ApplicationSet offline and render, validate and lint every Application.
argocd: $(TOOLING)
	$(KDT) argocd $(ARGS)

# The chart: helm lint --strict on the defaults and every ci values file, README current, packaged into dist/.
chart: $(TOOLING)
	$(VENV)/bin/helm lint --strict charts/trainer
	for f in charts/trainer/ci/*.yaml; do $(VENV)/bin/helm lint --strict charts/trainer -f $$f || exit 1; done
	$(PY) scripts/gen_chart_readme.py --check
	$(PY) scripts/gen_chart_schema.py --check
	$(VENV)/bin/helm package charts/trainer --destination dist/

# Regenerate the Kubeflow / JobSet JSON schemas from the official API packages (a test fails when they are stale).
schemas: $(TOOLING)
	$(PY) -m kdt.schemas.generate

# The training image (docs/image.md): docker buildx, else buildah (ENGINE=); tag from the git revision and the
# manifests' reference; IMAGE=, PUSH=1, ARCHIVE=, TARGET=gpu|gpu-debian|cpu|tensorflow|tensorflow-debian.
# Standard library only, so no .venv is needed. Without any engine it says so and exits 3.
image:
	ENGINE="$(ENGINE)" IMAGE="$(IMAGE)" PUSH="$(PUSH)" TARGET="$(TARGET)" PLATFORM="$(PLATFORM)" ARCHIVE="$(ARCHIVE)" \
	  $(PYTHON) scripts/image.py

# What the daemonless image build and tests/image's runc runs need from Debian, installed only when missing.
IMAGE_DEBS := buildah runc debootstrap uidmap
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
image-deps:
	@missing="$$(for p in $(IMAGE_DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done | xargs)"; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing the image build's Debian packages: $$missing"; \
	  flock /tmp/apt.lock $(SUDO) sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing" > /tmp/image-deps.log 2>&1 \
	    || { echo "make: apt-get install $$missing failed (log /tmp/image-deps.log)" >&2; exit 1; }; \
	fi

# The images tests/image runs with runc: built from Debian's packages and the hashed locks' wheels (no registry
# image), layer-cached in containers-storage and the wheels in ~/.cache/kdt/image, so a second run rebuilds
# only what changed (docs/image.md gives cold and warm times).
test-images: $(FULL) image-deps
	$(PY) scripts/image.py --engine buildah --target gpu-debian
	$(PY) scripts/image.py --engine buildah --target tensorflow-debian

# Benchmarks: they print measured figures and ratios (not part of make test).
bench: $(FULL)
	$(PY) bench/validate.py
	$(PY) bench/apiserver.py
	$(PY) bench/merge_conformance.py --brief
	$(PY) bench/preview_scale.py
	$(PY) bench/lint_precision.py
	$(PY) bench/recovery.py
	$(PY) bench/fork_server.py
	$(PY) bench/migrate.py
	$(PY) bench/queues.py
	$(PY) bench/gpu_speed.py
	$(PY) bench/real_nodes.py

# make diff BASE=<ref>  (default: the merge base with main, against the working tree)
diff: $(TOOLING)
	$(KDT) diff $(if $(BASE),--base $(BASE)) $(ARGS)

# The live control plane's binaries (Go 1.26+): built once into ~/.cache/kdt/live (a cold build takes many
# minutes on 2 cores, with progress), then kept; every later run finds them.
live: $(TOOLING)
	$(KDT) cluster build --all-operator-releases

# Every shipped target at its Trainer release against the real API server and operators (bench/live_judge.py):
# admission verdicts and the objects the controllers create, against validate/lint and the merge preview.
judge: live
	$(PY) bench/live_judge.py $(ARGS)

cluster-up: live
	$(KDT) cluster up $(ARGS)

cluster-down: $(TOOLING)
	$(KDT) cluster down $(ARGS)

# The fast suite, then the live stage: tests/live (the real control plane) and the live judge on every
# shipped target at every supported release.
test: $(FULL) live test-images
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist worksteal --durations=15 --ignore=tests/live $(ARGS)
	$(PY) -m pytest -n 2 --dist loadfile -q --durations=10 tests/live
	$(PY) bench/live_judge.py

# Both locks from their requirements: the tooling set alone, then everything with the tooling versions held.
lock:
	rm -rf .lockvenv && $(PYTHON) -m venv .lockvenv && .lockvenv/bin/pip install --quiet -r requirements-tooling.txt
	{ echo "# Resolved set of requirements-tooling.txt: what make preview installs (make lock regenerates it)."; \
	  .lockvenv/bin/pip freeze --all | grep -v -E '^(pip|wheel|pkg.resources)=='; } > requirements-tooling.lock
	.lockvenv/bin/pip install --quiet -r requirements.txt -c requirements-tooling.lock
	{ echo "# Resolved set of requirements.txt (tooling, tests, training samples): what make test installs;"; \
	  echo "# it holds requirements-tooling.lock's versions (make lock regenerates both)."; \
	  .lockvenv/bin/pip freeze --all | grep -v -E '^(pip|wheel|pkg.resources)=='; } > requirements.lock
	rm -rf .lockvenv

clean:
	rm -rf $(VENV) .pytest_cache
