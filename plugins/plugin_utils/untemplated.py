# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""A fact a filter is given, as the data it holds, without templating what needs none.

A filter gets a variable (a registered result, a fact ``set_fact`` made of a filter's
output) as one of Ansible's lazy containers: each value read from it goes through the
templating engine first, a few microseconds for every string, list and mapping. A pass's
gather result and plan hold thousands of them (the Glance, its backends, Secrets,
ConfigMaps and owned objects), and the pass's filters read every one (``pass_inputs.plain``).

What an action plugin returned or a filter produced is not trusted as a template, and the
engine returns such a value unchanged; ``untemplated`` reads it straight from the
container instead. When any string in the value is trusted as a template (a variable
written in a playbook, such as a hand-written ``glance_desired``), the value is returned
as it was given, and reading it renders its templates as before.
"""

from __future__ import annotations

from typing import Any

from ansible.template import is_trusted_as_template

_TEMPLATE = object()
"""``_raw``'s answer when the value holds a string trusted as a template."""


def untemplated(value: Any) -> Any:
    """``value`` with Ansible's lazy containers replaced by their contents (plain lists and
    dicts); ``value`` itself when a string in it is trusted as a template."""
    raw = _raw(value)
    return value if raw is _TEMPLATE else raw


def _raw(value: Any) -> Any:
    # Ansible's lazy dict and list: their contents without templating (the values that
    # were read already are the rendered ones, possibly lazy containers again).
    non_lazy_copy = getattr(value, "_non_lazy_copy", None)
    if callable(non_lazy_copy):
        value = non_lazy_copy()
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            raw = _raw(item)
            if raw is _TEMPLATE:
                return _TEMPLATE
            out[key] = raw
        return out
    if isinstance(value, (list, tuple)):
        items = []
        for item in value:
            raw = _raw(item)
            if raw is _TEMPLATE:
                return _TEMPLATE
            items.append(raw)
        return items
    if isinstance(value, str) and is_trusted_as_template(value):
        return _TEMPLATE
    return value
