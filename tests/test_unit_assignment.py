"""Unit tests of replica assignment (Kafka's AdminUtils.assignReplicasToBrokers).

The fixed-start examples are the ones in Kafka's AdminUtils doc comment and AdminRackAwareTest,
with the expected replica lists re-derived by hand from the algorithm; the random-start tests of
AdminRackAwareTest become checks over several seeds; hypothesis covers the general properties.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalab.errors import ConfigError
from kafkalab.protocol.assignment import assign_replicas, rack_alternated

SEEDS = range(20)

# AdminRackAwareTest's usual layout: two brokers on each of three racks.
EVEN_RACKS = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


def check_distribution(
    assignment: dict[int, list[int]],
    racks: dict[int, str],
    partitions: int,
    replication_factor: int,
    *,
    rack_aware: bool = True,
    leaders_even: bool = True,
    replicas_even: bool = True,
) -> None:
    """The checks of Kafka's RackAwareTest.checkReplicaDistribution."""
    assert sorted(assignment) == list(range(partitions))
    for replicas in assignment.values():
        assert len(replicas) == replication_factor
        assert len(set(replicas)) == len(replicas), "two replicas of a partition on one broker"
    if rack_aware:
        for partition, replicas in assignment.items():
            assert len({racks[b] for b in replicas}) == replication_factor, partition
    if leaders_even:
        leaders = Counter(replicas[0] for replicas in assignment.values())
        assert sorted(leaders.values()) == [partitions // len(racks)] * len(racks)
    if replicas_even:
        held = Counter(b for replicas in assignment.values() for b in replicas)
        per_broker = partitions * replication_factor // len(racks)
        assert sorted(held.values()) == [per_broker] * len(racks)


# ---- rack-alternated broker list (getRackAlternatedBrokerList) -------------------------------


def test_rack_alternated_example_from_the_doc_comment_with_uneven_racks():
    racks = {0: "rack1", 1: "rack1", 2: "rack1", 3: "rack2", 4: "rack3", 5: "rack3"}
    assert rack_alternated([0, 1, 2, 3, 4, 5], racks) == [0, 3, 4, 1, 5, 2]


def test_rack_alternated_example_with_three_full_racks():
    racks = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated(range(9), racks) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_rack_alternated_from_admin_rack_aware_test():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated(list(racks), racks) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated([0, 1, 2, 3, 4], racks) == [0, 3, 1, 4, 2]


def test_rack_alternated_sorts_racks_by_name_and_brokers_by_id_whatever_the_input_order():
    racks = {7: "b", 2: "a", 9: "a", 4: "b", 1: "c"}
    assert rack_alternated([9, 7, 4, 2, 1], racks) == [2, 4, 1, 9, 7]
    assert rack_alternated([1, 2, 4, 7, 9], racks) == [2, 4, 1, 9, 7]


def test_rack_alternated_of_no_brokers_is_empty():
    assert rack_alternated([], {}) == []


def test_rack_alternated_needs_a_rack_for_every_broker():
    with pytest.raises(ConfigError, match=r"brokers \[2\] have no rack"):
        rack_alternated([0, 1, 2], {0: "r1", 1: "r2"})


# ---- rack-unaware examples (assignReplicasToBrokersRackUnaware) ------------------------------


def test_doc_comment_table_five_brokers_ten_partitions_rf3():
    """The table in AdminUtils' doc comment: for each broker, the partitions whose 1st, 2nd and
    3rd replica it holds (start index 0, shift 0)."""
    table = {
        0: (["p0", "p5"], ["p4", "p8"], ["p3", "p7"]),
        1: (["p1", "p6"], ["p0", "p9"], ["p4", "p8"]),
        2: (["p2", "p7"], ["p1", "p5"], ["p0", "p9"]),
        3: (["p3", "p8"], ["p2", "p6"], ["p1", "p5"]),
        4: (["p4", "p9"], ["p3", "p7"], ["p2", "p6"]),
    }
    assignment = assign_replicas(range(5), 10, 3, random.Random(0), start_index=0)
    for broker, by_position in table.items():
        for position, expected in enumerate(by_position):
            held = [f"p{p}" for p, replicas in assignment.items() if replicas[position] == broker]
            assert held == expected, (broker, position)


def test_replica_assignment_from_admin_rack_aware_test():
    """AdminRackAwareTest.testReplicaAssignment: fixedStartIndex 0, brokers 0-4, no racks."""
    expected = {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }
    assert assign_replicas([0, 1, 2, 3, 4], 10, 3, random.Random(0), start_index=0) == expected


def test_start_index_and_shift_apart():
    # Leaders start at position 2; followers start 1 + (4 % 3) = 2 places after the leader,
    # and after the wrap (partition 4) 1 + (5 % 3) = 3 places after.
    assignment = assign_replicas(
        [10, 20, 30, 40], 6, 2, random.Random(0), start_index=2, next_replica_shift=4
    )
    assert assignment == {
        0: [30, 10],
        1: [40, 20],
        2: [10, 30],
        3: [20, 40],
        4: [30, 20],
        5: [40, 30],
    }


def test_unaware_uses_the_broker_order_given():
    assignment = assign_replicas([5, 3, 9], 3, 2, random.Random(0), start_index=0)
    assert assignment == {0: [5, 3], 1: [3, 9], 2: [9, 5]}


def test_single_broker():
    assert assign_replicas([7], 3, 1, random.Random(0)) == {0: [7], 1: [7], 2: [7]}


# ---- rack-aware examples (assignReplicasToBrokersRackAware) ----------------------------------


def test_rack_aware_example_from_the_doc_comment_and_admin_rack_aware_test():
    """6 brokers on 3 racks, RF 3, start 0: partitions 0-5 walk the rack-alternated list
    0, 3, 1, 5, 4, 2; partition 6 starts the second lap with shifted followers."""
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assignment = assign_replicas(list(racks), 7, 3, random.Random(0), racks=racks, start_index=0)
    assert assignment == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }


