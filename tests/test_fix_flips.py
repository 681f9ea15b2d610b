"""Every declared fix (kafkalab/fixes.py) changes what the simulator does: flipped on its own,
from the defaults and from a preset that has it the other way, it changes a small deterministic
scenario's trace or outcome. A switch whose flip changes nothing fails here, by name.

Adding a switch: its ``Fix`` in kafkalab/fixes.py, and here one entry of ``FLIPS``: a probe (a
catalog scenario, or a set-up of the switch's own release test that takes settings) and where
to flip it from. Each probe's Kafka source is cited by the test it comes from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from kafkalab import Cluster, scenarios
from kafkalab.errors import KafkalabError
from kafkalab.fixes import FIXES
from tests import (
    test_controller,
    test_elect_leaders,
    test_fidelity,
    test_isr_history,
    test_kraft_releases,
    test_log_hw_releases,
    test_txn_offset_fetch,
    test_unit_controller,
    test_unit_fetch_truncation,
    test_unit_producer_retries,
    test_zk_registration,
)

Settings = Mapping[str, Any]


@dataclass(frozen=True)
class Flip:
    """Flip the switch from ``base`` (the defaults, or a preset, with the settings the probe
    needs) and compare what ``probe`` returns."""

    probe: Callable[[Settings], object]
    base: Settings = field(default_factory=dict)
    name: str = ""


def catalog(name: str, **base: Any) -> Flip:
    """A catalog scenario replayed (its own config, then ``base``, then the switch): the
    digest of its trace."""

    def probe(settings: Settings) -> object:
        try:
            cluster, _ = scenarios.replay(scenarios.get(name), settings, checks=False)
        except KafkalabError as err:  # a step the other side allowed is an outcome too
            return f"refused: {err}"
        return cluster.trace.digest()

    return Flip(probe, base, name)


def cluster_of(make: Callable[[Settings], Cluster], name: str, **base: Any) -> Flip:
    return Flip(lambda s: make(s).trace.digest(), base, name)


def _delete_records(settings: Settings) -> object:
    c = Cluster(brokers=2, config=settings)
    c.produce(values=["m0", "m1"], acks="all")
    c.sync()
    try:
        c.delete_records(1)
    except KafkalabError as err:
        return str(err)
    return c.replica(1).log_start_offset


def _retention(settings: Settings) -> object:
    return test_log_hw_releases._lagging_leader(settings, retention_bytes=200).trace.digest()


FLIPS: dict[str, tuple[Flip, ...]] = {
    "lag_time_from_caught_up": (catalog("stuck-follower-leaves-isr"),),
    "isr_check_half_lag": (catalog("follower-rejoins-isr"),),
    "caught_up_from_previous_fetch": (
        cluster_of(
            test_isr_history.one_batch_behind, "one_batch_behind", replica_lag_time_max_ms=10000
        ),
    ),
    "isr_keeps_follower_at_leo": (catalog("stuck-follower-leaves-isr"),),
    "isr_join_after_epoch_start": (
        Flip(test_isr_history.joins_below_epoch_start, name="joins_below_epoch_start"),
    ),
    "isr_join_only_eligible": (
        Flip(test_isr_history.dead_follower_joins, name="dead_follower_joins"),
    ),
    "reset_fetch_time_by_isr": (
        Flip(test_isr_history.caught_up_at_reelection, name="caught_up_at_reelection"),
    ),
    "make_leader_resets_caught_up": (
        catalog("not-enough-replicas-after-append"),
        Flip(
            lambda s: test_fidelity._isr_check_after_taking_over(s, follower_3_fetches=False),
            {"replica_lag_time_max_ms": 10000},
            "_isr_check_after_taking_over",
        ),
    ),
    "reelected_leader_forgets_leos": (
        Flip(
            lambda s: test_fidelity.reelected_without_a_follower(s).partitions["demo-0"].log.hw,
            name="reelected_without_a_follower",
        ),
        Flip(
            lambda s: test_fidelity.reelected_without_a_follower(s).partitions["demo-0"].log.hw,
            {"preset": "0.8"},
            "reelected_without_a_follower",
        ),
    ),
    "reset_followers_only_on_new_epoch": (
        Flip(test_fidelity._kraft_isr_growth, name="_kraft_isr_growth"),
    ),
    "isr_keeps_last_member": (
        cluster_of(
            test_isr_history.both_crashed, "both_crashed", unclean_leader_election_enable=True
        ),
    ),
    "hw_read_before_fetch_update": (catalog("safe-leader-failover"),),
    "append_completes_fetches_after_hw": (
        Flip(test_log_hw_releases.hw_sent_to_a_waiting_fetch, name="hw_sent_to_a_waiting_fetch"),
    ),
    "hw_floor_at_log_start": (
        Flip(test_log_hw_releases.restarted_log_start_and_hw, name="restarted_log_start_and_hw"),
    ),
    "kip107": (Flip(_delete_records, name="delete_records"),),
    "follower_fetch_completes_on_hw_change": (
        catalog("acks1-leader-crash-loss"),
        catalog("acks1-leader-crash-loss", preset="2.4"),
    ),
    "retention_bounded_by_hw": (Flip(_retention, name="_lagging_leader"),),
    "leader_epochs": (
        catalog("acks1-leader-crash-loss"),
        catalog("kip101-divergence"),  # the 0.10 preset
    ),
    "leader_epoch_on_election": (
        Flip(
            lambda s: test_fidelity.elected_in_epoch_3(s).partitions["demo-0"].log.epochs,
            name="elected_in_epoch_3",
        ),
    ),
    "out_of_range_halts": (
        catalog("kip101-loss", unclean_leader_election_enable=False),  # the 0.10 preset
        catalog("kip101-loss", unclean_leader_election_enable=False, preset="1.1"),
    ),
    "kip279": (
        catalog("acks1-leader-crash-loss"),
        catalog("kip279-divergence"),  # the 0.11 preset
    ),
    "kip320": (
        catalog("acks1-leader-crash-loss"),
        catalog("np-follower-cut-from-zk", preset="2.7"),
    ),
    "truncate_after_missed_epoch": (
        catalog("acks1-leader-crash-loss"),
        Flip(
            lambda s: test_unit_fetch_truncation.truncates_in_a_new_epoch(s, new_epoch=3),
            {"preset": "2.0"},
            "truncates_in_a_new_epoch",
        ),
    ),
    "truncation_on_fetch": (catalog("acks1-leader-crash-loss"),),
    "diverging_fetch_skips_hw": (catalog("acks1-leader-crash-loss"),),
    "broker_epoch": (
        catalog("kip101-divergence"),  # the 0.10 preset
        Flip(test_unit_controller.isr_after_a_fast_bounce, name="isr_after_a_fast_bounce"),
    ),
    "kip360": (catalog("txn-hanging-transaction"),),
    "retry_backoff_exponential": (catalog("retry-reorder"),),
    "retry_backoff_skips_new_leader": (
        Flip(
            test_unit_producer_retries.resend_time_to_a_new_leader,
            name="resend_time_to_a_new_leader",
        ),
    ),
    "kraft_elect_leaders": (
        Flip(test_elect_leaders.unclean_request, {"controller_mode": "kraft"}, "unclean_request"),
    ),
    "elect_leaders_unclean": (Flip(test_elect_leaders.unclean_request, name="unclean_request"),),
    "zk_registration_waits_for_old_session": (
        cluster_of(test_zk_registration.power_cycled_leader, "power_cycled_leader"),
        cluster_of(test_zk_registration.power_cycled_leader, "power_cycled_leader", preset="0.8"),
    ),
    "offset_fetch_require_stable": (
        cluster_of(
            test_txn_offset_fetch.open_transaction_with_offsets, "open_transaction_with_offsets"
        ),
    ),
    "idempotence_five_in_flight": (catalog("txn-open-stalls-lso"),),
    "unknown_producer_id_error": (
        catalog("txn-hanging-transaction"),
        Flip(
            test_fidelity.unknown_producer_at_sequence_4,
            {"preset": "2.4"},
            "unknown_producer_at_sequence_4",
        ),
    ),
    "invalid_producer_epoch_abortable": (catalog("txn-zombie-fencing"),),
    "controlled_shutdown_backoff_after_last_attempt": (
        Flip(
            lambda s: test_controller.refused_shutdown_waits(**s)[1],
            name="refused_shutdown_waits",
        ),
        Flip(
            lambda s: test_controller.refused_shutdown_waits(**s)[1],
            {"preset": "3.0"},
            "refused_shutdown_waits",
        ),
    ),
    "alter_isr": (catalog("acks1-leader-crash-loss"),),
    "isr_change_propagation": (
        catalog("controller-failover"),
        catalog("isr-flapping-legacy", preset="2.6"),
    ),
    "controller_failover_offlines_replicas": (catalog("controller-failover"),),
    "zk_writes_fenced_by_controller_epoch": (
        Flip(
            lambda s: test_fidelity._zombie_write(s["zk_writes_fenced_by_controller_epoch"]),
            name="_zombie_write",
        ),
    ),
    "kraft_unclean_election": (
        catalog("kraft-elr-recovery"),
        catalog("unclean-election-loss", controller_mode="kraft"),
    ),
    "kraft_check_quorum": (
        catalog("kraft-elr-recovery"),
        cluster_of(
            lambda s: test_kraft_releases.cut_off_active_controller(s)[0],
            "cut_off_active_controller",
        ),
    ),
    "kraft_leader_balancing": (
        catalog("kraft-elr-recovery"),
        catalog("preferred-leader-rebalance", controller_mode="kraft"),
    ),
    "hw_includes_caught_up_followers": (
        Flip(
            test_fidelity.hw_with_a_dead_caught_up_follower,
            {"kafka_15021": False},
            "hw_with_a_dead_caught_up_follower",
        ),
        Flip(
            test_fidelity.hw_with_a_dead_caught_up_follower,
            {"preset": "0.10"},
            "hw_with_a_dead_caught_up_follower",
        ),
    ),
    "kafka_15021": (
        catalog("kraft-elr-recovery"),
        Flip(
            lambda s: (
                test_fidelity._kraft_leader(s["kafka_15021"], shutting_down=(3,), epoch3=5)
                .partitions["demo-0"]
                .log.hw
            ),
            name="_kraft_leader",
        ),
    ),
    "hw_freeze_under_min_isr": (
        catalog("not-enough-replicas-after-append"),
        cluster_of(test_isr_history.min_isr_above_the_replicas, "min_isr_above_the_replicas"),
    ),
}


def test_every_fix_has_a_flip_and_every_flip_a_fix() -> None:
    declared = [fix.switch for fix in FIXES]
    missing = [s for s in declared if not FLIPS.get(s)]
    assert not missing, f"no scenario shows these switches changing anything: {missing}"
    assert sorted(FLIPS) == sorted(declared), "FLIPS names a switch kafkalab.fixes does not"


def test_every_fix_is_flipped_from_the_defaults_or_from_a_preset_that_has_it() -> None:
    """A fix on today is flipped from the defaults (and the settings its probe needs); one
    Kafka later removed, from a preset that had it."""
    for fix in FIXES:
        presets = [_preset(flip) for flip in FLIPS[fix.switch]]
        if fix.default:
            assert None in presets, f"{fix.switch}: flip it from the defaults too"
        else:
            had = [p for p in presets if p is not None and fix.value_in(p)]
            assert had, f"{fix.switch}: flip it from a preset that has it too"


def _preset(flip: Flip) -> str | None:
    """The preset a flip starts from: its base's, else its catalog scenario's."""
    if "preset" in flip.base:
        return flip.base["preset"]
    if flip.name in scenarios.catalog():
        return scenarios.get(flip.name).config.get("preset")
    return None


@pytest.mark.parametrize(
    ("switch", "flip"),
    [(s, f) for s, flips in FLIPS.items() for f in flips],
    ids=lambda x: x if isinstance(x, str) else f"{x.name}{dict(x.base) or ''}",
)
def test_flipping_a_fix_changes_behaviour(switch: str, flip: Flip) -> None:
    on = flip.probe({**flip.base, switch: True})
    off = flip.probe({**flip.base, switch: False})
    where = dict(flip.base) or "the defaults"
    assert on != off, f"{switch}: flipped from {where}, {flip.name} does the same either way"
