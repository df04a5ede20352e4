# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""``logging.conf``: the ``logging.config.fileConfig`` document ``[DEFAULT]
log_config_append`` points at, with the root and per-logger levels.

Logging (DECISIONS.md: ``logging.level`` takes effect in text format too)
--------------------------------------------------------------------------
oslo.log configures Python logging in one of two ways. Without ``log_config_append`` it
builds the handlers itself: the root level is DEBUG when ``debug`` is true and INFO
otherwise (there is no option for any other root level), then each
``default_log_levels`` entry sets one logger. With ``log_config_append`` it calls
``logging.config.fileConfig(path, disable_existing_loggers=False)`` instead and ignores
``debug``, ``default_log_levels``, ``use_stderr`` and ``log_date_format``. The only way
to give the root logger a level such as WARNING is therefore a logging configuration
file. So, in both formats:

* ``[DEFAULT] log_config_append`` always points at ``logging.conf`` (the reference set
  it for json only);
* ``logging.conf`` is always rendered: root logger at ``spec.logging.level``, or DEBUG when
  ``spec.logging.debug`` is true (what ``debug`` means in oslo.log); one stderr
  ``StreamHandler``; formatter ``oslo_log.formatters.JSONFormatter`` for json and
  ``oslo_log.formatters.ContextFormatter`` for text (the formatter oslo.log itself uses
  for text: it reads ``logging_context_format_string`` and friends from glance's own
  configuration, so text lines look exactly as without a logging file), both with
  ``datefmt`` = oslo.log's ``log_date_format`` default ``%Y-%m-%d %H:%M:%S``;
* one ``[logger_<key>]`` per logger level: oslo.log's stock ``default_log_levels``
  (:data:`OSLO_DEFAULT_LOG_LEVELS`, WARN spelled WARNING; without it switching to a
  logging file would un-mute keystonemiddleware, stevedore, urllib3 and friends),
  overlaid by ``spec.logging.perLoggerLevels`` (a user entry wins; a logger named
  ``root`` sets the root level, as ``logging.getLogger("root")`` does). ``<key>`` is the
  logger name with every character outside ``[A-Za-z0-9_]`` replaced by ``_`` (a numeric
  suffix keeps keys unique); ``qualname`` holds the real name.
* ``[DEFAULT] debug`` and ``default_log_levels`` are still rendered as §3.1 says (inert
  under ``log_config_append``, but what a reader of glance-api.conf expects).
