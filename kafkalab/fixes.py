"""Every historical fix kafkalab can switch, declared once, as data.

A :class:`Fix` is one ``Config`` switch that turns a change of Kafka's on or off: what it means
for a learner, the release that brought it (and the one that took it out again, for behaviour
Kafka later removed), its JIRA or KIP, the commit as found in that release, and the fixes it
builds on (``needs``). The presets (``config.PRESETS``) are derived from it together with
:data:`SETTING_STEPS`, the Kafka settings whose defaults changed (acks, timeouts ...); so are the
switch and preset tables of docs/sources.md and the switch table of docs/glossary.md
(``python -m kafkalab.fixes_docs --write``).

A fix needs another when Kafka built it on that one's mechanism, so it never shipped without it
and means nothing without it in the simulator: KIP-279's answer is OffsetsForLeaderEpoch v1,
which extends KIP-101's request; KIP-320's fetch and OffsetsForLeaderEpoch v2 extend v1, and its
truncation on every new leader epoch includes KAFKA-7164's on a missed one; truncation through
Fetch (2.8) carries KIP-320's current leader epoch and runs KIP-279's loop through fetches.

Switching a fix off switches off the fixes that need it, unless they were set explicitly: a
learner who unticks ``leader_epochs`` on today's defaults gets the 0.10 behaviour (truncation to
the HW), not a refusal, and :func:`implied_off` says which switches went with it, so the
playground can show them. This is clearer than a refusal for someone who flips one switch: the
switch does what its name says, and the note names what Kafka could not have kept. A combination
set explicitly that Kafka never shipped (``leader_epochs=false`` with
``truncation_on_fetch=true``; ``kip279=true`` on the 0.10 preset) is refused with a ConfigError
naming the conflict and the preset that has the behaviour.

Adding a switch: the ``Config`` field (its comment names the release and JIRA/KIP), one
``Fix`` below (its preset ``on``, release, ticket, commit, the Chinese name and the learner's
sentence, and what it ``needs``), one entry of ``FLIPS`` in tests/test_fix_flips.py (a probe
whose outcome differs with the switch on and off), the rule-table row in docs/sources.md (the
Kafka file and function), then ``python -m kafkalab.fixes_docs --write``.

The core simulator reads the Config only; this module imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalab.errors import ConfigError

__all__ = [
    "FIXES",
    "PRESET_RELEASES",
    "SETTING_STEPS",
    "Fix",
    "check_needs",
    "implied_off",
    "preset_steps",
    "resolve",
]

# Each preset and the release it stands for: the last of its line, so every fix the line
# received is in it.
PRESET_RELEASES: tuple[tuple[str, str], ...] = (
    ("0.8", "0.8.2.2"),
    ("0.9", "0.9.0.1"),
    ("0.10", "0.10.2.2"),
    ("0.11", "0.11.0.3"),
    ("1.0", "1.0.2"),
    ("1.1", "1.1.1"),
    ("2.0", "2.0.1"),
    ("2.1", "2.1.1"),
    ("2.2", "2.2.2"),
    ("2.3", "2.3.1"),
    ("2.4", "2.4.1"),
    ("2.5", "2.5.1"),
    ("2.6", "2.6.3"),
    ("2.7", "2.7.2"),
    ("3.0", "3.0.2"),
    ("3.3", "3.3.2"),
    ("3.6", "3.6.2"),
    ("3.7", "3.7.2"),
    ("4.0", "4.0.x"),
)
PRESET_NAMES = tuple(name for name, _ in PRESET_RELEASES)


@dataclass(frozen=True)
class Fix:
    """One switch: true is the behaviour from preset ``on`` (until preset ``off``, for behaviour
    Kafka later removed). ``release``, ``ticket`` (JIRA, or "-"), ``kip`` and ``commit`` are what
    brought it, ``removed_*`` what took it out. ``needs``: fixes it builds on; ``excludes``:
    fixes Kafka never had together with it (a behaviour removed before they came).
    ``history`` and ``evidence`` (preset: text) replace the generated cells of docs/sources.md
    where a row needs more words."""

    switch: str
    zh: str  # the glossary's Chinese name
    meaning: str  # one sentence for a learner: the glossary's entry
    on: str
    release: str
    ticket: str
    commit: str
    off: str | None = None
    kip: str | None = None
    removed_ticket: str | None = None
    removed_commit: str | None = None
    removed_release: str | None = None
    needs: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    history: str | None = None
    evidence: Mapping[str, str] = field(default_factory=dict)

    def value_in(self, preset: str) -> bool:
        """The switch's value in a preset."""
        at = PRESET_NAMES.index(preset)
        after_off = self.off is not None and at >= PRESET_NAMES.index(self.off)
        return at >= PRESET_NAMES.index(self.on) and not after_off

    @property
    def default(self) -> bool:
        """Today's behaviour (the last preset's)."""
        return self.value_in(PRESET_NAMES[-1])

    @property
    def name(self) -> str:
        """How a learner reads it: "KIP-101, 0.11.0.0"."""
        label = self.kip or (self.ticket if self.ticket != "-" else "")
        return f"{label}, {self.release}" if label else self.release

    @property
    def last_preset_without(self) -> str | None:
        """The last preset before this fix came, if any."""
        at = PRESET_NAMES.index(self.on)
        return PRESET_NAMES[at - 1] if at else None


