"""The durability check of exercise 7 counts a record as lost when no replica that can become
leader will ever serve it: an acks=1 write held only by a leader that is then replaced is lost,
even though the old leader's disk still holds it until it returns and truncates."""

from __future__ import annotations

import pytest

from kafkalab.grading import Feedback, check_durability_target
from kafkalab.grading.config_checks import DURATION_MS, SETTLE_MS, replaced_schedule, schedule
from kafkalab.sim.timed import simulate

ACKS_1 = {"acks": "1", "unclean.leader.election.enable": False}


def test_acks_1_loses_nothing_when_the_crashed_leader_is_the_last_isr_member() -> None:
    # The first failure alone, the check before the leader-replaced failure was added: acks=1
    # passes, because the crashed leader leads again with everything it acknowledged.
    r = simulate(ACKS_1, seed=0, duration_ms=DURATION_MS, settle_ms=SETTLE_MS, faults=schedule(0))
    assert not r.lost_acked
    assert r.acked / r.produced >= 0.4


def test_acks_1_loses_what_only_a_replaced_leader_held() -> None:
    r = simulate(
        ACKS_1, seed=0, duration_ms=DURATION_MS, settle_ms=SETTLE_MS, faults=replaced_schedule(0)
    )
    assert r.lost_acked and r.unclean_elections == 0


def test_the_durability_target_refuses_acks_1() -> None:
    with pytest.raises(Feedback) as err:
        check_durability_target(ACKS_1, min_acked_fraction=0.4, runs=1)
    text = str(err.value)
    assert "a follower replaced it (a clean election)" in text
    assert "no replica that can become leader will ever serve it" in text
    assert "faults=replaced_schedule(0)" in text


def test_acks_all_with_a_clean_election_meets_the_target() -> None:
    config = {"acks": "all", "min.insync.replicas": 1, "unclean.leader.election.enable": False}
    results = check_durability_target(config, min_acked_fraction=0.4, runs=1)
    assert [r.seed for r in results] == [0]
