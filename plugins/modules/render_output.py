#!/usr/bin/python
# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Module: write the files of an offline render into a directory, in one process."""

from __future__ import annotations

DOCUMENTATION = r"""
module: render_output
author: C5C3 Glance operator authors
version_added: 0.1.0
short_description: Write the files of an offline render into a directory
description:
  - Creates O(path) if needed and writes each of O(files) into it, each through a temporary
    file renamed into place, so a reader never sees a half-written manifest.
  - One module process for the whole output, however many files.
  - A file whose content is already what is asked for is left alone (its modification time
    does not change); the result says which files changed.
options:
  path:
    description: The output directory.
    type: path
    required: true
  files:
    description: File name (no directory part) to content.
    type: dict
    required: true
  mode:
    description: The mode of the written files.
    type: str
    default: "0644"
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Write the manifests and the status
  c5c3.glance.render_output:
    path: out/glance
    files:
      manifests.yaml: "{{ glance_manifests | c5c3.glance.manifest_documents }}"
      status.yaml: "{{ glance_plan.status | c5c3.glance.manifest_documents(sort=false) }}"
"""

RETURN = r"""
written:
  description: The files whose content changed (or would change in check mode).
  type: list
  elements: str
  returned: always
  sample: [manifests.yaml]
path:
  description: The output directory.
  type: str
  returned: always
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule


def _current(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write(path: str, content: str, mode: int) -> None:
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".render-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "files": {"type": "dict", "required": True},
            "mode": {"type": "str", "default": "0644"},
        },
        supports_check_mode=True,
    )
    path = module.params["path"]
    files = module.params["files"]
    mode = int(module.params["mode"], 8)
    bad = [name for name in files if not name or os.path.basename(name) != name]
    if bad:
        module.fail_json(msg=f"file names must not contain a directory part: {bad}")
    changed = sorted(
        name for name, content in files.items() if _current(os.path.join(path, name)) != content
    )
    if changed and not module.check_mode:
        os.makedirs(path, exist_ok=True)
        for name in changed:
            _write(os.path.join(path, name), str(files[name]), mode)
    module.exit_json(changed=bool(changed), written=changed, path=path)


if __name__ == "__main__":
    main()
