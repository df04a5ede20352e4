"""The upload bench's own parts that need no stack: its report, the S3 server's pinning, the image.

``tests/bench/bench_upload.py`` runs for minutes on the e2e stack and is not part of the
test suite; what it computes from its rounds and what it does to the processes it measures
is checked here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "bench_upload", ROOT / "tests" / "bench" / "bench_upload.py"
)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def outcome(number: int, upload_s: float, download_s: float) -> dict[str, float]:
    return {
        "round": number,
        "upload_s": upload_s,
        "download_s": download_s,
        "upload_cpu": 3.0,
        "download_cpu": 0.5,
    }


def test_the_report_compares_the_rendered_launch_with_the_fastest_one_and_with_its_copy(capsys):
    # 512 MiB: the rendered launch takes 8 s up in every round, http11-socket 7.6 s (faster:
    # rendered / http11-socket = 0.95), the copy 8 s up and 2 s down as the rendered one.
    results = {
        bench.RENDERED: [outcome(n, 8.0, 2.0) for n in range(3)],
        bench.BEST: [outcome(n, 7.6, 2.0) for n in range(3)],
        bench.COPY: [outcome(n, 8.0, 2.0) for n in range(3)],
    }
    bench.report(results, {}, 512, 3, ["0.10 0.20 0.30", "1.00 1.10 1.20"])
    out = capsys.readouterr().out
    assert "medians of 3 alternating rounds; load average 0.10 0.20 0.30 before" in out
    assert f"{bench.BEST} is unsafe: {bench.UNSAFE[bench.BEST]}" in out
    assert (
        "rendered / http11-socket (the fastest hand-tuned launch): upload 0.95, download 1.00"
        " (ratio of the medians; median of the per-round ratios: upload 0.95, download 1.00;"
        " target >= 0.95)" in out
    )
    # the copy is the run's resolution, not a hand-tuned launch: no target, no "safe" line
    assert (
        "rendered / rendered-copy (the same command: how far apart this run measures two):"
        " upload 1.00, download 1.00 (ratio of the medians; median of the per-round ratios:"
        " upload 1.00, download 1.00; 1.00)" in out
    )
    assert "fastest safe" not in out
    # CPU-seconds per GiB: 3.0 CPU-s per 0.5 GiB
    assert "rendered                      64.0       256.0          6.00            1.00" in out


def test_the_report_names_the_fastest_safe_launch_and_the_rounds_a_launch_failed(capsys):
    results = {
        bench.RENDERED: [outcome(n, 8.0, 2.0) for n in range(2)],
        bench.BEST: [outcome(n, 8.0, 2.0) for n in range(2)],
        "router-32k": [outcome(0, 10.0, 4.0)],
        "router-4k": [],
    }
    failures = {"router-4k": ["ConnectionResetError: reset", "again"]}
    bench.report(results, failures, 512, 2, ["0 0 0", "0 0 0"])
    out = capsys.readouterr().out
    assert "router-4k               failed 2 of 2 rounds: ConnectionResetError: reset" in out
    # per-round ratios only over the rounds both launches finished (round 0)
    assert (
        "rendered / router-32k (the fastest safe hand-tuned launch): upload 1.25, download 2.00"
        " (ratio of the medians; median of the per-round ratios: upload 1.25, download 2.00;"
        " target >= 0.95)" in out
    )


def test_the_image_file_holds_the_size_and_its_sha512_is_returned(tmp_path):
    path = tmp_path / "image.raw"
    size = 3 * bench.MIB + 5  # not a whole number of blocks
    digest = bench.write_image(path, size)
    data = path.read_bytes()
    assert len(data) == size
    assert digest == hashlib.sha512(data).hexdigest()
    assert len(set(data[:4096])) > 200  # random bytes, not a constant fill


CHILD = """
import os, sys, threading
sys.stdin.readline()  # pinned by now
seen = []
thread = threading.Thread(target=lambda: seen.append(sorted(os.sched_getaffinity(0))))
thread.start()
thread.join()
print(seen[0], sorted(os.sched_getaffinity(0)))
"""


def test_the_s3_server_and_the_threads_it_starts_later_run_on_one_core():
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("one core: there is nothing to pin to")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        bench.pin_to_one_core(child.pid)
        out, _ = child.communicate("go\n", timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert out.strip() == f"[{cores[-1]}] [{cores[-1]}]"


def test_without_a_rendered_round_the_report_compares_nothing(capsys):
    results = {bench.RENDERED: [], bench.BEST: [outcome(0, 8.0, 2.0)]}
    failures = {bench.RENDERED: ["AssertionError: upload checksum"]}
    bench.report(results, failures, 512, 1, ["0 0 0", "0 0 0"])
    out = capsys.readouterr().out
    assert "rendered                failed 1 of 1 rounds: AssertionError: upload checksum" in out
    assert "rendered /" not in out
    assert "is unsafe" not in out
