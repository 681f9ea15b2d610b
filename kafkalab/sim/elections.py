"""An operator's ElectLeaders request (kafka-leader-election.sh): which election types the
release offers, and the step that sends one to the controller.

The controller's answer, one error per partition (NONE, ELECTION_NOT_NEEDED,
PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE, or UNSUPPORTED_VERSION from a
KRaft cluster before 3.1), is the trace's ``elect_leaders_result`` event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.errors import ActionError
from kafkalab.protocol import messages as msgs

if TYPE_CHECKING:
    from kafkalab.sim.facade import Facade

__all__ = ["elect_leaders", "election_type"]


def election_type(value: Any) -> str:
    """``preferred`` or ``unclean`` (any case, as kafka-leader-election.sh's PREFERRED and
    UNCLEAN); anything else is refused, naming the value and what is allowed."""
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text not in msgs.ELECTION_TYPES:
        allowed = " or ".join(msgs.ELECTION_TYPES)
        raise ActionError(f"election_type={value!r} is not allowed: use {allowed}")
    return text


def elect_leaders(cluster: Facade, kind: Any, partition: int | str | None, step: str) -> None:
    """Send ElectLeaders of election type ``kind`` for ``partition`` (None: every partition) to
    the controller, recorded as a ``step`` step. An unclean election type is refused before 2.4
    (KIP-460 brought election types; `elect_leaders_unclean` off)."""
    kind = election_type(kind)
    config = cluster.config
    if kind == msgs.UNCLEAN and not config.elect_leaders_unclean:
        release = f"with preset {config.preset!r}" if config.preset else "here"
        raise ActionError(
            f"election_type='unclean' is not allowed {release}: ElectLeaders takes an election "
            "type from Kafka 2.4 (KIP-460); before, an operator could ask only for preferred "
            "elections (use election_type preferred, or a preset from 2.4 on)"
        )
    tp = None if partition is None else cluster._tp(partition)
    target = cluster.controller
    if target is None:
        raise ActionError("no controller is elected right now")
    if step == "elect_preferred":
        cluster._step(step, partition=tp)
    else:
        cluster._step(step, election_type=kind, partition=tp)
    cluster.sim.send("client", target, msgs.ElectLeaders(tp, kind))
    cluster._settle()