FIXES: tuple[Fix, ...] = (
    Fix(
        "lag_time_from_caught_up",
        zh="按追上时间计算滞后",
        meaning=(
            "0.9 (KAFKA-1546): the lag time counts from when a follower last caught up with the "
            "leader's LEO; off, from its last fetch (0.8)."
        ),
        on="0.9",
        release="0.9.0.0",
        ticket="KAFKA-1546",
        commit="15b93a410a8",
    ),
    Fix(
        "isr_check_half_lag",
        zh="半个滞后时间检查 ISR",
        meaning=(
            "0.10.2 (KAFKA-4485): the ISR check runs every `replica.lag.time.max.ms` / 2; off, "
            "every full lag time."
        ),
        on="0.10",
        release="0.10.2.0",
        ticket="KAFKA-4485",
        commit="fc88bac6668",
    ),
    Fix(
        "caught_up_from_previous_fetch",
        zh="按上次拉取判定追上",
        meaning=(
            "0.10.2 (KAFKA-4485): a fetch that reaches the LEO the leader had at the previous "
            "fetch makes the follower caught up as of that fetch; off, only a fetch at the "
            "leader's current LEO does."
        ),
        on="0.10",
        release="0.10.2.0",
        ticket="KAFKA-4485",
        commit="fc88bac6668",
    ),
    Fix(
        "isr_keeps_follower_at_leo",
        zh="保留处于 LEO 的跟随者",
        meaning=(
            "2.1 (KAFKA-7152): a follower at the leader's LEO never leaves the ISR; off, an idle "
            "follower leaves once the lag time has passed."
        ),
        on="2.1",
        release="2.1.0",
        ticket="KAFKA-7152",
        commit="9a7f29c1ede",
    ),
    Fix(
        "isr_join_after_epoch_start",
        zh="纪元起点后方可加入 ISR",
        meaning=(
            "2.0.1 (KAFKA-7128): a follower joins the ISR only once its LEO has reached the start "
            "of the leader's epoch too; off, reaching the HW is enough."
        ),
        on="2.0",
        release="2.0.1",
        ticket="KAFKA-7128",
        commit="7a352117c20",
    ),
    Fix(
        "isr_join_only_eligible",
        zh="仅合格副本加入 ISR",
        meaning=(
            "3.3 (KAFKA-13916): only a follower that may be in the ISR (alive; in KRaft unfenced, "
            "not shutting down) joins it, and a KRaft controller refuses an ISR holding an "
            "ineligible replica (KIP-841); off, any fetching follower does, and a shutting-down "
            "broker may still lead."
        ),
        on="3.3",
        release="3.3.0",
        ticket="KAFKA-13916",
        commit="151ca12a56c",
    ),
    Fix(
        "reset_fetch_time_by_isr",
        zh="按 ISR 重置拉取时间",
        meaning=(
            "3.3 (a5f7c82a867): a re-elected leader restarts the last-fetch time of ISR followers "
            "only; off (before 3.3), of every follower, so one outside the ISR could count as "
            "caught up at the re-election."
        ),
        on="3.3",
        release="3.3.0",
        ticket="-",
        commit="a5f7c82a867",
    ),
    Fix(
        "make_leader_resets_caught_up",
        zh="成为领导者时重置追上时间",
        meaning=(
            "0.10.2 (KAFKA-4485): a new leader epoch gives every follower in the ISR a fresh lag "
            "window (caught up now) and every other follower none; off (0.8 to 0.10.1), each "
            "follower keeps its old last caught-up time, so a broker that followed for long and "
            "then leads can drop followers at its first ISR check."
        ),
        on="0.10",
        release="0.10.2.0",
        ticket="KAFKA-4485",
        commit="fc88bac6668",
    ),
    Fix(
        "reelected_leader_forgets_leos",
        zh="连任领导者遗忘 LEO",
        meaning=(
            "0.8 only (KAFKA-2721 changed it in 0.9): a leader forgets its followers' LEOs on "
            "every new leader epoch, also when it is re-elected, so the HW waits for each "
            "follower's next fetch; off, only a newly elected leader forgets them."
        ),
        on="0.8",
        off="0.9",
        release="0.8.0",
        ticket="-",
        commit="0.8.0 tag",
        removed_ticket="KAFKA-2721",
        removed_commit="21ea9cbc0de",
        removed_release="0.9.0.0",
        history="kafkalab: 0.8.x; removed by KAFKA-2721 in 0.9.0.0",
        evidence={"0.8": "Partition.makeLeader 0.8.2.2; KAFKA-2721 from 0.9.0.0"},
        excludes=("make_leader_resets_caught_up",),
    ),
    Fix(
        "reset_followers_only_on_new_epoch",
        zh="仅新纪元重置跟随者",
        meaning=(
            "3.3 (KAFKA-13790): only a new leader epoch resets the leader's view of its followers;"
            " off (before 3.3), a KRaft leader reset it on every change of the partition, an ISR "
            "expansion too, so every ISR member got a fresh lag window."
        ),
        on="3.3",
        release="3.3.0",
        ticket="KAFKA-13790",
        commit="b485f92647f",
    ),
    Fix(
        "isr_keeps_last_member",
        zh="保留最后一个 ISR 成员",
        meaning=(
            "1.1 (KAFKA-5642): the controller never empties an ISR; off (before 1.1), it keeps the"
            " last member only with unclean election disabled."
        ),
        on="1.1",
        release="1.1.0",
        ticket="KAFKA-5642",
        commit="b71ee043f89",
    ),
    Fix(
        "hw_read_before_fetch_update",
        zh="先读高水位再更新拉取位置",
        meaning=(
            "0.8.2 (KAFKA-1430): an answer sent at once carries the HW read before the fetch was "
            "applied; off, the pre-0.8.2 order."
        ),
        on="0.8",
        release="0.8.2.0",
        ticket="KAFKA-1430",
        commit="0dc243b92a6",
    ),
    Fix(
        "append_completes_fetches_after_hw",
        zh="先推进高水位再完成拉取",
        meaning=(
            "2.1.1 (KAFKA-7697): after a leader append the HW moves first, then the waiting "
            "follower fetches are answered, with the new HW; off (0.8.2 to 2.1.0), they are "
            "answered with the HW from before."
        ),
        on="2.1",
        release="2.1.1",
        ticket="KAFKA-7697",
        commit="604716f9fc6",
        history=(
            "kafkalab: KAFKA-7697, 2.1.1 (0.8.0 and 0.8.1 did the same; KAFKA-1430 reversed it in "
            "0.8.2.0)"
        ),
        evidence={
            "0.8": "Partition.appendMessagesToLeader 0.8.2.2 (KAFKA-1430); KAFKA-7697 from 2.1.1"
        },
    ),
    Fix(
        "hw_floor_at_log_start",
        zh="高水位不低于日志起始位移",
        meaning=(
            "2.4 (7a7d4cb5819, Log.updateHighWatermark): a replica's HW never falls below its log "
            "start offset, also after a restart from an older HW checkpoint; off, it is "
            "min(checkpoint or leader's HW, LEO)."
        ),
        on="2.4",
        release="2.4.0",
        ticket="-",
        commit="7a7d4cb5819",
        evidence={"0.8": "ReplicaFetcherThread 0.8.2.2; 7a7d4cb5819 from 2.4.0"},
    ),
    Fix(
        "kip107",
        zh="启用 KIP-107",
        meaning=(
            "0.11 (KIP-107): the DeleteRecords request exists, and fetch responses carry the "
            "leader's log start offset, which followers follow; off, `delete_records` is refused."
        ),
        on="0.11",
        release="0.11.0.0",
        ticket="KIP-107",
        commit="8b05ad406d4",
    ),
    Fix(
        "follower_fetch_completes_on_hw_change",
        zh="高水位变化即完成拉取",
        meaning=(
            "2.4 and 2.5 (KAFKA-8443, KIP-392): a follower fetch is answered as soon as the "
            "leader's HW is ahead of the HW that follower was last sent; 2.6 removed it "
            "(KAFKA-9731, KAFKA-9952)."
        ),
        on="2.4",
        off="2.6",
        release="2.4.0",
        ticket="KAFKA-8443",
        kip="KIP-392",
        commit="23beeea34bf",
        removed_ticket="KAFKA-9731, KAFKA-9952",
        removed_commit="fbfda2c4ad8, 2cbf6be54a3",
        removed_release="2.6.0",
        history="kafkalab: KAFKA-8443 2.4.0; removed by KAFKA-9731 and KAFKA-9952 in 2.6.0",
        evidence={"2.6": "KAFKA-9731 fbfda2c4ad8, KAFKA-9952 2cbf6be54a3 (2.6.0)"},
    ),
    Fix(
        "retention_bounded_by_hw",
        zh="保留不越过高水位",
        meaning=(
            "0.11.0.1 (KAFKA-5634): retention deletes only segments the HW has passed; off (0.8 to"
            " 0.11.0.0), it ignored the HW and could delete records no follower had copied yet, "
            "the active segment too."
        ),
        on="0.11",
        release="0.11.0.1",
        ticket="KAFKA-5634",
        commit="c2b939c623e",
        evidence={"0.8": "Log.deleteOldSegments 0.8.2.2; KAFKA-5634 from 0.11.0.1"},
    ),
    Fix(
        "leader_epochs",
        zh="启用领导者纪元",
        meaning="KIP-101 (0.11): truncate by leader epoch instead of to the HW.",
        on="0.11",
        release="0.11.0.0",
        ticket="KIP-101",
        commit="0baea2ac135",
    ),
    Fix(
        "leader_epoch_on_election",
        zh="当选时记录领导者纪元",
        meaning=(
            "2.0.1 and 2.1 (KAFKA-7415): a new leader adds its epoch to the epoch cache when "
            "elected, not with its first append."
        ),
        on="2.0",
        release="2.0.1",
        ticket="KAFKA-7415",
        commit="18b25773b11",
        needs=("leader_epochs",),
    ),
    Fix(
        "out_of_range_halts",
        zh="越界时停机",
        meaning=(
            "0.8.2 (KAFKA-1028) until 2.0.1 and 2.1.0 (KAFKA-7414): with unclean election off, a "
            "follower found ahead of its leader halts instead of truncating."
        ),
        on="0.8",
        off="2.0",
        release="0.8.2.0",
        ticket="KAFKA-1028",
        commit="616086b9092",
        removed_ticket="KAFKA-7414",
        removed_commit="0ed5b8b2403",
        removed_release="2.0.1",
    ),
    Fix(
        "kip279",
        zh="启用 KIP-279",
        meaning=(
            "2.0: the epoch answer carries its epoch and the follower repeats until they match."
        ),
        on="2.0",
        release="2.0.0",
        ticket="KAFKA-6361",
        kip="KIP-279",
        commit="9679c44d2b5",
        needs=("leader_epochs",),
    ),
    Fix(
        "kip320",
        zh="启用 KIP-320",
        meaning=(
            "2.1: fetches carry the current leader epoch; stale ones are fenced, and a fenced "
            "follower stops fetching until its next LeaderAndIsr; every new leader epoch makes a "
            "follower truncate again."
        ),
        on="2.1",
        release="2.1.0",
        ticket="KAFKA-7395",
        kip="KIP-320",
        commit="bcef30d614b",
        needs=("kip279", "truncate_after_missed_epoch"),
    ),
    Fix(
        "truncate_after_missed_epoch",
        zh="错过纪元后重新截断",
        meaning=(
            "2.0.1 (KAFKA-7164): a follower whose leader is unchanged truncates again when it "
            "missed a leader epoch; off (up to 2.0.0), only a new leader makes it truncate."
        ),
        on="2.0",
        release="2.0.1",
        ticket="KAFKA-7164",
        commit="5152c80129c",
        needs=("leader_epochs",),
    ),
    Fix(
        "truncation_on_fetch",
        zh="通过拉取截断",
        meaning=(
            "2.8 (KAFKA-10554): a follower with leader epochs fetches at once, naming its last "
            "fetched epoch, and truncates when the answer carries a DivergingEpoch; off (0.11 to "
            "2.7), it asks OffsetsForLeaderEpoch first."
        ),
        on="3.0",
        release="2.8.0",
        ticket="KAFKA-10554",
        commit="7ecc3a579a4",
        history="kafkalab: KAFKA-10554, 2.8.0 (inter.broker.protocol.version 2.7-IV1 or later)",
        evidence={"3.0": "KAFKA-10554 7ecc3a579a4 (2.8.0), KAFKA-13141 7e4a315963a (2.8.1)"},
        needs=("kip320",),
    ),
    Fix(
        "diverging_fetch_skips_hw",
        zh="分歧响应不更新高水位",
        meaning=(
            "3.4.1 (KAFKA-14704): a follower leaves a diverging fetch response's HW and log start "
            "offset alone; off (2.8 to 3.4.0), it takes them first, then truncates."
        ),
        on="3.6",
        release="3.4.1",
        ticket="KAFKA-14704",
        commit="649d5497442",
        history="kafkalab: KAFKA-14704, 3.4.1 and 3.5.0",
        evidence={"3.6": "KAFKA-14704 649d5497442 (3.4.1), bd32d98bd7c (3.5.0)"},
        needs=("truncation_on_fetch",),
    ),
    Fix(
        "broker_epoch",
        zh="启用 Broker 纪元",
        meaning=(
            "2.2 (KIP-380): a bounced broker (one that registered again before the controller "
            "handled its going) is a failure followed by a startup; off, the controller compares "
            "broker ids only and sends it nothing."
        ),
        on="2.2",
        release="2.2.0",
        ticket="KAFKA-7235",
        kip="KIP-380",
        commit="2155c6d54b0",
    ),
    Fix(
        "zk_registration_waits_for_old_session",
        zh="等待旧会话过期再注册",
        meaning=(
            "0.8: a restarted broker whose previous run's session still holds `/brokers/ids/N` "
            "waits, trying again every `zookeeper.session.timeout.ms`; off (0.9, KAFKA-1387, to "
            "3.9), its start-up fails and it shuts down."
        ),
        on="0.8",
        off="0.9",
        release="0.8.0",
        ticket="-",
        commit="0.8.0 tag",
        removed_ticket="KAFKA-1387",
        removed_commit="1daf6ac5106",
        removed_release="0.9.0.0",
        evidence={
            "0.8": "ZkUtils.createEphemeralPathExpectConflictHandleZKBug 0.8.2.2; KAFKA-1387 from "
            "0.9.0.0",
            "0.9": "KAFKA-1387 1daf6ac5106 (0.9.0.0)",
        },
    ),
    Fix(
        "offset_fetch_require_stable",
        zh="要求稳定位移",
        meaning=(
            "2.5 (KIP-447): a consumer asks for its committed offsets with require_stable, and the "
            "group coordinator answers UNSTABLE_OFFSET_COMMIT while offsets for the partition are "
            "pending (in an open transaction, or not yet replicated), so the consumer waits and "
            "asks again; off (before 2.5), it gets the last stable committed offset and starts "
            "there."
        ),
        on="2.5",
        release="2.5.0",
        ticket="KAFKA-9346",
        kip="KIP-447",
        commit="6da70f9b95d",
    ),
    Fix(
        "retry_backoff_exponential",
        zh="指数重试退避",
        meaning=(
            "3.7 (KIP-580, KAFKA-9800): the producer's wait before a retry doubles with each "
            "attempt, with ±20 % jitter, up to `retry.backoff.max.ms`; off (before 3.7), every "
            "retry waits `retry.backoff.ms`."
        ),
        on="3.7",
        release="3.7.0",
        ticket="KAFKA-9800",
        kip="KIP-580",
        commit="b49013b73ef",
    ),
    Fix(
        "retry_backoff_skips_new_leader",
        zh="新领导者跳过重试退避",
        meaning=(
            "3.6.1 and 3.7 (KAFKA-15415): a retry whose partition has a new leader since its last "
            "attempt is sent at once; off (before), it waits its backoff too."
        ),
        on="3.6",
        release="3.6.1",
        ticket="KAFKA-15415",
        commit="69a5f14b523",
        evidence={"3.6": "KAFKA-15415 69a5f14b523 (3.6.1), d817b1b5900 (3.7.0)"},
    ),
    Fix(
        "kip360",
        zh="启用 KIP-360",
        meaning=(
            "2.5 (KIP-360): a producer a partition has no state for may start at any sequence "
            "number, and after a real sequence gap an idempotent producer bumps its epoch (before,"
            " it failed the batch and got a new producer id)."
        ),
        on="2.5",
        release="2.5.0",
        ticket="KAFKA-8710, KAFKA-8805",
        kip="KIP-360",
        commit="fecb977b257, 5a073fca4cc",
        history="kafkalab: KIP-360 (KAFKA-8710 broker, KAFKA-8805 client), 2.5.0",
        evidence={
            "0.8": "KAFKA-8710, KAFKA-8805 from 2.5.0",
            "2.5": "KAFKA-8710 fecb977b257, KAFKA-8805 5a073fca4cc (2.5.0)",
        },
        needs=("unknown_producer_id_error",),
    ),
    Fix(
        "idempotence_five_in_flight",
        zh="幂等下五个在途请求",
        meaning=(
            "1.0 (KAFKA-5494): a replica remembers a producer's last five batches, so an "
            "idempotent producer may have up to five requests in flight and retries "
            "OUT_OF_ORDER_SEQUENCE_NUMBER while an earlier batch is unanswered; off (0.11), only "
            "the last batch is remembered, the producer needs "
            "`max.in.flight.requests.per.connection` = 1 with idempotence, and never retries that "
            "error."
        ),
        on="1.0",
        release="1.0.0",
        ticket="KAFKA-5494",
        commit="5d2422258cb",
    ),
    Fix(
        "unknown_producer_id_error",
        zh="未知生产者报 UNKNOWN_PRODUCER_ID",
        meaning=(
            "1.0 (KAFKA-5793): before KIP-360, a partition with no state for a producer refuses a "
            "batch not starting at sequence 0 with UNKNOWN_PRODUCER_ID; off (0.11), with "
            "OUT_OF_ORDER_SEQUENCE_NUMBER."
        ),
        on="1.0",
        release="1.0.0",
        ticket="KAFKA-5793",
        commit="94692288bed",
    ),
    Fix(
        "invalid_producer_epoch_abortable",
        zh="INVALID_PRODUCER_EPOCH 可中止",
        meaning=(
            "2.7 (KIP-588): a produce answered INVALID_PRODUCER_EPOCH only makes the transaction "
            "abortable, and the coordinator answers a fenced epoch with PRODUCER_FENCED; off "
            "(before 2.7), the coordinator answers INVALID_PRODUCER_EPOCH and the error is fatal "
            "wherever it comes from, for idempotent producers too."
        ),
        on="2.7",
        release="2.7.0",
        ticket="KAFKA-9911",
        kip="KIP-588",
        commit="b937ec75677",
        history="kafkalab: KIP-588 (KAFKA-9911), 2.7.0",
    ),
    Fix(
        "controlled_shutdown_backoff_after_last_attempt",
        zh="最后一次受控关闭尝试后仍退避",
        meaning=(
            "Until 3.0 (changed in 3.1): after its last failed controlled shutdown attempt a "
            "ZooKeeper-mode broker still waits `controlled.shutdown.retry.backoff.ms` before it "
            "stops anyway."
        ),
        on="0.8",
        off="3.3",
        release="0.8.0",
        ticket="-",
        commit="0.8.0 tag",
        removed_ticket="-",
        removed_commit="d30b4e51513",
        removed_release="3.1.0",
        history="kafkalab: true until 3.0, false since 3.1.0 (d30b4e51513)",
        evidence={"0.8": "KafkaServer.controlledShutdown 0.8.2.2; d30b4e51513 from 3.1.0"},
    ),
    Fix(
        "alter_isr",
        zh="通过控制器修改 ISR",
        meaning=(
            "2.7 (KIP-497): a leader asks the controller to change the ISR (AlterIsr) and counts "
            "the wider, maximal ISR while it waits; off, the leader writes the ISR to ZooKeeper "
            "itself and the controller hears of it afterwards (`/isr_change_notification`)."
        ),
        on="2.7",
        release="2.7.0",
        ticket="KAFKA-8836",
        kip="KIP-497",
        commit="57de67db22e",
        history="kafkalab: KIP-497, 2.7.0 (inter.broker.protocol.version 2.7-IV2)",
        needs=("isr_change_propagation",),
    ),
    Fix(
        "isr_change_propagation",
        zh="ISR 变更通知",
        meaning=(
            "0.9 to 2.6, with `alter_isr` off: each broker tells the controller of the ISR changes"
            " its leaders wrote through `/isr_change_notification`, checked every 2.5 s and sent "
            "once no change came for 5 s (or none was sent for 60 s); only then does the metadata "
            "clients read show the new ISR (`metadata_isr`). Off (0.8): never."
        ),
        on="0.9",
        release="0.9.0.0",
        ticket="KAFKA-1367",
        commit="f77dc386c09",
        history="kafkalab: KAFKA-1367, 0.9.0.0 (no effect with `alter_isr`)",
    ),
    Fix(
        "controller_failover_offlines_replicas",
        zh="控制器切换先下线副本",
        meaning=(
            "2.3 (KAFKA-3143): a new ZooKeeper-era controller first takes replicas on dead brokers"
            " out of every ISR (a leader epoch bump each), then elects leaders."
        ),
        on="2.3",
        release="2.3.0",
        ticket="KAFKA-3143",
        commit="423610f3d08",
    ),
    Fix(
        "zk_writes_fenced_by_controller_epoch",
        zh="以控制器纪元隔离 ZooKeeper 写入",
        meaning=(
            "2.1 (KAFKA-6082): every controller write to ZooKeeper also checks the "
            "`/controller_epoch` znode, so a replaced controller's write is refused."
        ),
        on="2.1",
        release="2.1.0",
        ticket="KAFKA-6082",
        commit="297fb396a00",
    ),
    Fix(
        "kraft_unclean_election",
        zh="KRaft 非干净选举",
        meaning=(
            "3.9 (KAFKA-12670): a KRaft controller obeys `unclean.leader.election.enable`; off "
            "(2.8 to 3.8), it ignores the setting, and only an operator's unclean ElectLeaders "
            "(from 3.1, `kraft_elect_leaders`) elects an out-of-sync replica."
        ),
        on="4.0",
        release="3.9.0",
        ticket="KAFKA-12670",
        commit="7356328f530",
        history="kafkalab: KAFKA-12670, 3.9.0 (the setting ignored in KRaft 2.8.0 to 3.8)",
    ),
    Fix(
        "kraft_elect_leaders",
        zh="KRaft 处理领导者选举请求",
        meaning=(
            "3.1 (KAFKA-13162): a KRaft broker forwards ElectLeaders to the controller, which runs "
            "the preferred or unclean election asked for; off (2.8, 3.0), the broker answers "
            "`UNSUPPORTED_VERSION` and nothing is elected."
        ),
        on="3.3",
        release="3.1.0",
        ticket="KAFKA-13162",
        commit="7de8a93c7e1",
    ),
    Fix(
        "elect_leaders_unclean",
        zh="按请求非干净选举",
        meaning=(
            "2.4 (KIP-460): ElectLeaders takes an election type, so an operator can ask for an "
            "unclean election (`elect_leaders: unclean`); off, only preferred elections can be "
            "asked for, and the step is refused."
        ),
        on="2.4",
        release="2.4.0",
        ticket="KAFKA-8286",
        kip="KIP-460",
        commit="121308cc7a2",
    ),
    Fix(
        "kraft_check_quorum",
        zh="KRaft 仲裁检查",
        meaning=(
            "3.7 (KAFKA-15489): a KRaft quorum leader that no majority fetched from for 1.5 × "
            "`controller.quorum.fetch.timeout.ms` resigns; off, it stays leader even cut off."
        ),
        on="3.7",
        release="3.7.0",
        ticket="KAFKA-15489",
        commit="37416e1aeba",
    ),
    Fix(
        "kraft_leader_balancing",
        zh="KRaft 领导者均衡",
        meaning=(
            "3.2 (KAFKA-13682): a KRaft controller moves leaders back to preferred replicas when "
            "`auto.leader.rebalance.enable` is on; off, only on request."
        ),
        on="3.3",
        release="3.2.0",
        ticket="KAFKA-13682",
        commit="8d6968e8322",
    ),
    Fix(
        "hw_includes_caught_up_followers",
        zh="高水位等待已追上的副本",
        meaning="0.10.2 (KAFKA-4485): a caught-up follower outside the ISR also holds the HW.",
        on="0.10",
        release="0.10.2.0",
        ticket="KAFKA-4485",
        commit="fc88bac6668",
    ),
    Fix(
        "kafka_15021",
        zh="启用 KAFKA-15021",
        meaning=(
            "3.6 (KAFKA-15021): a caught-up follower outside the ISR holds the HW only if it may "
            "join the ISR, and a KRaft ISR shrink no longer bumps the leader epoch."
        ),
        on="3.6",
        release="3.6.0",
        ticket="KAFKA-15021",
        commit="8ad0ed3e618",
    ),
    Fix(
        "hw_freeze_under_min_isr",
        zh="ISR 不足时冻结高水位",
        meaning=(
            "3.7 (KAFKA-15583): the HW does not advance while the ISR is below min ISR, and min "
            "ISR counts as at most the replication factor (`effectiveMinIsr`)."
        ),
        on="3.7",
        release="3.7.0",
        ticket="KAFKA-15583",
        commit="edc7e10a745",
    ),
)

