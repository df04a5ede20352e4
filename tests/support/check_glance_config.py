"""Load a rendered Glance configuration with the real option registry of its release.

Run with the python of a release environment (``hack/glance_venv.py``), never the test
runner's::

    .venv-glance/2026.2/bin/python tests/support/check_glance_config.py \\
        --config-dir out/glance-api.conf.d --config-dir out/backends.conf.d --json

or ``--batch cases.json`` (``{name: [config dir, ...]}``) to check many configurations
in one run: the imports are paid once, each case runs in a forked child with a pristine
registry, and the output is ``{name: report}``.

What glance-api does at start-up, as far as it goes without a database or the network:

1. Every ``*.conf`` of each ``--config-dir``, sorted, directory after directory (what the
   image's ``glance-wsgi-api`` shim hands to oslo.config, reference-spec §4.2), is
   loaded by oslo.config into the global ``cfg.CONF``, with no environment overrides.
2. The option registry of glance-api: the ``oslo.config.opts`` namespaces of glance's
   own ``etc/oslo-config-generator/glance-api.conf`` (those the option catalogs are
   generated from) plus ``glance``, the namespace of ``glance-image-import.conf``, whose
   options (``[image_import_opts]``, ``[import_filtering_opts]``, the import plugins'
   sections) glance-api registers in the same process and reads from any of its files;
   then what importing ``glance.common.wsgi_app`` registers and
   ``glance.common.config.set_config_defaults()``, as ``init_app`` does.
3. The paste pipeline: every ``app``/``filter``/``pipeline``/``composite`` section of
   the file ``[paste_deploy] config_file`` names is resolved with ``paste.deploy``
   (importing every factory, which registers the options those modules register), and
   so is the application glance loads, ``glance-api-<flavor>``.
4. The stores, as ``init_app`` registers them: with ``[DEFAULT] enabled_backends``,
   ``glance_store.register_store_opts(CONF, reserved_stores=RESERVED_STORES)`` and one
   store object per backend and reserved store (its constructor registers the store's
   ``weight``/``store_description`` and ``[backend_defaults]``); every store that is not
   a filesystem store is then configured (``configure_add``, no network); the default
   backend must be one of them. Without ``enabled_backends``, the single-store options.
5. The keystoneauth plugin ``[keystone_authtoken] auth_type`` names, whose options
   keystonemiddleware registers at run time (``password``: ``auth_url``, ``username``...);
   and oslo.limit's options as glance registers them (``oslo_limit.opts.register_opts``,
   which adds the options of ``[oslo_limit] auth_type``'s plugin).
6. ``logging.conf`` (``[DEFAULT] log_config_append``) with ``logging.config.fileConfig``
   as oslo.log loads it, and one record formatted with the configured formatter; the
   ``[oslo_policy] policy_file`` with oslo.policy's parser.

Then it reports every section of the files that no registered group knows, every
option not registered in its group, and every value that fails its type (each option
set in the files, then every registered option, read with ``CONF[group][name]``).
Deprecated names and options deprecated for removal are warnings.

One exception, justified: the sections of the file ``log_config_append`` names. It is a
``*.conf`` in a config dir, so oslo.config parses it too (a syntax error there would stop
glance-api), but its ``[loggers]``, ``[logger_*]``... sections are ``fileConfig``'s and
no option group reads them; they are only reported if one ever collides with a
registered group. No other section is exempt: every section the operator renders
(including the reserved ``os_glance_*`` stores and the image-import sections) is one
glance-api registers.

Output: ``{"problems": [...], "warnings": [...], ...}``; exit 0 without problems, 1 with.
Each problem has ``kind``, ``message`` and where known ``file``, ``section``,
``option``, ``value``.
"""

from __future__ import annotations

import argparse
import configparser
import contextlib
import importlib.metadata
import inspect
import io
import json
import logging
import logging.config
import os
import sys
from pathlib import Path
from typing import Any

