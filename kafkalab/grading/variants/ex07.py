"""Exercise 7 (acks, min.insync.replicas, unclean election): each learner's cluster size,
failures, targets, release and timeouts."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from kafkalab.grading.checks import Feedback, time_limit
from kafkalab.grading.variants.base import QuestionVariants, register

ASSIGNMENT = "07-acks-min-isr"

# ---- 1. durability_target: a config for your cluster, your failure and your targets ----------

DURATION_MS = 80000
SETTLE_MS = 20000


def failure_1(p: Mapping[str, Any], seed: int) -> list[Any]:
    """At 5 s the leader (broker 1) loses its links to ``cut`` followers (brokers 2, 3, ...);
    at 50 s it crashes, and at 52 s the links come back. 0.7 s later per seed."""
    from kafkalab.sim.timed import Fault

    shift = seed * 700
    cut = range(2, 2 + p["cut"])
    return [
        *(Fault(5000 + shift, "disconnect", (1, f)) for f in cut),
        Fault(50000 + shift, "crash", (1,)),
        *(Fault(52000 + shift, "reconnect", (1, f)) for f in cut),
    ]


def failure_2(p: Mapping[str, Any], seed: int) -> list[Any]:
    """At 30 s every follower stalls for 4 s (still in the ISR); 3 s in, the leader crashes and
    a follower replaces it; at 60 s the old leader returns as a follower. 0.7 s later per seed."""
    from kafkalab.sim.timed import Fault

    shift = seed * 700
    followers = range(2, p["brokers"] + 1)
    return [
        *(Fault(30000 + shift, "pause", (f,)) for f in followers),
        Fault(33000 + shift, "crash", (1,)),
        *(Fault(34000 + shift, "resume", (f,)) for f in followers),
        Fault(60000 + shift, "restart", (1,)),
    ]


def run_failure(config: Mapping[str, Any], p: Mapping[str, Any], which: int, seed: int) -> Any:
    """One timed run of failure 1 or 2 with ``config`` on the learner's cluster."""
    from kafkalab.sim.timed import simulate

    faults = (failure_1 if which == 1 else failure_2)(p, seed)
    return simulate(
        dict(config),
        seed=seed,
        brokers=p["brokers"],
        duration_ms=DURATION_MS,
        settle_ms=SETTLE_MS,
        faults=faults,
    )


def _target_show(p: Mapping[str, Any]) -> str:
    b, cut = p["brokers"], p["cut"]
    cut_names = ", ".join(str(f) for f in range(2, 2 + cut))
    return (
        f"Your topic has {b} replicas (brokers 1 to {b}; broker 1 leads).\n"
        f"Failure 1: at 5 s broker 1 loses its links to follower(s) {cut_names} (alive, but cut "
        f"off); at 50 s broker 1 crashes, at 52 s the links come back; broker 1 returns at 80 s.\n"
        f"Failure 2: at 30 s every follower stalls for 4 s; 3 s in, broker 1 crashes and a "
        f"follower replaces it; broker 1 returns at 60 s.\n"
        f"Targets: every acknowledged record is held by at least {p['copies']} brokers when the "
        f"producer is told; no acknowledged record is ever lost; under failure 1 at least "
        f"{p['target']:.0%} of the records sent are acknowledged."
    )


# (brokers, followers cut off, copies, availability target): the target is the one the most
# available config meeting the other targets reaches in every run, rounded down (a test runs it).
_TARGET_GRID = (
    (3, 1, 2, 0.6),
    (3, 2, 2, 0.2),
    (4, 1, 2, 0.6),
    (4, 1, 3, 0.6),
    (4, 2, 2, 0.6),
    (4, 2, 3, 0.2),
    (4, 3, 2, 0.2),
    (4, 3, 3, 0.2),
    (5, 1, 2, 0.6),
    (5, 1, 3, 0.6),
    (5, 1, 4, 0.6),
    (5, 2, 2, 0.6),
    (5, 2, 3, 0.6),
    (5, 2, 4, 0.2),
    (5, 3, 2, 0.6),
    (5, 3, 3, 0.2),
    (5, 3, 4, 0.2),
    (5, 4, 2, 0.2),
    (5, 4, 3, 0.2),
    (5, 4, 4, 0.2),
)

register(
    QuestionVariants(
        ASSIGNMENT,
        "durability_target",
        tuple(
            {"brokers": b, "cut": cut, "copies": copies, "target": target}
            for b, cut, copies, target in _TARGET_GRID
        ),
        _target_show,
    )
)


