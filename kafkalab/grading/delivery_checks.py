"""Checks for "where does the commit go?": replay a consumer's poll/process/commit loop with a
crash after every call, and compare what the application processed with a delivery guarantee
(at-least-once: nothing skipped; at-most-once: nothing twice)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from kafkalab.grading.checks import ELLIPSIS_HINT, Feedback, time_limit
from kafkalab.sim.cluster import Cluster

__all__ = [
    "GROUP",
    "LOOP_CALLS",
    "SEMANTICS",
    "check_consumer_loop",
    "loop_call",
    "processed_after_crash",
]

LOOP_CALLS = ("poll", "process", "commit")
SEMANTICS = ("at-least-once", "at-most-once")
ROUNDS = 2  # loop iterations, each after two new records arrive
GROUP = "app"


def loop_call(cluster: Cluster, call: str) -> None:
    """One call of a consumer loop ("poll", "process" or "commit") by the group's consumer."""
    if call == "poll":
        cluster.poll(GROUP, process=False)
    elif call == "process":
        cluster.process(GROUP)
    else:
        cluster.commit_offsets(GROUP)


def processed_after_crash(
    order: Sequence[str], crash_after: int | None
) -> tuple[list[str], list[str]]:
    """Run ``ROUNDS`` iterations of the loop ``order`` (each after two new records arrive), the
    consumer crashing after call number ``crash_after`` (1-based; None: no crash), then restart
    it and run two more iterations. Returns (the records written, what was processed)."""
    c = Cluster(brokers=3, groups=[GROUP], replication="auto", config={"min.insync.replicas": 2})
    c.consumer(GROUP, group=GROUP, auto_offset_reset="earliest")
    written: list[str] = []
    calls = 0
    for round_ in range(ROUNDS):
        batch = [f"m{2 * round_ + 1}", f"m{2 * round_ + 2}"]
        c.produce(values=batch)
        written += batch
        for call in order:
            loop_call(c, call)
            calls += 1
            if calls == crash_after:
                c.crash(GROUP)
                c.restart(GROUP)
    for _ in range(2):
        for call in order:
            loop_call(c, call)
    return written, c.report().processed.get(GROUP, [])


def _validate(order: Any) -> list[str]:
    if order is None or order is Ellipsis:
        raise Feedback(f"the loop is empty: {ELLIPSIS_HINT} (a list such as {list(LOOP_CALLS)})")
    if isinstance(order, str) or not isinstance(order, Sequence):
        raise Feedback(f"{order!r} is not a list: use a list of {', '.join(LOOP_CALLS)}")
    if sorted(order) != sorted(LOOP_CALLS):
        raise Feedback(
            f"{list(order)!r} is not allowed: use each of {', '.join(LOOP_CALLS)} exactly once"
        )
    return list(order)


def check_consumer_loop(order: Any, semantics: str, *, seconds: float | None = None) -> None:
    """``order`` (the calls of one loop iteration, such as ``["poll", "process", "commit"]``)
    must give ``semantics`` whatever call the consumer crashes after; otherwise
    :class:`Feedback` names the crash and the records skipped or repeated."""
    if semantics not in SEMANTICS:
        raise ValueError(f"semantics={semantics!r} is not allowed: use one of {SEMANTICS}")
    calls = _validate(order)
    shown = " -> ".join(calls)
    with time_limit(seconds, "your consumer loop"):
        for crash_after in (None, *range(1, ROUNDS * len(calls) + 1)):
            written, processed = processed_after_crash(calls, crash_after)
            counts = Counter(processed)
            skipped = [v for v in written if counts[v] == 0]
            twice = sorted(v for v, n in counts.items() if n > 1)
            bad = skipped if semantics == "at-least-once" else twice
            if bad:
                raise Feedback(_explain(shown, semantics, crash_after, len(calls), bad, processed))


def _explain(
    shown: str,
    semantics: str,
    crash_after: int | None,
    per_round: int,
    bad: list[str],
    processed: list[str],
) -> str:
    if crash_after is None:
        when = "even without a crash"
    else:
        round_, call = divmod(crash_after - 1, per_round)
        when = f"when the consumer crashes after call {call + 1} of iteration {round_ + 1}"
    what = "never processed" if semantics == "at-least-once" else "processed twice"
    rule = (
        "commit a position only after the records before it are processed"
        if semantics == "at-least-once"
        else "commit a position before the records before it are processed"
    )
    return (
        f"With the loop {shown}, {when}, {bad} are {what} (processed in all: {processed}). "
        f"For {semantics}, {rule}."
    )