def test_assignment_with_rack_aware_start_index_2():
    """AdminRackAwareTest.testAssignmentWithRackAware (fixedStartIndex 2); the alternated list
    is 0, 1, 3, 5, 2, 4. Partition 0: leader 3 (rack3), then 2 (rack2); 4 is skipped because
    rack3 already has a replica; then 0 (rack1)."""
    assignment = assign_replicas(range(6), 6, 3, random.Random(0), racks=EVEN_RACKS, start_index=2)
    assert assignment == {
        0: [3, 2, 0],
        1: [5, 4, 1],
        2: [2, 0, 3],
        3: [4, 1, 5],
        4: [0, 3, 2],
        5: [1, 5, 4],
    }
    check_distribution(assignment, EVEN_RACKS, 6, 3)


def test_assignment_with_rack_aware_uneven_replicas():
    """AdminRackAwareTest.testAssignmentWithRackAwareWithUnevenReplicas: 13 partitions, start 0;
    partition 12 is on the third lap (shift 2)."""
    assignment = assign_replicas(range(6), 13, 3, random.Random(0), racks=EVEN_RACKS, start_index=0)
    assert assignment[0] == [0, 1, 3]
    assert assignment[6] == [0, 2, 4]
    assert assignment[12] == [0, 3, 2]
    check_distribution(assignment, EVEN_RACKS, 13, 3, leaders_even=False, replicas_even=False)


def test_skip_broker_with_replica_already_assigned():
    """AdminRackAwareTest.testSkipBrokerWithReplicaAlreadyAssigned: RF 4 over 3 racks, start 2.
    Once every rack has a replica, brokers already holding one are skipped instead."""
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    assignment = assign_replicas(range(5), 6, 4, random.Random(0), racks=racks, start_index=2)
    assert assignment == {
        0: [2, 0, 1, 3],
        1: [3, 1, 2, 4],
        2: [4, 2, 1, 3],
        3: [0, 1, 2, 3],
        4: [1, 4, 2, 3],
        5: [2, 4, 1, 3],
    }
    check_distribution(
        assignment, racks, 6, 4, rack_aware=False, leaders_even=False, replicas_even=False
    )


