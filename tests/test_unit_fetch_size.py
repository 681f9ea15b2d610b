"""How much a follower copies per fetch (replica.fetch.max.bytes) and how long it takes over a
slow link: what decides whether a burst leaves a follower behind long enough for the legacy
replica.lag.max.messages rule to see it."""

from __future__ import annotations

import pytest

from kafkalab import Cluster, make_config, scenarios
from kafkalab.errors import ActionError, ConfigError, ScenarioError
from kafkalab.protocol.log import RECORD_BYTES
from kafkalab.sim.timed import Fault, simulate


def _leo(c: Cluster, broker: int) -> int:
    return c.replicas_view()[broker].leo


def test_a_fetch_copies_what_fits_in_replica_fetch_max_bytes() -> None:
    c = Cluster(brokers=2, leader=1, config={"replica.fetch.max.bytes": 10 * RECORD_BYTES})
    c.produce("m", count=25, acks=1)
    leos = []
    for _ in range(3):
        c.fetch(2)
        leos.append(_leo(c, 2))
    assert leos == [10, 20, 25]


def test_a_fetch_returns_one_record_however_small_the_limit() -> None:
    """UnifiedLog.read with minOneMessage: a follower always makes progress."""
    c = Cluster(brokers=2, leader=1, config={"replica.fetch.max.bytes": 1})
    c.produce("m", count=3, acks=1)
    c.fetch(2)
    assert _leo(c, 2) == 1


def test_the_default_limit_is_one_mebibyte_of_100_byte_records() -> None:
    assert RECORD_BYTES == 100
    assert make_config({}).replica_fetch_max_bytes == 1048576
    c = Cluster(brokers=2, leader=1)
    c.produce("m", count=12000, acks=1)
    c.fetch(2)
    assert _leo(c, 2) == 1048576 // 100
    c.fetch(2)
    assert _leo(c, 2) == 12000


def test_a_bad_fetch_size_names_the_setting() -> None:
    with pytest.raises(ConfigError, match=r"replica\.fetch\.max\.bytes=0 is not allowed"):
        make_config({"replica.fetch.max.bytes": 0})


def test_the_response_limit_caps_a_fetch_when_it_is_the_smaller() -> None:
    """KIP-74: replica.fetch.response.max.bytes bounds the whole response; a fetch here asks
    for one partition, so the smaller limit applies, still at least one record."""
    config = {"replica.fetch.response.max.bytes": 10 * RECORD_BYTES}
    c = Cluster(brokers=2, leader=1, config=config)
    c.produce("m", count=25, acks=1)
    leos = []
    for _ in range(3):
        c.fetch(2)
        leos.append(_leo(c, 2))
    assert leos == [10, 20, 25]
    c = Cluster(brokers=2, leader=1, config={"replica.fetch.response.max.bytes": 0})
    c.produce("m", count=3, acks=1)
    c.fetch(2)
    assert _leo(c, 2) == 1


def test_the_default_response_limit_is_ten_mebibytes() -> None:
    assert make_config({}).replica_fetch_response_max_bytes == 10485760


def test_a_bad_response_size_names_the_setting() -> None:
    with pytest.raises(
        ConfigError, match=r"replica\.fetch\.response\.max\.bytes=-1 is not allowed"
    ):
        make_config({"replica.fetch.response.max.bytes": -1})


def _copy_time(throttle: float | None, count: int = 1000) -> int:
    """Timed mode: how long follower 2 takes to copy a burst of ``count`` records."""
    c = Cluster(brokers=2, leader=1, mode="timed", seed=1)
    c.run(for_ms=1000)
    if throttle is not None:
        c.throttle(1, 2, throttle)
    start = c.sim.now
    c.produce("b", count=count, acks=1)
    c.run(for_ms=30000, stop_when=lambda cl: _leo(cl, 2) == count)
    assert _leo(c, 2) == count
    return c.sim.now - start


def test_a_throttled_link_carries_records_at_its_bandwidth() -> None:
    fast = _copy_time(None)
    slow = _copy_time(0.1)  # 0.1 MB/s: 1000 records of 100 bytes take one second
    assert fast < 50
    assert 1000 <= slow < 1100


