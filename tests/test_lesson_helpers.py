"""The helpers the lessons share to replay a scenario step by step (kafkalab.lessons): a step's
text, the trace's step number, the two state lines, and what play prints and labels."""

from __future__ import annotations

import doctest

import pytest

import kafkalab.lessons
from kafkalab import Cluster, scenarios
from kafkalab.lessons import play, replica_lines, status, step_text, trace_step
from kafkalab.scenarios import Step


def test_a_step_reads_as_the_scenario_file_writes_it() -> None:
    assert step_text(Step(1, "fetch", {"follower": 3})) == "fetch 3"
    assert step_text(Step(2, "advance", {"ms": 18000})) == "advance 18000"
    crash = Step(3, "crash", {"broker": 2, "lose_unflushed": True, "other": None})
    assert step_text(crash) == "crash 2 lose_unflushed=True"
    assert step_text(Step(4, "check", {"expect": {"leader": 2}})) == "check {'leader': 2}"


def test_trace_step_counts_the_steps_applied() -> None:
    c = Cluster(brokers=2)
    c.produce("m1")
    first = trace_step(c)
    c.fetch(2)
    assert trace_step(c) == first + 1


def test_status_names_the_controller_the_leader_and_the_isr() -> None:
    c = Cluster(brokers=3, config={"controller_mode": "zk"})
    assert status(c) == (
        "t=  0.0 s  controller 1 (epoch 1)  leader broker 1 (epoch 0)  ISR [1, 2, 3]"
    )
    c = Cluster(brokers=4, replicas=[2, 3, 4], leader=2, config={"controller_mode": "zk"})
    for broker in (2, 3, 4):
        c.crash(broker)
    c.advance(20000)
    assert "leader none (offline)" in status(c)


def test_replica_lines_mark_each_hw_and_each_records_epoch() -> None:
    s = scenarios.get("kip101-loss")
    c = s.cluster()
    play(c, s.steps[:9], loud=False)
    assert replica_lines(c).splitlines() == [
        "leader: broker 2 in epoch 0, ISR [2, 1]",
        "broker 1  follower  LEO 2  HW 1  m1/e0 | m2/e0",
        "broker 2  leader    LEO 2  HW 2  m1/e0 m2/e0 |",
    ]


def test_play_prints_the_loud_steps_with_their_notes_and_labels_every_step(
    capsys: pytest.CaptureFixture[str],
) -> None:
    s = scenarios.get("controller-failover")
    c, labels = s.cluster(), {}
    play(c, s.steps[:7], labels, loud=(7,))
    play(c, s.steps[7:8], labels)  # a check step: its note, then whether it holds
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "step  7: advance 17000",
        "         t= 17.0 s  controller 1 (epoch 1)  leader broker 1 (epoch 0)  ISR [1, 2, 3]",
        "step  8: check {'controller': 1, 'leader': 1}",
        "         (until its session expires nobody knows broker 1 is gone, not even ZooKeeper)",
        "         the check holds",
    ]
    # every step but the check, under the trace's number of the step it became
    assert sorted(labels.values(), key=lambda t: int(t.split()[1][:-1])) == [
        f"step {step.index}: {step_text(step)}" for step in s.steps[:7]
    ]
    assert labels[trace_step(c)] == "step 7: advance 17000"


def test_play_can_be_quiet_verbose_or_show_the_logs(capsys: pytest.CaptureFixture[str]) -> None:
    s = scenarios.get("kip101-divergence")
    c = s.cluster()
    play(c, s.steps[:10], loud=False)
    assert capsys.readouterr().out == ""
    play(c, s.steps[10:11], loud=False, verbose=True, state=replica_lines)
    assert capsys.readouterr().out.splitlines()[:2] == [
        "step 11: crash 1 lose_unflushed=True",
        "         leader: broker 1 in epoch 0, ISR [1, 2]",
    ]
    play(c, s.steps[11:12], loud=(12,), notes=False, state=replica_lines)
    out = capsys.readouterr().out
    assert "B's unflushed m2 is gone" not in out and out.startswith("step 12: crash 2")


def test_a_long_note_wraps_under_the_step(capsys: pytest.CaptureFixture[str]) -> None:
    note = "the controller's session expires and another broker takes over " * 3
    play(Cluster(brokers=2), [Step(1, "advance", {"ms": 1000}, note=note.strip())])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "step  1: advance 1000"
    notes = out[1:-1]
    assert len(notes) == 3 and notes[0].startswith("         (the controller's")
    assert all(line.startswith(" " * 10) for line in notes[1:])
    assert notes[-1].endswith("takes over)") and max(map(len, notes)) <= 9 + 88


def test_the_module_example_runs() -> None:
    assert doctest.testmod(kafkalab.lessons).failed == 0
