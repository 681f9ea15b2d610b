"""Property: whatever a transactional producer does (commit, abort, crash mid-transaction) and
whatever happens to the partition leader, a read_committed consumer never reads an aborted
record and reads every committed transaction whole; read_uncommitted sees the aborted ones."""

from __future__ import annotations

import random

import pytest

from kafkalab import Cluster
from kafkalab.check.invariants import aborted_ranges


def _committed_values(cluster: Cluster, tp: str) -> tuple[list[str], list[str]]:
    """Values of committed and of aborted transactions, from the leader's final log."""
    leader = cluster.partition_states()[tp].leader
    records = cluster.sim.actors[leader].partitions[tp].log.records
    open_txn: dict[int, list[str]] = {}
    committed: list[str] = []
    aborted: list[str] = []
    for rec in records:
        if rec.control:
            values = open_txn.pop(rec.producer_id, [])
            (committed if rec.control == "COMMIT" else aborted).extend(values)
        elif rec.transactional:
            open_txn.setdefault(rec.producer_id, []).append(rec.value)
    return committed, aborted


def _random_run(seed: int) -> Cluster:
    rng = random.Random(seed)
    c = Cluster(
        brokers=3,
        transactional_ids=["tx"],
        replication="auto",
        config={"min.insync.replicas": 2},
        seed=seed,
    )
    c.producer("p", transactional_id="tx")
    n = 0
    for _ in range(rng.randrange(3, 7)):
        c.begin("p")
        for _ in range(rng.randrange(1, 4)):
            n += 1
            c.produce(f"v{n}", producer="p")
        roll = rng.random()
        if roll < 0.45:
            c.commit("p")
        elif roll < 0.8:
            c.abort("p")
        else:  # the application dies mid-transaction; its successor fences and aborts it
            c.crash("p")
            c.restart("p")
        if rng.random() < 0.3:  # the data partition's leader fails over
            leader = c.leader
            c.crash(leader)
            c.advance(20000)
            c.restart(leader)
            c.advance(1000)
    c.advance(1000)
    return c


@pytest.mark.parametrize("seed", range(12))
def test_read_committed_never_sees_aborted_records_and_sees_committed_ones_whole(seed):
    c = _random_run(seed)
    c.consumer("rc", isolation_level="read_committed", auto_offset_reset="earliest")
    c.consumer("ru", isolation_level="read_uncommitted", auto_offset_reset="earliest")
    c.poll("rc")
    c.poll("ru")
    report = c.report()
    committed, aborted = _committed_values(c, "demo-0")
    replay = f"replay: tests/test_txn_properties.py::_random_run({seed})"
    assert report.aborted_reads == [], replay
    assert report.consumed.get("rc", []) == committed, replay
    assert set(aborted) <= set(report.consumed.get("ru", [])), replay
    assert aborted_ranges(c).get("demo-0", []) or not aborted, replay
    assert report.lost_acked == [], replay