# glance's etc/oslo-config-generator/glance-api.conf (31.1.0, 32.0.0, 33.0.0), the
# namespaces of the option catalogs; os_brick is not installed (no cinder store).
API_NAMESPACES = (
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
# glance's etc/oslo-config-generator/glance-image-import.conf.
IMAGE_IMPORT_NAMESPACES = ("glance",)
# Not loaded from their namespaces: glance-api registers the store options itself at
# start-up, either the multi-store set (per enabled backend) or the single-store set,
# never both (glance.common.wsgi_app.init_app); step 4 does exactly that.
STORE_NAMESPACES = ("glance.store", "glance.multi_store")
# Not loaded from its namespace either: oslo.limit's list_opts adds the options of three
# keystoneauth plugins (password's auth_url required), but what glance-api runs is
# oslo_limit.opts.register_opts(CONF) (glance.quota.keystone), which registers the common
# ones plus the options of the plugin [oslo_limit] auth_type names; step 5 does that.
RUNTIME_NAMESPACES = ("oslo.limit",)
AUTHTOKEN_GROUP = "keystone_authtoken"


class Report:
    def __init__(self) -> None:
        self.problems: list[dict[str, Any]] = []
        self.warnings: list[dict[str, Any]] = []

    @staticmethod
    def _entry(kind: str, message: str, **where: Any) -> dict[str, Any]:
        entry = {"kind": kind, "message": message}
        entry.update({k: v for k, v in where.items() if v is not None})
        return entry

    def problem(self, kind: str, message: str, **where: Any) -> None:
        entry = self._entry(kind, message, **where)
        if entry not in self.problems:
            self.problems.append(entry)

    def warning(self, kind: str, message: str, **where: Any) -> None:
        entry = self._entry(kind, message, **where)
        if entry not in self.warnings:
            self.warnings.append(entry)


def normalize_group(name: str) -> str:
    """oslo.config's file-section matching: case-insensitive except ``DEFAULT``."""
    return name if name == "DEFAULT" else name.lower()


def config_files(dirs: list[Path]) -> list[Path]:
    """What oslo.config's ``--config-dir`` loads: ``*.conf`` of each dir, sorted, in order."""
    files: list[Path] = []
    for directory in dirs:
        files.extend(sorted(p for p in directory.glob("*.conf") if p.is_file()))
    return files


def find_referenced(dirs: list[Path], path: str | None) -> Path | None:
    """The local file behind a container path such as ``/etc/glance/.../logging.conf``."""
    if not path:
        return None
    for directory in dirs:
        candidate = directory / Path(path).name
        if candidate.is_file():
            return candidate
    return None


# ---------------------------------------------------------------------------------------
# the registry


def register_namespaces(conf: Any, report: Report) -> list[str]:
    from oslo_config import cfg, generator

    available = {ep.name for ep in importlib.metadata.entry_points(group="oslo.config.opts")}
    wanted = [ns for ns in (*API_NAMESPACES, *IMAGE_IMPORT_NAMESPACES) if ns in available]
    wanted = [ns for ns in wanted if ns not in (*STORE_NAMESPACES, *RUNTIME_NAMESPACES)]
    # _list_opts is what oslo-config-generator (and the catalog generator) use; it also
    # runs the oslo.config.opts.defaults hooks glance declares.
    for namespace, groups in generator._list_opts(wanted):
        for group, opts in groups:
            for opt in opts:
                try:
                    conf.register_opt(opt, group=group)
                except cfg.DuplicateOptError as exc:
                    report.warning("registry", f"namespace {namespace}: {exc}")
    return wanted


def register_runtime(conf: Any) -> None:
    """What glance-api's WSGI application module registers and sets before loading files."""
    from glance.common import config as glance_config
    from glance.common import wsgi_app  # noqa: F401  (registers at import, like uWSGI does)

    glance_config.set_config_defaults()


def load_files(conf: Any, dirs: list[Path], report: Report) -> bool:
    from oslo_config import cfg

    args: list[str] = []
    for directory in dirs:
        args += ["--config-dir", str(directory)]
    kwargs: dict[str, Any] = {
        "args": args,
        "project": "glance",
        "prog": "glance-api",
        "default_config_files": [],
        "default_config_dirs": [],
    }
    if "use_env" in inspect.signature(type(conf).__call__).parameters:
        kwargs["use_env"] = False
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            conf(**kwargs)
    except (cfg.Error, ValueError) as exc:
        report.problem("load", f"oslo.config cannot load the files: {exc}")
        return False
    except SystemExit:
        # a bad value of a command-line option (debug, log_file...) makes the argument
        # parser exit: glance-api would not start
        said = [line for line in err.getvalue().splitlines() if line.strip()]
        report.problem("load", f"oslo.config exits: {said[-1] if said else '?'}")
        return False
    return True


def register_stores(conf: Any, report: Report) -> None:
    import glance_store
    from glance.common import wsgi_app
    from glance_store import exceptions as store_exceptions
    from oslo_config import cfg
    from stevedore import driver

    try:
        enabled = dict(conf.enabled_backends or {})
    except ValueError as exc:
        report.problem("bad-value", str(exc), section="DEFAULT", option="enabled_backends")
        return
    if not enabled:
        glance_store.register_opts(conf)
        return
    reserved = [name for name in enabled if name.startswith("os_glance_")]
    if reserved:
        report.problem(
            "store",
            f"enabled_backends uses the reserved prefix os_glance_ ({', '.join(reserved)}): "
            "glance-api refuses to start",
            section="DEFAULT",
            option="enabled_backends",
        )
    glance_store.register_store_opts(conf, reserved_stores=wsgi_app.RESERVED_STORES)
    stores = {**enabled, **wsgi_app.RESERVED_STORES}
    for backend, store_type in stores.items():
        try:
            store = driver.DriverManager(
                "glance_store.drivers",
                store_type,
                invoke_on_load=True,
                invoke_args=[conf, backend],
            ).driver
        except Exception as exc:
            report.problem("store", f"store {backend}: type {store_type!r} does not load: {exc}")
            continue
        if backend in wsgi_app.RESERVED_STORES or store_type == "file":
            continue  # configuring a filesystem store creates its directories
        try:
            store.configure(re_raise_bsc=True)
        except store_exceptions.BadStoreConfiguration as exc:
            report.problem("store", f"store {backend} ({store_type}): {exc}", section=backend)
        except (ValueError, cfg.Error) as exc:
            report.problem("bad-value", f"store {backend}: {exc}", section=backend)
    try:
        default = conf.glance_store.default_backend
    except ValueError as exc:
        report.problem("bad-value", str(exc), section="glance_store", option="default_backend")
        return
    if default not in enabled:
        report.problem(
            "store",
            f"[glance_store] default_backend {default!r} is not one of enabled_backends "
            f"({', '.join(enabled)})",
            section="glance_store",
            option="default_backend",
        )


def register_auth_plugin(conf: Any, report: Report) -> None:
    """keystonemiddleware.auth_token: the options of the configured auth plugin."""
    from keystoneauth1 import exceptions as ks_exceptions
    from keystoneauth1 import loading

    group = conf[AUTHTOKEN_GROUP].auth_section or AUTHTOKEN_GROUP
    auth_type = conf[AUTHTOKEN_GROUP].auth_type
    if group != AUTHTOKEN_GROUP:
        loading.register_auth_conf_options(conf, group)
        auth_type = conf[group].auth_type
    if not auth_type:
        return
    try:
        plugin = loading.get_plugin_loader(auth_type)
    except ks_exceptions.NoMatchingPlugin as exc:
        report.problem("bad-value", str(exc), section=group, option="auth_type", value=auth_type)
        return
    conf.register_opts(loading.get_auth_plugin_conf_options(plugin), group=group)


def register_oslo_limit(conf: Any, report: Report) -> None:
    from oslo_limit import opts as limit_opts

    try:
        limit_opts.register_opts(conf)
    except Exception as exc:
        report.problem("bad-value", f"oslo_limit: {exc}", section="oslo_limit")


def registry(
    conf: Any,
) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], tuple[str, Any]]]:
    """(group -> dest -> Opt, (group, old name) -> (group, Opt) it is a deprecated name of)."""
    groups: dict[str, dict[str, Any]] = {}
    deprecated: dict[tuple[str, str], tuple[str, Any]] = {}
    for info, group in conf._all_opt_infos():
        opt = info["opt"]
        name = normalize_group(group.name if group is not None else "DEFAULT")
        groups.setdefault(name, {})[opt.dest] = opt
        for dep in opt.deprecated_opts:
            if not (dep.name or dep.group):
                continue
            old = (normalize_group(dep.group or name), (dep.name or opt.dest))
            deprecated.setdefault(old, (name, opt))
    return groups, deprecated


