"""Checks for "let the search judge": a config that :func:`kafkalab.explore.explore` cannot break
within :data:`BOUNDS`, and a learner's counterexample for each weaker config, replayed step by
step within the same bounds.

A counterexample is a list of scenario steps (``{"produce": "r1"}``, ``{"fetch": 2}``,
``{"crash": {"broker": 1, "lose_unflushed": True}}``, ...). Each step must be one the search
itself would try in that state (:func:`kafkalab.explore.enabled_steps`), so a counterexample is a
schedule of the search's alphabet, no longer than its depth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from kafkalab.config import make_config
from kafkalab.explore import Bounds, ExploreResult, Replayer, enabled_steps, explore
from kafkalab.grading.checks import ELLIPSIS_HINT, Feedback, time_limit
from kafkalab.grading.config_checks import learner_settings
from kafkalab.sim.cluster import Cluster

__all__ = ["ACTIONS", "BOUNDS", "Counterexample", "check_counterexample", "check_unbreakable"]

# The search of the exercise: two brokers, one record, one crash (with or without power loss),
# every schedule of up to six steps.
ACTIONS = ("produce", "fetch", "crash", "power_loss", "restart", "expire")
BOUNDS = Bounds(brokers=2, depth=6, records=1, crashes=1)
INVARIANT = "no_acked_loss"


def _search(settings: dict[str, Any]) -> ExploreResult:
    return explore(settings, **asdict(BOUNDS), actions=ACTIONS, invariants=[INVARIANT])


def check_unbreakable(settings: Any, *, seconds: float = 60.0) -> ExploreResult:
    """Pass when the search finds no lost acknowledged record with ``settings`` within
    :data:`BOUNDS`; else say the schedule it found."""
    config = learner_settings(settings)
    with time_limit(seconds, "the search"):
        result = _search(config)
    v = result.violation
    if v is not None:
        steps = "\n".join(f"  {i}. {step}" for i, step in enumerate(v.steps, 1))
        raise Feedback(
            f"the search breaks {config!r} in {len(v.steps)} steps:\n{steps}\n{v.message}"
        )
    if not result.complete:  # the state limit is far above what these bounds reach
        raise Feedback(f"the search of {config!r} stopped at its state limit: {result.summary()}")
    return result


@dataclass(frozen=True)
class Counterexample:
    """A replayed schedule: the step (1-based) after which the record was first acknowledged,
    the step after which it was lost, and the cluster at the end."""

    acked_at: int
    lost_at: int
    cluster: Cluster


def _replay(settings: dict[str, Any], steps: Any, label: str) -> Counterexample:
    if steps is None or steps is Ellipsis or not isinstance(steps, (list, tuple)):
        raise Feedback(f"{label} must be a list of steps: {ELLIPSIS_HINT}")
    if any(step is Ellipsis for step in steps):
        raise Feedback(f"{label} still holds a ...: {ELLIPSIS_HINT}")
    if not steps:
        raise Feedback(f"{label} is empty: a schedule needs at least a produce and a failure")
    b = BOUNDS
    if len(steps) > b.depth:
        raise Feedback(
            f"{label} has {len(steps)} steps; the search goes {b.depth} deep, so a "
            f"counterexample within its bounds has at most {b.depth}"
        )
    replayer = Replayer(make_config(settings), b.brokers, None)
    cluster = replayer.fresh()
    produced = crashes = 0
    acked_at = lost_at = 0
    for i, step in enumerate(steps, 1):
        allowed = enabled_steps(cluster, ACTIONS, produced, crashes, b)
        if step not in allowed:
            options = ", ".join(repr(s) for s in allowed) or "none"
            raise Feedback(
                f"{label}, step {i}: {step!r} is not a step the search tries here. It tries "
                f"{options}"
            )
        replayer.apply(cluster, step)
        kind = next(iter(step))
        produced += kind == "produce"
        crashes += kind == "crash"
        if not acked_at and cluster.report().acked:
            acked_at = i
        if cluster.monitor.first_violation([INVARIANT]) is not None:
            lost_at = i
            break
    if not lost_at:
        acked = cluster.report().acked
        what = (
            f"{acked} was acknowledged but is still there"
            if acked
            else "no record was acknowledged"
        )
        raise Feedback(f"{label} loses no acknowledged record with {settings!r}: {what}")
    if lost_at < len(steps):
        raise Feedback(
            f"{label} already loses the record after step {lost_at}: end it there "
            f"(a counterexample stops at the first loss)"
        )
    return Counterexample(acked_at, lost_at, cluster)


def check_counterexample(
    settings: Any,
    steps: Any,
    *,
    label: str = "your schedule",
    acked_at: Any = None,
    lost_at: Any = None,
) -> Counterexample:
    """Replay ``steps`` on a fresh two-broker cluster with ``settings``; pass when every step is
    one the search would try, and the schedule ends with an acknowledged record lost. With
    ``acked_at`` or ``lost_at``, also check the learner's reading of it: the step after which
    the record is first acknowledged, and the one after which it is lost."""
    config = learner_settings(settings)
    found = _replay(config, steps, label)
    for name, given, actual in (
        ("acked_at", acked_at, found.acked_at),
        ("lost_at", lost_at, found.lost_at),
    ):
        if given is None:
            continue
        if given is Ellipsis or isinstance(given, bool) or not isinstance(given, int):
            raise Feedback(f"{name} must be a step number (1 for the first step): {ELLIPSIS_HINT}")
        if given != actual:
            raise Feedback(
                f"{name}={given} for {label}: replayed, the record "
                + (
                    f"is first acknowledged after step {actual}. Which step tells the producer?"
                    if name == "acked_at"
                    else f"is lost after step {actual}. Which step removes its last copy?"
                )
            )
    return found


def walk(settings: Mapping[str, Any], steps: list[dict[str, Any]]) -> None:
    """Replay ``steps`` on a fresh two-broker cluster with ``settings`` and print, after each,
    the leader, the ISR, each running broker's log and HW, what was acknowledged and whether an
    acknowledged record is lost. For trying a schedule; the checks do not use it."""
    replayer = Replayer(make_config(dict(settings)), BOUNDS.brokers, None)
    cluster = replayer.fresh()
    for i, step in enumerate(steps, 1):
        replayer.apply(cluster, step)
        state = cluster.state()
        logs = "  ".join(
            f"{b}:{state['logs'][b]} hw {state['hw'][b]}" for b in sorted(state["logs"])
        )
        lost = cluster.monitor.first_violation([INVARIANT])
        print(f"{i}. {step}")
        print(f"   leader {state['leader']}, ISR {state['isr']}, {logs}")
        print(f"   acknowledged {cluster.report().acked}" + (f"; LOST: {lost[1]}" if lost else ""))
