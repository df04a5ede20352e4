"""``plugin_utils.untemplated``: a fact handed to a filter, read without templating it again.

The values are Ansible's own lazy containers, made the way a filter gets them: Ansible's
``Templar`` evaluates a template that hands a variable to a function. Data a plugin
produced (strings not trusted as templates, even one that looks like a template) comes
back as plain dicts and lists with every value unchanged; a value holding a string that
is trusted as a template (written in a playbook) comes back as it was given, and reading
it still renders the template.
"""

from __future__ import annotations

from typing import Any

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.c5c3.glance.plugins.plugin_utils.untemplated import untemplated

PLUGIN_DATA = {
    "found": True,
    "object": {"metadata": {"name": "glance", "labels": {"a": "b"}}, "spec": {"replicas": 2}},
    "secrets": [{"data": {"password": "{{ not_a_template_here }}"}}, None, 3.5],
    "empty": {},
}


def handed_to_a_filter(variables: dict[str, Any], name: str, read_first: str | None = None):
    """``variables[name]`` as a filter receives it (an Ansible lazy container); with
    ``read_first``, that key is read from it before (it is then rendered in place)."""
    seen: dict[str, Any] = {}

    def grab(value: Any) -> bool:
        if read_first is not None:
            value[read_first]  # the read renders the value in place
        seen["value"] = value
        return True

    templar = Templar(loader=DataLoader(), variables={**variables, "grab": grab})
    templar.template(trust_as_template("{{ grab(" + name + ") }}"))
    return seen["value"]


def lazy_types(value: Any) -> list[str]:
    """The names of the non-plain container types anywhere in ``value``."""
    found = []
    if type(value) not in (dict, list, str, int, float, bool, type(None)):
        found.append(type(value).__name__)
    if isinstance(value, dict):
        for item in dict.values(value):
            found += lazy_types(item)
    elif isinstance(value, list):
        for item in list.__iter__(value):
            found += lazy_types(item)
    return found


@pytest.mark.parametrize("read_first", [None, "object", "secrets"])
def test_plugin_data_comes_back_plain_and_unchanged(read_first):
    given = handed_to_a_filter({"fact": PLUGIN_DATA}, "fact", read_first)
    assert "Lazy" in type(given).__name__  # the case this module is for
    result = untemplated(given)
    assert result == PLUGIN_DATA
    assert lazy_types(result) == []
    assert result["secrets"][0]["data"]["password"] == "{{ not_a_template_here }}"


@pytest.mark.parametrize(
    "hand_written, rendered",
    [
        ({"name": trust_as_template("{{ 1 + 1 }}")}, {"name": 2}),
        ({"deep": [{"x": trust_as_template("{{ 'a' ~ 'b' }}")}]}, {"deep": [{"x": "ab"}]}),
    ],
)
def test_a_value_with_a_trusted_template_is_returned_as_given(hand_written, rendered):
    given = handed_to_a_filter({"desired": hand_written}, "desired")
    assert untemplated(given) is given
    assert given == rendered  # reading it renders the template, as before


@pytest.mark.parametrize("value", [None, 3, "text", [1, {"a": "b"}], {"a": [None]}])
def test_plain_values_stay_equal(value):
    assert untemplated(value) == value
