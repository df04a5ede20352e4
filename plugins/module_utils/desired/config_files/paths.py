# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Where the configuration and Glance's data live in the pod: the config and backends
directories, the file names and paths under them, the staging, tasks and image-cache
directories, and the image's Python.
"""

from __future__ import annotations

# --- paths and file names ------------------------------------------------------------------
CONFIG_DIR = "/etc/glance/glance-api.conf.d/"
BACKENDS_DIR = "/etc/glance/backends.conf.d/"
GLANCE_API_CONF = "glance-api.conf"
PASTE_INI = "glance-api-paste.ini"
LOGGING_CONF = "logging.conf"
POLICY_YAML = "policy.yaml"
PASTE_PATH = CONFIG_DIR + PASTE_INI
LOGGING_PATH = CONFIG_DIR + LOGGING_CONF
POLICY_PATH = CONFIG_DIR + POLICY_YAML
STAGING_DIR = "/var/lib/glance/staging"
TASKS_WORK_DIR = "/var/lib/glance/tasks-work"
IMAGE_CACHE_DIR = "/var/lib/glance/image-cache"
#: spec.importCABundleSecretRef's certificates, the file SSL_CERT_FILE names in the API
#: container (docs/import.md, "Sources behind a private CA").
IMPORT_CA_DIR = "/etc/glance/import-ca/"
IMPORT_CA_PATH = IMPORT_CA_DIR + "ca.crt"
#: The Python of the image's environment (images/glance). Under uWSGI ``sys.executable`` is
#: not that interpreter, so the image_conversion plugin, which runs ``qemu-img`` through
#: ``python -m oslo_concurrency.prlimit``, must be told (glance's ``[wsgi]
#: python_interpreter``); without it every conversion fails (tests/e2e).
IMAGE_PYTHON = "/var/lib/openstack/bin/python"
