"""The replication rules a learner can replace: small pure functions the broker calls.

Each one is Kafka's rule as the broker applies it, written as a function of plain numbers so an
exercise can swap in a learner's version (``Cluster(rules=Rules(follower_hw=mine))``) and watch
what changes. The broker never calls anything else for these decisions, so the defaults below
are exactly the simulator's behaviour.

- :func:`follower_hw`: a follower's HW after a fetch response (ReplicaFetcherThread).
- :func:`leader_hw`: the leader's HW from the LEOs it knows (Partition.maybeIncrementLeaderHW).
- :func:`end_offset_for`: the leader's answer to OffsetsForLeaderEpoch (LeaderEpochFileCache).
- :func:`truncation_offset`: where a follower truncates after that answer (KIP-101, KIP-279).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, fields

from kafkalab.errors import ConfigError
from kafkalab.protocol.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET, epoch_end_offset

__all__ = [
    "DEFAULT_RULES",
    "Rules",
    "end_offset_for",
    "follower_hw",
    "leader_hw",
    "truncation_offset",
]


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
    candidate = min([leader_leo, *(leo for rid, leo in remote_leos.items() if rid in isr)])
    return max(hw, candidate)


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
