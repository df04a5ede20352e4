"""`make diagnose GLANCE=<namespace>/<name>`: playbooks/diagnose.yml, its report alone.

ansible-playbook frames what a task shows in its own output; this runs the playbook with
the report written to a file of its own (``diagnose_output``) and prints that file, so a
person reads the report and a tool (``FORMAT=json``) parses it. When the playbook fails
(no such Glance, a permission missing, no cluster), it prints the step's message and exits
1. The kubeconfig is the environment's (``KUBECONFIG``), as for every playbook.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAILED = re.compile(r"^(?:fatal|failed): \[[^]]*\]: FAILED! => (\{.*\})$", re.MULTILINE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("glance", help="<namespace>/<name>")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    namespace, _, name = args.glance.partition("/")
    if not (namespace and name) or "/" in name:
        print(
            "name the Glance as <namespace>/<name>: make diagnose GLANCE=openstack/glance "
            f"(not {args.glance!r})",
            file=sys.stderr,
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="c5c3-diagnose-") as scratch:
        report = Path(scratch) / "report"
        proc = subprocess.run(
            [
                str(Path(sys.executable).with_name("ansible-playbook")),
                "playbooks/diagnose.yml",
                "-e",
                f"glance_namespace={namespace}",
                "-e",
                f"glance_name={name}",
                "-e",
                f"diagnose_format={args.format}",
                "-e",
                f"diagnose_output={report}",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")},
            check=False,
        )
        if proc.returncode == 0 and report.exists():
            print(report.read_text())
            return 0
    failed = FAILED.search(proc.stdout)
    if failed:
        print(json.loads(failed.group(1)).get("msg"), file=sys.stderr)
    else:
        print(proc.stdout[-4000:] + proc.stderr[-2000:], file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
