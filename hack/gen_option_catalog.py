#!/usr/bin/env python3.12
"""Generate the option catalog of each supported Glance release from the real glance package.

For every release this script

1. creates (or reuses) a throwaway virtual environment outside the repository
   (default ``~/.cache/c5c3-glance/catalog-venvs/<release>``) and installs
   ``glance==<version>`` plus ``glance_store[s3]`` into it, as the glance image does;
2. reads the namespaces of glance's own ``etc/oslo-config-generator/glance-api.conf``
   (from the installed package data if it ships there, otherwise from the glance sdist,
   otherwise from the list below);
3. runs this same file inside that environment (``--introspect``) to load those
   ``oslo.config.opts`` namespaces the way ``oslo-config-generator`` does, plus the
   per-store options glance_store registers for each ``[<store id>]`` section of a
   multi-store deployment and the options of the keystoneauth ``password`` plugin that
   keystonemiddleware registers for ``auth_type = password``;
4. writes ``catalogs/glance-<release>.json``: sorted, indented, byte-identical on re-runs.

Library versions: the first generation should be given the release's OpenStack
upper-constraints file (``--constraints 2026.1=upper-constraints.txt``); later runs, and
``--check``, pin every distribution to the version recorded in the checked-in catalog, so
a regeneration on another machine installs the same set. ``--fresh`` ignores those pins.

Only the standard library is used outside the target environment.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
GENERATOR = "hack/gen_option_catalog.py"
CATALOG_DIR = REPO_ROOT / "catalogs"
PYTHON_SERIES = (3, 12)

# openStackRelease -> exact glance version on PyPI (newest of its major series).
RELEASES: dict[str, str] = {
    "2025.2": "31.1.0",
    "2026.1": "32.0.0",
    "2026.2": "33.0.0",
}

# What glance-api's image installs next to glance (reference-spec §6.5).
EXTRA_REQUIREMENTS = ("glance_store[s3]",)

GENERATOR_CONFIG = "etc/oslo-config-generator/glance-api.conf"

# glance 31.1.0, 32.0.0 and 33.0.0 all list exactly these in GENERATOR_CONFIG; used only
# when neither the installed package nor the sdist provides that file.
FALLBACK_NAMESPACES = (
    "castellan.config",
    "glance.api",
    "glance.store",
    "os_brick",
    "glance.multi_store",
    "oslo.concurrency",
    "oslo.messaging",
    "oslo.db",
    "oslo.policy",
    "keystonemiddleware.auth_token",
    "oslo.limit",
    "oslo.log",
    "oslo.middleware.cors",
    "oslo.middleware.healthcheck",
    "oslo.middleware.http_proxy_to_wsgi",
    "oslo.reports",
)

# The namespace whose driver-named groups ([file], [s3], [glance.store.s3.Store], ...) are
# per-store templates, reported under "store_options" rather than as sections.
MULTI_STORE_NAMESPACE = "glance.multi_store"
STORE_GROUP = "glance_store"

# keystonemiddleware registers the options of the configured auth plugin at run time;
# the operator renders auth_type = password (reference-spec §3.1).
AUTH_SECTION = "keystone_authtoken"
AUTH_PLUGIN = "password"

# Distributions that only set up the environment and say nothing about options.
UNPINNED = {"pip", "setuptools", "wheel"}


# --------------------------------------------------------------------------------------
# Introspection: runs INSIDE the target environment (oslo.config and glance importable).
# --------------------------------------------------------------------------------------


# Plain callables used as option types (keystoneauth plugin options are converted to
# oslo.config Opts with type=str, int, ...).
_BUILTIN_TYPES = {str: "string", int: "integer", bool: "boolean", float: "float"}


def _type_name(type_obj: Any) -> str:
    """Normalized oslo.config type name of a type object (string, port, multistring...)."""
    from oslo_config import types

    if isinstance(type_obj, type) and type_obj in _BUILTIN_TYPES:
        return _BUILTIN_TYPES[type_obj]
    cls = type_obj if isinstance(type_obj, type) else type(type_obj)
    for klass in cls.__mro__:
        if getattr(types, klass.__name__, None) is klass:
            return klass.__name__.lower()
    return getattr(cls, "__name__", str(cls)).lower()


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        finite = value == value and value not in (float("inf"), float("-inf"))
        return value if finite else str(value)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def _squash(text: Any) -> str:
    return " ".join(str(text).split())


@functools.cache
def _machine_specific() -> tuple[dict[str, str], dict[str, str]]:
    """(whole values, path prefixes) of this machine or run, each with a stand-in."""
    import platform
    import socket

    values = {
        socket.gethostname(): "<hostname>",
        platform.node(): "<hostname>",
        os.path.basename(sys.argv[0]): "<program>",
    }
    paths = {sys.prefix: "<venv>", os.path.expanduser("~"): "<home>"}
    return (
        {k: v for k, v in values.items() if k},
        {k: v for k, v in paths.items() if len(k) > 1},
    )


def _unportable(value: Any) -> Any:
    """``value`` with machine-specific text replaced, or None if there is none."""
    values, paths = _machine_specific()
    changed = False

    def fix(v: Any) -> Any:
        nonlocal changed
        if isinstance(v, str):
            if v in values:
                changed = True
                return values[v]
            for path in sorted(paths, key=len, reverse=True):
                if path in v:
                    changed = True
                    v = v.replace(path, paths[path])
            return v
        if isinstance(v, list):
            return [fix(x) for x in v]
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        return v

    fixed = fix(value)
    return fixed if changed else None


def _portable_default(opt: Any) -> tuple[Any, bool]:
    """(default, from_sample): the real default unless it is host- or run-specific.

    A default computed from the hostname, the program name, the install prefix or the
    home directory would make the catalog differ between machines; such options normally
    declare a sample_default, which is used instead (otherwise the text is replaced).
    """
    default = _jsonable(opt.default)
    fixed = _unportable(default)
    if fixed is None:
        return default, False
    if opt.sample_default is not None:
        return _jsonable(opt.sample_default), True
    return fixed, True


def _describe_opt(opt: Any, group: str) -> dict[str, Any]:
    """The catalog entry of one oslo.config Opt registered in ``group``."""
    entry: dict[str, Any] = {}
    otype = opt.type
    name = _type_name(otype)
    if getattr(opt, "multi", False) and not name.startswith("multi"):
        name = "multi" + name
    entry["type"] = name

    entry["default"], from_sample = _portable_default(opt)
    if from_sample:
        entry["default_is_sample"] = True

    choices = getattr(otype, "choices", None)
    if choices:
        entry["choices"] = [_jsonable(c) for c in choices]
    for attr in ("min", "max", "max_length"):
        value = getattr(otype, attr, None)
        if value is not None and not (attr == "max_length" and not value):
            entry[attr] = _jsonable(value)
    regex = getattr(otype, "regex", None)
    if regex is not None:
        entry["regex"] = getattr(regex, "pattern", str(regex))
    schemes = getattr(otype, "schemes", None)
    if schemes:
        entry["schemes"] = sorted(schemes)
    if name in ("list", "range") or name.startswith("multi"):
        item = getattr(otype, "item_type", None)
        if item is not None:
            entry["item_type"] = _type_name(item)
        if getattr(otype, "bounds", False):
            entry["bounds"] = True
    if name == "dict":
        value_type = getattr(otype, "value_type", None)
        if value_type is not None:
            entry["value_type"] = _type_name(value_type)

    if opt.secret:
        entry["secret"] = True
    if getattr(opt, "required", False):
        entry["required"] = True
    if opt.deprecated_for_removal:
        entry["deprecated_for_removal"] = True
    if opt.deprecated_reason:
        entry["deprecated_reason"] = _squash(opt.deprecated_reason)
    if opt.deprecated_since:
        entry["deprecated_since"] = str(opt.deprecated_since)

    aliases = set()
    for dep in opt.deprecated_opts:
        if not dep.name and not dep.group:
            continue
        # oslo.config semantics: a missing group means the option's own group, a missing
        # name means the option's own name (Opt._get_from_namespace).
        dep_group = dep.group or group
        dep_name = dep.name or opt.dest
        if (dep_group, dep_name) != (group, opt.dest):
            aliases.add((dep_group, dep_name))
    # oslo.config adds an underscore twin for every dashed deprecated name (a CLI
    # spelling); config files use the underscore one, so list only that.
    aliases = {
        (g, n) for g, n in aliases if "-" not in n or (g, n.replace("-", "_")) not in aliases
    }
    if aliases:
        entry["deprecated_names"] = [{"group": g, "name": n} for g, n in sorted(aliases)]
    return entry


def _group_name(group: Any) -> str:
    if group is None:
        return "DEFAULT"
    return str(getattr(group, "name", group))


def _merge(target: dict[str, dict[str, Any]], group: str, opts: Any, origin: str) -> None:
    section = target.setdefault(group, {})
    for opt in opts:
        entry = _describe_opt(opt, group)
        known = section.get(opt.dest)
        if known is None:
            section[opt.dest] = entry
        elif known != entry:
            print(
                f"warning: [{group}] {opt.dest} is defined differently by {origin}; "
                "keeping the first definition",
                file=sys.stderr,
            )


def _add_aliases(section_map: dict[str, dict[str, Any]]) -> None:
    """Add a ``deprecated_alias_of`` entry for every deprecated (group, name)."""
    pending: list[tuple[str, str, str, str]] = []
    for section in sorted(section_map):
        for option in sorted(section_map[section]):
            entry = section_map[section][option]
            for dep in entry.get("deprecated_names", []):
                pending.append((dep["group"], dep["name"], section, option))
    for group, name, section, option in sorted(pending):
        target = section_map.setdefault(group, {})
        if name in target:
            continue  # a real option (or an earlier alias) of that name wins
        target[name] = {"deprecated_alias_of": {"section": section, "option": option}}


def introspect(namespaces: list[str]) -> dict[str, Any]:
    """Load the option registry as glance-api's generator config describes it."""
    import importlib.metadata as md

    from oslo_config import generator

    available = {ep.name for ep in md.entry_points(group="oslo.config.opts")}
    loaded = [ns for ns in namespaces if ns in available]
    missing = [ns for ns in namespaces if ns not in available]

    sections: dict[str, dict[str, Any]] = {}
    # _list_opts also runs the oslo.config.opts.defaults hooks (glance.api's
    # set_config_defaults) and expands driver option groups, exactly like
    # oslo-config-generator.
    for namespace, groups in generator._list_opts(loaded):
        for group, opts in groups:
            name = _group_name(group)
            if namespace == MULTI_STORE_NAMESPACE and name != STORE_GROUP:
                continue  # a driver-named template, see _store_options
            _merge(sections, name, opts, namespace)

    # keystonemiddleware registers the configured auth plugin's options in its group.
    from keystoneauth1 import loading as ks_loading

    plugin_opts = ks_loading.get_auth_plugin_conf_options(AUTH_PLUGIN)
    auth_section = sections.setdefault(AUTH_SECTION, {})
    for opt in plugin_opts:
        if opt.dest not in auth_section:
            entry = _describe_opt(opt, AUTH_SECTION)
            entry["auth_plugin"] = AUTH_PLUGIN
            auth_section[opt.dest] = entry

    _add_aliases(sections)

    store_options, stores_unavailable = _store_options()

    return {
        "namespaces": loaded,
        "namespaces_unavailable": missing,
        "sections": sections,
        "store_options": store_options,
        "store_types_unavailable": stores_unavailable,
        "libraries": _installed_distributions(),
    }


