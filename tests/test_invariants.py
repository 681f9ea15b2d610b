"""Unit tests of each named invariant object: fed trace events (and, for the two that judge
replica logs, a small in-memory view of the logs), it reports its violation with a readable
message, and nothing while all is fine. The log checks read only what changed since they last
looked."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from kafkalab import INVARIANTS, Cluster, InvariantViolation, scenarios
from kafkalab.check.invariants import (
    REGISTRY,
    ControllerEpochMonotonic,
    HwMonotonic,
    LogsAgreeBelowHw,
    NoAckedLoss,
    NoStaleControllerEffect,
    OneLeaderPerEpoch,
    new_invariants,
)
from kafkalab.check.logs import divergence
from kafkalab.protocol.log import Log, Record
from kafkalab.sim.outcome import is_safe, out_of_send_order
from kafkalab.sim.timed import RunResult
from kafkalab.sim.trace import Event

ROOT = Path(__file__).resolve().parents[1]
TP = "demo-0"


def event(kind: str, node: Any = 1, **data: Any) -> Event:
    return Event(0, 0, kind, str(node), data)


class Records(list):
    """A log's record list that counts how many records were read from it."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        got = super().__getitem__(index)
        Records.reads += len(got) if isinstance(index, slice) else 1
        return got


def make_log(values: list[str], *, hw: int, epoch: int = 0) -> Log:
    log = Log()
    log.records = Records()
    log.append_as_leader(tuple(values), epoch)
    log.hw = hw
    return log


def copy_of(leader: Log, *, hw: int) -> Log:
    """A follower holding the leader's records (the same record objects, as after a fetch)."""
    log = Log()
    log.records = Records()
    log.append_replicated(tuple(list.__getitem__(leader.records, slice(None))))
    log.hw = hw
    return log


class FakeLogs:
    """A LogView over in-memory logs: ``running`` maps partition -> broker -> log."""

    def __init__(self, running: dict[str, dict[int, Log]], leaders: dict[str, Any]) -> None:
        self.running = running
        self.leader = leaders
        self.on_disk: dict[str, set[str]] = {}
        self.truncating: set[int] = set()  # followers still looking for their truncation point

    def partitions(self) -> list[str]:
        return list(self.running)

    def leaders(self) -> dict[str, int | None]:
        return dict(self.leader)

    def live(self, tp: str) -> dict[int, Log]:
        return dict(sorted(self.running[tp].items()))

    def settled(self, tp: str) -> dict[int, Log]:
        return {b: log for b, log in self.live(tp).items() if b not in self.truncating}

    def every_value(self, tp: str) -> set[str]:
        held = {r.value for log in self.running[tp].values() for r in log.records}
        return held | self.on_disk.get(tp, set())


# ---- the registry ---------------------------------------------------------------------------


def test_invariants_lists_each_registered_invariant_with_its_meaning() -> None:
    assert list(INVARIANTS) == [
        "no_acked_loss",
        "logs_agree_below_hw",
        "hw_monotonic",
        "one_leader_per_epoch",
        "controller_epoch_monotonic",
        "no_stale_controller_effect",
    ]
    assert INVARIANTS == {name: cls.meaning for name, cls in REGISTRY.items()}
    assert all(cls.name == name and cls.kinds for name, cls in REGISTRY.items())
    made = new_invariants(FakeLogs({}, {}))
    assert list(made) == list(INVARIANTS)
    assert all(inv.verify() is None for inv in made.values())


def test_the_simulation_imports_nothing_from_the_check_package() -> None:
    """kafkalab.check subscribes to the trace from outside: no module of kafkalab.sim imports
    it, not even for type checking, so the two packages form no import circle."""
    for path in sorted((ROOT / "kafkalab" / "sim").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n.startswith("kafkalab.check") for n in names), path.name


# ---- invariants the trace alone decides -----------------------------------------------------


def test_one_leader_per_epoch() -> None:
    inv = OneLeaderPerEpoch()
    inv.observe(event("became_leader", 1, tp=TP, leader_epoch=1))
    inv.observe(event("became_leader", 1, tp=TP, leader_epoch=1))  # the same leader again
    inv.observe(event("became_leader", 2, tp=TP, leader_epoch=2))
    inv.observe(event("became_leader", 3, tp="other-0", leader_epoch=1))
    assert inv.verify() is None
    inv.observe(event("became_leader", 3, tp=TP, leader_epoch=2))
    assert inv.verify() == "brokers [2, 3] both led demo-0 in epoch 2"
    assert inv.violations == [{"partition": TP, "leader_epoch": 2, "brokers": [2, 3]}]


