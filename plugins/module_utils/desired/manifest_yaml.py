# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Kubernetes objects as deterministic, readable multi-document YAML.

Each object starts with ``apiVersion``, ``kind``, ``metadata`` in that order; every other
mapping has its keys sorted; multi-line strings (the configuration files) are literal
blocks. The same objects always give the same bytes, whatever order their keys came in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

HEAD = ("apiVersion", "kind", "metadata")


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> Any:
        return super().increase_indent(flow, False)


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def plain(obj: Any) -> Any:
    """A copy made of plain dicts, lists, str, int, float, bool and None only."""
    return json.loads(json.dumps(obj))


def _ordered(value: Any, top: bool = False) -> Any:
    if isinstance(value, Mapping):
        keys = sorted(value)
        if top:
            keys = [k for k in HEAD if k in value] + [k for k in keys if k not in HEAD]
        return {k: _ordered(value[k]) for k in keys}
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return value


def dump_documents(objects: Iterable[Mapping[str, Any]]) -> str:
    """The objects as one multi-document YAML stream, each document opened with ``---``."""
    docs = [_ordered(plain(obj), top=True) for obj in objects]
    return yaml.dump_all(
        docs,
        Dumper=_Dumper,
        explicit_start=True,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=100,
    )
