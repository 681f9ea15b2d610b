"""Exercise 9 (transactions): each learner's interleaving of two transactions and plain writes,
and the partition their hanging transaction must stall."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from kafkalab.grading.checks import Feedback
from kafkalab.grading.variants.base import QuestionVariants, register

ASSIGNMENT = "09-transactions"

# ---- isolation_reads: two transactional producers and a plain one, interleaved ----------------

# A step is ("begin", producer), ("write", producer, value), ("commit", producer) or
# ("abort", producer); a plain write has producer None.
Step = tuple[Any, ...]

_OPENINGS: tuple[tuple[Step, ...], ...] = (
    (
        ("begin", "t1"),
        ("write", "t1", "a"),
        ("begin", "t2"),
        ("write", "t2", "b"),
        ("write", None, "x"),
        ("write", "t1", "c"),
        ("write", "t2", "d"),
    ),
    (
        ("begin", "t2"),
        ("write", "t2", "b"),
        ("write", None, "x"),
        ("begin", "t1"),
        ("write", "t1", "a"),
        ("write", "t2", "d"),
        ("write", "t1", "c"),
    ),
)


def _interleavings() -> tuple[dict[str, Any], ...]:
    """Each opening, then every way to end t1 and t2 (commit, abort or leave open) in either
    order, the plain write of y after the first end, and, once t1 has ended, t1's next
    transaction writing e right after (or not)."""
    found: dict[tuple[Step, ...], None] = {}
    outcomes = ("commit", "abort", "open")
    for opening in _OPENINGS:
        for end1, end2 in itertools.product(outcomes, outcomes):
            ends = [(end, who) for end, who in ((end1, "t1"), (end2, "t2")) if end != "open"]
            for order in itertools.permutations(ends):
                for reopen in (False, True) if end1 != "open" else (False,):
                    tail: list[Step] = list(order)
                    tail.insert(min(1, len(tail)), ("write", None, "y"))
                    if reopen:  # t1's next transaction, right after t1's end
                        at = tail.index((end1, "t1")) + 1
                        tail[at:at] = [("begin", "t1"), ("write", "t1", "e")]
                    found[opening + tuple(tail)] = None
    return tuple({"steps": steps} for steps in found)


def _step_line(step: Step) -> str:
    op, who = step[0], step[1]
    if op == "write":
        if who is None:
            return f'c.produce("{step[2]}")                  # the plain producer'
        return f'c.produce("{step[2]}", producer="{who}")'
    return f'c.{op}("{who}")'


def _isolation_show(p: Mapping[str, Any]) -> str:
    lines = [
        "c = Cluster(brokers=3, transactional_ids=['t1', 't2'], replication='auto',",
        "            config={'min.insync.replicas': 2})     # one partition, demo-0",
        'c.producer("t1", transactional_id="t1")',
        'c.producer("t2", transactional_id="t2")',
    ]
    lines += [_step_line(step) for step in p["steps"]]
    lines.append("# then a read_committed and a read_uncommitted consumer poll from the beginning")
    return "\n".join(lines)


def isolation_cluster(p: Mapping[str, Any]) -> Any:
    """The learner's interleaving, run, with both consumers polled."""
    from kafkalab import Cluster

    c = Cluster(
        brokers=3,
        transactional_ids=["t1", "t2"],
        replication="auto",
        config={"min.insync.replicas": 2},
    )
    c.producer("t1", transactional_id="t1")
    c.producer("t2", transactional_id="t2")
    for step in p["steps"]:
        op, who = step[0], step[1]
        if op == "begin":
            c.begin(who)
        elif op == "write" and who is None:
            c.produce(step[2])
        elif op == "write":
            c.produce(step[2], producer=who)
        elif op == "commit":
            c.commit(who)
        else:
            c.abort(who)
    for name, level in (("rc", "read_committed"), ("ru", "read_uncommitted")):
        c.consumer(name, isolation_level=level, **{"auto.offset.reset": "earliest"})
        c.poll(name)
    return c


def _isolation_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    c = isolation_cluster(p)
    consumed = c.report().consumed
    return {
        "committed_reads": list(consumed.get("rc", [])),
        "uncommitted_reads": list(consumed.get("ru", [])),
        "lso": c.lso()["demo-0"],
        "log": list(c.logs()[c.leader]),
    }


register(
    QuestionVariants(
        ASSIGNMENT, "isolation_reads", _interleavings(), _isolation_show, _isolation_answers
    )
)


