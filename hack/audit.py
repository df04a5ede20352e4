"""`make audit`: the pinned Python sets checked against the advisories PyPI publishes.

pip-audit (PyPA's) reads each pin's advisories from PyPI's JSON API
(``/pypi/<name>/<version>/json``, its ``vulnerabilities``). This runs it on
requirements-runtime.txt (what the operator image installs) and requirements.txt (the
whole set: tests, lint, workstations) and prints, for each, what it found and what it could
not audit, with the reason pip-audit gave. pip-audit says "No known vulnerabilities
found" also when it audited nothing; this report counts the pins it did audit, so an
empty answer cannot pass for a clean one.

A report, not a gate: it exits 0 whatever the advisories say (an advisory published after
a pin was taken must not stop every submission; the pin is moved by `make lock` when the
report shows it), and 2 only when pip-audit itself did not run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETS = ("requirements-runtime.txt", "requirements.txt")


@dataclass
class Audit:
    """What pip-audit said of one requirements file."""

    name: str
    audited: list[str] = field(default_factory=list)
    advisories: list[tuple[str, str, str, list[str]]] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, report: dict) -> Audit:
        audit = cls(name)
        for dependency in report.get("dependencies") or []:
            pin = f"{dependency['name']}=={dependency.get('version', '?')}"
            if "skip_reason" in dependency:
                reason = dependency["skip_reason"]
                # the reason names the package; the kind of reason is what is shared
                kind = reason.split(":", 1)[0]
                audit.skipped.setdefault(kind, []).append(dependency["name"])
                continue
            audit.audited.append(pin)
            for vuln in dependency.get("vulns") or []:
                audit.advisories.append(
                    (pin, vuln["id"], ", ".join(vuln.get("aliases") or []), vuln["fix_versions"])
                )
        return audit

    def lines(self) -> list[str]:
        total = len(self.audited) + sum(len(names) for names in self.skipped.values())
        out = [
            f"{self.name}: {total} pins; {len(self.audited)} audited, "
            f"{len(self.advisories)} known advisories"
        ]
        for pin, ident, aliases, fixes in self.advisories:
            fixed = f"fixed in {', '.join(fixes)}" if fixes else "no fixed release yet"
            out.append(f"  ADVISORY {pin}: {ident}{f' ({aliases})' if aliases else ''}; {fixed}")
        for kind, names in sorted(self.skipped.items()):
            out.append(f"  not audited, {len(names)}: {kind}: {' '.join(sorted(names))}")
        if total and not self.audited:
            out.append(
                "  nothing was audited: the index gave no advisory data for any pin (pip-audit "
                "reads /pypi/<name>/<version>/json; docs/install.md, 'Known vulnerabilities')"
            )
        return out


def run(name: str) -> Audit:
    command = [
        sys.executable,
        "-m",
        "pip_audit",
        "--requirement",
        str(ROOT / name),
        "--no-deps",  # the file is the whole pinned set
        "--disable-pip",
        "--progress-spinner",
        "off",
        "--format",
        "json",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(
            f"pip-audit did not run on {name} (exit {done.returncode}): {done.stderr.strip()}"
        ) from None
    return Audit.of(name, report)


def main() -> int:
    try:
        audits = [run(name) for name in SETS]
    except SystemExit as exc:
        print(f"[audit] {exc}", file=sys.stderr)
        return 2
    for audit in audits:
        for line in audit.lines():
            print(f"[audit] {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
