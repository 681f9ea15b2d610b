"""Exercise 5 (the controller and leader election): each learner's failing broker, zombie leader
and zombie controller."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from kafkalab.grading.variants.base import QuestionVariants, register

ASSIGNMENT = "05-controller"

# ---- 1. predict_election: a broker's session expires -----------------------------------------

# Broker 1 is only the controller; the partition lives on the others. None of these orders is a
# lesson's ([2, 3, 4] in np-leader-cut-from-zk and controller-zombie, [4, 2, 3] in Lesson 5b).
_ELECTION_REPLICAS = ((4, 3, 2), (3, 4, 2), (3, 2, 4), (2, 3, 4, 5), (5, 3, 2, 4))
_FAILURES = ("leader crashes", "leader loses ZooKeeper", "first follower crashes")


def _failing(p: Mapping[str, Any]) -> int:
    replicas = p["replicas"]
    return replicas[1] if p["failure"] == "first follower crashes" else replicas[0]


def _election_steps(p: Mapping[str, Any]) -> list[str]:
    replicas = list(p["replicas"])
    followers = replicas[1:]
    lines = [
        f"c = Cluster(brokers={max(replicas)}, replicas={replicas}, leader={replicas[0]}, "
        'config={"controller_mode": "zk"})',
        "# broker 1 holds no replica: it is only the controller",
        'c.produce("m1")',
        f"for follower in {followers * 2}:",
        "    c.fetch(follower)  # at 0 ms every replica holds m1: the ISR is all of them",
    ]
    if p["early_out"] is not None:
        live = [f for f in followers if f != p["early_out"]]
        lines += [
            f"c.crash({p['early_out']})  # at 0 ms; it stays down",
            "c.advance(24000)",
            f"for follower in {live * 2}:",
            "    c.fetch(follower)  # at 24000 ms",
        ]
    lines.append(f"c.advance({p['fail_after_ms']})")
    failed_at = (24000 if p["early_out"] is not None else 0) + p["fail_after_ms"]
    broker = _failing(p)
    if p["failure"] == "leader loses ZooKeeper":
        lines.append(
            f'c.disconnect({broker}, "zk")  # at {failed_at} ms; it still reaches its followers'
        )
    else:
        lines.append(f"c.crash({broker})  # at {failed_at} ms")
    lines.append("c.advance(20000)")
    return lines


def _election_cluster(p: Mapping[str, Any]) -> tuple[Any, int]:
    """The cluster at the end, and the time of the failure."""
    from kafkalab import Cluster

    replicas = list(p["replicas"])
    followers = replicas[1:]
    c = Cluster(
        brokers=max(replicas),
        replicas=replicas,
        leader=replicas[0],
        config={"controller_mode": "zk"},
    )
    c.produce("m1")
    for follower in followers * 2:
        c.fetch(follower)
    if p["early_out"] is not None:
        c.crash(p["early_out"])
        c.advance(24000)
        for follower in [f for f in followers if f != p["early_out"]] * 2:
            c.fetch(follower)
    c.advance(p["fail_after_ms"])
    failed_at = c.now
    if p["failure"] == "leader loses ZooKeeper":
        c.disconnect(_failing(p), "zk")
    else:
        c.crash(_failing(p))
    c.advance(20000)
    return c, failed_at


def _election_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    c, failed_at = _election_cluster(p)
    changes = [e for e in c.trace.of_kind("partition_state") if e.time_ms >= failed_at]
    assert len(changes) == 1, f"{p}: {len(changes)} changes after the failure"
    change = changes[0]
    return {
        "new_leader": change.data["leader"],
        "new_leader_epoch": change.data["leader_epoch"],
        "new_isr": list(change.data["isr"]),
        "changed_at_ms": change.time_ms,
    }


def _election_grid() -> tuple[dict[str, Any], ...]:
    return tuple(
        {
            "replicas": replicas,
            "failure": failure,
            "early_out": replicas[-1] if early else None,
            "fail_after_ms": after,
        }
        for replicas, failure, early, after in itertools.product(
            _ELECTION_REPLICAS, _FAILURES, (False, True), (1500, 8500)
        )
    )


register(
    QuestionVariants(
        ASSIGNMENT,
        "predict_election",
        _election_grid(),
        lambda p: "\n".join(_election_steps(p)),
        _election_answers,
    )
)

# ---- 2. zombie_outcome: a leader cut from ZooKeeper keeps writing ----------------------------

_ZOMBIE_REPLICAS = ((3, 2, 4), (4, 3, 2), (2, 4, 3, 5))
_ISR_BEFORE = ("full", "one follower down", "followers down")


def _down_before(p: Mapping[str, Any]) -> list[int]:
    followers = list(p["replicas"][1:])
    return {"full": [], "one follower down": followers[-1:], "followers down": followers}[
        p["isr_before"]
    ]


def _zombie_values(p: Mapping[str, Any]) -> list[str]:
    return [f"z{i}" for i in range(1, p["zombie_records"] + 1)]


def _zombie_steps(p: Mapping[str, Any]) -> list[str]:
    replicas = list(p["replicas"])
    leader = replicas[0]
    down = _down_before(p)
    lines = [
        f"c = Cluster(brokers={max(replicas)}, replicas={replicas}, leader={leader}, "
        f'config={{"controller_mode": "zk", "acks": "{p["acks"]}"}})',
        'c.produce("m1")',
        f"for follower in {replicas[1:] * 2}:",
        "    c.fetch(follower)",
    ]
    if down:
        lines += [f"c.crash({b})" for b in down]
        lines += ["c.advance(24000)  # the crashed brokers stay down"]
    lines += [
        f'c.disconnect({leader}, "zk")  # broker {leader} keeps its clients and followers',
        "c.advance(24000)",
        f"for value in {_zombie_values(p)}:",
        f"    c.produce(value, to={leader})  # a client with stale metadata",
        'c.produce("n1")  # an up-to-date client, to the current leader (if any)',
        "for _ in range(3):",
        "    for follower in c.followers():  # the live followers of the current leader",
        f"        if follower != {leader}:",
        "            c.fetch(follower)",
        "c.advance(31000)",
        "c.heal()  # the link to ZooKeeper is back",
        "c.advance(6000)",
        "for _ in range(3):",
        "    for follower in c.followers():",
        "        c.fetch(follower)",
    ]
    return lines


def _zombie_cluster(p: Mapping[str, Any]) -> Any:
    from kafkalab import Cluster

    replicas = list(p["replicas"])
    leader = replicas[0]
    c = Cluster(
        brokers=max(replicas),
        replicas=replicas,
        leader=leader,
        config={"controller_mode": "zk", "acks": p["acks"]},
    )
    c.produce("m1")
    for follower in replicas[1:] * 2:
        c.fetch(follower)
    down = _down_before(p)
    for b in down:
        c.crash(b)
    if down:
        c.advance(24000)
    c.disconnect(leader, "zk")
    c.advance(24000)
    for value in _zombie_values(p):
        c.produce(value, to=leader)
    c.produce("n1")
    for _ in range(3):
        for follower in c.followers():
            if follower != leader:
                c.fetch(follower)
    c.advance(31000)
    c.heal()
    c.advance(6000)
    for _ in range(3):
        for follower in c.followers():
            c.fetch(follower)
    return c


def _zombie_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    c = _zombie_cluster(p)
    report = c.report()
    zombie = set(_zombie_values(p))
    return {
        "zombie_acked": [v for v in report.acked if v in zombie],
        "lost": list(report.lost_acked),
        "final_leader": c.leader,
    }


register(
    QuestionVariants(
        ASSIGNMENT,
        "zombie_outcome",
        tuple(
            {"replicas": r, "isr_before": isr, "acks": acks, "zombie_records": k}
            for r, isr, acks, k in itertools.product(
                _ZOMBIE_REPLICAS, _ISR_BEFORE, ("1", "all"), (1, 3)
            )
        ),
        lambda p: "\n".join(_zombie_steps(p)),
        _zombie_answers,
    )
)

# ---- 3. zombie_controller: a scenario with the learner's zombie, refusal and successor --------

REFUSERS = {"zk": "ZooKeeper", "broker": "a broker"}
_REFUSAL_KINDS = {"zk": "zk_write_rejected", "broker": "stale_controller_request"}
# the catalog's controller-zombie and Lesson 5a's held-link case: (brokers, zombie, successor, by)
_LESSON_CASES = {(4, 1, 2, "zk"), (4, 1, 2, "broker")}
# Who refuses the zombie. Only a broker: a controller whose session expired cannot read
# ZooKeeper, so it handles no news (KafkaController.processBrokerChange reads /brokers/ids first)
# and never comes to a write; what is refused is what it sent before it learned of the expiry.
_REFUSED_BY = ("broker",)


def _zombie_controller_grid() -> tuple[dict[str, Any], ...]:
    grid = []
    for brokers, zombie, by in itertools.product((3, 4, 5), (1, 2), _REFUSED_BY):
        for successor in range(1, brokers + 1):
            if successor == zombie or (brokers, zombie, successor, by) in _LESSON_CASES:
                continue
            grid.append(
                {"brokers": brokers, "zombie": zombie, "successor": successor, "refused_by": by}
            )
    return tuple(grid)


def _zombie_controller_show(p: Mapping[str, Any]) -> str:
    return (
        f"Your cluster has {p['brokers']} brokers in ZooKeeper mode.\n"
        f"The zombie is broker {p['zombie']}: it is the controller, stalls, and is replaced.\n"
        f"{REFUSERS[p['refused_by']].capitalize()} refuses a request it sent as controller, for "
        "its old controller epoch.\n"
        f"At the end broker {p['successor']} is the controller."
    )


def _elected(cluster: Any) -> dict[int, int]:
    """Controller epoch -> the broker that created /controller in it."""
    return {
        e.data["controller_epoch"]: e.data["broker"]
        for e in cluster.trace.of_kind("controller_elected")
    }


def refused_zombies(cluster: Any, refused_by: str) -> set[int]:
    """The brokers whose controller writes or requests ``refused_by`` ("zk" or "broker")
    refused for an old controller epoch."""
    elected = _elected(cluster)
    return {
        elected.get(e.data["controller_epoch"], -1)
        for e in cluster.trace.of_kind(_REFUSAL_KINDS[refused_by])
    }


def zombie_controller_wants(p: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the learner's scenario must make happen, beyond the zombie-controller anomaly."""
    from kafkalab.grading.scenario_checks import Want

    return (
        Want(
            f"the cluster has {p['brokers']} brokers",
            lambda c: len(c.broker_ids) == p["brokers"],
        ),
        Want(
            f"broker {p['zombie']} is a controller that is replaced, and "
            f"{REFUSERS[p['refused_by']]} refuses it for its old controller epoch",
            lambda c: p["zombie"] in refused_zombies(c, p["refused_by"]),
        ),
        Want(
            f"at the end broker {p['successor']} is the controller",
            lambda c: c.controller == p["successor"],
        ),
    )


def check_zombie_controller(text: Any, p: Mapping[str, Any]) -> Any:
    """Check a learner's zombie-controller scenario against their version: the anomaly
    (:data:`~kafkalab.grading.scenario_checks.ANOMALIES` ``zombie-controller``) and their own
    zombie, refuser and successor. Returns the finished cluster; raises :class:`Feedback`."""
    from kafkalab.grading.scenario_checks import ANOMALIES, check_scenario_wants

    wants = (*ANOMALIES["zombie-controller"], *zombie_controller_wants(p))
    return check_scenario_wants(text, wants)


register(
    QuestionVariants(
        ASSIGNMENT,
        "zombie_controller",
        _zombie_controller_grid(),
        _zombie_controller_show,
    )
)
