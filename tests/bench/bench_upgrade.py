"""Benchmark of the release upgrade on the end-to-end stack: prints seconds per phase.

    make bench            (or: .venv/bin/python tests/bench/bench_upgrade.py [--step 2025.2])

Brings up the e2e stack (``tests/e2e/stack.py``: MariaDB, moto's S3 server, Keystone and a
Glance from the render; ``make e2e-env`` installs what it runs) and, for each supported step
(2025.2 -> 2026.1, 2026.1 -> 2026.2), runs the same flow as
``tests/e2e/test_release_upgrade.py`` (``e2e.upgrade.run_upgrade``, every check included): the
installed release and its data set, then the rendered phase Jobs with the newer release's
glance-manage while a client reads and uploads. Printed per step, in seconds:

* **expand**, **migrate**, **contract**: the phase Job's command, start to exit;
* **rollout**: the newer release's API (the RollingUpdate render's Deployment) started until
  it answers ``/healthcheck``, plus stopping the older one (SIGINT, graceful);
* **db-sync after**: the steady-state db-sync Job of the newer release after the upgrade.

Nothing is asserted about time. Needs ``.venv-glance/<release>`` of each release
(``make glance-venvs``) and the e2e environment; says what is missing otherwise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for entry in (ROOT / "tests", ROOT / ".collections", ROOT):
    sys.path.insert(0, str(entry))

from e2e.stack import Stack, StackError, missing_programs  # noqa: E402
from e2e.upgrade import STEPS, Upgrade, run_upgrade  # noqa: E402
from support.hack_scripts import hack_script  # noqa: E402

COLUMNS = ("expand", "migrate", "rollout", "contract", "db-sync after")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", help="only the step from this release (e.g. 2025.2)")
    args = parser.parse_args(argv)
    steps = [s for s in STEPS if args.step in (None, s.older)]
    if not steps:
        parser.error(f"--step {args.step}: no step starts there ({', '.join(map(str, STEPS))})")
    missing = missing_programs()
    glance_venv = hack_script("glance_venv")
    releases = sorted({r for s in steps for r in (s.older, s.newer)})
    missing += [
        f"{glance_venv.venv_dir(r)} (make glance-venvs)"
        for r in releases
        if not glance_venv.is_current(r)
    ]
    if missing:
        print("bench_upgrade: not run, missing: " + ", ".join(missing), file=sys.stderr)
        return 1
    venvs = {r: glance_venv.venv_dir(r) for r in releases}
    with tempfile.TemporaryDirectory(prefix="bench-upgrade-") as tmp:
        stack = Stack(Path(tmp), log=lambda msg: print(msg, file=sys.stderr))
        try:
            stack.start()
            rows = []
            for step in steps:
                outcome = run_upgrade(
                    Upgrade(stack, step, "bench", venvs), lambda _: None, abort_first=False
                )
                rows.append((step, outcome))
        except StackError as exc:
            print(f"bench_upgrade: the stack failed: {exc}", file=sys.stderr)
            return 1
        finally:
            stack.stop()
    print(f"\nupgrade phases on the e2e stack (seconds; stack up in {stack.timings['stack']:.1f})")
    print(f"{'step':<18}" + "".join(f"{c:>15}" for c in COLUMNS))
    for step, outcome in rows:
        cells = "".join(f"{outcome.timings[c]:>15.1f}" for c in COLUMNS)
        print(f"{step!s:<18}{cells}")
        print(f"{'':<18}{outcome.images} images kept, {outcome.created_during} created meanwhile")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
