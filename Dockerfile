# The operator image: the runner (python3 -m runner) with the c5c3.glance collection it
# runs, as config/manager's Deployment starts it.
#
#   docker build -t ghcr.io/c5c3/glance-operator:0.1.0 .
#
# or `make images` (docs/install.md, "Building the images"). The build context is the
# repository root (.dockerignore keeps local state, tests and the images' directories out).
# Python packages come only from requirements-runtime.txt, the runtime subset of
# requirements.txt at the same pins (pip --no-deps, wheels only: the list is the whole set,
# and pip check proves it); no test or lint tool enters the image. The collection is built
# from this checkout and installed where ansible-runner finds it,
# /usr/share/ansible/collections. Runs as 65532:65532, the uid the manager Deployment sets;
# everything it writes goes to /tmp (an emptyDir in the pod). No BuildKit-only syntax: the
# classic builder builds it too (tests/install/test_build_contexts.py).

# A pinned patch release; pin the digest as well (python:3.12.13-slim-trixie@sha256:...)
# where the registry is reachable when this file is changed.
ARG PYTHON_IMAGE=python:3.12.13-slim-trixie

# --- venv: the runtime's Python packages ---------------------------------------------------
FROM ${PYTHON_IMAGE} AS venv
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
COPY requirements-runtime.txt /tmp/requirements-runtime.txt
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-deps --only-binary=:all: -r /tmp/requirements-runtime.txt \
    && /opt/venv/bin/pip check

# --- sbom: the bill of materials of /opt/venv -------------------------------------------------
# CycloneDX (cyclonedx-py, pinned in requirements-sbom.txt) reads every distribution of the
# runtime venv with its declared licence and licence files. Nothing of this stage enters the
# image: `make images` builds it (--target sbom) and copies /sbom.cdx.json out, beside the
# image (hack/images.py). Rebuilt only when the pins change.
FROM venv AS sbom
COPY requirements-sbom.txt /tmp/requirements-sbom.txt
RUN python -m venv /opt/sbom \
    && /opt/sbom/bin/pip install --no-deps --only-binary=:all: -r /tmp/requirements-sbom.txt \
    && /opt/sbom/bin/pip check \
    && /opt/sbom/bin/cyclonedx-py environment --gather-license-texts --output-reproducible \
        --output-file /sbom.cdx.json /opt/venv/bin/python

# --- build: the installed collection ---------------------------------------------------------
FROM venv AS build
COPY . /src
# The same tarball `make build` makes, installed without any download.
RUN /opt/venv/bin/ansible-galaxy collection build --output-path /tmp/dist /src \
    && /opt/venv/bin/ansible-galaxy collection install --offline \
        -p /usr/share/ansible/collections /tmp/dist/c5c3-glance-*.tar.gz \
    && /opt/venv/bin/python -m compileall -q /opt/venv/lib /usr/share/ansible/collections

# --- runtime -----------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="glance-operator" \
      org.opencontainers.image.description="Kubernetes operator for OpenStack Glance (the c5c3.glance Ansible collection and its runner)" \
      org.opencontainers.image.source="https://github.com/c5c3/glance-operator-ansible" \
      org.opencontainers.image.licenses="Apache-2.0 AND GPL-3.0-or-later AND BSD-2-Clause AND BSD-3-Clause AND ISC AND MIT AND MIT-0 AND PSF-2.0"
# A passwd entry for the uid: Ansible looks the current user up (getpwuid).
RUN groupadd --system --gid 65532 glance-operator \
    && useradd --system --uid 65532 --gid 65532 --home-dir /tmp --no-create-home \
        --shell /usr/sbin/nologin glance-operator
COPY --from=build /opt/venv /opt/venv
COPY --from=build /usr/share/ansible/collections /usr/share/ansible/collections
WORKDIR /opt/operator
COPY runner/ /opt/operator/runner/
COPY playbooks/ /opt/operator/playbooks/
COPY watches.yaml /opt/operator/watches.yaml
# The venv first on PATH (python3 is the venv's); ansible_collections importable by the
# runner and the webhook, which use the collection's module_utils directly; HOME and
# Ansible's temp dirs on the writable /tmp (the root filesystem is read-only in the pod);
# no bytecode written at run time (compiled here instead).
ENV PATH=/opt/venv/bin:${PATH} \
    PYTHONPATH=/usr/share/ansible/collections \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    ANSIBLE_COLLECTIONS_PATH=/usr/share/ansible/collections \
    HOME=/tmp \
    ANSIBLE_LOCAL_TEMP=/tmp/ansible/tmp \
    ANSIBLE_REMOTE_TEMP=/tmp/ansible/tmp
# What the runner needs must be there; fail the build otherwise: the collection where
# ansible finds it, its CRDs and catalogs readable through the import path, the watches.
RUN set -eu; \
    python -m compileall -q /opt/operator/runner; \
    ansible-doc -t filter c5c3.glance.judge_input >/dev/null; \
    python -c "from ansible_collections.c5c3.glance.plugins.module_utils.admission import collection_files as f; assert f.load_crds() and f.load_catalogs()"; \
    python -c "import yaml; assert yaml.safe_load(open('/opt/operator/watches.yaml'))"; \
    test -d /opt/operator/runner -a -d /opt/operator/playbooks; \
    rm -rf /tmp/.ansible /tmp/ansible
USER 65532:65532
# 8080 metrics, 8081 health probes (/healthz, /readyz), 9443 admission webhook.
EXPOSE 8080 8081 9443
ENTRYPOINT ["python3", "-m", "runner"]
CMD ["--watches-file", "/opt/operator/watches.yaml"]