def test_lifting_a_throttle_restores_full_speed() -> None:
    c = Cluster(brokers=2, leader=1, mode="timed", seed=1)
    c.run(for_ms=1000)
    c.throttle(1, 2, 0.1)
    c.throttle(2, 1, None)  # either order of the two nodes names the same link
    assert not c.sim.bandwidth
    start = c.sim.now
    c.produce("b", count=1000, acks=1)
    c.run(for_ms=5000, stop_when=lambda cl: _leo(cl, 2) == 1000)
    assert c.sim.now - start < 50


def test_messages_on_a_throttled_link_keep_their_order() -> None:
    """One TCP connection: a small message waits behind a large one."""
    c = Cluster(brokers=2, leader=1, mode="timed", seed=1)
    c.run(for_ms=1000)
    c.throttle(1, 2, 0.1)
    c.produce("b", count=500, acks=1)
    c.run(for_ms=3000)
    replicated = [(e.time_ms, e.data["last"]) for e in c.trace.of_kind("replicate")]
    lasts = [last for _, last in replicated]
    assert lasts == sorted(lasts) and lasts[-1] == 499


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((1, 2, 0), r"mb_per_s=0 is not allowed"),
        ((1, 2, "fast"), r"mb_per_s='fast' is not allowed"),
        ((1, 1, 1.0), r"are the same node"),
        ((1, 9, 1.0), r"node 9 does not exist"),
    ],
)
def test_bad_throttles_are_refused_with_what_is_allowed(args: tuple, match: str) -> None:
    c = Cluster(brokers=2, leader=1, mode="timed")
    with pytest.raises(ActionError, match=match):
        c.throttle(*args)


def test_a_scenario_can_throttle_a_link() -> None:
    s = scenarios.parse(
        "name: slow\nbrokers: 2\nleader: 1\nsteps:\n"
        "  - throttle: [1, 2, 0.5]\n  - produce: m1\n  - throttle: [1, 2, null]\n"
    )
    c, _ = scenarios.replay(s, checks=False)
    assert [e.data["mb_per_s"] for e in c.trace.of_kind("throttle")] == [0.5, None]
    with pytest.raises(ScenarioError, match=r"throttle\): give two nodes and megabytes"):
        scenarios.parse("name: bad\nsteps:\n  - throttle: [1, 2]\n")


def _burst_behind_a_slow_link(preset: str) -> list[tuple[int, str, list[int]]]:
    faults = [
        Fault(1000, "throttle", (2, 1, 0.1)),
        Fault(1000, "throttle", (2, 3, 0.1)),
        Fault(2000, "burst", (8000,)),
        Fault(11000, "throttle", (2, 1, None)),
        Fault(11000, "throttle", (2, 3, None)),
    ]
    _, c = simulate(
        make_config({"preset": preset, "acks": "1"}),
        seed=1,
        duration_ms=20000,
        settle_ms=5000,
        faults=faults,
        keep_cluster=True,
    )
    return [(e.time_ms, e.data["reason"], e.data["isr"]) for e in c.trace.of_kind("alter_isr")]


def test_a_burst_behind_a_slow_link_flaps_the_isr_only_under_the_legacy_rule() -> None:
    """Follower 2 copies 8000 records at 1000 a second. The 0.8 rule drops it at the next
    check (every replica.lag.time.max.ms before 0.10.2: more than 4000 behind although it
    fetches all the time) and takes it back once it has caught up; the time rule (0.9 and
    later) leaves it in the ISR."""
    legacy = _burst_behind_a_slow_link("0.8")
    assert [(reason, isr) for _, reason, isr in legacy] == [
        ("shrink", [1, 3]),
        ("expand", [1, 3, 2]),
    ]
    shrink, expand = legacy[0][0], legacy[1][0]
    assert 2000 < shrink <= 10000 and shrink < expand <= 11000
    assert _burst_behind_a_slow_link("0.10") == []


def test_every_throttle_is_lifted_when_the_writes_stop() -> None:
    """The recovery at the end of a timed run gives every link its full speed back, brokers'
    and ZooKeeper's alike (host names of both kinds, sorted the same way every run)."""
    faults = [Fault(500, "throttle", (1, "zk", 0.1)), Fault(500, "throttle", (1, 2, 0.2))]
    _, c = simulate(seed=2, duration_ms=2000, settle_ms=1000, faults=faults, keep_cluster=True)
    assert not c.sim.bandwidth
    lifted = [e.data for e in c.trace.of_kind("throttle") if e.data["mb_per_s"] is None]
    assert [(d["a"], d["b"]) for d in lifted] == [(1, 2), (1, "zk")]