def _store_options() -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Options glance_store registers in a ``[<store id>]`` section, per store type.

    glance_store.multi_backend.register_store_opts registers, for a backend whose type in
    ``enabled_backends`` is T, the OPTIONS of driver entry point T; the Store constructor
    adds MULTI_BACKEND_OPTIONS (store_description, weight) to the same group.
    """
    import importlib.metadata as md

    stores: dict[str, dict[str, Any]] = {}
    unavailable: list[str] = []
    for ep in sorted(md.entry_points(group="glance_store.drivers"), key=lambda e: e.name):
        # Short names are the store types used in enabled_backends; dotted names are
        # the legacy aliases of the same classes; no_conf is a test fake.
        if "." in ep.name or ep.name == "no_conf":
            continue
        try:
            driver = ep.load()
        except Exception as exc:  # a driver whose optional dependency is missing
            print(f"warning: store driver {ep.name} not loadable: {exc}", file=sys.stderr)
            unavailable.append(ep.name)
            continue
        if getattr(driver, "OPTIONS", None) is None:
            continue
        section: dict[str, dict[str, Any]] = {}
        _merge(section, ep.name, list(getattr(driver, "MULTI_BACKEND_OPTIONS", None) or []), "")
        _merge(section, ep.name, list(driver.OPTIONS), ep.value)
        stores[ep.name] = _store_aliases(section[ep.name], ep.name)
    return stores, unavailable


def _store_aliases(options: dict[str, Any], store_type: str) -> dict[str, Any]:
    """Deprecated names of a per-store template, relative to the store's own section.

    The section is named after the store id, not the type, so a deprecated name in the
    store's own group gets ``"group": null``, and so does its alias entry's ``section``.
    Deprecated names in other groups (none today) are kept as they are.
    """
    aliases: list[tuple[str, str]] = []
    for option in sorted(options):
        names = options[option].get("deprecated_names")
        if not names:
            continue
        for dep in names:
            if dep["group"] == store_type:
                dep["group"] = None
                aliases.append((dep["name"], option))
        names.sort(key=lambda d: (d["group"] or "", d["name"]))
    for name, option in sorted(aliases):
        options.setdefault(name, {"deprecated_alias_of": {"section": None, "option": option}})
    return options


def _installed_distributions() -> dict[str, str]:
    import importlib.metadata as md

    dists: dict[str, str] = {}
    for dist in md.distributions():
        # PEP 503 spelling, dots kept: oslo.config, glance-store, sqlalchemy.
        name = re.sub(r"[-_]+", "-", str(dist.metadata["Name"] or "")).lower()
        if name and name not in UNPINNED:
            dists[name] = dist.version
    return dict(sorted(dists.items()))


def _generator_config_from_package() -> str | None:
    import importlib.metadata as md

    try:
        files = md.distribution("glance").files or []
    except md.PackageNotFoundError:
        return None
    for f in files:
        if str(f).replace("\\", "/").endswith("oslo-config-generator/glance-api.conf"):
            return Path(f.locate()).read_text(encoding="utf-8")
    return None


# --------------------------------------------------------------------------------------
# Driver: runs with the developer's Python 3.12, standard library only.
# --------------------------------------------------------------------------------------


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def default_cache_dir() -> Path:
    env = os.environ.get("C5C3_CATALOG_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "c5c3-glance" / "catalog-venvs"


def parse_generator_namespaces(text: str) -> list[str]:
    """``namespace = X`` lines of an oslo-config-generator config, in order, deduplicated."""
    namespaces: list[str] = []
    for line in text.splitlines():
        m = re.match(r"\s*namespace\s*[=:]\s*(\S+)\s*$", line)
        if m and m.group(1) not in namespaces:
            namespaces.append(m.group(1))
    return namespaces


def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=True, text=True, **kwargs)


def clean_env() -> dict[str, str]:
    """Environment for the introspection run: no OS_*/OSLO_* influence on defaults."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OS_", "OSLO_", "PYTHON", "VIRTUAL_ENV"))
    }
    env.update({"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "TZ": "UTC", "PYTHONHASHSEED": "0"})
    return env


def quiet_pip_output(text: str) -> str:
    # This machine's pip config lists local indexes that may not exist; drop that noise.
    return "\n".join(line for line in text.splitlines() if "is ignored: it is neither" not in line)


class Env:
    """One release's throwaway virtual environment."""

    def __init__(self, cache: Path, release: str, glance: str, python: str) -> None:
        self.release = release
        self.glance = glance
        self.python = python
        self.path = cache / release
        self.bin = self.path / "bin" / "python"
        self.stamp = self.path / ".c5c3-catalog-stamp"

    def requirements(self) -> list[str]:
        return [f"glance=={self.glance}", *EXTRA_REQUIREMENTS]

    def ensure(self, constraints: str | None, exact: dict[str, str] | None = None) -> None:
        """Create the venv, or reuse it when it was built from the same inputs.

        ``exact``: the complete set of distributions wanted (pins from a catalog); a venv
        that holds exactly that set is reused whatever constraints built it.
        """
        key = hashlib.sha256(
            json.dumps(
                {"python": self.python, "req": self.requirements(), "constraints": constraints}
            ).encode()
        ).hexdigest()
        if self.bin.exists() and self.stamp.exists() and self.stamp.read_text().strip() == key:
            log(f"[{self.release}] reusing {self.path}")
            return
        if self.bin.exists() and exact is not None:
            installed = dict(self.introspect("--probe")["libraries"])
            if installed.pop("glance", None) == self.glance and installed == exact:
                log(f"[{self.release}] reusing {self.path} (holds the recorded versions)")
                self.stamp.write_text(key + "\n")
                return
        if self.path.exists():
            shutil.rmtree(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        log(f"[{self.release}] creating {self.path}")
        run([self.python, "-m", "venv", str(self.path)])
        cmd = [str(self.bin), "-m", "pip", "install", "--quiet", *self.requirements()]
        cfile = None
        if constraints is not None:
            cfile = self.path / "constraints.txt"
            cfile.write_text(constraints, encoding="utf-8")
            cmd += ["--constraint", str(cfile)]
        log(f"[{self.release}] pip install {' '.join(self.requirements())}")
        proc = subprocess.run(cmd, text=True, capture_output=True)
        out = quiet_pip_output(proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            raise SystemExit(f"[{self.release}] pip install failed:\n{out}")
        if out:
            log(out)
        check = subprocess.run(
            [str(self.bin), "-m", "pip", "check"], text=True, capture_output=True
        )
        if check.returncode != 0:
            log(f"[{self.release}] warning: pip check: {quiet_pip_output(check.stdout).strip()}")
        self.stamp.write_text(key + "\n")

    def generator_config(self, cache: Path, from_package: str | None) -> tuple[str, str]:
        """(text, origin) of glance's glance-api generator config."""
        if from_package:
            return from_package, "installed glance package data"
        sdists = cache / "_sdists"
        sdist = sdists / f"glance-{self.glance}.tar.gz"
        if not sdist.exists():
            sdists.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=sdists) as tmp:
                proc = subprocess.run(
                    [str(self.bin), "-m", "pip", "download", "--quiet", "--no-deps",
                     "--no-binary", ":all:", "--dest", tmp, f"glance=={self.glance}"],
                    text=True, capture_output=True,
                )  # fmt: skip
                got = sorted(Path(tmp).glob("glance-*.tar.gz"))
                if proc.returncode == 0 and got:
                    got[0].replace(sdist)
                else:
                    err = quiet_pip_output(proc.stderr)
                    log(f"[{self.release}] warning: no glance sdist: {err}")
        if sdist.exists():
            with tarfile.open(sdist) as tar:
                member = f"glance-{self.glance}/{GENERATOR_CONFIG}"
                try:
                    fh = tar.extractfile(member)
                except KeyError:
                    fh = None
                if fh is not None:
                    return fh.read().decode("utf-8"), f"glance-{self.glance} sdist"
        text = "".join(f"namespace = {ns}\n" for ns in FALLBACK_NAMESPACES)
        return text, "built-in fallback list"

    def introspect(self, mode: str, *namespaces: str) -> dict[str, Any]:
        proc = subprocess.run(
            [str(self.bin), str(Path(__file__).resolve()), mode, *namespaces],
            text=True,
            capture_output=True,
            env=clean_env(),
            cwd=tempfile.gettempdir(),
        )
        if proc.returncode != 0:
            raise SystemExit(f"[{self.release}] introspection failed:\n{proc.stderr}")
        for line in proc.stderr.splitlines():
            if line.startswith("warning:"):
                log(f"[{self.release}] {line}")
        return json.loads(proc.stdout)


def pins_from_catalog(path: Path, glance: str) -> dict[str, str] | None:
    """Every distribution (name -> version) recorded in an existing catalog of ``glance``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("glance") != glance or not data.get("libraries"):
        return None
    return dict(data["libraries"])


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def build_catalog(
    release: str, args: argparse.Namespace, pinned_from: Path | None
) -> tuple[str, dict[str, Any]]:
    glance = RELEASES[release]
    env = Env(args.cache_dir, release, glance, args.python)

    constraints: str | None = None
    exact: dict[str, str] | None = None
    if release in args.constraints:
        constraints = Path(args.constraints[release]).read_text(encoding="utf-8")
        log(f"[{release}] constraints: {args.constraints[release]}")
    elif not args.fresh and pinned_from is not None:
        exact = pins_from_catalog(pinned_from, glance)
        if exact:
            constraints = "".join(f"{n}=={v}\n" for n, v in sorted(exact.items()))
            log(f"[{release}] constraints: the versions recorded in {pinned_from.name}")

    started = time.monotonic()
    env.ensure(constraints, exact)
    probe = env.introspect("--probe")  # does the package ship the generator config?
    text, origin = env.generator_config(args.cache_dir, probe["generator_config_in_package"])
    namespaces = parse_generator_namespaces(text)
    log(f"[{release}] namespaces from {origin}: {', '.join(namespaces)}")
    result = env.introspect("--introspect", *namespaces)

    libraries = dict(result["libraries"])
    installed_glance = libraries.pop("glance", None)
    if installed_glance != glance:
        raise SystemExit(f"[{release}] expected glance {glance}, found {installed_glance}")

    check_portable(release, result, env)

    catalog = {
        "release": release,
        "glance": glance,
        "generator": GENERATOR,
        "python": "{}.{}".format(*PYTHON_SERIES),
        "requirements": env.requirements(),
        "namespaces": result["namespaces"],
        "namespaces_unavailable": result["namespaces_unavailable"],
        "libraries": libraries,
        "sections": result["sections"],
        "store_options": result["store_options"],
        "store_types_unavailable": result["store_types_unavailable"],
    }
    body = render(catalog)
    n_opts = sum(
        1
        for s in catalog["sections"].values()
        for o in s.values()
        if "deprecated_alias_of" not in o
    )
    log(
        f"[{release}] {len(catalog['sections'])} sections, {n_opts} options, "
        f"{len(catalog['store_options'])} store types, {len(body)} bytes, "
        f"{time.monotonic() - started:.1f}s"
    )
    return body, catalog


def check_portable(release: str, result: dict[str, Any], env: Env) -> None:
    """Warn when a value leaks this machine (venv path, home, hostname) into the catalog."""
    import socket

    blob = json.dumps(result["sections"]) + json.dumps(result["store_options"])
    leaks = {str(env.path), str(Path.home()), socket.gethostname()}
    for leak in sorted(x for x in leaks if x and len(x) > 3):
        if leak in blob:
            log(f"[{release}] warning: catalog contains machine-specific text {leak!r}")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--release",
        action="append",
        choices=sorted(RELEASES),
        help="openStackRelease to generate (repeatable; default: all)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temporary directory and fail if catalogs/ differs",
    )
    p.add_argument(
        "--constraints",
        action="append",
        default=[],
        metavar="RELEASE=FILE",
        help="pip constraints (an OpenStack upper-constraints.txt) for RELEASE",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="do not pin libraries to the versions recorded in the existing catalog",
    )
    p.add_argument(
        "--cache-dir",
        type=Path,
        default=default_cache_dir(),
        help="where the venvs live (env C5C3_CATALOG_CACHE_DIR; "
        "default ~/.cache/c5c3-glance/catalog-venvs)",
    )
    p.add_argument(
        "--python",
        default=os.environ.get("C5C3_CATALOG_PYTHON", sys.executable),
        help="Python 3.12 interpreter for the venvs (env C5C3_CATALOG_PYTHON)",
    )
    p.add_argument("--output-dir", type=Path, default=CATALOG_DIR, help="default: catalogs/")
    args = p.parse_args(argv)

    constraints: dict[str, str] = {}
    for item in args.constraints:
        rel, sep, path = item.partition("=")
        if not sep or rel not in RELEASES or not Path(path).is_file():
            p.error(f"--constraints wants RELEASE=FILE with an existing file, got {item!r}")
        constraints[rel] = path
    args.constraints = constraints
    args.releases = args.release or sorted(RELEASES)
    args.cache_dir = args.cache_dir.expanduser().resolve()
    if REPO_ROOT in args.cache_dir.parents or args.cache_dir == REPO_ROOT:
        p.error("--cache-dir must be outside the repository")

    version = subprocess.run(
        [args.python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        text=True,
        capture_output=True,
    ).stdout.strip()
    if version != "{}.{}".format(*PYTHON_SERIES):
        p.error(f"{args.python} is Python {version or '?'}; the catalogs are built with 3.12")
    return args


def main(argv: list[str]) -> int:
    if argv[:1] == ["--introspect"]:
        json.dump(introspect(argv[1:]), sys.stdout, sort_keys=True)
        return 0
    if argv[:1] == ["--probe"]:
        probe = {
            "generator_config_in_package": _generator_config_from_package(),
            "libraries": _installed_distributions(),
        }
        json.dump(probe, sys.stdout)
        return 0

    args = parse_args(argv)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = Path(tmp) if args.check else args.output_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        for release in args.releases:
            name = f"glance-{release}.json"
            checked_in = args.output_dir / name
            body, _ = build_catalog(release, args, checked_in if checked_in.exists() else None)
            if not args.check:
                (out_dir / name).write_text(body, encoding="utf-8")
                log(f"[{release}] wrote {out_dir / name}")
                continue
            old = checked_in.read_text(encoding="utf-8") if checked_in.exists() else ""
            if old == body:
                log(f"[{release}] {checked_in} is up to date")
                continue
            failed.append(release)
            diff = list(
                difflib.unified_diff(
                    old.splitlines(),
                    body.splitlines(),
                    f"{checked_in} (checked in)",
                    f"{name} (regenerated)",
                    lineterm="",
                )
            )
            added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
            removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
            print(f"{checked_in}: differs (+{added} -{removed} lines)")
            print("\n".join(diff[:60]))
            if len(diff) > 60:
                print(f"... {len(diff) - 60} more diff lines")
    if failed:
        print(f"stale option catalogs: {', '.join(failed)}; run: python3.12 {GENERATOR}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
