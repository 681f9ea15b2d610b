"""Exercise 2 (replication basics): each learner's topic to place, and broker to fail."""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from typing import Any

from kafkalab.grading.variants.base import QuestionVariants, register

# ---- assign: the learner's topic, and three hidden ones to replay their function on -----------

# (brokers, partitions, replication factor, start index, shift): the situations a learner's
# function is called on. Each version shows one of _SHOWN and hides one of each _HIDDEN kind.
_SHOWN = tuple(
    (brokers, partitions, rf, start, shift)
    for brokers, partitions in (((1, 2, 3, 4), 9), ((0, 1, 2, 3, 4, 5), 14), ((1, 2, 3, 4, 5), 12))
    for rf in (2, 3)
    for start, shift in ((1, 2), (len(brokers) - 1, 0), (2, len(brokers) - 1))
)
_HIDDEN = (
    # several laps, the shift wrapping round the followers
    (((1, 2, 3, 4, 5, 6), 13, 3, 4, 5), ((0, 1, 2, 3, 4), 16, 3, 3, 4), ((1, 2, 3), 8, 2, 2, 2)),
    # every broker holds every partition
    (((1, 2, 3, 4), 8, 4, 3, 3), ((1, 2, 3), 5, 3, 1, 2), ((0, 1, 2, 3, 4), 7, 5, 0, 1)),
    # broker ids that are not 0..n-1 or 1..n
    (
        ((10, 20, 30), 5, 2, 2, 1),
        ((5, 7, 11, 13), 9, 2, 1, 3),
        ((101, 102, 103, 104, 105), 6, 2, 4, 0),
    ),
)


def kafka_assignment(situation: tuple[Any, ...]) -> dict[int, list[int]]:
    """Kafka's assignment of ``(brokers, partitions, rf, start index, shift)``, as the
    simulator computes it (``AdminUtils.assignReplicasToBrokersRackUnaware``)."""
    from kafkalab.protocol.assignment import assign_replicas

    brokers, partitions, rf, start, shift = situation
    return assign_replicas(
        list(brokers), partitions, rf, random.Random(0), start_index=start, next_replica_shift=shift
    )


def _assign_show(p: Mapping[str, Any]) -> str:
    brokers, partitions, rf, start, shift = p["shown"]
    return (
        f"Your topic: {partitions} partitions, replication factor {rf}, on the brokers "
        f"{list(brokers)};\nKafka drew start_index = {start} and shift = {shift}.\n"
        f"Your call: assign({list(brokers)}, {partitions}, {rf}, {start}, {shift})\n"
        "(hidden checks call your function on three other topics drawn for you)"
    )


register(
    QuestionVariants(
        "02-replication-basics",
        "assign",
        tuple(
            {"shown": shown, "hidden": tuple(kind[(i + k) % 3] for k, kind in enumerate(_HIDDEN))}
            for i, shown in enumerate(_SHOWN)
        ),
        _assign_show,
    )
)


# ---- predict_leaders: the learner's assignment and failing broker -------------------------------


def _leaders_replicas(p: Mapping[str, Any]) -> dict[int, list[int]]:
    return kafka_assignment(
        (tuple(range(1, p["brokers"] + 1)), p["partitions"], p["rf"], p["start"], p["start"])
    )


def _held_by(p: Mapping[str, Any]) -> list[int]:
    return [t for t, replicas in _leaders_replicas(p).items() if p["crash"] in replicas]


def _leaders_show(p: Mapping[str, Any]) -> str:
    replicas = _leaders_replicas(p)
    return "\n".join(
        [
            "c = Cluster(",
            f"    brokers={p['brokers']},",
            f"    partitions={p['partitions']},",
            f"    replicas={replicas},",
            '    config={"auto.leader.rebalance.enable": False},',
            ")",
            f"c.crash({p['crash']})",
            f"c.advance(18000)  # broker {p['crash']}'s ZooKeeper session expires",
            "# leaders_after_crash",
            f"c.restart({p['crash']})",
            "for _ in range(3):",
            f"    for t in {_held_by(p)}:",
            f"        c.fetch({p['crash']}, partition=t)  # catches up and rejoins the ISRs",
            "# leaders_after_return",
            "c.elect_preferred()",
            "# leaders_after_election",
        ]
    )


def _leaders_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    from kafkalab import Cluster

    c = Cluster(
        brokers=p["brokers"],
        partitions=p["partitions"],
        replicas=_leaders_replicas(p),
        config={"auto.leader.rebalance.enable": False},
    )

    def leaders() -> dict[int, int | None]:
        states = c.partition_states()
        return {t: states[f"demo-{t}"].leader for t in range(p["partitions"])}

    c.crash(p["crash"])
    c.advance(18000)
    seen: dict[str, Any] = {"leaders_after_crash": leaders()}
    c.restart(p["crash"])
    for _ in range(3):
        for t in _held_by(p):
            c.fetch(p["crash"], partition=t)
    seen["leaders_after_return"] = leaders()
    states = c.partition_states()
    seen["isr_after_return"] = {t: sorted(states[f"demo-{t}"].isr) for t in range(p["partitions"])}
    c.elect_preferred()
    seen["leaders_after_election"] = leaders()
    return seen


register(
    QuestionVariants(
        "02-replication-basics",
        "predict_leaders",
        tuple(
            {"brokers": n, "partitions": partitions, "rf": rf, "start": start, "crash": crash}
            for n, partitions, starts in ((3, 3, (0, 1, 2)), (4, 4, (1, 3)), (4, 6, (0, 2)))
            for rf, start in itertools.product((2, 3), starts)
            for crash in range(1, n + 1)
            # not exercise 2's former version (replicas 1-2, 2-3, 3-1 and broker 3 failing)
            if (n, rf, start, crash) != (3, 2, 0, 3)
        ),
        _leaders_show,
        _leaders_answers,
    )
)