# The Kafka settings (not switches) a preset changes: (preset, setting, value, evidence).
SETTING_STEPS: tuple[tuple[str, str, Any, str], ...] = (
    (
        "0.8",
        "transaction_abort_timed_out_transaction_cleanup_interval_ms",
        60000,
        "TransactionStateManager 0.11.0.0 to 2.4 (1 min)",
    ),
    ("0.8", "enable_idempotence", False, "no idempotence before 0.11.0.0"),
    ("0.8", "acks", "1", "Java ProducerConfig 0.8.2.2"),
    ("0.8", "transaction_partition_verification_enable", False, "KAFKA-14561 from 3.6.0"),
    ("0.8", "unclean_leader_election_enable", True, "KafkaConfig 0.8.2.2"),
    ("0.8", "replica_lag_time_max_ms", 10000, "KafkaConfig 0.8.2.2"),
    ("0.8", "replica_lag_max_messages", 4000, "KafkaConfig 0.8.2.2"),
    ("0.8", "zookeeper_session_timeout_ms", 6000, "ZkUtils (ZKConfig) 0.8.2.2"),
    (
        "0.8",
        "socket_connection_setup_timeout_ms",
        127000,
        "the operating system's connect timeout (Linux, 6 SYN retries); KIP-601 from 2.7.0",
    ),
    (
        "0.8",
        "replica_fetch_backoff_ms",
        0,
        "AbstractFetcherThread 0.8.2.2 (no back-off); KAFKA-1461 from 0.9.0.0",
    ),
    ("0.9", "replica_lag_max_messages", None, "KAFKA-1546 15b93a410a8 (0.9.0.0)"),
    ("0.9", "replica_fetch_backoff_ms", 1000, "KAFKA-1461 79f7cca85e9 (0.9.0.0)"),
    ("0.11", "unclean_leader_election_enable", False, "KAFKA-4623 46da01a4a7d (0.11.0.0)"),
    ("2.5", "replica_lag_time_max_ms", 30000, "KAFKA-9102 4bde9bb3cca (2.5.0)"),
    ("2.5", "zookeeper_session_timeout_ms", 18000, "KAFKA-9102 4bde9bb3cca (2.5.0)"),
    (
        "2.5",
        "transaction_abort_timed_out_transaction_cleanup_interval_ms",
        10000,
        "KAFKA-9417 a017dcbd3e7 (2.5.0)",
    ),
    ("2.7", "socket_connection_setup_timeout_ms", 10000, "KAFKA-9893 55b5b248cd0 (2.7.0)"),
    (
        "3.0",
        "enable_idempotence",
        True,
        "KAFKA-10619 c92d013fd4b (3.0.0), KAFKA-13598 8093331d81c (3.0.1)",
    ),
    ("3.0", "acks", "all", "KAFKA-10619 c92d013fd4b (3.0.0)"),
    (
        "3.6",
        "transaction_partition_verification_enable",
        True,
        "KAFKA-14561 (3.6.0; reverted in 3.5)",
    ),
    ("4.0", "controller_mode", "kraft", "KIP-833 (after this mirror)"),
    ("4.0", "transaction_version", 2, "KIP-890 part 2 (after this mirror)"),
)