# ---------------------------------------------------------------------------------------
# the files


def parse_files(files: list[Path], report: Report) -> list[tuple[Path, dict[str, list[str]]]]:
    """Each file's sections and keys, parsed by oslo.config's own parser."""
    from oslo_config import cfg

    parsed = []
    for path in files:
        sections: dict[str, dict[str, list[str]]] = {}
        try:
            cfg.ConfigParser(str(path), sections).parse()
        except Exception as exc:
            report.problem("parse", str(exc), file=str(path))
            continue
        parsed.append((path, sections))
    return parsed


def read(conf: Any, group: str, dest: str) -> Any:
    return conf[dest] if group == "DEFAULT" else conf[group][dest]


def check_options(
    conf: Any,
    parsed: list[tuple[Path, dict[str, dict[str, list[str]]]]],
    logging_file: Path | None,
    report: Report,
) -> None:
    from oslo_config import cfg

    groups, deprecated = registry(conf)
    set_in: dict[tuple[str, str], tuple[Path, str]] = {}
    for path, sections in parsed:
        fileconfig = logging_file is not None and path.resolve() == logging_file.resolve()
        for section, options in sections.items():
            group = normalize_group(section)
            if group not in groups:
                if fileconfig:
                    continue  # logging.config.fileConfig's own sections, see the docstring
                report.problem(
                    "unknown-section",
                    f"[{section}] is not an option group glance-api registers",
                    file=path.name,
                    section=section,
                )
                continue
            for key, values in options.items():
                where = {"file": path.name, "section": section, "option": key}
                if key in groups[group]:
                    set_in[(group, key)] = (path, values[-1])
                    opt = groups[group][key]
                    if opt.deprecated_for_removal:
                        report.warning(
                            "deprecated-for-removal",
                            f"[{section}] {key} is deprecated for removal",
                            **where,
                        )
                    continue
                if (group, key) in deprecated:
                    new_group, opt = deprecated[(group, key)]
                    set_in[(new_group, opt.dest)] = (path, values[-1])
                    report.warning(
                        "deprecated-name",
                        f"[{section}] {key} is a deprecated name of [{new_group}] {opt.dest}",
                        **where,
                    )
                    continue
                report.problem(
                    "unknown-option",
                    f"[{section}] {key} is not an option glance-api registers in [{group}]",
                    **where,
                )
    # every value set in the files, with its real type
    for (group, dest), (path, raw) in sorted(set_in.items()):
        try:
            read(conf, group, dest)
        except (cfg.Error, ValueError) as exc:
            report.problem(
                "bad-value",
                f"[{group}] {dest}: {exc}",
                file=path.name,
                section=group,
                option=dest,
                value=raw,
            )
    # then every registered option (substitutions may reach a bad value from elsewhere)
    for group in sorted(groups):
        for dest in sorted(groups[group]):
            if (group, dest) in set_in:
                continue
            try:
                read(conf, group, dest)
            except (cfg.Error, ValueError) as exc:
                report.problem("bad-value", f"[{group}] {dest}: {exc}", section=group, option=dest)
    if logging_file is not None:
        for path, sections in parsed:
            if path.resolve() != logging_file.resolve():
                continue
            for section in sections:
                if normalize_group(section) in groups:
                    report.problem(
                        "unknown-section",
                        f"[{section}] of the logging file is also an option group: oslo.config "
                        "reads it as options",
                        file=path.name,
                        section=section,
                    )