* An extraConfig override of ``[DEFAULT] debug``, ``default_log_levels`` or
  ``log_date_format`` is applied to ``logging.conf`` the way oslo.log would have applied
  it (``default_log_levels`` replaces the whole list, as the option does), so the
  override reported in ExtraConfigHealthy really takes effect.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission.option_catalog import (
    normalize_option,
    normalize_section,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.ini import (
    ConfigError,
    Sections,
    _has_line_break,
    _spec,
    _text,
    render_ini,
)

DEFAULT_LOG_DATE_FORMAT = "%Y-%m-%d %H:%M:%S"

#: oslo.log's stock ``default_log_levels`` (oslo.log 8.x, glance 32.x/33.x; glance 31.x
#: additionally lists amqplib and qpid, which glance never loads), WARN spelled WARNING.
OSLO_DEFAULT_LOG_LEVELS = (
    ("amqp", "WARNING"),
    ("boto", "WARNING"),
    ("sqlalchemy", "WARNING"),
    ("suds", "INFO"),
    ("oslo.messaging", "INFO"),
    ("oslo_messaging", "INFO"),
    ("iso8601", "WARNING"),
    ("requests.packages.urllib3.connectionpool", "WARNING"),
    ("urllib3.connectionpool", "WARNING"),
    ("websocket", "WARNING"),
    ("requests.packages.urllib3.util.retry", "WARNING"),
    ("urllib3.util.retry", "WARNING"),
    ("keystonemiddleware", "WARNING"),
    ("routes.middleware", "WARNING"),
    ("stevedore", "WARNING"),
    ("taskflow", "WARNING"),
    ("keystoneauth", "WARNING"),
    ("oslo.cache", "INFO"),
    ("oslo_policy", "INFO"),
    ("dogpile.core.dogpile", "INFO"),
)
JSON_FORMATTER = "oslo_log.formatters.JSONFormatter"
CONTEXT_FORMATTER = "oslo_log.formatters.ContextFormatter"
# The level names Python's logging accepts in a fileConfig document.
_LEVEL_NAMES = ("CRITICAL", "FATAL", "ERROR", "WARN", "WARNING", "INFO", "DEBUG", "NOTSET")
_LEVEL_BY_NUMBER = {"50": "CRITICAL", "40": "ERROR", "30": "WARNING", "20": "INFO", "10": "DEBUG"}
_OSLO_TRUE = ("1", "yes", "true", "on")
_OSLO_FALSE = ("0", "no", "false", "off")


def _extra_default_option(spec: Mapping[str, Any], option: str) -> str | None:
    """The value extraConfig gives ``[DEFAULT] option`` (last spelling in sorted order)."""
    found = None
    extra = spec.get("extraConfig") or {}
    for section in sorted(extra):
        if normalize_section(section) != "DEFAULT":
            continue
        options = extra[section] or {}
        for key in sorted(options):
            if normalize_option(key) == option:
                found = _text(options[key])
    return found


def _oslo_bool(value: str, where: str) -> bool:
    text = value.strip().lower()
    if text in _OSLO_TRUE:
        return True
    if text in _OSLO_FALSE:
        return False
    raise ConfigError(f"{where}: {value!r} is not a boolean (true or false)")


def _fileconfig_level(level: str, where: str) -> str:
    """A level as Python's fileConfig accepts it (a name; oslo.log also takes a number)."""
    text = level.strip()
    if text in _LEVEL_NAMES:
        return text
    if text in _LEVEL_BY_NUMBER:
        return _LEVEL_BY_NUMBER[text]
    raise ConfigError(
        f"{where}: logger level {level!r} is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL"
    )


def logger_levels(glance: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """The root level and the level of each named logger, as ``logging.conf`` sets them."""
    spec = _spec(glance)
    logging = spec.get("logging") or {}
    debug_text = _extra_default_option(spec, "debug")
    if debug_text is None:
        debug = bool(logging.get("debug"))
    else:
        debug = _oslo_bool(debug_text, "spec.extraConfig[DEFAULT][debug]")
    root = "DEBUG" if debug else (logging.get("level") or "INFO")

    levels_text = _extra_default_option(spec, "default_log_levels")
    if levels_text is None:
        where = "spec.logging.perLoggerLevels"
        pairs = list(OSLO_DEFAULT_LOG_LEVELS)
        per_logger = logging.get("perLoggerLevels") or {}
        pairs += [(name, per_logger[name]) for name in sorted(per_logger)]
    else:
        where = "spec.extraConfig[DEFAULT][default_log_levels]"
        pairs = []
        for item in levels_text.split(","):
            if item.strip():
                name, _, level = item.strip().partition("=")
                pairs.append((name, level))
    loggers: dict[str, str] = {}
    for name, level in pairs:
        if _has_line_break(name):
            raise ConfigError(f"{where}: logger name {name!r} must not contain a line break")
        level = _fileconfig_level(level, f"{where}[{name}]")
        if name in ("", "root"):
            root = level  # logging.getLogger("root") is the root logger
        else:
            loggers[name] = level
    return root, loggers


def _logger_keys(names: Iterable[str]) -> dict[str, str]:
    """A fileConfig key per logger name: ``[A-Za-z0-9_]`` only, unique, never ``root``."""
    used = {"root"}
    keys = {}
    for name in sorted(names):
        base = re.sub(r"[^A-Za-z0-9_]", "_", name)
        key, n = base, 2
        while key in used:
            key, n = f"{base}_{n}", n + 1
        used.add(key)
        keys[name] = key
    return keys


def render_logging_conf(glance: Mapping[str, Any]) -> str:
    """``logging.conf``: a ``logging.config.fileConfig`` document (see the module docstring)."""
    spec = _spec(glance)
    json_format = (spec.get("logging") or {}).get("format") == "json"
    formatter = "json" if json_format else "context"
    datefmt = _extra_default_option(spec, "log_date_format") or DEFAULT_LOG_DATE_FORMAT
    root, loggers = logger_levels(glance)
    by_key = {key: name for name, key in _logger_keys(loggers).items()}
    logger_sections = {
        f"logger_{key}": {
            "handlers": "",
            "level": loggers[by_key[key]],
            # fileConfig reads qualname with %-interpolation
            "qualname": by_key[key].replace("%", "%%"),
        }
        for key in sorted(by_key)
    }
    sections: Sections = {
        "loggers": {"keys": ",".join(["root", *sorted(by_key)])},
        "handlers": {"keys": "stderr"},
        "formatters": {"keys": formatter},
        "logger_root": {"level": root, "handlers": "stderr"},
        **logger_sections,
        "handler_stderr": {
            "class": "StreamHandler",
            "args": "(sys.stderr,)",
            "level": "NOTSET",
            "formatter": formatter,
        },
        f"formatter_{formatter}": {
            "class": JSON_FORMATTER if json_format else CONTEXT_FORMATTER,
            "datefmt": datefmt,
        },
    }
    return render_ini(sections, order=list(sections))