def check_durability_version(
    config: Any, p: Mapping[str, Any], *, runs: int = 3, seconds: float = 90.0
) -> None:
    """The learner's ``config`` against their targets: at least ``copies`` copies when a record
    is acknowledged (acks=all and min.insync.replicas), no acknowledged record lost in ``runs``
    runs of both failures, and the availability target under failure 1."""
    from kafkalab.config import make_config
    from kafkalab.grading.config_checks import learner_settings

    config = learner_settings(config)
    cfg = make_config(config)
    problems: list[str] = []
    if cfg.acks != "all":
        problems.append(
            f"Copies: with acks={cfg.acks} the leader answers before any follower holds the "
            f"record; your target is {p['copies']} copies when the producer is told."
        )
    elif cfg.min_insync_replicas < p["copies"]:
        problems.append(
            f"Copies: with min.insync.replicas={cfg.min_insync_replicas} the leader acknowledges "
            f"a record once an ISR of {cfg.min_insync_replicas} holds it; your target is "
            f"{p['copies']} copies."
        )
    with time_limit(seconds, "the simulations"):
        first = [run_failure(config, p, 1, seed) for seed in range(runs)]
        second = [run_failure(config, p, 2, seed) for seed in range(runs)]
    replay = None
    for which, results in ((1, first), (2, second)):
        lossy = next((r for r in results if r.lost_acked), None)
        if lossy is not None:
            problems.append(
                f"Durability: failure {which}, run with seed {lossy.seed}, lost "
                f"{len(lossy.lost_acked)} acknowledged record(s) (first: {lossy.lost_acked[0]}); "
                f"unclean elections: {lossy.unclean_elections}. Which replica led after the "
                "crash, and what did it hold?"
            )
            replay = replay or (which, lossy.seed)
    produced = sum(r.produced for r in first)
    fraction = sum(r.acked for r in first) / produced if produced else 0.0
    if fraction < p["target"]:
        errors: dict[str, int] = {}
        for r in first:
            for name, n in r.errors.items():
                errors[name] = errors.get(name, 0) + n
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(errors.items())) or "none"
        problems.append(
            f"Availability: under failure 1, {fraction:.0%} of the records were acknowledged; the "
            f"target is at least {p['target']:.0%}. Records that failed, by error: {shown}. "
            "Who can lead after the crash, and how large is the ISR then?"
        )
        replay = replay or (1, first[0].seed)
    if problems:
        if replay is not None:
            which, seed = replay
            problems.append(
                "Replay it: from kafkalab.grading.variants.ex07 import run_failure; "
                f"run_failure(config, mine.params('durability_target'), {which}, seed={seed})"
            )
        raise Feedback("\n".join(problems))


# ---- 2. acked_loss_scenario: your cluster size, and the broker that loses power --------------


def _loss_show(p: Mapping[str, Any]) -> str:
    return (
        f"Your cluster has {p['brokers']} brokers, and the broker that loses power (crash with "
        f"lose_unflushed: true) is broker {p['power_loss']}."
    )


register(
    QuestionVariants(
        ASSIGNMENT,
        "acked_loss_scenario",
        tuple(
            {"brokers": b, "power_loss": f}
            for b in (3, 4, 5)
            for f in range(2 if b == 3 else 1, b + 1)
        ),
        _loss_show,
    )
)


def _power_losses(cluster: Any) -> list[int]:
    return [
        int(e.node)
        for e in cluster.trace.of_kind("crash")
        if e.data.get("lose_unflushed") and str(e.node).isdigit()
    ]


def check_loss_scenario_version(text: Any, p: Mapping[str, Any]) -> Any:
    """The learner's scenario loses an ``acks=all`` record (scenario_checks'
    acked-loss-with-acks-all), on their cluster size, and the broker that loses power is
    theirs (no other broker loses power)."""
    from kafkalab.grading.scenario_checks import check_scenario_text

    cluster = check_scenario_text(text, "acked-loss-with-acks-all")
    problems = []
    if len(cluster.broker_ids) != p["brokers"]:
        problems.append(
            f"your scenario has {len(cluster.broker_ids)} brokers; yours has {p['brokers']} "
            f"(brokers: {p['brokers']})"
        )
    lost_power = _power_losses(cluster)
    if set(lost_power) != {p["power_loss"]}:
        who = ", ".join(str(b) for b in sorted(set(lost_power)))
        who = f"broker {who}" if who else "no broker"
        problems.append(
            f"in your scenario {who} lost power; in yours broker {p['power_loss']}, and only it, "
            "loses power (crash: {broker: N, lose_unflushed: true})"
        )
    if problems:
        raise Feedback("; ".join(problems))
    return cluster


# ---- 3. min_isr_error: what the producer is told, in your cluster and release ---------------