def check_logging(conf: Any, path: Path, report: Report) -> None:
    """``log_config_append`` loaded as oslo.log loads it, and one record formatted."""
    try:
        logging.config.fileConfig(str(path), disable_existing_loggers=False)
    except Exception as exc:  # oslo.log turns these into LogConfigError: no start
        report.problem("logging", f"logging.config.fileConfig: {exc!r}", file=path.name)
        return
    record = logging.LogRecord("glance.api", logging.INFO, __file__, 1, "probe %s", ("x",), None)
    for handler in logging.getLogger().handlers:
        if handler.formatter is None:
            continue
        try:
            handler.formatter.format(record)
        except Exception as exc:
            report.problem(
                "logging",
                f"formatter {type(handler.formatter).__name__} cannot format a record: {exc!r}",
                file=path.name,
            )
    # keep the check's own output quiet from here on
    logging.getLogger().handlers = [logging.NullHandler()]


def check_paste(conf: Any, path: Path, report: Report) -> None:
    """Every paste section resolved (factories imported), and the app glance-api loads."""
    from paste.deploy import loadwsgi

    uri = f"config:{path.resolve()}"
    parser = loadwsgi.NicerConfigParser(str(path), defaults={"here": str(path.parent)})
    parser.optionxform = str
    try:
        with open(path, encoding="utf-8") as fh:
            parser.read_file(fh)
    except configparser.Error as exc:
        report.problem("paste", str(exc), file=path.name)
        return
    wanted = []
    for section in parser.sections():
        kind, _, name = section.partition(":")
        if kind in ("app", "application", "pipeline", "composite", "composit"):
            wanted.append((loadwsgi.APP, name, section))
            if kind.startswith("compos"):
                for key, value in parser.items(section):
                    if key.startswith("/"):
                        wanted.append((loadwsgi.APP, value.strip(), f"{section} {key}"))
        elif kind == "filter":
            wanted.append((loadwsgi.FILTER, name, section))
        else:
            report.problem("paste", f"[{section}] is not a paste.deploy section", file=path.name)
    flavor = conf.paste_deploy.flavor
    wanted.append((loadwsgi.APP, f"glance-api-{flavor}" if flavor else "glance-api", "flavor"))
    for object_type, name, where in wanted:
        try:
            loadwsgi.loadcontext(object_type, uri, name=name)
        except Exception as exc:
            report.problem("paste", f"[{where}] {name}: {exc!r}", file=path.name)


