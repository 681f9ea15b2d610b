"""The transaction coordinator's state machine, as data.

One table drives both the coordinator (which refuses any transition not listed here) and the
lesson diagrams (which draw it). The states and their allowed predecessors mirror Kafka's
``TransactionState.validPreviousStates`` (``kafka.coordinator.transaction.TransactionMetadata``);
the triggers name the request or coordinator action that makes each move.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["TXN_STATES", "TXN_TRANSITIONS", "Transition", "allowed", "transitions_from"]

EMPTY = "Empty"
ONGOING = "Ongoing"
PREPARE_COMMIT = "PrepareCommit"
PREPARE_ABORT = "PrepareAbort"
COMPLETE_COMMIT = "CompleteCommit"
COMPLETE_ABORT = "CompleteAbort"
PREPARE_EPOCH_FENCE = "PrepareEpochFence"
DEAD = "Dead"

TXN_STATES: tuple[str, ...] = (
    EMPTY,
    ONGOING,
    PREPARE_COMMIT,
    PREPARE_ABORT,
    COMPLETE_COMMIT,
    COMPLETE_ABORT,
    PREPARE_EPOCH_FENCE,
    DEAD,
)


class Transition(NamedTuple):
    """One allowed move: ``source`` -> ``target`` when ``trigger`` happens; ``since`` names the
    version that added a move (blank: since transactions began, 0.11.0.0)."""

    source: str
    trigger: str
    target: str
    since: str = ""


# Every row but the moves into PrepareEpochFence is written to __transaction_state before it takes
# effect (Kafka's TransactionStateManager.appendTransactionToLog); a transition whose write fails
# does not happen. PrepareEpochFence is only held in memory (prepareFenceProducerEpoch sets the
# pending state): the first record of a fence is its PrepareAbort, with the bumped epoch.
TXN_TRANSITIONS: tuple[Transition, ...] = (
    Transition(EMPTY, "InitProducerId", EMPTY),
    Transition(COMPLETE_COMMIT, "InitProducerId", EMPTY),
    Transition(COMPLETE_ABORT, "InitProducerId", EMPTY),
    Transition(EMPTY, "AddPartitionsToTxn", ONGOING),
    Transition(ONGOING, "AddPartitionsToTxn", ONGOING),
    Transition(COMPLETE_COMMIT, "AddPartitionsToTxn", ONGOING),
    Transition(COMPLETE_ABORT, "AddPartitionsToTxn", ONGOING),
    Transition(ONGOING, "EndTxn(commit)", PREPARE_COMMIT),
    Transition(ONGOING, "EndTxn(abort)", PREPARE_ABORT),
    # KAFKA-6119 (0.11.0.2, 1.0.0): before, a fence bumped the epoch with no state of its own,
    # and a timed-out transaction was aborted under its old epoch.
    Transition(ONGOING, "InitProducerId (fence)", PREPARE_EPOCH_FENCE, "0.11.0.2"),
    Transition(ONGOING, "transaction timeout", PREPARE_EPOCH_FENCE, "0.11.0.2"),
    Transition(PREPARE_EPOCH_FENCE, "abort the fenced transaction", PREPARE_ABORT, "0.11.0.2"),
    Transition(PREPARE_COMMIT, "COMMIT markers written", COMPLETE_COMMIT),
    Transition(PREPARE_ABORT, "ABORT markers written", COMPLETE_ABORT),
    # KIP-890 part 2 (transaction version 2, 4.0): an abort with nothing open still bumps the
    # epoch, so a request of the previous transaction that arrives late is fenced.
    Transition(EMPTY, "EndTxn(abort)", PREPARE_ABORT, "4.0"),
    Transition(COMPLETE_COMMIT, "EndTxn(abort)", PREPARE_ABORT, "4.0"),
    Transition(COMPLETE_ABORT, "EndTxn(abort)", PREPARE_ABORT, "4.0"),
    Transition(EMPTY, "transactional.id expired", DEAD),
    Transition(COMPLETE_COMMIT, "transactional.id expired", DEAD),
    Transition(COMPLETE_ABORT, "transactional.id expired", DEAD),
)


def allowed(source: str, target: str) -> bool:
    """Whether Kafka lets a transaction move from ``source`` to ``target``."""
    return any(t.source == source and t.target == target for t in TXN_TRANSITIONS)


def transitions_from(source: str) -> tuple[Transition, ...]:
    """The moves out of ``source``, in table order."""
    return tuple(t for t in TXN_TRANSITIONS if t.source == source)
