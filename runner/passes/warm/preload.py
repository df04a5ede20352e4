"""The warm server's import walk: what it imports before a pass's environment is known
(``warm_up``), the collection paths it warms for, and what tells a pass whether they are its
own (``collection_key``). The package's docstring says what is imported and why the rest
is not."""

from __future__ import annotations

import copy
import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

KEY_VARIABLES = (
    "ANSIBLE_CONFIG",
    "ANSIBLE_COLLECTIONS_PATH",
    "ANSIBLE_COLLECTIONS_PATHS",
    "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH",
    "ANSIBLE_HOME",
    "HOME",
)
"""The variables that decide where the collection's modules are found (with the working
directory when no ``ANSIBLE_CONFIG`` is set: ansible then reads ``./ansible.cfg``)."""
COLLECTION = "ansible_collections.c5c3.glance"
BUILTIN_COLLECTION = "ansible_collections.ansible.builtin"

PRELOAD = (
    "argparse",
    "base64",
    "concurrent.futures",
    "configparser",
    "csv",
    "ctypes",
    "curses",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email.parser",
    "getpass",
    "glob",
    "hashlib",
    "hmac",
    "inspect",
    "ipaddress",
    "json",
    "logging",
    "multiprocessing.queues",
    "multiprocessing.synchronize",
    "pickle",
    "platform",
    "pprint",
    "pty",
    "queue",
    "secrets",
    "shlex",
    "subprocess",
    "tarfile",
    "termios",
    "textwrap",
    "tty",
    "urllib.parse",
    "uuid",
    "zipfile",
    "cryptography.hazmat.primitives.ciphers",
    "jinja2",
    "jinja2.nativetypes",
    "jinja2.sandbox",
    "markupsafe",
    "packaging.version",
    "yaml",
    "distro",
    "urllib3",
    "celpy",
)
"""Standard and third-party modules of a pass (ansible-playbook's own imports and the
collection's); none reads ansible's configuration."""
ANSIBLE_PRELOAD = (
    "ansible._internal",
    "ansible._internal._ansiballz",
    "ansible._internal._collection_proxy",
    "ansible._internal._datatag._tags",
    "ansible._internal._datatag._utils",
    "ansible._internal._datatag._wrappers",
    "ansible._internal._display_utils",
    "ansible._internal._errors._alarm_timeout",
    "ansible._internal._errors._attribute_unavailable",
    "ansible._internal._errors._captured",
    "ansible._internal._errors._error_factory",
    "ansible._internal._errors._error_utils",
    "ansible._internal._event_formatting",
    "ansible._internal._locking",
    "ansible._internal._plugins._strategy",
    "ansible._internal._powershell._clixml",
    "ansible._internal._powershell._script",
    "ansible._internal._rpc_host",
    "ansible._internal._ssh._ssh_agent",
    "ansible._internal._templating._access",
    "ansible._internal._templating._errors",
    "ansible._internal._templating._jinja_patches",
    "ansible._internal._templating._utils",
    "ansible._internal._worker._inventory_rpc",
    "ansible._internal._wrapt",
    "ansible._internal._yaml._errors",
    "ansible.config.manager",
    "ansible.context",
    "ansible.errors",
    "ansible.executor.powershell",
    "ansible.executor.process",
    "ansible.inventory",
    "ansible.module_utils._internal._ambient_context",
    "ansible.module_utils._internal._concurrent._daemon_threading",
    "ansible.module_utils._internal._concurrent._futures",
    "ansible.module_utils._internal._dataclass_validation",
    "ansible.module_utils._internal._datatag._tags",
    "ansible.module_utils._internal._debugging",
    "ansible.module_utils._internal._deprecator",
    "ansible.module_utils._internal._errors",
    "ansible.module_utils._internal._event_utils",
    "ansible.module_utils._internal._json._profiles",
    "ansible.module_utils._internal._messages",
    "ansible.module_utils._internal._no_six",
    "ansible.module_utils._internal._patches._dataclass_annotation_patch",
    "ansible.module_utils._internal._patches._socket_patch",
    "ansible.module_utils._internal._patches._sys_intern_patch",
    "ansible.module_utils._internal._plugin_info",
    "ansible.module_utils._internal._stack",
    "ansible.module_utils._internal._text_utils",
    "ansible.module_utils._internal._traceback",
    "ansible.module_utils._internal._validation",
    "ansible.module_utils.common._utils",
    "ansible.module_utils.common.collections",
    "ansible.module_utils.common.file",
    "ansible.module_utils.common.locale",
    "ansible.module_utils.common.process",
    "ansible.module_utils.common.sentinel",
    "ansible.module_utils.common.sys_info",
    "ansible.module_utils.common.text.converters",
    "ansible.module_utils.common.text.formatters",
    "ansible.module_utils.common.warnings",
    "ansible.module_utils.common.yaml",
    "ansible.module_utils.compat.selinux",
    "ansible.module_utils.compat.typing",
    "ansible.module_utils.compat.version",
    "ansible.module_utils.datatag",
    "ansible.module_utils.distro",
    "ansible.module_utils.errors",
    "ansible.module_utils.json_utils",
    "ansible.module_utils.parsing.convert_bool",
    "ansible.parsing.quoting",
    "ansible.parsing.splitter",
    "ansible.parsing.utils.addresses",
    "ansible.parsing.yaml",
    "ansible.release",
    "ansible.utils.collection_loader._collection_finder",
    "ansible.utils.collection_loader._collection_meta",
    "ansible.utils.context_objects",
    "ansible.utils.fqcn",
    "ansible.utils.hashing",
    "ansible.utils.helpers",
    "ansible.utils.lock",
    "ansible.utils.multiprocessing",
    "ansible.utils.path",
    "ansible.utils.sentinel",
    "ansible.utils.singleton",
    "ansible.utils.unicode",
    "ansible.utils.version",
    "ansible.vars.hostvars",
)
"""The modules of ansible-core a pass imports that read no configuration at import (found
with an import hook refusing ``ansible.constants``; ``warm_up`` checks it again)."""
CONFIGURATION_MODULES = frozenset({"ansible.constants"})
BASE_DEFINITIONS = "ansible/config/base.yml"


