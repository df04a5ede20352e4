"""Leader election on a Lease, against the API test double, with client-go's rules: one
holder; renewal; release on graceful stop; takeover only once the lease has run out on the
candidate's own clock; a leader that cannot renew within its deadline gives up."""

from __future__ import annotations

import re
import socket
import threading

import pytest
from support.fake_apiserver import FakeAPIServer
from test_runner_support import wait_until

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import KubeClient
from runner.kube.leader import LEASE_API_VERSION, LeaderElector, new_identity

NAMESPACE = "c5c3-system"
NAME = "c5c3-glance-operator"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def client(tmp_path):
    with FakeAPIServer() as double:
        double.write_kubeconfig(tmp_path / "kubeconfig")
        yield KubeClient.from_environment(str(tmp_path / "kubeconfig"))


def lease(client) -> dict:
    return client.get(LEASE_API_VERSION, "Lease", NAME, NAMESPACE)["spec"]


def elector(client, identity: str, **options) -> LeaderElector:
    options.setdefault("lease_duration", 15.0)
    return LeaderElector(client, NAMESPACE, NAME, identity, **options)


def test_the_identity_is_the_hostname_and_a_random_suffix():
    first, second = new_identity(), new_identity()
    assert first.startswith(socket.gethostname() + "_") and first != second
    assert re.fullmatch(r".+_[0-9a-f-]{36}", first)


def test_one_holder_at_a_time_and_a_release_hands_over_at_once(client):
    a, b = elector(client, "a"), elector(client, "b")
    assert a.try_acquire_or_renew()  # creates the Lease
    spec = lease(client)
    assert spec["holderIdentity"] == "a" and spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert not b.try_acquire_or_renew()
    assert a.try_acquire_or_renew()  # a renewal keeps acquireTime
    assert lease(client)["acquireTime"] == spec["acquireTime"]
    a.leading.set()
    a.stop(release=True)
    released = lease(client)
    assert released["holderIdentity"] == "" and released["leaseDurationSeconds"] == 1
    assert b.try_acquire_or_renew()  # an empty holder is free at once
    assert lease(client)["holderIdentity"] == "b"
    assert lease(client)["leaseTransitions"] == 1


def test_a_dead_holders_lease_is_taken_only_after_it_ran_out_on_the_candidates_clock(client):
    clock = Clock()
    assert elector(client, "dead").try_acquire_or_renew()
    candidate = elector(client, "b", clock=clock)
    assert not candidate.try_acquire_or_renew()  # first sight of the record starts the timer
    clock.now += 14.0
    assert not candidate.try_acquire_or_renew()
    clock.now += 1.5
    assert candidate.try_acquire_or_renew()
    assert lease(client)["holderIdentity"] == "b" and lease(client)["leaseTransitions"] == 1


def test_a_holder_that_keeps_renewing_is_never_taken_over(client):
    clock = Clock()
    holder = elector(client, "a")
    candidate = elector(client, "b", clock=clock)
    assert holder.try_acquire_or_renew()
    for _ in range(5):
        clock.now += 10.0
        assert holder.try_acquire_or_renew()  # renewTime moves: the candidate sees a change
        assert not candidate.try_acquire_or_renew()


def test_the_loop_leads_renews_and_releases(client):
    won = threading.Event()
    a = elector(
        client,
        "a",
        lease_duration=2.0,
        renew_deadline=1.0,
        retry_period=0.05,
        on_started_leading=won.set,
    )
    a.start()
    try:
        wait_until(won.is_set, what="a to lead")
        first = lease(client)["renewTime"]
        wait_until(lambda: lease(client)["renewTime"] != first, what="a renewal")
        b = elector(client, "b", lease_duration=2.0, renew_deadline=1.0, retry_period=0.05).start()
        assert not b.leading.wait(0.3)
    finally:
        a.stop()
    wait_until(b.leading.is_set, what="b to take over after the release")
    b.stop()
    assert lease(client)["holderIdentity"] == ""


class FailingAfter:
    """A client that works until ``broken`` is set, then refuses every call."""

    def __init__(self, client) -> None:
        self.client = client
        self.broken = threading.Event()

    def __getattr__(self, name):
        attribute = getattr(self.client, name)
        if not callable(attribute):
            return attribute

        def call(*args, **kwargs):
            if self.broken.is_set():
                raise ConnectionRefusedError("the API server is away")
            return attribute(*args, **kwargs)

        return call


def test_a_leader_that_cannot_renew_within_the_deadline_gives_up(client):
    flaky = FailingAfter(client)
    lost = threading.Event()
    a = elector(
        flaky, "a", lease_duration=2.0, renew_deadline=0.5, retry_period=0.05, on_lost=lost.set
    )
    a.start()
    try:
        wait_until(a.leading.is_set)
        flaky.broken.set()
        wait_until(lost.is_set, what="the leader to give up")
        assert a.lost.is_set()
    finally:
        a.stop()
    assert lease(client)["holderIdentity"] == "a"  # no release after a loss: it expires
