"""CPU time and memory of a process group, from ``/proc`` (Linux).

The harness starts every program in a process group of its own (``Stack.spawn``), so a
uWSGI launch (master, HTTP router, workers) is one group: its id is the master's pid.

* :func:`group_cpu_seconds`: user + system CPU seconds of the group's live processes
  (``/proc/<pid>/stat`` fields 14 and 15). uWSGI's workers and router live as long as the
  master here (no ``max-requests``), so a difference of two readings is what the group
  spent in between.
* :func:`group_rss`: the resident set of each live process of the group, in bytes
  (``/proc/<pid>/statm``, second field, in pages).
* :class:`RssSampler`: samples :func:`group_rss` in a thread; the peak per process and the
  peak of the sum.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def _stat_fields(pid: str) -> list[str] | None:
    try:
        text = (PROC / pid / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    return text[text.rindex(")") + 2 :].split()


def group_pids(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``."""
    pids = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(entry.name)
        # fields[0] is field 3 (state); the process group is field 5.
        if fields is not None and int(fields[2]) == pgid:
            pids.append(int(entry.name))
    return pids


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU seconds of the live processes of group ``pgid``."""
    total = 0
    for pid in group_pids(pgid):
        fields = _stat_fields(str(pid))
        if fields is not None:
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / TICKS


def group_rss(pgid: int) -> dict[int, int]:
    """Resident bytes of each live process of group ``pgid``."""
    out = {}
    for pid in group_pids(pgid):
        with contextlib.suppress(OSError, IndexError, ValueError):
            out[pid] = int((PROC / str(pid) / "statm").read_text().split()[1]) * PAGE
    return out


class RssSampler:
    """Samples the RSS of a process group every ``interval`` seconds until stopped."""

    def __init__(self, pgid: int, interval: float = 0.2) -> None:
        self.pgid, self.interval = pgid, interval
        self.baseline = group_rss(pgid)
        self.peak_per_process: dict[int, int] = dict(self.baseline)
        self.peak_total = sum(self.baseline.values())
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            rss = group_rss(self.pgid)
            self.samples += 1
            self.peak_total = max(self.peak_total, sum(rss.values()))
            for pid, size in rss.items():
                self.peak_per_process[pid] = max(self.peak_per_process.get(pid, 0), size)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def growth(self) -> int:
        """The largest growth of one process over its baseline (a new process: all of it)."""
        return max(
            (peak - self.baseline.get(pid, 0) for pid, peak in self.peak_per_process.items()),
            default=0,
        )