_BY_SWITCH = {fix.switch: fix for fix in FIXES}


def preset_steps() -> list[tuple[str, dict[str, Any]]]:
    """What each preset changes relative to the one before it (the first: relative to the
    defaults), switches first, then settings."""
    steps: list[tuple[str, dict[str, Any]]] = []
    for at, preset in enumerate(PRESET_NAMES):
        step: dict[str, Any] = {}
        for fix in FIXES:
            value = fix.value_in(preset)
            before = fix.default if at == 0 else fix.value_in(PRESET_NAMES[at - 1])
            if value != before:
                step[fix.switch] = value
        for name, setting, value, _ in SETTING_STEPS:
            if name == preset:
                step[setting] = value
        steps.append((preset, step))
    return steps


def _dependents(switch: str) -> list[str]:
    """Every fix that needs ``switch``, directly or through another, in declaration order."""
    found: list[str] = []
    for fix in FIXES:
        if fix.switch not in found and _needs_all(fix.switch) & {switch}:
            found.append(fix.switch)
    return found


def _needs_all(switch: str) -> set[str]:
    """The fixes ``switch`` needs, directly or through another."""
    seen: set[str] = set()
    todo = list(_BY_SWITCH[switch].needs)
    while todo:
        need = todo.pop()
        if need not in seen:
            seen.add(need)
            todo += _BY_SWITCH[need].needs
    return seen


