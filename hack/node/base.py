"""The node's state and what every part of it uses (``NodeBase``)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .layout import DEFAULT_WORKDIR, LAYOUT, Layout
from .pki import Certificates
from .processes import alive, run


@dataclass
class NodeBase:
    """The node's state and what every part of it uses: its files, the processes it
    started, their logs, ``kubectl`` and ``ctr`` against it."""

    assets: Path
    workdir: Path = DEFAULT_WORKDIR
    layout: Layout = LAYOUT
    say: Callable[[str], None] = field(default=lambda line: print(line, flush=True))

    @property
    def kubeconfig(self) -> Path:
        """The admin's kubeconfig (client certificate in ``system:masters``)."""
        return self.workdir / "admin.kubeconfig"

    @property
    def logs_dir(self) -> Path:
        return self.workdir / "logs"

    @property
    def certs(self) -> Certificates:
        return Certificates(self.workdir / "pki")

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.logs_dir / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.workdir,
        )
        log.close()
        pids = self._pids()
        pids[name] = proc.pid
        (self.workdir / "pids.json").write_text(json.dumps(pids))

    def _pids(self) -> dict[str, int]:
        try:
            return json.loads((self.workdir / "pids.json").read_text())
        except (OSError, ValueError):
            return {}

    def _bin(self, name: str) -> str:
        return str(self.assets / name)

    def _wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = self.exited()
            if dead:
                raise RuntimeError(
                    f"{', '.join(dead)} exited while waiting for {what}\n{self.tails()}"
                )
            with contextlib.suppress(Exception):
                if ready():
                    return
            time.sleep(0.5)
        raise TimeoutError(f"{what}: not after {timeout:.0f} s\n{self.tails()}")

    def exited(self) -> list[str]:
        """The components started by this node that are no longer running."""
        return [name for name, pid in self._pids().items() if not alive(pid)]

    def kubectl(self, *args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig))
        return run([self._bin("kubectl"), *args], check=check, env=env, **kw)

    def _ctr(self, *args: str, check: bool = False, **kw) -> subprocess.CompletedProcess:
        argv = ["ctr", "--address", str(self.layout.containerd_socket), "--namespace", "k8s.io"]
        return run([*argv, *args], check=check, **kw)

    def tails(self, lines: int = 25) -> str:
        out = []
        for log in sorted(self.logs_dir.glob("*.log")) if self.logs_dir.is_dir() else []:
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(out)

    def diagnostics(self) -> str:
        """What a failed test should show: pods, events, the node and the components."""
        parts = []
        for args in (
            ("get", "nodes", "-o", "wide"),
            ("get", "pods", "-A", "-o", "wide"),
            ("get", "events", "-A", "--sort-by=.lastTimestamp"),
        ):
            done = self.kubectl(*args, check=False)
            parts.append(f"$ kubectl {' '.join(args)}\n{done.stdout}{done.stderr}")
        parts.append(self.tails())
        return "\n".join(parts)

    def _matching(self, program: str, *needles: str) -> list[int]:
        """Pids of ``program`` whose command line holds every one of ``needles`` (the
        node's own, not another containerd's or etcd's)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if not argv or Path(argv[0].decode(errors="replace")).name != program:
                continue
            line = b" ".join(argv).decode(errors="replace")
            if all(n in line for n in needles):
                found.append(int(entry.name))
        return found