@pytest.mark.parametrize(
    ("racks", "partitions", "rf", "leaders_even", "replicas_even"),
    [
        pytest.param(EVEN_RACKS, 6, 3, True, True, id="random-start-index"),
        pytest.param(
            {0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"},
            12,
            3,
            True,
            False,
            id="uneven-racks",
        ),
        pytest.param(EVEN_RACKS, 12, 2, True, True, id="2-replicas"),
        pytest.param(EVEN_RACKS, 6, 2, True, True, id="2-replicas-6-partitions"),
        pytest.param(
            {0: "rack1", 1: "rack2", 4: "rack3"}, 3, 2, True, True, id="2-replicas-3-brokers"
        ),
        pytest.param(
            {6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"},
            12,
            2,
            True,
            True,
            id="broker-ids-6-to-11",
        ),
        pytest.param(
            {
                0: "rack1",
                1: "rack2",
                2: "rack2",
                3: "rack3",
                4: "rack3",
                5: "rack1",
                6: "rack1",
                7: "rack2",
                8: "rack2",
                9: "rack3",
                10: "rack1",
                11: "rack3",
            },
            96,
            3,
            True,
            True,
            id="96-partitions",
        ),
    ],
)
@pytest.mark.parametrize("seed", SEEDS)
def test_rack_aware_distribution_with_random_start(
    seed, racks, partitions, rf, leaders_even, replicas_even
):
    """AdminRackAwareTest's random-start cases, over several seeds."""
    assignment = assign_replicas(sorted(racks), partitions, rf, random.Random(seed), racks=racks)
    check_distribution(
        assignment, racks, partitions, rf, leaders_even=leaders_even, replicas_even=replicas_even
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_more_replicas_than_racks_puts_a_replica_on_every_rack(seed):
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    assignment = assign_replicas(range(6), 6, 5, random.Random(seed), racks=racks)
    for replicas in assignment.values():
        assert len(replicas) == len(set(replicas)) == 5
        assert {racks[b] for b in replicas} == {"rack1", "rack2", "rack3"}


@pytest.mark.parametrize("seed", SEEDS)
def test_less_replicas_than_racks_puts_each_on_its_own_rack(seed):
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    assignment = assign_replicas(range(6), 6, 2, random.Random(seed), racks=racks)
    for replicas in assignment.values():
        assert len({racks[b] for b in replicas}) == 2


@pytest.mark.parametrize("seed", SEEDS)
def test_single_rack(seed):
    racks = dict.fromkeys(range(6), "rack1")
    assignment = assign_replicas(range(6), 6, 3, random.Random(seed), racks=racks)
    check_distribution(assignment, racks, 6, 3, rack_aware=False)


# ---- which mode, and errors ------------------------------------------------------------------


def test_racks_naming_no_listed_broker_means_rack_unaware():
    unaware = assign_replicas(range(4), 8, 2, random.Random(3))
    assert assign_replicas(range(4), 8, 2, random.Random(3), racks={}) == unaware
    assert assign_replicas(range(4), 8, 2, random.Random(3), racks={99: "r"}) == unaware


def test_racks_of_unlisted_brokers_are_ignored():
    racks = {**EVEN_RACKS, 42: "rack9"}
    assert assign_replicas(
        range(6), 6, 3, random.Random(0), racks=racks, start_index=2
    ) == assign_replicas(range(6), 6, 3, random.Random(0), racks=EVEN_RACKS, start_index=2)


def test_some_brokers_without_rack_is_an_error():
    with pytest.raises(ConfigError, match=r"Not all brokers have rack information.*\[2, 3\]"):
        assign_replicas(range(4), 4, 2, random.Random(0), racks={0: "r1", 1: "r2"})


@pytest.mark.parametrize(
    ("brokers", "partitions", "rf", "kwargs", "message"),
    [
        (range(5), 10, 0, {}, r"replication.factor=0 is not allowed: use a whole number >= 1"),
        (range(5), 10, 6, {}, r"replication.factor=6 is not allowed: use 1 to 5"),
        (range(5), 0, 3, {}, r"partitions=0 is not allowed: use a whole number >= 1"),
        (range(5), -2, 3, {}, r"partitions=-2 is not allowed"),
        (range(5), 2.5, 3, {}, r"partitions=2.5 is not allowed"),
        (range(5), True, 1, {}, r"partitions=True is not allowed"),
        ([1, 2, 2, 3, 1], 3, 2, {}, r"broker ids \[1, 2\] appear more than once"),
        ([], 1, 1, {}, r"brokers=\[\] is not allowed"),
        (range(3), 3, 2, {"start_index": -1}, r"start_index=-1 is not allowed: use .* >= 0"),
        (range(3), 3, 2, {"next_replica_shift": -3}, r"next_replica_shift=-3 is not allowed"),
    ],
)
def test_bad_arguments_raise_config_error_naming_the_value(
    brokers, partitions, rf, kwargs, message
):
    with pytest.raises(ConfigError, match=message):
        assign_replicas(brokers, partitions, rf, random.Random(0), **kwargs)


# ---- randomness ------------------------------------------------------------------------------


@pytest.mark.parametrize("racks", [None, EVEN_RACKS])
@pytest.mark.parametrize("seed", SEEDS)
def test_random_start_index_then_shift_are_drawn_from_rng(seed, racks):
    draws = random.Random(seed)
    start, shift = draws.randrange(6), draws.randrange(6)
    rng = random.Random(seed)
    assignment = assign_replicas(range(6), 9, 3, rng, racks=racks)
    assert assignment == assign_replicas(
        range(6), 9, 3, random.Random(-1), racks=racks, start_index=start, next_replica_shift=shift
    )
    assert rng.getstate() == draws.getstate()  # exactly two draws


def test_fixed_start_index_fixes_the_shift_too_and_draws_nothing():
    rng = random.Random(5)
    state = rng.getstate()
    assert assign_replicas(range(5), 10, 3, rng, start_index=3) == assign_replicas(
        range(5), 10, 3, random.Random(0), start_index=3, next_replica_shift=3
    )
    assert rng.getstate() == state


def test_only_the_shift_fixed_draws_the_start_index():
    rng = random.Random(8)
    start = random.Random(8).randrange(5)
    assert assign_replicas(range(5), 10, 3, rng, next_replica_shift=1) == assign_replicas(
        range(5), 10, 3, random.Random(0), start_index=start, next_replica_shift=1
    )


def test_start_index_beyond_the_broker_count_wraps_as_in_kafka():
    assert assign_replicas(range(5), 10, 3, random.Random(0), start_index=7) == assign_replicas(
        range(5), 10, 3, random.Random(0), start_index=2, next_replica_shift=7
    )


# ---- properties ------------------------------------------------------------------------------


@st.composite
def clusters(draw):
    brokers = draw(st.lists(st.integers(0, 50), min_size=1, max_size=12, unique=True))
    rf = draw(st.integers(1, len(brokers)))
    partitions = draw(st.integers(1, 40))
    racks = None
    if draw(st.booleans()):
        names = st.sampled_from("abcdef")
        racks = {b: draw(names) for b in brokers}
    return brokers, partitions, rf, racks


@given(clusters(), st.integers(0, 2**32))
def test_properties_of_every_assignment(cluster, seed):
    brokers, partitions, rf, racks = cluster
    assignment = assign_replicas(brokers, partitions, rf, random.Random(seed), racks=racks)

    assert assignment == assign_replicas(brokers, partitions, rf, random.Random(seed), racks=racks)
    assert list(assignment) == list(range(partitions))
    for replicas in assignment.values():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= set(brokers)

    leaders = Counter(replicas[0] for replicas in assignment.values())
    counts = [leaders.get(b, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1
    if partitions % len(brokers) == 0:
        assert len(set(counts)) == 1
        if racks is None:
            held = Counter(b for replicas in assignment.values() for b in replicas)
            assert {held[b] for b in brokers} == {partitions * rf // len(brokers)}

    if racks is not None:
        num_racks = len(set(racks.values()))
        for replicas in assignment.values():
            on = {racks[b] for b in replicas}
            if rf <= num_racks:
                assert len(on) == rf
            else:
                assert len(on) == num_racks


@given(
    st.lists(st.integers(0, 50), min_size=2, max_size=10, unique=True),
    st.integers(1, 30),
    st.data(),
)
def test_one_rack_per_broker_matches_rack_unaware_on_sorted_ids(brokers, partitions, data):
    """With every broker on its own rack no broker is ever skipped, so the rack-aware walk is
    the rack-unaware one over the brokers in id order."""
    rf = data.draw(st.integers(1, len(brokers)))
    start = data.draw(st.integers(0, 20))
    shift = data.draw(st.integers(0, 20))
    racks = {b: f"rack-{b:03d}" for b in brokers}
    rng = random.Random(0)
    aware = assign_replicas(
        brokers, partitions, rf, rng, racks=racks, start_index=start, next_replica_shift=shift
    )
    unaware = assign_replicas(
        sorted(brokers), partitions, rf, rng, start_index=start, next_replica_shift=shift
    )
    assert aware == unaware