def check_policy(path: Path, report: Report) -> None:
    from oslo_policy import _parser, policy

    try:
        rules = policy.parse_file_contents(path.read_text(encoding="utf-8"))
    except Exception as exc:
        report.problem("policy", f"oslo.policy cannot parse the file: {exc}", file=path.name)
        return
    failed: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            failed.append(record.getMessage())

    catch = Catch(logging.WARNING)
    parser_log = logging.getLogger(_parser.__name__)
    parser_log.addHandler(catch)
    try:
        for name, rule in (rules or {}).items():
            failed.clear()
            _parser.parse_rule(rule)
            for message in failed:
                report.problem("policy", f"rule {name!r}: {message}", file=path.name)
    finally:
        parser_log.removeHandler(catch)


# ---------------------------------------------------------------------------------------


def prepare() -> tuple[Any, list[str], Report]:
    """What does not depend on the files: the namespaces, glance-api's module registrations.

    Also imports the modules the paste pipeline and the stores load, so that a batch
    pays for them once (their import-time registrations are the same for every case).
    """
    from oslo_config import cfg

    for key in [k for k in os.environ if k.startswith("OS_")]:
        del os.environ[key]  # files only: no OS_<GROUP>__<OPTION> overrides
    conf = cfg.CONF
    report = Report()
    namespaces = register_namespaces(conf, report)
    register_runtime(conf)
    for module in PREIMPORT:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    return conf, namespaces, report


# Heavy modules every case imports anyway (paste factories, store drivers, formatters).
PREIMPORT = (
    "glance.api",
    "glance.api.v2.router",
    "glance.api.versions",
    "glance.api.middleware.cache",
    "glance.api.middleware.context",
    "glance.api.middleware.version_negotiation",
    "glance_store._drivers.s3",
    "glance_store._drivers.filesystem",
    "keystonemiddleware.auth_token",
    "keystoneauth1.loading",
    "oslo_limit.opts",
    "oslo_log.formatters",
    "oslo_middleware",
    "oslo_middleware.cors",
    "oslo_policy.policy",
    "paste.deploy.loadwsgi",
)


