# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The action plugins of the gather, apply and report steps: the step in the playbook's
own process.

A module task costs a new Python process (AnsiballZ: the module and its module_utils
zipped, sent, unpacked, imported) for every task; these steps only talk HTTPS to the API
server, which the controller can do itself. So on a local connection (every playbook of
the collection: ``hosts: localhost``, ``connection: local``) the action plugin validates
the task's arguments against the module's argument spec and runs the step
(``module_utils.passes.pass_steps``) here; on any other connection it runs the module as
before. The result is the same either way, and the task's name, ``register``,
``no_log``, check mode and the runner's events do not change.

The one difference: a step in the controller's process sees the controller's
environment, so a task's ``environment:`` keyword does not reach it. Give the
connection through the ``kubeconfig`` and ``context`` options instead.

**Warm before the forks.** ansible-playbook imports an action plugin in its main process
(the strategy asks it for its class before queueing the task), and runs every task in a
worker forked from that process. So importing here what the pass's filters need (the
decision modules, the CRDs and option catalogs, cached per process) does that work once
per pass, in the parent, and every later task's worker inherits it instead of redoing it:
the plan and decide tasks of a pass each used to import, parse and compile all of it. The
object roles' templates are compiled here too, for the render task's worker, and the
plugin loaders load the Jinja2 filters and tests (``ansible.builtin``'s and the pass's
own): a loader keeps what it loaded in the process, so each worker loaded all of them
again at its first filter or test. Then everything the warm-up made is frozen out of the
garbage collector's sight (``gc.freeze``), for the same workers' sake.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired import role_templates
from ansible_collections.c5c3.glance.plugins.module_utils.passes import pass_inputs

LOCAL_CONNECTIONS = frozenset({"local", "ansible.builtin.local"})


PASS_FILTERS = (
    "c5c3.glance.glance_plan",
    "c5c3.glance.owned_objects",
    "c5c3.glance.glance_pass",
    "c5c3.glance.glancebackend_pass",
)
"""The collection's filters a pass's tasks use (roles ``glance_pass``, ``glancebackend_pass``)."""


def _warm_jinja_plugins() -> list[str]:
    """Load the Jinja2 plugins a pass's templating needs into this process's plugin loaders:
    every filter and test of ``ansible.builtin`` (the loaders load all of them at a worker's
    first filter or test, about 0.015 CPU-s per task) and ``PASS_FILTERS``."""
    from ansible.plugins.loader import filter_loader, test_loader

    loaded = [p.ansible_name for loader in (filter_loader, test_loader) for p in loader.all()]
    for name in PASS_FILTERS:
        if filter_loader.get(name) is not None:
            loaded.append(name)
    return loaded


# The warm-up (see the module docstring): pass_inputs imports every decision module; the
# object roles' templates are compiled (the render task's filter renders them); the plugin
# loaders load the Jinja2 plugins every templating task would load again. cel-python is
# not imported: the judge of the stored objects keeps its CEL verdicts between passes
# (admission.cel_verdicts), so a pass of an unchanged Glance never evaluates a rule, and
# the worker of a pass that does imports it then.
WARM = (
    pass_inputs.__name__,
    load_catalogs(),
    load_crds(),
    role_templates.compile_templates(),
    _warm_jinja_plugins(),
)

# What was imported and built stays for the process's life: out of the garbage collector's
# sight (gc.freeze), its full collections in this process and in every forked worker no
# longer walk the million objects of ansible and the decision stack
# (walking them also touches every page a worker shares with this process). A cold no-op
# pass: 1.48 -> 1.34 CPU-s (medians of 8 interleaved runs; docs/reconcile.md).
gc.collect()
gc.freeze()


class InProcessStep(ActionBase):
    """Subclasses set ``SPEC`` (the module's argument spec) and ``STEP`` (its function)."""

    TRANSFERS_FILES = False
    SPEC: Mapping[str, Mapping[str, Any]] = {}
    STEP: Callable[..., dict[str, Any]]
    CHECK_MODE = True  # the step takes check_mode

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        if getattr(self._connection, "transport", None) not in LOCAL_CONNECTIONS:
            result.update(self._execute_module(task_vars=task_vars))
            return result
        _, params = self.validate_argument_spec(argument_spec=dict(self.SPEC))
        step = type(self).STEP
        outcome = step(params, self._task.check_mode) if self.CHECK_MODE else step(params)
        result.update(outcome)
        return result