def test_controller_epoch_monotonic() -> None:
    inv = ControllerEpochMonotonic()
    for epoch in (1, 2, 5):
        inv.observe(event("controller_elected", 1, controller_epoch=epoch))
    assert inv.verify() is None and inv.epochs == [1, 2, 5]
    inv.observe(event("controller_elected", 2, controller_epoch=5))
    assert inv.verify() == "controller epoch 5 after 5"


def test_no_stale_controller_effect() -> None:
    inv = NoStaleControllerEffect()
    inv.observe(event("became_follower", 1, controller_epoch=2))
    inv.observe(event("became_leader", 2, controller_epoch=1))  # another broker: its own past
    inv.observe(event("became_leader", 1, controller_epoch=2))
    assert inv.verify() is None
    inv.observe(event("became_leader", 1, controller_epoch=1))
    assert inv.verify() == "broker 1 acted on controller epoch 1 after 2"


def test_hw_monotonic() -> None:
    inv = HwMonotonic()
    data = {"old_leo": 5, "removed": ["m4"], "reason": "leader_epoch"}
    inv.observe(event("truncate", 2, to=4, old_hw=4, **data))  # above the HW: allowed
    assert inv.verify() is None
    inv.observe(event("truncate", 2, to=3, old_hw=4, **data))
    assert inv.verify() == "broker 2 truncated to 3 below its HW 4"
    assert inv.violations[0]["removed"] == ["m4"]


# ---- no_acked_loss --------------------------------------------------------------------------


def acked(*values: str, base_offset: int = 0, error: str = "NONE") -> Event:
    return event(
        "produce_result",
        "producer",
        tp=TP,
        values=list(values),
        error=error,
        base_offset=base_offset,
    )


def test_no_acked_loss_holds_while_the_leader_has_every_acknowledged_record() -> None:
    leader = make_log(["m1", "m2"], hw=2)
    logs = FakeLogs({TP: {1: leader}}, {TP: 1})
    inv = NoAckedLoss(logs)
    inv.observe(acked("m1", "m2"))
    inv.observe(acked("m3", base_offset=2, error="NOT_ENOUGH_REPLICAS"))  # not acknowledged
    assert inv.verify() is None
    assert inv.acked == {"m1": TP, "m2": TP}
    assert inv.acked_at == {"m1": 0, "m2": 1}


def test_no_acked_loss_names_what_a_new_leader_lacks() -> None:
    old_leader = make_log(["m1", "m2"], hw=2)
    new_leader = make_log(["m1"], hw=1)
    logs = FakeLogs({TP: {1: old_leader, 2: new_leader}}, {TP: 1})
    inv = NoAckedLoss(logs)
    inv.observe(acked("m1", "m2"))
    assert inv.verify() is None
    logs.leader[TP] = 2
    assert inv.verify() == "acknowledged ['m2'] missing from their leader's log"
    new_leader.append_as_leader(("m2",), 1)  # written again: held once more
    assert inv.verify() is None


def test_no_acked_loss_notices_a_truncated_leader() -> None:
    leader = make_log(["m1", "m2"], hw=2)
    inv = NoAckedLoss(FakeLogs({TP: {1: leader}}, {TP: 1}))
    inv.observe(acked("m1", "m2"))
    assert inv.verify() is None
    leader.truncate_to(1)
    leader.append_as_leader(("m3",), 1)
    inv.observe(
        event("truncate", 1, tp=TP, to=1, old_hw=2, old_leo=2, removed=["m2"], reason="test")
    )
    assert inv.lost() == ["m2"]


def test_no_acked_loss_without_a_running_leader_looks_at_every_replica() -> None:
    follower = make_log(["m1"], hw=1)
    logs = FakeLogs({TP: {2: follower}}, {TP: 1})  # the leader, broker 1, is down
    inv = NoAckedLoss(logs)
    inv.observe(acked("m1", "m2"))
    assert inv.lost() == ["m2"]
    logs.on_disk[TP] = {"m2"}  # the stopped leader's disk still has it
    assert inv.verify() is None


def test_no_acked_loss_reads_only_what_the_leader_appended_since() -> None:
    leader = make_log([f"m{i}" for i in range(1000)], hw=1000)
    inv = NoAckedLoss(FakeLogs({TP: {1: leader}}, {TP: 1}))
    inv.observe(acked(*(f"m{i}" for i in range(1000))))
    assert inv.verify() is None
    for i in range(1000, 1100):
        leader.append_as_leader((f"m{i}",), 0)
        inv.observe(acked(f"m{i}", base_offset=i))
        Records.reads = 0
        assert inv.verify() is None
        assert Records.reads <= 3