def check(conf: Any, namespaces: list[str], base: Report, dirs: list[Path]) -> dict[str, Any]:
    """Check one configuration (``conf`` fresh from :func:`prepare`: one per process)."""
    from oslo_config import cfg

    report = Report()
    report.problems.extend(base.problems)
    report.warnings.extend(base.warnings)
    files = config_files(dirs)
    result: dict[str, Any] = {
        "glance": importlib.metadata.version("glance"),
        "config_dirs": [str(d) for d in dirs],
        "files": [str(f) for f in files],
        "namespaces": namespaces,
    }
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        report.problem("load", f"no such config dir: {', '.join(missing)}")
    elif not files:
        report.problem("load", "no *.conf file in the config dirs")
    elif load_files(conf, dirs, report):
        parsed = parse_files(files, report)
        logging_file = None
        try:
            log_config = conf.log_config_append
        except (cfg.Error, ValueError):
            log_config = None  # reported as a bad value below
        if log_config:
            logging_file = find_referenced(dirs, log_config)
            if logging_file is None:
                report.problem(
                    "logging",
                    f"log_config_append {log_config} is not in the config dirs",
                    section="DEFAULT",
                    option="log_config_append",
                )
        try:
            paste = conf.paste_deploy.config_file
        except (cfg.Error, ValueError):
            paste = None
        if paste:
            paste_file = find_referenced(dirs, paste)
            if paste_file is None:
                report.problem("paste", f"paste config_file {paste} is not in the config dirs")
            else:
                check_paste(conf, paste_file, report)
        register_stores(conf, report)
        register_auth_plugin(conf, report)
        register_oslo_limit(conf, report)
        check_options(conf, parsed, logging_file, report)
        if logging_file is not None:
            check_logging(conf, logging_file, report)
        try:
            policy_file = conf.oslo_policy.policy_file
        except (cfg.Error, ValueError):
            policy_file = None
        local_policy = find_referenced(dirs, policy_file)
        if local_policy is not None:
            check_policy(local_policy, report)
    result["problems"] = report.problems
    result["warnings"] = report.warnings
    return result


def check_in_child(prepared: tuple[Any, list[str], Report], dirs: list[Path]) -> dict[str, Any]:
    """:func:`check` in a forked child: every case gets a pristine registry and CONF."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        status = 0
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                result = check(*prepared, dirs)
            data = json.dumps(result).encode()
        except BaseException as exc:  # report, never fall back into the parent's code
            data = json.dumps({"problems": [{"kind": "crash", "message": repr(exc)}]}).encode()
            status = 1
        with os.fdopen(write_end, "wb") as out:
            out.write(data)
        os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    try:
        return json.loads(data)
    except ValueError:
        return {"problems": [{"kind": "crash", "message": "the check process died"}]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--config-dir",
        action="append",
        type=Path,
        help="a directory of *.conf files, in the order glance-api gets them (repeatable)",
    )
    parser.add_argument(
        "--batch",
        type=Path,
        help="a JSON file {name: [config dir, ...]}: check each (one forked process "
        "each) and print {name: report} as JSON",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    if bool(args.config_dir) == bool(args.batch):
        parser.error("give either --config-dir (repeatable) or --batch")
    # Libraries print while importing and loading; keep stdout for the report only.
    with contextlib.redirect_stdout(io.StringIO()):
        prepared = prepare()
    if args.batch:
        cases = json.loads(args.batch.read_text(encoding="utf-8"))
        results = {
            name: check_in_child(prepared, [Path(d) for d in dirs]) for name, dirs in cases.items()
        }
        json.dump(results, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
        return 1 if any(r["problems"] for r in results.values()) else 0
    with contextlib.redirect_stdout(io.StringIO()):
        result = check(*prepared, args.config_dir)
    if args.json:
        json.dump(result, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
    else:
        for entry in result["problems"]:
            print(f"problem: {entry['kind']}: {entry['message']}")
        for entry in result["warnings"]:
            print(f"warning: {entry['kind']}: {entry['message']}")
        print(f"{len(result['problems'])} problem(s), {len(result['warnings'])} warning(s)")
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