def _conflict(need: Fix, fix: Fix, preset: str | None, explicit_need: bool) -> ConfigError:
    """A fix set true while a fix it needs is off."""
    if explicit_need:
        without = need.last_preset_without
        see = f"to see Kafka without {need.switch} use preset {without!r}, or " if without else ""
        return ConfigError(
            f"{need.switch}=false with {fix.switch}=true: Kafka never shipped {fix.switch} "
            f"({fix.name}) without {need.switch} ({need.name}); {see}leave {fix.switch} unset "
            f"(it turns off with {need.switch})"
        )
    where = f"preset {preset!r} has" if preset else "the settings have"
    return ConfigError(
        f"{fix.switch}=true needs {need.switch}=true ({need.name}), and {where} "
        f"{need.switch}=false: set {need.switch}=true too, or use preset {fix.on!r} or later"
    )


def _clash(fix: Fix, other: Fix) -> ConfigError:
    """Two fixes set true that Kafka never had together."""
    last = PRESET_NAMES[PRESET_NAMES.index(fix.off) - 1] if fix.off else fix.on
    return ConfigError(
        f"{fix.switch}=true with {other.switch}=true: Kafka never had both ({fix.switch} "
        f"until {fix.removed_release or fix.release}, {other.switch} from {other.release}); "
        f"to see {fix.switch} use preset {last!r}, or leave {other.switch} unset (it turns off "
        f"with {fix.switch}=true)"
    )