# ---- logs_agree_below_hw --------------------------------------------------------------------


def three_replicas(values: list[str], *, hw: int) -> tuple[FakeLogs, list[Log]]:
    leader = make_log(values, hw=hw)
    logs = [leader, copy_of(leader, hw=hw), copy_of(leader, hw=hw)]
    return FakeLogs({TP: dict(zip((1, 2, 3), logs, strict=True))}, {TP: 1}), logs


def test_logs_agree_below_hw_holds_for_copies_and_for_differences_above_the_hw() -> None:
    view, (leader, f2, f3) = three_replicas(["m1", "m2"], hw=2)
    inv = LogsAgreeBelowHw(view)
    assert inv.verify() is None
    f2.append_as_leader(("x3",), 1)  # above every HW: not committed, may differ
    leader.append_as_leader(("m3",), 0)
    assert inv.verify() is None


def test_logs_agree_below_hw_names_the_first_differing_offset() -> None:
    view, (leader, f2, f3) = three_replicas(["m1", "m2"], hw=2)
    inv = LogsAgreeBelowHw(view)
    assert inv.verify() is None
    f2.append_as_leader(("x3",), 1)
    leader.append_as_leader(("m3",), 0)
    leader.hw = f2.hw = 3
    message = inv.verify()
    assert message == ("demo-0 offset 2 below the HW holds {1: 'm3 (epoch 0)', 2: 'x3 (epoch 1)'}")
    d = divergence(view, below_hw=True)[0]
    assert message == f"{d['partition']} offset {d['offset']} below the HW holds {d['records']}"


def test_logs_agree_below_hw_checks_a_restarted_replica_whole() -> None:
    view, (leader, f2, f3) = three_replicas(["m1", "m2", "m3"], hw=3)
    inv = LogsAgreeBelowHw(view)
    assert inv.verify() is None
    restarted = make_log(["m1", "x2", "m3"], hw=2)  # a new log object: checked from offset 0
    view.running[TP][3] = restarted
    assert inv.verify() is not None and "offset 1" in inv.verify()  # type: ignore[operator]


def test_logs_agree_below_hw_waits_for_a_follower_to_find_its_truncation_point() -> None:
    """A restarted follower may hold, below its checkpointed HW, a record the leader never had;
    it is judged once it has asked the leader where its epoch ends, not before."""
    view, (leader, f2, f3) = three_replicas(["m1", "m2", "m3"], hw=3)
    inv = LogsAgreeBelowHw(view)
    assert inv.verify() is None
    restarted = make_log(["m1", "x2"], hw=2)
    view.running[TP][3] = restarted
    view.truncating.add(3)
    assert inv.verify() is None
    assert divergence(view, below_hw=True) == []
    view.truncating.discard(3)  # the answer came and (wrongly) kept x2
    assert inv.verify() == (
        "demo-0 offset 1 below the HW holds {1: 'm2 (epoch 0)', 3: 'x2 (epoch 0)'}"
    )


@pytest.mark.parametrize("epochs", [False, True])
def test_kip101_divergence_breaks_the_invariant_only_without_leader_epochs(epochs: bool) -> None:
    """KIP-101's second scenario step by step: without leader epochs the old leader keeps m2
    below its HW for good; with them it is left out while it asks where epoch 0 ends, and then
    agrees with the new leader (no transient report at its restart)."""
    scenario = scenarios.get("kip101-divergence")
    cluster = scenario.cluster({"leader_epochs": epochs})
    found = []
    for step in scenario.steps:
        if step.kind != "check":
            scenarios.apply_step(cluster, step)
            found.append(cluster.monitor.first_violation(["logs_agree_below_hw"]))
    assert found[-1] is None if epochs else found[-1] is not None
    assert all(v is None for v in found) == epochs


def test_logs_agree_below_hw_rechecks_a_truncated_and_rewritten_tail() -> None:
    view, (leader, f2, f3) = three_replicas(["m1", "m2", "m3"], hw=3)
    inv = LogsAgreeBelowHw(view)
    assert inv.verify() is None
    f3.truncate_to(1)
    inv.observe(event("truncate", 3, tp=TP, to=1, old_hw=3, old_leo=3, removed=[], reason="t"))
    f3.append_as_leader(("x2", "x3"), 1)
    f3.hw = 3
    assert inv.verify() == (
        "demo-0 offset 1 below the HW holds {1: 'm2 (epoch 0)', 3: 'x2 (epoch 1)'}"
    )


