"""Benchmark of offline render: prints numbers, asserts nothing about time.

    make bench            (or: .venv/bin/python tests/bench/bench_render.py [--runs N])

* compute: ``build_plan`` for the full sample in-process (judge, gates, projection,
  config, decisions), median of many runs;
* playbook: ``playbooks/render.yml`` on the full sample, wall time, median of a few runs;
* module processes: how many Ansible module processes one render starts, counted from the
  AnsiballZ payloads Ansible leaves behind with ANSIBLE_KEEP_REMOTE_FILES.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (  # noqa: E402
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.input_documents import (  # noqa: E402
    split_documents,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import build_plan  # noqa: E402

SAMPLE = ROOT / "config" / "samples" / "glance_full.yaml"


def bench_compute(runs: int) -> list[float]:
    docs = list(yaml.safe_load_all(SAMPLE.read_text()))
    crds, catalogs = load_crds(), load_catalogs()
    build_plan(split_documents(docs), crds, catalogs)  # warm the CEL and file caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        plan = build_plan(split_documents(docs), crds, catalogs)
        times.append(time.perf_counter() - start)
        assert not plan.errors, plan.errors
    return times


def render_once(out: Path, remote_tmp: Path | None = None) -> float:
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    if remote_tmp is not None:
        env.update(ANSIBLE_KEEP_REMOTE_FILES="1", ANSIBLE_REMOTE_TMP=str(remote_tmp))
    start = time.perf_counter()
    subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            str(ROOT / "playbooks/render.yml"),
            "-e",
            f"render_input={SAMPLE}",
            "-e",
            f"render_output={out}",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="playbook runs (default 3)")
    parser.add_argument("--compute-runs", type=int, default=50)
    args = parser.parse_args()
    compute = bench_compute(args.compute_runs)
    with tempfile.TemporaryDirectory() as tmp:
        walls = [render_once(Path(tmp) / f"out{i}") for i in range(args.runs)]
        remote = Path(tmp) / "remote"
        render_once(Path(tmp) / "counted", remote)
        modules = sorted(p.name for p in remote.rglob("AnsiballZ_*.py"))
    print(f"render of {SAMPLE.relative_to(ROOT)}")
    print(
        f"  compute (build_plan, in-process): median {statistics.median(compute) * 1000:.1f} ms"
        f" over {len(compute)} runs (min {min(compute) * 1000:.1f} ms)"
    )
    print(
        f"  playbook (ansible-playbook render.yml): median {statistics.median(walls):.2f} s"
        f" over {len(walls)} runs (min {min(walls):.2f} s)"
    )
    print(f"  module processes per render: {len(modules)} ({', '.join(modules) or 'none'})")


if __name__ == "__main__":
    main()
