"""`make audit` (hack/audit.py): pip-audit on the two pinned sets, printed as a report.

The command runs as docs/install.md gives it, in the checkout, against PyPI: every pin of
each file is accounted for (audited, or not audited with pip-audit's reason), and it exits
0 whatever it finds. How an advisory is printed is checked on a report in pip-audit's JSON
format, since no pin here has one to show.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.hack_scripts import hack_script

ROOT = Path(__file__).resolve().parents[2]


def pin_count(name: str) -> int:
    lines = (ROOT / name).read_text().splitlines()
    return sum(1 for line in lines if line.split("#", 1)[0].strip())


def test_make_audit_accounts_for_every_pin_of_both_sets_and_exits_0():
    done = subprocess.run(
        ["make", "audit"], cwd=ROOT, capture_output=True, text=True, check=False, timeout=600
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for name in ("requirements-runtime.txt", "requirements.txt"):
        [summary] = [line for line in lines if line.startswith(f"[audit] {name}: ")]
        total = pin_count(name)
        assert summary.startswith(f"[audit] {name}: {total} pins; "), summary
        audited = int(summary.split("; ")[1].split(" audited")[0])
        index = lines.index(summary)
        block = []
        for line in lines[index + 1 :]:
            if not line.startswith("[audit]   "):
                break
            block.append(line)
        skipped = sum(
            int(line.split("not audited, ")[1].split(":")[0])
            for line in block
            if "not audited, " in line
        )
        assert audited + skipped == total, block


def test_an_advisory_is_printed_with_its_pin_aliases_and_fix():
    audit = hack_script("audit")
    report = {
        "dependencies": [
            {
                "name": "jinja2",
                "version": "3.1.2",
                "vulns": [
                    {
                        "id": "GHSA-h5c8-rqwp-cp95",
                        "fix_versions": ["3.1.3"],
                        "aliases": ["CVE-2024-22195"],
                        "description": "xmlattr filter allows keys with spaces",
                    }
                ],
            },
            {"name": "pyyaml", "version": "6.0.3", "vulns": []},
            {
                "name": "x",
                "skip_reason": "Dependency not found on PyPI and could not be audited: x",
            },
        ],
        "fixes": [],
    }
    lines = audit.Audit.of("requirements-runtime.txt", report).lines()
    assert lines == [
        "requirements-runtime.txt: 3 pins; 2 audited, 1 known advisories",
        "  ADVISORY jinja2==3.1.2: GHSA-h5c8-rqwp-cp95 (CVE-2024-22195); fixed in 3.1.3",
        "  not audited, 1: Dependency not found on PyPI and could not be audited: x",
    ]