def _errors_steps(p: Mapping[str, Any]) -> list[str]:
    b, cut = p["brokers"], p["cut"]
    cut_ids = list(range(2, 2 + cut))
    kept = list(range(2 + cut, b + 1))
    lines = [
        f'c = Cluster(brokers={b}, config={{"preset": "{p["preset"]}", "acks": "all",',
        f'    "min.insync.replicas": {p["min_isr"]}, "replica.lag.time.max.ms": 10000}})',
        'c.produce("m1")',
        f"for follower in {list(range(2, b + 1)) * 2}:",
        "    c.fetch(follower)        # m1 is on every broker, and committed",
    ]
    lines += [
        f"c.disconnect(1, {f})         # follower {f} is cut off from the leader" for f in cut_ids
    ]
    lines += ['c.produce("m2")']
    if kept:
        lines += [f"for follower in {kept * 2}:", "    c.fetch(follower)"]
    lines += ["c.advance(31000)", 'c.produce("m3")']
    if kept:
        lines += [f"for follower in {kept * 2}:", "    c.fetch(follower)"]
    lines += ["c.advance(35000)"]
    return lines


def _errors_cluster(p: Mapping[str, Any]) -> Any:
    from kafkalab import Cluster

    b, cut = p["brokers"], p["cut"]
    kept = list(range(2 + cut, b + 1))
    c = Cluster(
        brokers=b,
        config={
            "preset": p["preset"],
            "acks": "all",
            "min.insync.replicas": p["min_isr"],
            "replica.lag.time.max.ms": 10000,
        },
    )
    c.produce("m1")
    for f in list(range(2, b + 1)) * 2:
        c.fetch(f)
    for f in range(2, 2 + cut):
        c.disconnect(1, f)
    c.produce("m2")
    for f in kept * 2:
        c.fetch(f)
    c.advance(31000)
    c.produce("m3")
    for f in kept * 2:
        c.fetch(f)
    c.advance(35000)
    return c


def _errors_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    errors = _errors_cluster(p).report().errors
    return {"m2_error": errors.get("m2"), "m3_error": errors.get("m3")}


def check_error_answer(answer: Any, p_answer: Any, *, question: str, why: str) -> None:
    """An error name or None, against the replayed one."""
    from kafkalab.grading.checks import check_answer

    if answer is Ellipsis:
        raise Feedback(f"{question}: replace the ... with an error name in quotes, or None")
    check_answer(str(answer), str(p_answer), question=question, why=why)


register(
    QuestionVariants(
        ASSIGNMENT,
        "min_isr_error",
        tuple(
            {"preset": preset, "brokers": b, "min_isr": m, "cut": cut}
            for preset, b, m in itertools.product(("3.0", "3.6", "3.7"), (3, 4, 5), (2, 3))
            for cut in range(1, b)
        ),
        lambda p: "\n".join(_errors_steps(p)),
        _errors_answers,
    )
)

# ---- 4. search_judges: the search with your lag time and session timeout --------------------


def search_settings(p: Mapping[str, Any]) -> dict[str, Any]:
    """The settings every config of the learner's search shares."""
    return {
        "replica.lag.time.max.ms": p["lag_ms"],
        "zookeeper.session.timeout.ms": p["session_ms"],
    }


def _search_show(p: Mapping[str, Any]) -> str:
    return (
        f"Your cluster: replica.lag.time.max.ms = {p['lag_ms']} (the leader checks its ISR every "
        f"{p['lag_ms'] // 2} ms from 0 ms) and zookeeper.session.timeout.ms = {p['session_ms']} "
        f"(each 'expire' step advances the clock by {p['session_ms']} ms). The producer's "
        "request.timeout.ms is 30000.\n"
        f"settings = {search_settings(p)!r}"
    )


register(
    QuestionVariants(
        ASSIGNMENT,
        "search_judges",
        # (Kafka's defaults since 2.5, 30000 and 18000, are Lesson 7's: left out.) Each version
        # has a counterexample within the search's six steps: 1.5 x lag_ms <= 4 x session_ms.
        tuple(
            {"lag_ms": lag, "session_ms": session}
            for lag, session in (
                (8000, 6000),
                (10000, 6000),
                (10000, 10000),
                (10000, 18000),
                (20000, 10000),
                (15000, 12000),
                (20000, 18000),
                (30000, 12000),
                (40000, 18000),
            )
        ),
        _search_show,
    )
)


# ---- helpers the notebook calls before the questions ------------------------------------------


def try_config(exercise: Any, config: Mapping[str, Any], runs: int = 3) -> None:
    """Print what ``runs`` runs of each failure did with ``config`` on the learner's cluster
    (or what to fix first)."""
    try:
        p = exercise.params("durability_target")
    except Feedback as err:
        print(err)
        return
    for which in (1, 2):
        for seed in range(runs):
            r = run_failure(config, p, which, seed)
            print(
                f"failure {which}, seed {seed}: {r.acked} of {r.produced} acknowledged, "
                f"{len(r.lost_acked)} of them lost, unclean elections {r.unclean_elections}"
            )


def my_search_settings(exercise: Any) -> dict[str, Any]:
    """The learner's :func:`search_settings` (empty, after saying what to fix, without an id)."""
    try:
        return search_settings(exercise.params("search_judges"))
    except Feedback as err:
        print(err)
        return {}
