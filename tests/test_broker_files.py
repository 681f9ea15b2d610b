"""What a real broker writes down, rendered from the simulator (kafkalab.broker_files): the
checkpoint files' formats and the truncation log lines, checked against Kafka 3.7's code."""

from __future__ import annotations

from kafkalab import Cluster, scenarios
from kafkalab.broker_files import (
    leader_epoch_checkpoint,
    replication_offset_checkpoint,
    truncation_lines,
)


def test_the_checkpoint_files_have_kafkas_format() -> None:
    # LeaderEpochCheckpointFile: version 0, the entry count, "epoch start_offset" lines.
    assert leader_epoch_checkpoint([(0, 0), (1, 2)]) == "0\n2\n0 0\n1 2\n"
    assert leader_epoch_checkpoint([]) == "0\n0\n"
    # OffsetCheckpointFile: version 0, the entry count, "topic partition offset" lines; a
    # topic's name may itself hold dashes.
    text = replication_offset_checkpoint({"orders-1": 7, "my-topic-0": 3})
    assert text == "0\n2\nmy-topic 0 3\norders 1 7\n"


def _run(settings: dict[str, object]) -> Cluster:
    s = scenarios.get("kip101-divergence")
    cluster = s.cluster(settings)
    for step in s.steps:
        scenarios.apply_step(cluster, step)
    return cluster


def test_a_truncation_by_leader_epoch_logs_the_fetcher_line_and_the_log_line() -> None:
    cluster = _run({"leader_epochs": True})
    lines = truncation_lines(cluster.trace)
    assert len(lines) == 2
    assert lines[0].endswith(
        "[ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Truncating partition demo-0 with "
        "TruncationState(offset=1, completed=true) due to leader epoch and offset "
        "EpochEndOffset(...)"
    )
    assert lines[1].endswith("[UnifiedLog partition=demo-0, dir=...] Truncating to offset 1")


def test_without_leader_epochs_the_divergence_logs_no_truncation() -> None:
    cluster = _run({})
    assert cluster.report().divergent
    assert truncation_lines(cluster.trace) == []


def test_a_truncation_to_the_hw_says_so() -> None:
    s = scenarios.get("kip101-loss")
    cluster = s.cluster()
    for step in s.steps:
        scenarios.apply_step(cluster, step)
    lines = truncation_lines(cluster.trace)
    assert any("due to local high watermark 1" in line for line in lines), lines
    assert any(line.endswith("Truncating to offset 1") for line in lines)