# ---- hanging_scenario: a hanging transaction on the learner's partition ----------------------


def _hanging_show(p: Mapping[str, Any]) -> str:
    return (
        f"Your topic demo has {p['partitions']} partitions (partitions: {p['partitions']} in the "
        f"scenario).\nThe hanging transaction must stall partition demo-{p['partition']}, and "
        f"only that one, with its LSO stuck at offset {p['lso']}."
    )


register(
    QuestionVariants(
        ASSIGNMENT,
        "hanging_scenario",
        tuple(
            {"partitions": n, "partition": k, "lso": lso}
            for n in (2, 3, 4)
            for k in range(n)
            for lso in (2, 3, 4)
        ),
        _hanging_show,
    )
)


def stuck_partitions(c: Any) -> dict[str, int]:
    """Data partitions whose LSO is below the HW at their leader, with that LSO."""
    leaders = {tp: st.leader for tp, st in c.partition_states().items()}
    return {
        tp: lso
        for tp, lso in c.lso().items()
        if leaders.get(tp) is not None and lso < c.replica(leaders[tp], tp).hw
    }


def check_hanging_on_partition(
    text: Any, *, partitions: int, partition: int, lso: int | None = None
) -> Any:
    """The learner's scenario makes a hanging transaction (as ``check_scenario_text`` asks) on a
    topic of ``partitions`` partitions, stalling ``demo-<partition>`` and no other partition;
    with ``lso`` given, that partition's LSO must be stuck exactly there. Returns the cluster."""
    from kafkalab.grading.scenario_checks import check_scenario_text

    try:
        c = check_scenario_text(text, "hanging-transaction")
    except Feedback as err:
        raise Feedback(f"{err}{_same_broker_hint(text, partition)}") from None
    data = sorted(tp for tp in c.partition_states() if tp.startswith("demo-"))
    if len(data) != partitions:
        raise Feedback(
            f"your topic has {len(data)} partition(s) ({', '.join(data)}); yours must have "
            f"{partitions}: put partitions: {partitions} at the top of the scenario"
        )
    stuck = stuck_partitions(c)
    want = f"demo-{partition}"
    if set(stuck) != {want}:
        raise Feedback(
            f"the stalled partitions are {sorted(stuck)}, with LSOs {c.lso()}; only {want} must "
            "be stalled. A produce step takes partition: N; which partitions does your "
            "transaction write to, and which does the late write reach?"
        )
    if lso is not None and stuck[want] != lso:
        raise Feedback(
            f"{want}'s LSO is stuck at {stuck[want]}, not at {lso}. The LSO stops at the offset "
            "of the late write; which records and markers come before it in that partition?"
        )
    return c


def _same_broker_hint(text: Any, partition: int) -> str:
    """When a transactional id's coordinator also leads the wanted partition, why its late
    write could not hang (else nothing)."""
    from kafkalab import scenarios
    from kafkalab.protocol.transactions import txn_partition

    try:
        s = scenarios.parse(str(text), "your scenario")
        c = s.cluster()
    except Exception:  # the scenario's own error is already in the feedback
        return ""
    states = c.partition_states()
    want = states.get(f"demo-{partition}")
    ids = [step.args["settings"] for step in s.steps if step.kind == "producer"]
    for txn_id in [i.get("transactional.id") or i.get("transactional_id") for i in ids]:
        coordinator = states.get(txn_partition(txn_id))
        if want is not None and coordinator is not None and coordinator.leader == want.leader:
            return (
                f"\nNote: broker {want.leader} leads demo-{partition} and is also the coordinator "
                f"of {txn_id!r} (it leads {txn_partition(txn_id)}). Messages from one client to "
                "one broker arrive in the order they were sent (one TCP connection), so the "
                "EndTxn waits behind the delayed write and the abort comes after it. Choose a "
                "transactional.id whose coordinator is another broker."
            )
    return ""


def check_verification_prevents_it(text: Any) -> None:
    """The same steps with KIP-890 part 1 on leave no partition stalled."""
    from kafkalab.grading.scenario_checks import run_scenario_text

    verified = {"transaction.partition.verification.enable": True}
    _, c = run_scenario_text(text, overrides=verified, checks=False)
    stuck = stuck_partitions(c)
    if stuck:
        raise Feedback(
            f"with verification on your steps still leave LSOs below the HW: {stuck}; the "
            "hanging transaction should come from a write that arrives after its transaction "
            "ended, which verification refuses"
        )
