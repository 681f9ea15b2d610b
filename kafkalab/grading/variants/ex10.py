"""Exercise 10 (consumer offsets): each learner's offsets topic size and groups, and their
consumer loop, crash and delivery guarantee."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping
from typing import Any

from kafkalab.grading.delivery_checks import GROUP, loop_call
from kafkalab.grading.variants.base import QuestionVariants, check_learner_id, params, register

ASSIGNMENT = "10-consumer-offsets"

# ---- group_partition: Kafka's rule with the learner's offsets.topic.num.partitions -----------

PARTITION_COUNTS = (10, 12, 20, 25, 30, 40, 60, 75, 100, 64)
GROUP_SETS = (
    ("payments", "fraud-check", "email-sender"),
    ("inventory", "search-indexer", "audit-log"),
    ("clickstream", "recommendations", "billing-v2"),
    ("shipping", "geo-enricher", "alerts"),
    ("ledger", "metrics-rollup", "notifier-eu"),
    ("checkout", "session-tracker", "image-resizer"),
)
# The hidden groups: other names, names with characters beyond ASCII (each one UTF-16 code
# unit), long names whose hash wraps many times, and one whose hashCode is -2147483648.
HIDDEN_GROUPS = (
    "risk-scoring",
    "warehouse-sync",
    "orders-archiver",
    "tenant-42-ingest",
    "订单处理",
    "café-reporting",
    "Ünïcode-group",
    "x" * 37,
    "stream-processor-" + "9" * 12,
    "A",
    "z",
    "connect-cluster-prod",
)
MIN_VALUE_GROUP = "polygenelubricants"  # its String.hashCode is Integer.MIN_VALUE
HIDDEN_COUNTS = (7, 33, 50, 128, 150, 200)


def _group_partition_show(p: Mapping[str, Any]) -> str:
    groups = ", ".join(repr(g) for g in p["groups"])
    return (
        f"Your cluster runs with offsets.topic.num.partitions = {p['partitions']} (set when it "
        f"was first started; the default is 50).\nYour groups: {groups}.\n"
        "The hidden test also tries other group ids and other partition counts."
    )


register(
    QuestionVariants(
        ASSIGNMENT,
        "group_partition",
        tuple(
            {"partitions": n, "groups": groups}
            for n, groups in itertools.product(PARTITION_COUNTS, GROUP_SETS)
        ),
        _group_partition_show,
    )
)


def hidden_group_cases(learner_id: Any) -> list[tuple[str, int]]:
    """The (group id, partition count) pairs the hidden test tries for this learner: four
    hidden groups with the learner's count, two with another count, and the group whose
    hashCode has no positive counterpart with a count that is not a power of two."""
    text = check_learner_id(learner_id)
    mine = params(ASSIGNMENT, "group_partition", text)["partitions"]
    digest = hashlib.sha256(f"{ASSIGNMENT}/group_partition/hidden/{text}".encode()).digest()
    picks: list[str] = []
    for byte in digest:
        name = HIDDEN_GROUPS[byte % len(HIDDEN_GROUPS)]
        if name not in picks:
            picks.append(name)
        if len(picks) == 6:
            break
    other = HIDDEN_COUNTS[digest[-1] % len(HIDDEN_COUNTS)]
    cases = [(g, mine) for g in picks[:4]] + [(g, other) for g in picks[4:6]]
    odd = mine if mine & (mine - 1) else other if other & (other - 1) else 50
    cases.append((MIN_VALUE_GROUP, odd))
    return cases


# ---- commit_placement: a consumer loop, a crash, a guarantee --------------------------------

LOOP_CALLS = ("poll", "process", "commit")
ROUNDS = 3


def _loop_show(p: Mapping[str, Any]) -> str:
    loop = " -> ".join(p["loop"])
    round_, call = divmod(p["crash_after"] - 1, len(p["loop"]))
    return (
        f"Loop: {loop}, {ROUNDS} iterations; before each, {p['per_poll']} new records arrive "
        f"(m1, m2, ... in order).\nThe consumer crashes after call {p['crash_after']} in all: "
        f"call {call + 1} of iteration {round_ + 1} (its {p['loop'][call]!r}), and restarts at "
        "once from the group's committed position (earliest if none); after the "
        f"{ROUNDS} iterations it runs the loop twice more.\n"
        f"The guarantee you must build: {p['guarantee']}."
    )


def processed_after(p: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Replay the learner's loop with its crash: (the records written, what the application
    processed, in order)."""
    from kafkalab import Cluster

    c = Cluster(brokers=3, groups=[GROUP], replication="auto", config={"min.insync.replicas": 2})
    c.consumer(GROUP, group=GROUP, auto_offset_reset="earliest")
    written: list[str] = []
    calls = 0
    for _ in range(ROUNDS):
        batch = [f"m{len(written) + i + 1}" for i in range(p["per_poll"])]
        c.produce(values=batch)
        written += batch
        for call in p["loop"]:
            loop_call(c, call)
            calls += 1
            if calls == p["crash_after"]:
                c.crash(GROUP)
                c.restart(GROUP)
    for _ in range(2):
        for call in p["loop"]:
            loop_call(c, call)
    return written, list(c.report().processed.get(GROUP, []))


def _loop_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    written, processed = processed_after(p)
    return {"written": written, "processed": processed}


# For each loop, the crashes (the call number after which the consumer crashes) that skip or
# repeat records, and one after that does neither.
CRASH_POINTS = {
    ("poll", "process", "commit"): (2, 3, 5, 8),
    ("poll", "commit", "process"): (2, 3, 5, 8),
    ("process", "poll", "commit"): (3, 4, 6),
    ("process", "commit", "poll"): (4, 5, 7),
    ("commit", "poll", "process"): (3, 4, 6),
    ("commit", "process", "poll"): (4, 5, 7),
}


def _loops() -> tuple[dict[str, Any], ...]:
    grid = []
    for i, (loop, crashes) in enumerate(CRASH_POINTS.items()):
        for j, (crash_after, per_poll) in enumerate(itertools.product(crashes, (2, 3))):
            guarantee = ("at-least-once", "at-most-once")[(i + j) % 2]
            grid.append(
                {
                    "loop": loop,
                    "crash_after": crash_after,
                    "per_poll": per_poll,
                    "guarantee": guarantee,
                }
            )
    return tuple(grid)


register(QuestionVariants(ASSIGNMENT, "commit_placement", _loops(), _loop_show, _loop_answers))