class _RefuseConfiguration:
    """An import hook: importing ``ansible.constants`` fails (it reads the configuration)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name in CONFIGURATION_MODULES:
            raise ImportError(f"{name} reads the configuration at import: not in the server")


def warm_up(collection_paths: list[str] | None, scan_sys_path: bool) -> dict[str, Any]:
    """Import what is safe before a pass's environment is known (module docstring).

    Returns what was done: ``skipped`` names the modules that failed or wanted
    ``ansible.constants`` (and ``BASE_DEFINITIONS`` when they could not be kept);
    ``collection`` is the collection's modules imported."""
    start = time.process_time()
    hook = _RefuseConfiguration()
    sys.meta_path.insert(0, hook)
    skipped: list[str] = []
    try:
        for name in (*PRELOAD, *ANSIBLE_PRELOAD):
            before = set(sys.modules)
            try:
                importlib.import_module(name)
            except Exception as error:  # an ansible-core that changed: skip, report
                skipped.append(f"{name}: {error}")
                for added in set(sys.modules) - before:
                    sys.modules.pop(added, None)
    finally:
        sys.meta_path.remove(hook)
    if CONFIGURATION_MODULES & set(sys.modules):
        raise RuntimeError("ansible.constants was imported by the warm-up")
    try:
        _keep_base_definitions()
    except Exception as error:  # an ansible-core that changed: skip, report
        skipped.append(f"{BASE_DEFINITIONS}: {error}")
    collection: list[str] = []
    if collection_paths is not None:
        collection = _warm_collection(collection_paths, scan_sys_path)
    return {
        "skipped": skipped,
        "collection": collection,
        "cpu_seconds": round(time.process_time() - start, 3),
        "modules": len(sys.modules),
    }


