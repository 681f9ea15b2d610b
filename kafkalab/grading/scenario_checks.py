"""Checks for "write a scenario file that produces anomaly X": run the learner's YAML through the
scenario runner and report what happened next to what was asked."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kafkalab.errors import KafkalabError
from kafkalab.grading.checks import ELLIPSIS_HINT, Feedback, time_limit
from kafkalab.sim.cluster import Cluster

__all__ = [
    "ANOMALIES",
    "Want",
    "check_scenario_text",
    "check_scenario_wants",
    "run_scenario_text",
]


@dataclass(frozen=True)
class Want:
    """One thing the scenario must make happen: a sentence for the learner and a test of the
    finished cluster."""

    what: str
    test: Callable[[Cluster], bool]


def _produces_all_use_acks_all(c: Cluster) -> bool:
    sent = c.trace.of_kind("produce")
    return bool(sent) and all(e.data.get("acks") == -1 for e in sent)


def _committed_on_every_replica(c: Cluster, value: str) -> bool:
    """Every replica holds ``value`` below its own HW: it knows the record is committed."""
    views = c.replicas_view().values()
    return all(value in v.values and v.values.index(value) < v.hw for v in views)


def _rejected_controller_writes(c: Cluster) -> int:
    return len(c.trace.of_kind("zk_write_rejected", "stale_controller_request"))


_OPEN_TXN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


def _every_transaction_closed(c: Cluster) -> bool:
    states = c.txn_states()
    return bool(states) and not any(s in _OPEN_TXN_STATES for s in states.values())


def _stuck_partitions(c: Cluster) -> list[str]:
    """Data partitions whose last stable offset (LSO) is below the HW, at their leader."""
    leaders = {tp: st.leader for tp, st in c.partition_states().items()}
    stuck = []
    for tp, lso in c.lso().items():
        leader = leaders.get(tp)
        if leader is not None and lso < c.replica(leader, tp).hw:
            stuck.append(tp)
    return stuck


ANOMALIES: dict[str, tuple[Want, ...]] = {
    "committed-on-every-replica": (
        Want("the cluster has three brokers", lambda c: len(c.broker_ids) == 3),
        Want("every produce uses acks=all", _produces_all_use_acks_all),
        Want("the producer saw m1 acknowledged", lambda c: "m1" in c.report().acked),
        Want(
            "every replica holds m1 below its own HW: each one knows m1 is committed",
            lambda c: _committed_on_every_replica(c, "m1"),
        ),
    ),
    "kip101-divergence": (
        Want(
            "leader epochs are off (config leader_epochs: false)",
            lambda c: not c.config.leader_epochs,
        ),
        Want("no unclean leader election happens", lambda c: c.report().unclean_elections == 0),
        Want(
            "two replicas end up holding different records at the same offset (divergent logs)",
            lambda c: c.report().divergent,
        ),
    ),
    "acked-loss-with-acks-all": (
        Want("every produce uses acks=all", _produces_all_use_acks_all),
        Want(
            "unclean leader election is off",
            lambda c: not c.config.unclean_leader_election_enable,
        ),
        Want("leader epochs are on", lambda c: c.config.leader_epochs),
        Want(
            "a record the producer saw acknowledged is missing from the leader's log at the end",
            lambda c: bool(c.report().lost_acked),
        ),
    ),
    "zombie-controller": (
        Want(
            "the cluster runs in ZooKeeper mode (controller_mode: zk)",
            lambda c: c.config.controller_mode == "zk",
        ),
        Want(
            "a second controller is elected (controller epoch 2 or more)",
            lambda c: c.controller_epoch >= 2,
        ),
        Want(
            "the replaced controller still acts, and its write or request is refused for its old "
            "controller epoch",
            lambda c: _rejected_controller_writes(c) > 0,
        ),
    ),
    "hanging-transaction": (
        Want(
            "the partition leaders do not verify transactional writes "
            "(transaction.partition.verification.enable: false, transaction.version 1)",
            lambda c: (
                not c.config.transaction_partition_verification_enable
                and c.config.transaction_version < 2
            ),
        ),
        Want(
            "at the end a transactional producer has run, and no transaction is open or ending "
            "at its coordinator",
            _every_transaction_closed,
        ),
        Want(
            "yet a data partition's LSO stays below its HW: a transaction that no marker will "
            "ever close holds read_committed consumers back",
            lambda c: _every_transaction_closed(c) and bool(_stuck_partitions(c)),
        ),
    ),
}


def run_scenario_text(
    text: Any,
    *,
    seconds: float | None = None,
    overrides: dict[str, Any] | None = None,
    checks: bool = True,
) -> tuple[Any, Cluster]:
    """Parse and replay a learner's scenario YAML ``text`` (with ``overrides`` of its config;
    ``checks=False`` skips its check steps) under a time limit; returns the scenario and the
    finished cluster, or raises :class:`Feedback` saying why it could not run."""
    from kafkalab import scenarios

    if text is None or text is Ellipsis or str(text).strip() in ("", "..."):
        raise Feedback(f"the scenario is empty: {ELLIPSIS_HINT} (a YAML text)")
    with time_limit(seconds, "your scenario"):
        try:
            s = scenarios.parse(str(text), "your scenario")
            cluster, _ = scenarios.replay(s, overrides, checks=checks)
        except KafkalabError as err:
            raise Feedback(f"your scenario does not run: {err}") from None
    return s, cluster


def check_scenario_wants(
    text: Any, wants: Sequence[Want], *, seconds: float | None = None, checks: bool = True
) -> Cluster:
    """Run the scenario YAML ``text`` and check every one of ``wants``. Returns the finished
    cluster; raises :class:`Feedback` saying which requirement failed and what the run did
    instead."""
    s, cluster = run_scenario_text(text, seconds=seconds, checks=checks)
    missing = [w for w in wants if not w.test(cluster)]
    if missing:
        raise Feedback(_explain(cluster, wants, missing, len(s.steps)))
    return cluster


def check_scenario_text(
    text: Any,
    anomaly: str,
    *,
    seconds: float | None = None,
) -> Cluster:
    """Run the scenario YAML ``text`` and check it produces ``anomaly`` (a key of
    :data:`ANOMALIES`). Returns the finished cluster; raises :class:`Feedback` saying which
    requirement failed and what the run did instead."""
    return check_scenario_wants(text, ANOMALIES[anomaly], seconds=seconds)


def _explain(cluster: Cluster, wants: Sequence[Want], missing: Sequence[Want], steps: int) -> str:
    lines = [f"Your scenario ran {steps} step(s). What was asked:"]
    lines += [f"  [{' ' if w in missing else 'x'}] {w.what}" for w in wants]
    report = cluster.report()
    lines.append("What happened:")
    lines.append(
        f"  leader {cluster.leader} in epoch {cluster.leader_epoch}, ISR {sorted(cluster.isr)}, "
        f"controller epoch {cluster.controller_epoch}"
    )
    for b, view in cluster.replicas_view().items():
        lines.append(f"  broker {b} log: {view.values}, LEO {view.leo}, HW {view.hw}")
    lines.append(f"  acknowledged: {report.acked}; acknowledged but lost: {report.lost_acked}")
    lines.append(
        f"  divergent logs: {'yes' if report.divergent else 'no'}; errors: {report.errors}"
    )
    if cluster.txn_states():
        lines.append(f"  transaction states: {cluster.txn_states()}; LSO: {cluster.lso()}")
    lines += _key_events(cluster)
    return "\n".join(lines)


_KEY_KINDS = (
    "truncate",
    "partition_state",
    "controller_elected",
    "controller_resigned",
    "zk_write_rejected",
    "stale_controller_request",
    "produce_result",
)


def _key_events(cluster: Cluster, limit: int = 8) -> list[str]:
    events = cluster.trace.of_kind(*_KEY_KINDS)[-limit:]
    if not events:
        return []
    lines = [f"  the last {len(events)} key event(s) of the trace:"]
    for e in events:
        fields = ", ".join(f"{k}={v!r}" for k, v in sorted(e.data.items()) if k != "tp")
        lines.append(f"    {e.time_ms:>6} ms  {e.node}  {e.kind}  {fields}")
    return lines
