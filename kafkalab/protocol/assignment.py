"""Replica assignment: which brokers hold the replicas of each partition of a new topic.

When a topic is created without an explicit assignment, Kafka picks the replicas itself with
``AdminUtils.assignReplicasToBrokers`` (``core/src/main/scala/kafka/admin/AdminUtils.scala`` up
to 2.8, ``server-common/src/main/java/org/apache/kafka/admin/AdminUtils.java`` in 3.x). This
module follows that algorithm step for step, so the same inputs give the same replica lists
as Kafka:

=================================  ==========================================================
kafkalab                           Kafka (``AdminUtils``)
=================================  ==========================================================
:func:`assign_replicas`            ``assignReplicasToBrokers``
``_assign_rack_unaware``           ``assignReplicasToBrokersRackUnaware``
``_assign_rack_aware``             ``assignReplicasToBrokersRackAware``
:func:`rack_alternated`            ``getRackAlternatedBrokerList`` (with ``getInverseMap``)
``_replica_index``                 ``replicaIndex``
=================================  ==========================================================

The module is pure: the only randomness is drawn from the ``random.Random`` the caller passes
in, so a seeded generator always gives the same assignment.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence

from kafkalab.errors import ConfigError

__all__ = ["assign_replicas", "rack_alternated"]


def assign_replicas(
    brokers: Sequence[int],
    partitions: object,
    replication_factor: object,
    rng: random.Random,
    *,
    racks: Mapping[int, str] | None = None,
    start_index: object = None,
    next_replica_shift: object = None,
) -> dict[int, list[int]]:
    """Choose the replicas of partitions ``0 .. partitions-1``, as Kafka's
    ``AdminUtils.assignReplicasToBrokers`` does. Returns partition -> replica list; the first
    replica of each list is the partition's preferred leader.

    **What it aims for.** Every broker leads about the same number of partitions and holds
    about the same number of replicas; the followers of the partitions that one broker leads
    are spread over the other brokers rather than always landing on the same neighbour; and,
    when brokers have racks, the replicas of a partition sit on different racks where possible.

    **Without racks** (``assignReplicasToBrokersRackUnaware``). Leaders go round-robin through
    ``brokers`` in the order given (Kafka's callers pass them sorted by id), beginning at
    position ``start_index``: partition ``p`` is led by ``brokers[(p + start_index) % n]``.
    The follower ``j`` (0-based) sits ``1 + (shift + j) % (n - 1)`` positions after the leader
    (``replicaIndex``), so followers never repeat the leader or each other. ``shift`` starts at
    ``next_replica_shift`` and grows by one each time the leaders wrap round the broker list
    (at partitions n, 2n, ...), so the second lap pairs leaders with different followers.

    Kafka's own example, 5 brokers, 10 partitions, RF 3, start index 0 and shift 0::

        p0 -> 0 1 2    p5 -> 0 2 3
        p1 -> 1 2 3    p6 -> 1 3 4
        p2 -> 2 3 4    p7 -> 2 4 0
        p3 -> 3 4 0    p8 -> 3 0 1
        p4 -> 4 0 1    p9 -> 4 1 2

    **With racks** (``assignReplicasToBrokersRackAware``). The brokers are first put in
    rack-alternated order (:func:`rack_alternated`), and leaders go round-robin through that
    list. Followers are taken by walking the same list from the leader with
    ``replicaIndex(first, shift * number_of_racks, k, n)`` for k = 0, 1, 2, ..., skipping a
    broker whose rack already holds a replica of this partition (while some rack holds none)
    or which already holds one (while some broker holds none). Hence with RF <= number of racks
    every replica is on its own rack, and with RF >= number of racks every rack gets one.

    **Random start.** As in Kafka, the start index and the shift are each drawn at random
    (here ``rng.randrange(n)``, start index first) unless given. Kafka has one knob,
    ``fixedStartIndex``, which fixes both; likewise giving ``start_index`` alone uses it for
    the shift too. ``next_replica_shift`` sets the shift on its own. Partition ids always start
    at 0 (Kafka's ``startPartitionId`` is only used when adding partitions to a topic).

    ``racks`` maps broker id -> rack name. ``None``, or a mapping that names a rack for none of
    ``brokers``, means rack-unaware; a rack for some brokers but not all is an error, as in
    Kafka ("Not all brokers have rack information"). Raises :class:`~kafkalab.errors.ConfigError`
    for ``partitions`` < 1, ``replication_factor`` < 1 or above the number of brokers,
    duplicate broker ids, and a negative ``start_index`` or ``next_replica_shift``.
    """
    broker_list = list(brokers)
    # The counts are typed ``object``: they come from users, and are checked here.
    n_partitions = _whole("partitions", partitions, "use a whole number >= 1")
    if n_partitions < 1:
        raise ConfigError(f"partitions={n_partitions} is not allowed: use a whole number >= 1")
    rf = _whole("replication.factor", replication_factor, "use a whole number >= 1")
    if rf < 1:
        raise ConfigError(f"replication.factor={rf} is not allowed: use a whole number >= 1")
    _check_unique(broker_list)
    if not broker_list:
        raise ConfigError("brokers=[] is not allowed: give at least one broker id")
    if rf > len(broker_list):
        raise ConfigError(
            f"replication.factor={rf} is not allowed: use 1 to "
            f"{len(broker_list)} (the number of brokers, {broker_list})"
        )
    first_index = _fixed_or_none("start_index", start_index)
    shift_given = _fixed_or_none("next_replica_shift", next_replica_shift)

    rack_of: dict[int, str] = {}
    if racks is not None:
        rack_of = {b: racks[b] for b in broker_list if racks.get(b) is not None}
        if rack_of and len(rack_of) < len(broker_list):
            missing = [b for b in broker_list if b not in rack_of]
            raise ConfigError(
                "Not all brokers have rack information for replica rack aware assignment: "
                f"brokers {missing} have no rack; give every broker a rack, or none"
            )

    n = len(broker_list)
    # Kafka draws the start index first, then the shift; fixedStartIndex fixes both.
    first = first_index if first_index is not None else rng.randrange(n)
    if shift_given is not None:
        shift = shift_given
    elif first_index is not None:
        shift = first_index
    else:
        shift = rng.randrange(n)

    if rack_of:
        return _assign_rack_aware(n_partitions, rf, broker_list, rack_of, first, shift)
    return _assign_rack_unaware(n_partitions, rf, broker_list, first, shift)


def rack_alternated(brokers: Sequence[int], racks: Mapping[int, str]) -> list[int]:
    """The brokers reordered so that consecutive entries alternate between racks, as Kafka's
    ``AdminUtils.getRackAlternatedBrokerList``.

    Racks are taken in name order and the brokers of each rack in id order; the list takes the
    first broker of every rack, then the second of every rack, and so on, skipping racks that
    have run out. For example, rack1: 0, 1, 2; rack2: 3; rack3: 4, 5 gives 0, 3, 4, 1, 5, 2.
    Walking this list round-robin puts neighbouring replicas on different racks.

    Every broker needs a rack in ``racks``; the order of ``brokers`` does not matter.
    """
    broker_list = list(brokers)
    _check_unique(broker_list)
    missing = [b for b in broker_list if racks.get(b) is None]
    if missing:
        raise ConfigError(
            f"brokers {missing} have no rack: a rack-alternated list needs a rack for every broker"
        )
    by_rack: dict[str, list[int]] = {}  # Kafka's getInverseMap: rack -> sorted broker ids
    for broker in sorted(broker_list):
        by_rack.setdefault(racks[broker], []).append(broker)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    result: list[int] = []
    for depth in range(max((len(c) for c in columns), default=0)):
        result.extend(column[depth] for column in columns if depth < len(column))
    return result


def _replica_index(first_replica_index: int, shift: int, replica_index: int, n: int) -> int:
    """Kafka's ``replicaIndex``: the position of follower ``replica_index`` (0-based), 1 to
    n-1 places after the leader's position, so never the leader's own."""
    return (first_replica_index + 1 + (shift + replica_index) % (n - 1)) % n


def _assign_rack_unaware(
    partitions: int, replication_factor: int, brokers: list[int], start_index: int, shift: int
) -> dict[int, list[int]]:
    """Kafka's ``assignReplicasToBrokersRackUnaware``, with partition ids from 0."""
    n = len(brokers)
    result: dict[int, list[int]] = {}
    for partition in range(partitions):
        if partition > 0 and partition % n == 0:
            shift += 1  # the leaders have gone round once: pair them with other followers
        first = (partition + start_index) % n
        replicas = [brokers[first]]
        replicas.extend(
            brokers[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)
        )
        result[partition] = replicas
    return result


def _assign_rack_aware(
    partitions: int,
    replication_factor: int,
    brokers: list[int],
    rack_of: dict[int, str],
    start_index: int,
    shift: int,
) -> dict[int, list[int]]:
    """Kafka's ``assignReplicasToBrokersRackAware``, with partition ids from 0."""
    arranged = rack_alternated(brokers, rack_of)
    n = len(arranged)
    num_racks = len(set(rack_of.values()))
    result: dict[int, list[int]] = {}
    for partition in range(partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start_index) % n
        leader = arranged[first]
        replicas = [leader]
        racks_used = {rack_of[leader]}
        brokers_used = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                rack = rack_of[broker]
                k += 1
                # Skip a broker on a rack that already has a replica while some rack has none,
                # and a broker that already has a replica while some broker has none.
                if (rack not in racks_used or len(racks_used) == num_racks) and (
                    broker not in brokers_used or len(brokers_used) == n
                ):
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        result[partition] = replicas
    return result


def _fixed_or_none(name: str, value: object) -> int | None:
    """``value`` if it is a whole number >= 0, None if it is None, else a ConfigError."""
    if value is None:
        return None
    allowed = "use a whole number >= 0, or None for a random one"
    whole = _whole(name, value, allowed)
    if whole < 0:
        raise ConfigError(f"{name}={whole} is not allowed: {allowed}")
    return whole


def _whole(name: str, value: object, allowed: str) -> int:
    """``value`` if it is a whole number (not a bool), else a ConfigError naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name}={value!r} is not allowed: {allowed}")
    return value


def _check_unique(brokers: list[int]) -> None:
    duplicates = sorted(b for b, count in Counter(brokers).items() if count > 1)
    if duplicates:
        raise ConfigError(
            f"broker ids {duplicates} appear more than once in {brokers}: "
            "each broker may be listed only once"
        )