def _keep_base_definitions() -> None:
    """Read ansible's configuration definitions (``ansible/config/base.yml``: 0.03 CPU-s of
    YAML, ansible's own file, the same for every configuration) once: the configuration
    manager every pass builds at ``import ansible.constants`` gets a copy of them while the
    file is unchanged. Only the definitions are kept: the pass's ``ansible.cfg`` and
    ``ANSIBLE_*`` are read by the pass."""
    from ansible.config import manager

    read = manager.ConfigManager._read_config_yaml_file
    path = os.path.join(os.path.dirname(manager.__file__), "base.yml")
    stamp = _file_stamp(path)
    definitions = read(None, path)
    if not isinstance(definitions, dict) or not definitions:
        raise ValueError("no configuration definitions read")

    def _read_config_yaml_file(self: Any, yml_file: Any) -> Any:
        if os.fsdecode(yml_file) == path and _file_stamp(path) == stamp:
            return copy.deepcopy(definitions)
        return read(self, yml_file)

    manager.ConfigManager._read_config_yaml_file = _read_config_yaml_file


def _file_stamp(path: str) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def _warm_collection(paths: list[str], scan_sys_path: bool) -> list[str]:
    """The collection's module_utils through Ansible's collection finder, the CRDs and
    their CEL rules, the object roles' templates compiled, and ``ansible.builtin``'s
    package with its routing metadata; the finder is removed again (the pass's CLI
    installs its own)."""
    import ansible._internal as internal
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

    # As ansible.plugins.loader._configure_collection_loader: the internal collection first.
    internal_path = os.path.dirname(internal.__file__)
    finder = _AnsibleCollectionFinder(
        [internal_path, *paths], scan_sys_path, internal_collections=internal_path
    )
    finder._install()
    imported = []
    try:
        package = importlib.import_module(f"{COLLECTION}.plugins.module_utils")
        root = Path(next(iter(package.__path__)))
        # Every floor's files (docs/architecture.md): module_utils/<floor>/<file>.py.
        for entry in sorted(root.glob("*/*.py")):
            if entry.stem != "__init__":
                name = ".".join((package.__name__, entry.parent.name, entry.stem))
                imported.append(importlib.import_module(name).__name__)
        cel = importlib.import_module(f"{package.__name__}.admission.cel_validation")
        files = importlib.import_module(f"{package.__name__}.admission.collection_files")
        files.load_catalogs()
        for rule in cel.crd_rules(files.load_crds()):
            cel.compile_rule(rule)
        templates = importlib.import_module(f"{package.__name__}.desired.role_templates")
        templates.compile_templates()
        # ansible.builtin's routing (ansible/config/ansible_builtin_runtime.yml, ~10,000
        # lines of YAML: 0.18 CPU-s) is read when the package is imported and kept on it.
        imported.append(importlib.import_module(BUILTIN_COLLECTION).__name__)
    finally:
        _AnsibleCollectionFinder._remove()
    return imported


def collection_key(env: Mapping[str, str], cwd: str) -> tuple[tuple[str, str | None], ...]:
    """What decides where the collection's modules come from (``KEY_VARIABLES``)."""
    key = [(name, env.get(name)) for name in KEY_VARIABLES]
    if not env.get("ANSIBLE_CONFIG"):
        key.append(("cwd", cwd))
    return tuple(key)


def probe_collection_paths() -> tuple[list[str], bool]:
    """``COLLECTIONS_PATHS`` and ``COLLECTIONS_SCAN_SYS_PATH`` as ansible reads them here:
    asked of a forked child (``ansible.constants`` must not enter the server)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        code = 0
        try:
            from ansible import constants

            payload = json.dumps(
                [list(constants.COLLECTIONS_PATHS), bool(constants.COLLECTIONS_SCAN_SYS_PATH)]
            )
            os.write(write, payload.encode())
        except BaseException:
            traceback.print_exc()
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        data = stream.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or not data:
        raise RuntimeError("could not read ansible's collection paths")
    paths, scan = json.loads(data)
    return [str(p) for p in paths], bool(scan)
