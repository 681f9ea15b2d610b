"""The replication rules a learner can replace: small pure functions the broker calls.

Each one is Kafka's rule as the broker applies it, written as a function of plain numbers so an
exercise can swap in a learner's version (``Cluster(rules=Rules(follower_hw=mine))``) and watch
what changes. The broker never calls anything else for these decisions, so the defaults below
are exactly the simulator's behaviour.

- :func:`follower_hw`: a follower's HW after a fetch response (ReplicaFetcherThread).
- :func:`leader_hw`: the leader's HW from the LEOs it knows (Partition.maybeIncrementLeaderHW).
- :func:`end_offset_for`: the leader's answer to OffsetsForLeaderEpoch (LeaderEpochFileCache).
- :func:`truncation_offset`: where a follower truncates after that answer (KIP-101, KIP-279).
- :func:`truncate_before_fetch`: where a follower without leader epochs cuts its log before it
  fetches from a new leader (before 0.11: its own HW).
- :func:`sequence_verdict`: what the leader does with an idempotent producer's batch: append it,
  recognise a duplicate, or refuse it (KIP-98's ProducerAppendInfo).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, fields

from kafkalab.errors import ConfigError
from kafkalab.protocol.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET, epoch_end_offset
from kafkalab.protocol.messages import INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER

__all__ = [
    "APPEND",
    "DEFAULT_RULES",
    "DUPLICATE",
    "VERDICTS",
    "Rules",
    "end_offset_for",
    "follower_hw",
    "leader_hw",
    "sequence_verdict",
    "truncate_before_fetch",
    "truncation_offset",
]

APPEND = "APPEND"
DUPLICATE = "DUPLICATE"
VERDICTS = (APPEND, DUPLICATE, OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH)
NO_PRODUCER_EPOCH = -1  # RecordBatch.NO_PRODUCER_EPOCH: no state for the producer
MAX_SEQUENCE = 2**31 - 1  # sequence numbers are Java ints: after the largest comes 0


def follower_hw(leader_hw: int, follower_leo: int) -> int:
    """A follower's HW once it has appended a fetch response: the HW the leader put in the
    response, but never past what the follower itself holds."""
    return min(leader_hw, follower_leo)


def leader_hw(
    hw: int, leader_leo: int, isr: Collection[int], remote_leos: Mapping[int, int]
) -> int:
    """The leader's new HW: the smallest LEO among the leader and the followers in ``isr``, and
    never lower than the current ``hw``.

    ``remote_leos`` maps every follower to the LEO the leader knows for it (the offset of its
    latest fetch; -1 before its first fetch). ``isr`` holds the replicas the HW waits for: the
    ISR (the leader included) and any caught-up follower about to join it (KAFKA-4485).
    """
    candidate = leader_leo
    for rid, leo in remote_leos.items():
        if leo < candidate and rid in isr:
            candidate = leo
    return candidate if candidate > hw else hw


def end_offset_for(epochs: Sequence[tuple[int, int]], leo: int, epoch: int) -> tuple[int, int]:
    """The leader's answer to OffsetsForLeaderEpoch(``epoch``), from its epoch cache ``epochs``
    ((epoch, start offset) pairs, oldest first) and its ``leo``: (epoch, end offset).

    The latest epoch ends at the LEO; an older one is answered with the largest epoch at or below
    it, ending where the next epoch starts. (-1, -1) when nothing is known.
    """
    return epoch_end_offset(epochs, leo, epoch)


def truncation_offset(
    leader_epoch: int,
    leader_end_offset: int,
    epochs: Sequence[tuple[int, int]],
    leo: int,
    hw: int,
) -> tuple[int, bool]:
    """Where a follower truncates after the leader answered (``leader_epoch``,
    ``leader_end_offset``), given its own epoch cache ``epochs``, ``leo`` and ``hw``; and whether
    it is done (False: ask again with its new latest epoch).

    An undefined answer (end offset -1) falls back to the HW. A pre-KIP-279 answer (epoch -1) is
    trusted: truncate to min(end offset, LEO). With KIP-279, if this replica's copy of the
    answered epoch ends elsewhere, truncate to where its own copy ends and ask again.
    """
    if leader_end_offset == UNDEFINED_OFFSET:
        return hw, True
    if leader_epoch == UNDEFINED_EPOCH:
        return min(leader_end_offset, leo), True
    own_epoch, own_end = epoch_end_offset(epochs, leo, leader_epoch)
    if own_end == UNDEFINED_OFFSET:
        return min(leader_end_offset, leo), True
    if own_epoch != leader_epoch:
        return min(own_end, leo), False
    return min(leader_end_offset, own_end), True


def truncate_before_fetch(hw: int, leo: int) -> int:
    """Where a follower without leader epochs cuts its log when it starts to follow a new leader,
    before its first fetch: its own ``hw`` (ReplicaManager.makeFollowers before 0.11), whatever its
    ``leo``. Records from the returned offset on are removed; ``leo`` removes nothing.

    KIP-101 scenario 1 loses an acknowledged record through this rule: a follower's HW lags the
    leader's. The KIP's motivation names a simpler fix it set aside: cut nothing until the leader
    has answered a fetch (``lambda hw, leo: leo``), which saves that record but cannot see two
    logs that hold different records at the same offset (scenario 2).
    """
    return hw


def sequence_verdict(
    known_epoch: int,
    cached: Sequence[tuple[int, int]],
    epoch: int,
    first_seq: int,
    last_seq: int,
) -> str:
    """What the leader does with an idempotent batch carrying ``epoch`` and the sequence numbers
    ``first_seq``..``last_seq``, given what this replica knows of the producer: its
    ``known_epoch`` (-1 for a producer it has never seen) and the ``(first_seq, last_seq)`` of
    its last five batches in that epoch, oldest first (``cached``; the last one only in 0.11,
    ``idempotence_five_in_flight`` off).

    - an older epoch than the known one: a zombie, "INVALID_PRODUCER_EPOCH";
    - the same epoch and the same sequence range as a cached batch: a retry of a batch already
      stored, "DUPLICATE" (not appended again; the producer is told the original offsets);
    - a producer this replica has no state for (``known_epoch`` -1) may start at any sequence
      (since 2.5, KIP-360: its state may have been removed with old segments): "APPEND";
    - a newer epoch must start at sequence 0, and the known epoch must continue right after the
      last cached batch (0 after 2**31 - 1): "APPEND"; anything else is a gap or an old retry,
      "OUT_OF_ORDER_SEQUENCE_NUMBER".

    (ProducerAppendInfo.checkProducerEpoch and checkSequence. Before 2.5 an unknown producer
    had to start at 0 too, else UNKNOWN_PRODUCER_ID, or OUT_OF_ORDER_SEQUENCE_NUMBER in 0.11;
    the broker applies that older check itself, before this rule, when ``kip360`` is off.)
    """
    if epoch < known_epoch:
        return INVALID_PRODUCER_EPOCH
    if known_epoch == NO_PRODUCER_EPOCH:
        return APPEND
    if epoch > known_epoch:
        return APPEND if first_seq == 0 else OUT_OF_ORDER_SEQUENCE_NUMBER
    if (first_seq, last_seq) in [tuple(batch) for batch in cached]:
        return DUPLICATE
    last_known = cached[-1][1] if cached else -1
    in_sequence = first_seq == last_known + 1 or (first_seq == 0 and last_known == MAX_SEQUENCE)
    return APPEND if in_sequence else OUT_OF_ORDER_SEQUENCE_NUMBER


@dataclass(frozen=True)
class Rules:
    """The rules every broker of a cluster applies; replace one to try your own version.

    >>> from kafkalab import Cluster
    >>> c = Cluster(brokers=2, rules=Rules(follower_hw=lambda leader_hw, follower_leo: 0))
    """

    follower_hw: Callable[[int, int], int] = follower_hw
    leader_hw: Callable[[int, int, Collection[int], Mapping[int, int]], int] = leader_hw
    end_offset_for: Callable[[Sequence[tuple[int, int]], int, int], tuple[int, int]] = (
        end_offset_for
    )
    truncation_offset: Callable[
        [int, int, Sequence[tuple[int, int]], int, int], tuple[int, bool]
    ] = truncation_offset
    truncate_before_fetch: Callable[[int, int], int] = truncate_before_fetch
    sequence_verdict: Callable[[int, Sequence[tuple[int, int]], int, int, int], str] = (
        sequence_verdict
    )

    def __post_init__(self) -> None:
        for f in fields(self):
            if not callable(getattr(self, f.name)):
                raise ConfigError(
                    f"rules: {f.name}={getattr(self, f.name)!r} is not allowed: use a function "
                    f"with the same parameters as kafkalab.protocol.rules.{f.name}"
                )

    def replaced(self) -> list[str]:
        """The names of the rules that differ from Kafka's."""
        return [f.name for f in fields(self) if getattr(self, f.name) is not f.default]


DEFAULT_RULES = Rules()