def _cause(implied: Mapping[str, list[str]], switch: str) -> str:
    """The switch given false that turned ``switch`` off, or ``switch`` itself."""
    for cause, switches in implied.items():
        name, _, value = cause.partition("=")
        if switch in switches and value == "false":
            return name
    return switch


def resolve(
    values: Mapping[str, Any], explicit: Mapping[str, Any], preset: str | None = None
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The settings with every fix whose need is off, or that another fix excludes, turned
    off too, and what each setting turned off with it ("leader_epochs=false": [...]).
    ``explicit`` are the settings a learner gave: a combination there that Kafka never shipped
    is refused."""
    out = dict(values)
    implied: dict[str, list[str]] = {}

    def turn_off(switch: str, cause: str) -> None:
        out[switch] = False
        root = next((k for k, v in implied.items() if cause.split("=")[0] in v), cause)
        implied.setdefault(root, []).append(switch)

    changed = True
    while changed:  # until nothing changes (a need may be declared after its dependent)
        changed = False
        for fix in FIXES:
            if not out.get(fix.switch, False):
                continue
            for need in fix.needs:
                if not out.get(need, True):
                    if fix.switch in explicit:
                        cause = _cause(implied, need)
                        raise _conflict(_BY_SWITCH[cause], fix, preset, cause in explicit)
                    turn_off(fix.switch, f"{need}=false")
                    changed = True
                    break
            for other in fix.excludes if out[fix.switch] else ():
                if out.get(other, False):
                    if fix.switch in explicit and other in explicit:
                        raise _clash(fix, _BY_SWITCH[other])
                    if other in explicit:
                        turn_off(fix.switch, f"{other}=true")
                    else:
                        turn_off(other, f"{fix.switch}=true")
                    changed = True
    return out, implied


def check_needs(values: Mapping[str, Any]) -> None:
    """Refuse a finished set of settings that Kafka never shipped: a fix on and one it needs
    off, or two fixes on that exclude each other."""
    for fix in FIXES:
        if not values.get(fix.switch):
            continue
        for need in fix.needs:
            if not values.get(need):
                raise _conflict(_BY_SWITCH[need], fix, values.get("preset"), True)
        for other in fix.excludes:
            if values.get(other):
                raise _clash(fix, _BY_SWITCH[other])


def implied_off(implied: Mapping[str, list[str]]) -> list[str]:
    """One line for a learner per setting that turned fixes off with it."""
    lines = []
    for cause, switches in implied.items():
        switch, _, value = cause.partition("=")
        how = "without" if value == "false" else "with"
        lines.append(
            f"{cause} also turns off {', '.join(switches)}: Kafka never shipped "
            f"{'it' if len(switches) == 1 else 'them'} {how} {switch} ({_BY_SWITCH[switch].name})"
        )
    return lines
