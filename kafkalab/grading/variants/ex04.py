"""Exercise 4 (ISR lag rules): each learner's stuck follower, GC pause and burst."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from kafkalab.grading.variants.base import QuestionVariants, register


def _followers(brokers: int) -> list[int]:
    return list(range(2, brokers + 1))


def _stuck_follower_steps(p: Mapping[str, Any]) -> list[str]:
    """The stuck-follower situation as the lines of a cell the learner could run."""
    others = [f for f in _followers(p["brokers"]) if f != p["stuck"]]
    lines = [
        f'c = Cluster(brokers={p["brokers"]}, config={{"replica.lag.time.max.ms": {p["lag_ms"]}}})',
        'c.produce("m1")',
        f"for follower in {_followers(p['brokers']) * 2}:",
        "    c.fetch(follower)      # at 0 ms every follower holds m1: all caught up",
    ]
    if p["last_fetch_ms"]:
        lines += [
            f"c.advance({p['last_fetch_ms']})        # now {p['last_fetch_ms']} ms",
            f"for follower in {_followers(p['brokers'])}:",
            "    c.fetch(follower)      # nothing new to copy",
        ]
    lines += ['c.produce("m2")']
    for f in others:
        lines += [f"c.fetch({f}); c.fetch({f})        # follower {f} holds m2"]
    lines += [f"# follower {p['stuck']} never fetches again; time passes: c.advance(...)"]
    return lines


def _stuck_follower_cluster(p: Mapping[str, Any]) -> Any:
    from kafkalab import Cluster

    c = Cluster(brokers=p["brokers"], config={"replica.lag.time.max.ms": p["lag_ms"]})
    c.produce("m1")
    for follower in _followers(p["brokers"]) * 2:
        c.fetch(follower)
    if p["last_fetch_ms"]:
        c.advance(p["last_fetch_ms"])
        for follower in _followers(p["brokers"]):
            c.fetch(follower)
    c.produce("m2")
    for f in _followers(p["brokers"]):
        if f != p["stuck"]:
            c.fetch(f)
            c.fetch(f)
    return c


def _predict_isr_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    c = _stuck_follower_cluster(p)
    c.advance(3 * p["lag_ms"])
    removed = [
        e.time_ms
        for e in c.trace.events
        if e.kind == "partition_state" and p["stuck"] not in e.data["isr"]
    ]
    return {"removed_at_ms": removed[0] if removed else None}


register(
    QuestionVariants(
        "04-isr",
        "predict_isr",
        tuple(
            {"brokers": n, "lag_ms": lag, "stuck": stuck, "last_fetch_ms": last}
            for n, lag, last in itertools.product((3, 4), (6000, 8000, 12000), (0, 1500, 3500))
            for stuck in _followers(n)
        ),
        lambda p: "\n".join(_stuck_follower_steps(p)),
        _predict_isr_answers,
    )
)


def _lag_time_show(p: Mapping[str, Any]) -> str:
    return (
        f"Your followers stall for up to {p['pause_ms']} ms in a garbage-collection pause; such "
        f"a follower must stay in the ISR.\nA follower cut off from its leader must leave the "
        f"ISR within {p['leave_within_ms']} ms."
    )


register(
    QuestionVariants(
        "04-isr",
        "lag_time",
        tuple(
            {"pause_ms": pause, "leave_within_ms": pause * 2 + extra}
            for pause, extra in itertools.product((4000, 6000, 8000, 10000), (3000, 9000))
        ),
        _lag_time_show,
    )
)


def _legacy_show(p: Mapping[str, Any]) -> str:
    return (
        f"Three brokers running the 0.8 rules with replica.lag.max.messages = "
        f"{p['lag_max_messages']} get one burst of {p['burst']} records; then 10 seconds pass "
        "before the followers fetch again.\n"
        "(The catalog scenario isr-flapping-legacy is this situation with 5000 and 4000.)"
    )


def _legacy_isr(burst: int, lag_max_messages: int | None) -> list[int]:
    """The ISR after the situation: the first two steps of isr-flapping-legacy (both
    followers fetch), a burst of ``burst`` records, 10 s without fetches."""
    from kafkalab import scenarios

    s = scenarios.get("isr-flapping-legacy")
    c = s.cluster({"replica.lag.max.messages": lag_max_messages})
    for step in s.steps[:2]:
        scenarios.apply_step(c, step)
    c.produce("burst", count=burst)
    c.advance(10000)
    return list(c.isr)


def _smallest_dropping_burst(lag_max_messages: int) -> int:
    """The smallest burst after which the 0.8 leader drops its followers, found by replaying
    bursts (a bisection between a burst that keeps them and one that drops them)."""
    keeps, drops = 1, 2 * lag_max_messages + 2
    assert len(_legacy_isr(keeps, lag_max_messages)) == 3
    assert _legacy_isr(drops, lag_max_messages) == [1]
    while drops - keeps > 1:
        middle = (keeps + drops) // 2
        if _legacy_isr(middle, lag_max_messages) == [1]:
            drops = middle
        else:
            keeps = middle
    return drops


def _legacy_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "legacy_isr_after_burst": _legacy_isr(p["burst"], p["lag_max_messages"]),
        "time_rule_isr_after_burst": _legacy_isr(p["burst"], None),
        "smallest_dropping_burst": _smallest_dropping_burst(p["lag_max_messages"]),
    }


register(
    QuestionVariants(
        "04-isr",
        "legacy_rule",
        tuple(
            {"burst": burst, "lag_max_messages": lag_max}
            for burst, lag_max in itertools.product((2500, 3500, 6000, 9000), (3000, 4000, 7000))
        ),
        _legacy_show,
        _legacy_answers,
    )
)
