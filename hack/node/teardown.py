"""Taking the node down: every process, device, iptables chain, mount and cgroup it made."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .base import NodeBase
from .layout import CGROUP_ROOT, FORWARD_CHAIN
from .processes import alive, run, send_signal, stop


class Teardown(NodeBase):
    """``down()``: stops and removes what the node made."""

    def down(self, quiet: bool = False) -> None:
        """Stop every process and remove every device, chain, mount and cgroup the node
        made; safe to run when nothing runs, and after a run that was killed."""
        say = (lambda _line: None) if quiet else self.say
        pids = self._pids()
        for name in ("kube-proxy", "kubelet", "kube-scheduler", "kube-controller-manager"):
            stop(pids.get(name), self._matching(name, str(self.workdir)))
        killed = _kill_cgroup_tree("kubepods")
        shims = self._matching("containerd-shim-runc-v2", str(self.layout.containerd_socket))
        for pid in shims:
            send_signal(pid, signal.SIGKILL)
        stop(pids.get("containerd"), self._matching("containerd", str(self.workdir)))
        # The API server before etcd: it would retry etcd for a while.
        stop(pids.get("kube-apiserver"), self._matching("kube-apiserver", self.layout.node_ip))
        stop(pids.get("etcd"), self._matching("etcd", str(self.workdir)))
        if (self.assets / "kube-proxy").exists():
            run([self._bin("kube-proxy"), "--cleanup"], check=False)
        # What kube-proxy leaves and the kubelet made (KUBE-FIREWALL, KUBE-KUBELET-CANARY),
        # and the node's own chain.
        chains = remove_chains(lambda chain: chain.startswith("KUBE-") or chain == FORWARD_CHAIN)
        destroy_ipsets(NETPOL_IPSET_PREFIXES)  # a killed run's `make cluster-netpol`
        unmounted = _unmount_under(self.workdir, self.layout.run_dir)
        # The kubelet links every container's log into /var/log/containers.
        for link in Path("/var/log/containers").glob("*.log"):
            with contextlib.suppress(OSError):
                if str(self.workdir) in os.readlink(link):
                    link.unlink()
        for link in (self.layout.cni_bridge, self.layout.node_bridge):
            run(["ip", "link", "del", link], check=False)
        _remove_cgroup_tree("kubepods")
        shutil.rmtree(self.layout.run_dir, ignore_errors=True)
        shutil.rmtree(self.workdir, ignore_errors=True)
        if pids or killed or shims or unmounted or chains:
            say(
                f"node {self.layout.name} down: {len(pids)} components, {len(shims)} shims, "
                f"{killed} pod processes stopped, {unmounted} mounts and {chains} iptables "
                "chains removed"
            )


def _cgroup_dirs(name: str) -> Iterator[Path]:
    """Every cgroup directory named ``name`` or below it, deepest first, in every hierarchy."""
    for hierarchy in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else []:
        top = hierarchy / name
        if top.is_dir() and not top.is_symlink():
            dirs = [Path(d) for d, _, _ in os.walk(top)]
            yield from sorted(dirs, key=lambda p: len(p.parts), reverse=True)


def _kill_cgroup_tree(name: str) -> int:
    """SIGKILL every process in the cgroups under ``name``; how many there were."""
    pids: set[int] = set()
    for d in _cgroup_dirs(name):
        with contextlib.suppress(OSError):
            pids.update(int(p) for p in (d / "cgroup.procs").read_text().split())
    for pid in pids:
        send_signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return len(pids)


def _remove_cgroup_tree(name: str) -> None:
    for d in _cgroup_dirs(name):
        for _ in range(20):
            try:
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)


# The ipsets of the NetworkPolicy controller `make cluster-netpol` runs (kube-router's).
NETPOL_IPSET_PREFIXES = ("KUBE-SRC-", "KUBE-DST-")


def destroy_ipsets(prefixes: tuple[str, ...]) -> int:
    """Destroy the ipsets whose names start with one of ``prefixes`` (none where the node
    has no ``ipset``); how many. Run after the chains that use them are gone."""
    if shutil.which("ipset") is None:
        return 0
    names = run(["ipset", "list", "-n"], check=False).stdout.split()
    left = [name for name in names if name.startswith(prefixes)]
    # A set stays "in use by a kernel component" for a moment after the last rule naming it
    # is deleted: nftables releases a rule's references after the commit, not in it.
    deadline = time.monotonic() + 10
    while left and time.monotonic() < deadline:
        left = [n for n in left if run(["ipset", "destroy", n], check=False).returncode != 0]
        if left:
            time.sleep(0.1)
    return len([n for n in names if n.startswith(prefixes)]) - len(left)


def remove_chains(ours: Callable[[str], bool]) -> int:
    """Delete the iptables and ip6tables chains ``ours`` accepts, and every rule that jumps
    to one, in every table; how many chains."""
    removed = 0
    for program in ("iptables", "ip6tables"):
        if shutil.which(program) is None:
            continue
        for table in ("filter", "nat", "mangle", "raw"):
            listed = run([program, "-w", "-t", table, "-S"], check=False)
            if listed.returncode != 0:
                continue
            chains = [
                line.split()[1]
                for line in listed.stdout.splitlines()
                if line.startswith("-N ") and ours(line.split()[1])
            ]
            for line in listed.stdout.splitlines():
                words = shlex.split(line)
                if words[:1] == ["-A"] and "-j" in words and words[words.index("-j") + 1] in chains:
                    run([program, "-w", "-t", table, "-D", *words[1:]], check=False)
            for chain in chains:
                run([program, "-w", "-t", table, "-F", chain], check=False)
            for chain in chains:
                if run([program, "-w", "-t", table, "-X", chain], check=False).returncode == 0:
                    removed += 1
    return removed


def _unmount_under(*roots: Path) -> int:
    """Unmount everything mounted under ``roots``, deepest first; how many."""
    prefixes = tuple(str(r).rstrip("/") + "/" for r in roots)
    count = 0
    for _ in range(5):
        mounts = []
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].encode().decode("unicode_escape")
            if point.startswith(prefixes) or point in {p.rstrip("/") for p in prefixes}:
                mounts.append(point)
        if not mounts:
            break
        for point in sorted(set(mounts), key=len, reverse=True):
            if run(["umount", "-l", point], check=False).returncode == 0:
                count += 1
    return count
