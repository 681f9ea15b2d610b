"""What a real broker writes down, rendered from the simulator (kafkalab.broker_files): the
checkpoint files' formats and the truncation log lines, checked against Kafka 3.7's code
(AbstractFetcherThread, UnifiedLog.truncateTo) and 0.10.2.2's (Log.truncateTo)."""

from __future__ import annotations

import pytest

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
    """AbstractFetcherThread.maybeTruncateToEpochEndOffsets logs why, UnifiedLog.truncateTo
    where (3.7.0). B's truncation to its HW at start-up, which removed nothing, is logged too:
    truncateToHighWatermark's line, then UnifiedLog.truncateTo's "has no effect"."""
    cluster = _run({"leader_epochs": True})
    lines = truncation_lines(cluster.trace)
    assert len(lines) == 4
    assert lines[0].endswith(
        "[ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] Truncating partition demo-0 with "
        "TruncationState(offset=0, completed=true) due to local high watermark 0"
    )
    assert lines[1].endswith(
        "[UnifiedLog partition=demo-0, dir=...] Truncating to 0 has no effect as the largest "
        "offset in the log is -1"
    )
    assert lines[2].endswith(
        "[ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Truncating partition demo-0 with "
        "TruncationState(offset=1, completed=true) due to leader epoch and offset "
        "EpochEndOffset(...)"
    )
    assert lines[3].endswith("[UnifiedLog partition=demo-0, dir=...] Truncating to offset 1")


def test_without_leader_epochs_the_divergence_logs_a_truncation_that_reveals_nothing() -> None:
    """Kafka 0.10's Log.truncateTo (0.10.2.2) logs "Truncating log ... to offset ..." before it
    checks anything, so A's truncation to its HW 2, which removes nothing, is logged; no line
    says that offset 1 now differs. In 3.7's wording the same truncation is the fetcher's
    "due to local high watermark 2" line and UnifiedLog.truncateTo's "has no effect" line."""
    cluster = _run({})
    assert cluster.report().divergent
    lines = truncation_lines(cluster.trace, release="0.10")
    assert [line.split(" s ", 1)[1] for line in lines] == [
        "Truncating log demo-0 to offset 0.",  # B at start-up
        "Truncating log demo-0 to offset 1.",  # B after its restart
        "Truncating log demo-0 to offset 2.",  # A after its restart: nothing removed
    ]
    assert lines[2].startswith(" 11.000 s ")  # after the periodic HW checkpoint (5 s)
    words_3_7 = truncation_lines(cluster.trace)
    assert words_3_7[-2].endswith("due to local high watermark 2")
    assert words_3_7[-1].endswith(
        "Truncating to 2 has no effect as the largest offset in the log is 1"
    )
    assert not any("offset 1 " in line or line.endswith("offset 1") for line in lines[2:])


def test_0_10_adds_no_effect_only_past_the_log_end() -> None:
    """Log.truncateTo (0.10.2.2): "has no effect" only when the target is past the LEO."""
    from kafkalab.broker_files import _log_lines_0_10

    assert _log_lines_0_10("t-0", 2, 2) == ["Truncating log t-0 to offset 2."]
    assert _log_lines_0_10("t-0", 3, 2)[1] == (
        "Truncating t-0 to 3 has no effect as the largest offset in the log is 1."
    )
    assert _log_lines_0_10("t-0", 1, None) == ["Truncating log t-0 to offset 1."]


def test_an_unknown_release_names_the_wordings_there_are() -> None:
    with pytest.raises(ValueError, match=r"release='2\.8' is not allowed: use 3\.7 or 0\.10"):
        truncation_lines([], release="2.8")


def test_a_truncation_to_the_hw_says_so() -> None:
    s = scenarios.get("kip101-loss")
    cluster = s.cluster()
    for step in s.steps:
        scenarios.apply_step(cluster, step)
    lines = truncation_lines(cluster.trace)
    assert any("due to local high watermark 1" in line for line in lines), lines
    assert any(line.endswith("Truncating to offset 1") for line in lines)
