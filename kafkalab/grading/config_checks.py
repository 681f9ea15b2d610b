"""Checks for "choose a configuration that meets a target": run timed simulations with the
learner's settings and compare what they measured with the target."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkalab.config import make_config
from kafkalab.errors import KafkalabError
from kafkalab.grading.checks import ELLIPSIS_HINT, Feedback, time_limit
from kafkalab.sim.cluster import Cluster
from kafkalab.sim.timed import Fault, RunResult, simulate

__all__ = [
    "FOLLOWERS_CUT_THEN_LEADER_CRASH",
    "check_durability_target",
    "check_lag_time_target",
    "schedule",
]

# The leader (broker 1) loses both followers at 5 s; the ISR shrinks to the leader alone; at 50 s
# the leader crashes and stays down until the run ends, while its followers are reachable again.
FOLLOWERS_CUT_THEN_LEADER_CRASH = (
    Fault(5000, "disconnect", (1, 2)),
    Fault(5000, "disconnect", (1, 3)),
    Fault(50000, "crash", (1,)),
    Fault(52000, "reconnect", (1, 2)),
    Fault(52000, "reconnect", (1, 3)),
)
DURATION_MS = 80000
SETTLE_MS = 20000


def schedule(seed: int) -> list[Fault]:
    """The faults of the run with ``seed``: the schedule above, 0.7 s later per seed."""
    shift_ms = seed * 700
    return [Fault(f.time_ms + shift_ms, f.action, f.args) for f in FOLLOWERS_CUT_THEN_LEADER_CRASH]


def _runs(config: Mapping[str, Any], runs: int) -> list[RunResult]:
    try:
        cfg = make_config(dict(config))
    except KafkalabError as err:
        raise Feedback(f"your config is not allowed: {err}") from None
    return [
        simulate(
            cfg,
            seed=seed,
            duration_ms=DURATION_MS,
            settle_ms=SETTLE_MS,
            faults=schedule(seed),
        )
        for seed in range(runs)
    ]  # type: ignore[misc]


def check_durability_target(
    config: Any,
    *,
    min_acked_fraction: float,
    runs: int = 3,
    seconds: float = 60.0,
) -> list[RunResult]:
    """Run the :data:`FOLLOWERS_CUT_THEN_LEADER_CRASH` schedule ``runs`` times (seeds 0..,
    :func:`schedule`) with ``config``; pass when no acknowledged record is lost and at
    least ``min_acked_fraction`` of the records sent were acknowledged."""
    if config is None or config is Ellipsis or not isinstance(config, Mapping):
        raise Feedback(f"config must be a dict of Kafka settings: {ELLIPSIS_HINT}")
    unanswered = [key for key, value in config.items() if value is Ellipsis]
    if unanswered:
        raise Feedback(f"no value for {', '.join(unanswered)}: {ELLIPSIS_HINT}")
    with time_limit(seconds, "the simulations"):
        results = _runs(config, runs)
    lost = sum(len(r.lost_acked) for r in results)
    acked = sum(r.acked for r in results)
    produced = sum(r.produced for r in results)
    fraction = acked / produced if produced else 0.0
    problems = []
    if lost:
        problems.append(_loss_story(results))
    if fraction < min_acked_fraction:
        problems.append(_availability_story(results, fraction, min_acked_fraction))
    if problems:
        worst = next((r for r in results if r.lost_acked), results[0])
        replay = (
            "Replay it: from kafkalab.sim.timed import simulate; from "
            "kafkalab.grading.config_checks import schedule; "
            f"simulate({dict(config)!r}, seed={worst.seed}, duration_ms={DURATION_MS}, "
            f"settle_ms={SETTLE_MS}, faults=schedule({worst.seed}))"
        )
        raise Feedback("\n".join([*problems, replay]))
    return results


def _loss_story(results: list[RunResult]) -> str:
    r = next(r for r in results if r.lost_acked)
    return (
        f"Durability: run with seed {r.seed} lost {len(r.lost_acked)} acknowledged record(s) "
        f"(first: {r.lost_acked[0]}); unclean elections in that run: {r.unclean_elections}. "
        "Ask yourself which replica became leader after the crash, and what it held."
    )


def _availability_story(results: list[RunResult], fraction: float, target: float) -> str:
    errors: dict[str, int] = {}
    for r in results:
        for name, n in r.errors.items():
            errors[name] = errors.get(name, 0) + n
    shown = ", ".join(f"{k}: {v}" for k, v in sorted(errors.items())) or "none"
    return (
        f"Availability: {fraction:.0%} of the records were acknowledged, the target is at least "
        f"{target:.0%}. Records that failed, by error: {shown}."
    )


def check_lag_time_target(
    lag_time_ms: Any,
    *,
    pause_ms: int = 8000,
    leave_within_ms: int = 25000,
    start_ms: int = 5000,
    seconds: float | None = None,
) -> None:
    """``replica.lag.time.max.ms`` must keep a follower that stalls for ``pause_ms`` (a GC pause)
    in the ISR, yet drop a stuck follower (alive, but cut off from the leader) within
    ``leave_within_ms``. Both faults begin at ``start_ms``."""
    if isinstance(lag_time_ms, bool) or not isinstance(lag_time_ms, int):
        raise Feedback(f"replica.lag.time.max.ms must be a whole number of ms: {ELLIPSIS_HINT}")
    with time_limit(seconds, "the simulations"):
        paused = _follower_fault(lag_time_ms, "pause", pause_ms, start_ms)
        stuck = _follower_fault(lag_time_ms, "disconnect", leave_within_ms + 10000, start_ms)
    problems = []
    if paused is not None:
        problems.append(
            f"A follower paused for {pause_ms} ms left the ISR {paused} ms after the pause "
            f"began: with replica.lag.time.max.ms={lag_time_ms} a healthy but slow follower is "
            "dropped (the ISR shrinks between 1x and 1.5x the lag time after it last caught up)."
        )
    if stuck is None or stuck > leave_within_ms:
        when = (
            f"was still in the ISR {leave_within_ms + 10000} ms later"
            if stuck is None
            else f"left the ISR only after {stuck} ms"
        )
        problems.append(
            f"A follower cut off from the leader {when}; the target is within {leave_within_ms} "
            "ms. Until it leaves, every acks=all produce request waits for it."
        )
    if problems:
        raise Feedback("\n".join(problems))


def _follower_fault(lag_time_ms: int, action: str, length_ms: int, start: int) -> int | None:
    """Milliseconds from the fault on follower 3 (a pause, or its link to leader 1 cut) until
    the ISR drops it (None: never)."""
    try:
        c = Cluster(
            brokers=3,
            mode="timed",
            config={"replica.lag.time.max.ms": lag_time_ms},
        )
    except KafkalabError as err:
        raise Feedback(f"replica.lag.time.max.ms={lag_time_ms}: {err}") from None
    for t in range(100, start + length_ms, 100):
        c.at(t, "produce", "r")
    c.at(start, action, *((1, 3) if action == "disconnect" else (3,)))
    c.run(until_ms=start + length_ms)
    for e in c.trace.of_kind("partition_state"):
        if e.time_ms >= start and 3 not in e.data.get("isr", [3]):
            return e.time_ms - start
    return None