def test_logs_agree_below_hw_forgets_what_only_a_stopped_replica_held() -> None:
    """The agreed prefix follows the running replicas: once the only replica with a high HW
    stops, the others may commit other records at those offsets without a violation."""
    ahead = make_log(["m1", "m2", "m3"], hw=3)
    behind = make_log(["m1"], hw=1)
    view = FakeLogs({TP: {1: ahead, 2: behind}}, {TP: 1})
    inv = LogsAgreeBelowHw(view)
    assert inv.verify() is None
    del view.running[TP][1]
    behind.append_as_leader(("y2", "y3"), 1)
    behind.hw = 3
    assert inv.verify() is None
    view.running[TP][1] = ahead  # back, with a log that disagrees below both HWs
    assert inv.verify() == (
        "demo-0 offset 1 below the HW holds {1: 'm2 (epoch 0)', 2: 'y2 (epoch 1)'}"
    )


def test_logs_agree_below_hw_reads_only_the_records_committed_since() -> None:
    view, logs = three_replicas([f"m{i}" for i in range(1000)], hw=1000)
    inv = LogsAgreeBelowHw(view)
    assert inv.verify() is None
    for i in range(1000, 1100):
        logs[0].append_as_leader((f"m{i}",), 0)
        for log in logs[1:]:
            log.append_replicated((list.__getitem__(logs[0].records, i),))
        for log in logs:
            log.hw = i + 1
        Records.reads = 0
        assert inv.verify() is None
        assert Records.reads <= 12  # a few records per replica, not the 1000 below the HW


# ---- attached to a cluster ------------------------------------------------------------------


def test_check_invariants_raises_at_the_first_violation_with_a_replay_hint() -> None:
    c = Cluster(brokers=3, leader=1, check_invariants=True)
    c.produce("m1", acks=1)  # on the leader alone
    with pytest.raises(InvariantViolation) as err:
        c.crash(1)
        c.advance(30000)
    message = str(err.value)
    assert "invariant no_acked_loss failed at " in message
    assert "acknowledged ['m1'] missing from their leader's log" in message
    assert "replay: Cluster(brokers=3, config=" in message


def test_the_monitor_is_attached_from_outside_and_builds_the_report() -> None:
    c = Cluster(brokers=3)
    assert c.monitor.observe in c.sim.observers
    c.produce("m1")
    for follower in (2, 3, 2, 3):
        c.fetch(follower)
    report = c.report()
    assert report.acked == ["m1"] and report.safe


def test_without_check_invariants_the_report_still_names_the_loss() -> None:
    c = Cluster(brokers=3, leader=1)
    c.produce("m1", acks=1)
    c.crash(1)
    c.advance(30000)
    assert c.report().lost_acked == ["m1"] and not c.report().safe
    assert c.monitor.first_violation() == (
        "no_acked_loss",
        "acknowledged ['m1'] missing from their leader's log",
    )


# ---- one definition of reordering and of a safe run -----------------------------------------


def test_out_of_send_order_finds_records_written_after_a_later_one() -> None:
    assert out_of_send_order([0, 1, 2]) == []
    assert out_of_send_order([0, 2, 1, None, 1, 3]) == [2, 4]
    assert out_of_send_order([None, None]) == []


def test_run_results_and_reports_are_safe_by_the_same_definition() -> None:
    fields: dict[str, Any] = {
        "seed": 0,
        "config": {},
        "brokers": 3,
        "duration_ms": 1,
        "settle_ms": 1,
        "schedule": (),
        "faults": 0,
        "events": 0,
        "produced": 0,
        "acked": 0,
        "lost_acked": [],
        "divergent": False,
        "hw_regressions": 0,
        "two_leaders": 0,
        "unclean_elections": 0,
        "duplicates": 0,
        "out_of_order": 0,
        "isr_shrinks": 0,
        "isr_expands": 0,
    }
    assert RunResult(**fields).safe and is_safe(RunResult(**fields))
    assert not RunResult(**{**fields, "hw_regressions": 1}).safe
    assert not RunResult(**{**fields, "lost_acked": ["m1"]}).safe


def test_records_are_compared_by_value_and_leader_epoch() -> None:
    a = Record(0, "m1", 1, producer_id=7)
    b = Record(0, "m1", 1)
    view = FakeLogs({TP: {1: make_log([], hw=0), 2: make_log([], hw=0)}}, {TP: 1})
    view.running[TP][1].records.append(a)
    view.running[TP][2].records.append(b)
    view.running[TP][1].hw = view.running[TP][2].hw = 1
    assert LogsAgreeBelowHw(view).verify() is None
