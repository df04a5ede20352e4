"""Warm passes: a fork server that runs ``ansible-playbook`` in a pre-imported interpreter.

A pass still runs through ansible-runner (``runner/passes/playbook.py``): ansible-runner writes the
pass's inputs, starts the command under its pseudo-terminal and reads the events, the
artifacts and the status as ever. Only the command differs: ansible-runner's ``binary``
option names a small client (``client.py`` here, started as ``ansible-playbook`` from the
server's private dir) instead of ``ansible-playbook``. The client hands its
argv, environment, working directory and its stdin/stdout/stderr (the pty ansible-runner
reads) over a unix socket (``SCM_RIGHTS``) to this server, which forks; the child makes
them its own (a session of its own, the pty as fds 0-2), then runs ansible-playbook's CLI
``main`` in-process. The server tells the client the child's pid, then its exit status
and CPU time; the client forwards the signals it gets (a cancel's SIGTERM, ansible-runner's
SIGINT/SIGHUP/SIGKILL sequence) to the child's process group and exits as the child did.
A client that dies (SIGKILL) takes its child with it: the server sees the socket close and
kills the child's process group.

**What the server imports before a pass's environment is known** (``warm_up``):

* the standard library and third-party modules a pass imports (``PRELOAD``: jinja2, yaml,
  urllib3, celpy, cryptography, multiprocessing, ...);
* the part of ansible that reads no configuration at import (``ANSIBLE_PRELOAD``): every
  module of it that can be imported without ``ansible.constants``. The warm-up imports
  them with an import hook that refuses ``ansible.constants``, so a module that starts to
  read the configuration in a later ansible-core is skipped (and reported), never
  half-configured; ``ansible.constants`` is never in the server; ansible's configuration
  definitions (``base.yml``, not the configuration) are read once and copied to each
  pass's configuration manager;
* the collection's ``module_utils`` through Ansible's collection finder, installed with the
  collection paths an ``ansible-playbook`` would use in the server's environment (asked of
  a forked probe that imports ``ansible.constants`` there), then removed again so the
  pass's CLI installs its own; the CRDs parsed, the option catalogs read, the CRDs' CEL
  rules compiled (the memoised programs are inherited by every pass).

**What it does not import, and why:** ``ansible.constants`` builds the configuration
(``ConfigManager``) from the environment, the working directory's ``ansible.cfg`` and
``ANSIBLE_*`` at import, and ansible binds it at import in many places (the plugin loaders
take their search paths from it, ``ansible.utils.display`` its colours and log path, the
templar and error handler ``from ansible.constants import config``). Reloading it in the
child would leave those bound to the server's configuration, so the child imports it, and
everything that needs it (the CLI, the executor, the plugin loaders, the callbacks of
ansible-runner), after its environment and working directory are set: each pass reads
its own ``ANSIBLE_*`` variables, ansible.cfg and ansible-runner's per-run artifact dir.

When a pass's environment names other collection paths than the server warmed for
(``KEY_VARIABLES``, and the working directory when no ``ANSIBLE_CONFIG`` is set), the child
drops the warm collection modules first and imports them afresh.

The modules: ``handle`` is the runner's side (``WarmServer``: start, restart, stop, the
client's path); ``server`` the fork server's loop and ``serve``; ``protocol`` what the two
and the client agree on, and reading a request; ``preload`` the import walk (``warm_up``,
the collection paths, ``collection_key``); ``child`` the forked pass becoming
``ansible-playbook``; ``client`` the client; ``__main__`` the command line
(``python -m runner.passes.warm serve|check``).
"""
