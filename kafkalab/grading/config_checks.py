"""Checks for "choose a configuration that meets a target": run timed simulations with the
learner's settings and compare what they measured with the target."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafkalab.config import make_config
from kafkalab.errors import KafkalabError
from kafkalab.grading.checks import ELLIPSIS_HINT, Feedback, time_limit
from kafkalab.sim.cluster import Cluster
from kafkalab.sim.timed import Fault, RunResult, simulate

__all__ = [
    "FOLLOWERS_CUT_THEN_LEADER_CRASH",
    "LEADER_REPLACED",
    "check_durability_target",
    "check_lag_time_target",
    "learner_settings",
    "replaced_schedule",
    "schedule",
]

# The leader (broker 1) loses both followers at 5 s; the ISR shrinks to the leader alone; at 50 s
# the leader crashes, while its followers are reachable again. It stays down until the faults end
# (DURATION_MS), when it restarts: it is the last ISR member, so nobody replaces it meanwhile.
FOLLOWERS_CUT_THEN_LEADER_CRASH = (
    Fault(5000, "disconnect", (1, 2)),
    Fault(5000, "disconnect", (1, 3)),
    Fault(50000, "crash", (1,)),
    Fault(52000, "reconnect", (1, 2)),
    Fault(52000, "reconnect", (1, 3)),
)
# Both followers stall for 4 s (a long GC pause) and stay in the ISR; 3 s in, the leader crashes.
# When its ZooKeeper session expires the controller elects follower 2, a clean election; at 60 s
# the old leader restarts as a follower of the new one and truncates what only it held.
LEADER_REPLACED = (
    Fault(30000, "pause", (2,)),
    Fault(30000, "pause", (3,)),
    Fault(33000, "crash", (1,)),
    Fault(34000, "resume", (2,)),
    Fault(34000, "resume", (3,)),
    Fault(60000, "restart", (1,)),
)
DURATION_MS = 80000
SETTLE_MS = 20000


def _shifted(faults: tuple[Fault, ...], seed: int) -> list[Fault]:
    shift_ms = seed * 700
    return [Fault(f.time_ms + shift_ms, f.action, f.args) for f in faults]


def schedule(seed: int) -> list[Fault]:
    """The faults of the run with ``seed``: :data:`FOLLOWERS_CUT_THEN_LEADER_CRASH`, 0.7 s later
    per seed."""
    return _shifted(FOLLOWERS_CUT_THEN_LEADER_CRASH, seed)


def replaced_schedule(seed: int) -> list[Fault]:
    """The faults of the run with ``seed``: :data:`LEADER_REPLACED`, 0.7 s later per seed."""
    return _shifted(LEADER_REPLACED, seed)


def learner_settings(config: Any) -> dict[str, Any]:
    """A learner's Kafka settings, checked: a dict, every value filled in, and a config the
    simulator accepts; else :class:`Feedback` saying which."""
    if config is None or config is Ellipsis or not isinstance(config, Mapping):
        raise Feedback(f"config must be a dict of Kafka settings: {ELLIPSIS_HINT}")
    unanswered = [str(key) for key, value in config.items() if value is Ellipsis]
    if unanswered:
        raise Feedback(f"no value for {', '.join(unanswered)}: {ELLIPSIS_HINT}")
    try:
        make_config(dict(config))
    except KafkalabError as err:
        raise Feedback(f"your config is not allowed: {err}") from None
    return dict(config)


def _runs(
    config: Mapping[str, Any], runs: int, faults: Callable[[int], list[Fault]]
) -> list[RunResult]:
    cfg = make_config(dict(config))
    return [
        simulate(
            cfg,
            seed=seed,
            duration_ms=DURATION_MS,
            settle_ms=SETTLE_MS,
            faults=faults(seed),
        )
        for seed in range(runs)
    ]


def check_durability_target(
    config: Any,
    *,
    min_acked_fraction: float,
    runs: int = 3,
    seconds: float = 60.0,
) -> list[RunResult]:
    """Run two failures ``runs`` times each (seeds 0..) with ``config`` and pass when no
    acknowledged record is lost in any run, and at least ``min_acked_fraction`` of the records
    sent under the first failure were acknowledged.

    A record is lost when no replica that can become leader will ever serve it. A crashed
    leader's disk counts only while nobody can replace it: under
    :data:`FOLLOWERS_CUT_THEN_LEADER_CRASH` (:func:`schedule`) the leader is the last ISR member
    and leads again when it returns; under :data:`LEADER_REPLACED` (:func:`replaced_schedule`)
    a follower still in the ISR replaces it, and what the old leader alone held (an ``acks=1``
    write the followers had not copied) is truncated when it returns. Returns the runs of the
    first failure."""
    config = learner_settings(config)
    with time_limit(seconds, "the simulations"):
        results = _runs(config, runs, schedule)
        replaced = _runs(config, runs, replaced_schedule)
    acked = sum(r.acked for r in results)
    produced = sum(r.produced for r in results)
    fraction = acked / produced if produced else 0.0
    problems: list[str] = []
    worst: tuple[RunResult, str] | None = None
    for runs_of, story, faults in (
        (results, _loss_story, "schedule"),
        (replaced, _replaced_loss_story, "replaced_schedule"),
    ):
        lossy = next((r for r in runs_of if r.lost_acked), None)
        if lossy is not None:
            problems.append(story(lossy))
            worst = worst or (lossy, faults)
    if fraction < min_acked_fraction:
        problems.append(_availability_story(results, fraction, min_acked_fraction))
    if problems:
        run, faults = worst or (results[0], "schedule")
        replay = (
            "Replay it: from kafkalab.sim.timed import simulate; from "
            f"kafkalab.grading.config_checks import {faults}; "
            f"simulate({dict(config)!r}, seed={run.seed}, duration_ms={DURATION_MS}, "
            f"settle_ms={SETTLE_MS}, faults={faults}({run.seed}))"
        )
        raise Feedback("\n".join([*problems, replay]))
    return results


def _loss_story(r: RunResult) -> str:
    return (
        f"Durability: run with seed {r.seed} lost {len(r.lost_acked)} acknowledged record(s) "
        f"(first: {r.lost_acked[0]}); unclean elections in that run: {r.unclean_elections}. "
        "Ask yourself which replica became leader after the crash, and what it held."
    )


def _replaced_loss_story(r: RunResult) -> str:
    return (
        f"Durability: when the leader crashed while its followers were still in the ISR, a "
        f"follower replaced it (a clean election), and run with seed {r.seed} lost "
        f"{len(r.lost_acked)} acknowledged record(s) (first: {r.lost_acked[0]}). Only the old "
        "leader held them, and it truncates them when it comes back as a follower: a record is "
        "lost when no replica that can become leader will ever serve it. Which acks setting "
        "lets the leader answer before a follower has the record?"
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
