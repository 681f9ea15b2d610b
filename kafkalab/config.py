"""Broker and producer settings, with Kafka's names, and the version presets.

A :class:`Config` is frozen and validated when it is made. Keys are Kafka's own
(``min.insync.replicas``); dots and underscores are interchangeable. The switches that are not
Kafka settings (``leader_epochs``, ``kip279`` ...) turn a historical fix on or off, so a lesson can
show what went wrong before it. Each fix is declared once in :mod:`kafkalab.fixes` (its releases,
JIRA or KIP, commit, and the fixes it builds on): the presets are derived from it, and a fix
switched off also switches off the fixes that need it (:func:`implied_switches` says which).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from kafkalab.errors import ConfigError, did_you_mean
from kafkalab.fixes import check_needs, implied_off, preset_steps, resolve

# What one record weighs on the wire and on disk. The simulator's values are short names
# ("m1"), so every record counts as 100 bytes (value, key, headers and its share of the batch
# header), the record size of Kafka's own kafka-producer-perf-test examples. It is what
# replica.fetch.max.bytes (10485 records at the default 1 MiB) and a throttled link's bandwidth
# are measured in, and segment.bytes and retention.bytes.
RECORD_BYTES = 100

__all__ = ["PRESETS", "Config", "implied_switches", "make_config", "normalize_key"]

ACKS_ALLOWED = ("0", "1", "all", "-1")
CONTROLLER_MODES = ("dedicated", "zk", "kraft")


@dataclass(frozen=True)
class Config:
    """Everything that shapes one simulated partition.

    The defaults are modern Kafka (3.7+) with the ZooKeeper controller model: leader epochs with
    KIP-279 and KIP-320, the time-based ISR rule, unclean election off, the HW frozen while the
    ISR is below min.insync.replicas, and bounced brokers detected by broker epoch (KIP-380).
    """

    preset: str | None = None
    replication_factor: int | None = None  # None: every broker holds a replica
    min_insync_replicas: int = 1
    acks: str = "all"  # the default producer's acks: "0", "1" or "all"
    request_timeout_ms: int = 30000
    replica_lag_time_max_ms: int = 30000
    replica_lag_max_messages: int | None = None  # the pre-0.9 rule; None turns it off
    # 0.9 (KAFKA-1546): the lag time counts from when a follower last caught up with the
    # leader's LEO; before, from its last fetch ("stuck"), beside the message-count rule.
    lag_time_from_caught_up: bool = True
    # 0.10.2 (KAFKA-4485): the ISR check runs every replica.lag.time.max.ms / 2; before, every
    # replica.lag.time.max.ms, so a stuck follower left between 1x and 2x the lag time.
    isr_check_half_lag: bool = True
    # 0.10.2 (KAFKA-4485): a fetch that reaches the LEO the leader had at the follower's previous
    # fetch makes it caught up as of that previous fetch; before, only a fetch at the leader's
    # current LEO counted, so a follower always one batch behind never caught up.
    caught_up_from_previous_fetch: bool = True
    # 2.1 (KAFKA-7152): a follower whose LEO equals the leader's stays in the ISR however long
    # ago it last caught up (an idle partition); before, the lag time alone decided.
    isr_keeps_follower_at_leo: bool = True
    # 2.0.1 (KAFKA-7128): a follower joins the ISR only once its LEO has also reached the start
    # of the leader's current epoch; before, reaching the HW was enough.
    isr_join_after_epoch_start: bool = True
    # 3.3 (KAFKA-13916): only a follower that may be in the ISR joins it (Partition.
    # isReplicaIsrEligible: alive; in KRaft also unfenced and not shutting down); before, any
    # fetching follower of the replica set did.
    isr_join_only_eligible: bool = True
    # 3.3 (a5f7c82a867): a re-elected leader restarts the last-fetch clock of the followers in
    # the ISR only; before, of every follower, so one outside the ISR whose next fetch reached
    # the re-election LEO counted as caught up at the re-election (and held the HW back).
    reset_fetch_time_by_isr: bool = True
    # 0.10.2 (KAFKA-4485): a new leader epoch gives each follower in the new ISR a fresh lag
    # window and every other follower none; before, a follower's last caught-up time stayed as
    # it was (from when this broker first heard of the partition, or the follower's last
    # catch-up here), so a broker that became leader could drop followers at its first check.
    make_leader_resets_caught_up: bool = True
    # 0.8 (until KAFKA-2721, 0.9.0.0): a leader forgot its followers' LEOs on every new leader
    # epoch, also one of its own re-election; since, only when it newly leads.
    reelected_leader_forgets_leos: bool = False
    # 3.3 (KAFKA-13790): only a new leader epoch resets the followers' state; before, in KRaft,
    # every partition change naming the broker as leader did (an ISR expansion too), so each ISR
    # member got a fresh lag window whenever the ISR grew.
    reset_followers_only_on_new_epoch: bool = True
    # 1.1 (KAFKA-5642): the controller never removes the last member of an ISR; before, it kept
    # it only with unclean leader election off, and emptied the ISR otherwise.
    isr_keeps_last_member: bool = True
    replica_fetch_wait_max_ms: int = 500
    # 0.8.2 (KAFKA-1430): the leader reads a follower's fetch before applying its offset, so a
    # response sent at once carries the HW from before that fetch.
    hw_read_before_fetch_update: bool = True
    # 2.1.1 (KAFKA-7697): a leader append moves the HW first and then answers the waiting
    # follower fetches, so they carry the new HW; before, the fetches were answered first.
    append_completes_fetches_after_hw: bool = True
    # 2.4 (7a7d4cb5819): the HW never falls below the log start offset (Log.updateHighWatermark),
    # also when a restarted replica loads an older HW checkpoint; before, min(checkpoint, LEO).
    hw_floor_at_log_start: bool = True
    # 0.11 (KIP-107): the DeleteRecords request, and the leader's log start offset in fetch
    # responses, which followers follow; before, neither existed.
    kip107: bool = True
    # 2.4 to 2.5 (KIP-392's KAFKA-8443; removed by KAFKA-9731 in 2.6): a follower fetch is
    # answered as soon as the leader's HW is ahead of the HW last sent to that follower.
    follower_fetch_completes_on_hw_change: bool = False
    replica_fetch_max_bytes: int = 1048576  # per partition and fetch; at least one record
    # 0.10.1 (KIP-74): the most one follower fetch response carries across its partitions; at
    # least one record still, so a record above either limit is replicated.
    replica_fetch_response_max_bytes: int = 10485760
    # 0.9 (KAFKA-1461): how long a follower waits after a failed fetch; 0 is the 0.8 fetcher,
    # which had no back-off and sent the next request at once.
    replica_fetch_backoff_ms: int = 1000
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    # Size retention (log.retention.bytes; -1 keeps everything): every
    # log.retention.check.interval.ms each replica deletes its oldest whole segments of
    # log.segment.bytes while the log stays at least that large (the active one too once the HW
    # reaches the LEO), never past the HW.
    retention_bytes: int = -1
    # 0.11.0.1 (KAFKA-5634): retention deletes no segment that reaches past the HW; before, it
    # deleted past the HW, and rolled and deleted the active segment when every segment went.
    retention_bounded_by_hw: bool = True
    segment_bytes: int = 1073741824
    log_retention_check_interval_ms: int = 300000
    zookeeper_session_timeout_ms: int = 18000
    unclean_leader_election_enable: bool = False
    leader_epochs: bool = True  # KIP-101 (0.11): truncate by OffsetsForLeaderEpoch, not to HW
    # 2.0.1 (KAFKA-7415): a new leader records its epoch in the epoch cache when elected, not
    # with its first append; an epoch older than the cache's first is then answered too.
    leader_epoch_on_election: bool = True
    # 0.8.2 to 2.0.0 (KAFKA-1028, removed by KAFKA-7414 in 2.0.1): a follower ahead of the
    # leader halts instead of truncating when unclean leader election is disabled.
    out_of_range_halts: bool = False
    kip279: bool = (
        True  # 2.0: the epoch answer carries its epoch; the follower loops until it matches
    )
    # 2.1 (KIP-320, KAFKA-7395): fetches carry the current leader epoch and stale ones are
    # fenced; a fenced follower stops fetching until its next LeaderAndIsr; and every new leader
    # epoch makes a follower truncate again, its leader changed or not.
    kip320: bool = True
    # 2.0.1 (KAFKA-7164): a follower whose leader is unchanged truncates again when it missed a
    # leader epoch (the new one is not the next); before, only a new leader made it truncate.
    # (With kip320, every new epoch does.)
    truncate_after_missed_epoch: bool = True
    # 2.8 (KAFKA-10554, inter.broker.protocol.version 2.7-IV1): a follower with leader epochs
    # fetches at once from its LEO, naming the last epoch it fetched; the leader answers a
    # diverging log with where that epoch ends (KAFKA-10435, 2.7.0) and no records, and does not
    # take that fetch as the follower's position (KAFKA-13141, 2.8.1). The follower truncates
    # and fetches again. Before, it asked OffsetsForLeaderEpoch first.
    truncation_on_fetch: bool = True
    # 3.4.1 (KAFKA-14704): a follower leaves a diverging fetch response's HW and log start
    # offset alone; before, it took them first, then truncated.
    diverging_fetch_skips_hw: bool = True
    # 2.2 (KIP-380): a broker that went and registered again before the controller handled its
    # going (a bounce handled late) is a failure followed by a startup, and control requests
    # meant for an earlier run are refused; before, the controller compared broker ids only and
    # sent such a broker nothing.
    broker_epoch: bool = True
    # KIP-98; the producer default since KIP-679 (3.0), for producers that leave it unset from
    # 3.0.1/3.1.1/3.2.0 (KAFKA-13598)
    enable_idempotence: bool = True
    # 2.5 (KIP-360): a producer a partition has no state for may start at any sequence; before,
    # anything but 0 was refused with UNKNOWN_PRODUCER_ID.
    kip360: bool = True
    # 1.0 (KAFKA-5494): every replica remembers the last five batches of each producer, so a
    # retry of any of them is recognised, and an idempotent producer may have up to five requests
    # in flight and retries an OUT_OF_ORDER_SEQUENCE_NUMBER while an earlier batch is unanswered.
    # Before (0.11), a replica remembered only the last batch, and the producer needed
    # max.in.flight.requests.per.connection = 1 with idempotence (1 when unset).
    idempotence_five_in_flight: bool = True
    # 1.0 (KAFKA-5793): a partition with no state for a producer answers a batch that does not
    # start at sequence 0 with UNKNOWN_PRODUCER_ID (until 2.5, ``kip360``); before (0.11), with
    # OUT_OF_ORDER_SEQUENCE_NUMBER.
    unknown_producer_id_error: bool = True
    # 2.7 (KIP-588, KAFKA-9911): a produce answered INVALID_PRODUCER_EPOCH only makes the
    # transaction abortable, and the transaction coordinator answers a fenced epoch with the new
    # PRODUCER_FENCED. Before, the coordinator answered INVALID_PRODUCER_EPOCH, and the client
    # raised that code as ProducerFencedException wherever it came from: fatal, the producer
    # (idempotent or transactional) can only be closed.
    invalid_producer_epoch_abortable: bool = True
    # 2.7 (KIP-601, KAFKA-9893): a client gives up a connection that is not set up within
    # socket.connection.setup.timeout.ms (10 s). Before, only the operating system's connect
    # timeout ended it: kafkalab takes Linux's, about 127 s (tcp_syn_retries = 6: 1 + 2 + ... +
    # 64 s), the figure KIP-601 also took for socket.connection.setup.timeout.max.ms.
    socket_connection_setup_timeout_ms: int = 10000
    # 3.7 (KIP-580, KAFKA-9800): the producer's wait before retrying a batch doubles with each
    # attempt, retry.backoff.ms x 2^(attempts - 1) with 20 % random jitter, up to
    # retry.backoff.max.ms (1000 ms); before, it was retry.backoff.ms every time.
    retry_backoff_exponential: bool = True
    # 3.6.1 / 3.7.0 (KAFKA-15415): a retried batch whose partition has a new leader is sent at
    # once, without the retry backoff (RecordAccumulator.shouldBackoff); before, it waited too.
    retry_backoff_skips_new_leader: bool = True
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_per_broker_percentage: int = 10
    leader_imbalance_check_interval_ms: int = 300000  # leader.imbalance.check.interval.seconds
    controlled_shutdown_enable: bool = True
    # ZooKeeper mode (KafkaServer.controlledShutdown): an attempt that is refused (an error, or
    # leaderships the controller could not move) or gets no answer is tried again after the
    # back-off, at most this many attempts in all; then the broker stops anyway.
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 5000
    # 0.8.2 to 3.0 (until d30b4e51513, 3.1.0): the broker also waits the back-off after its
    # last failed attempt, before it stops anyway.
    controlled_shutdown_backoff_after_last_attempt: bool = False
    # 2.7 (KIP-497; AlterPartition since 3.2, KIP-704): a leader asks the controller to change
    # the ISR and counts the wider ISR while it waits. Before, with ZooKeeper, the leader wrote
    # the partition's znode itself (conditional on its version) and ZooKeeper told the
    # controller afterwards.
    alter_isr: bool = True
    # 0.9 to 2.6 (KAFKA-1367, with alter_isr off): a broker tells the controller of the ISR
    # changes its leaders wrote to ZooKeeper through /isr_change_notification, at most every
    # 2.5 s and once none came for 5 s (or none was told for 60 s); the controller then
    # publishes them to the brokers' metadata. Before (0.8), never: the metadata clients read
    # kept the ISR of the controller's own last change of the partition.
    isr_change_propagation: bool = True
    # 2.3 (KAFKA-3143): a new ZooKeeper-era controller first takes replicas on dead brokers out
    # of every ISR (a leader epoch bump each), then elects leaders (another bump).
    controller_failover_offlines_replicas: bool = True
    # 2.1 (KAFKA-6082): ZooKeeper refuses a replaced controller's writes by controller epoch;
    # before, a zombie's write went through whenever the partition's znode version matched.
    zk_writes_fenced_by_controller_epoch: bool = True
    # A restarted broker whose previous run's ZooKeeper session still lives cannot create
    # /brokers/ids/N (NODEEXISTS). 0.8 (ZkUtils.createEphemeralPathExpectConflictHandleZKBug):
    # it waits, trying again every zookeeper.session.timeout.ms until the old znode is gone.
    # Since 0.9 (KAFKA-1387, ZKCheckedEphemeral; KafkaZkClient.registerBroker since 2.0): its
    # start-up fails and it shuts down.
    zk_registration_waits_for_old_session: bool = False
    # Where the controller runs: "dedicated", a node beside ZooKeeper that never fails (lessons
    # about replication alone), "zk", a broker elected through ZooKeeper's /controller, or
    # "kraft", a Raft quorum of controller nodes c1..c3 (Kafka 4 has no ZooKeeper).
    controller_mode: str = "dedicated"
    broker_heartbeat_interval_ms: int = 2000
    broker_session_timeout_ms: int = 9000
    controller_quorum_election_timeout_ms: int = 1000
    # The most a KRaft candidate waits between an election that failed and its next try.
    controller_quorum_election_backoff_max_ms: int = 1000
    controller_quorum_fetch_timeout_ms: int = 2000
    # KIP-966 (eligible.leader.replicas.version=1): usable from 4.0 only, so refused with an
    # earlier preset (3.7 to 3.9 gated it behind a metadata version above their production one).
    eligible_leader_replicas_enable: bool = False
    # 3.9 (KAFKA-12670): a KRaft controller reads unclean.leader.election.enable; from 2.8 to
    # 3.8 it ignored the setting (read as false), so only an operator's unclean ElectLeaders
    # request (from 3.1, `kraft_elect_leaders`) elected an out-of-sync replica.
    kraft_unclean_election: bool = True
    # 3.1 (KAFKA-13162): a KRaft broker forwards ElectLeaders to the controller, which runs the
    # election type asked for; in 2.8 and 3.0 the broker answered UNSUPPORTED_VERSION itself
    # (not supported with a Raft metadata quorum) and nothing was elected, preferred or unclean.
    kraft_elect_leaders: bool = True
    # 2.4 (KIP-460): ElectLeaders takes an election type, so an operator can ask for an unclean
    # election of leaderless partitions (kafka-leader-election.sh --election-type unclean);
    # before, an operator could ask only for preferred-replica elections.
    elect_leaders_unclean: bool = True
    # 3.9 (KAFKA-12670): how often a KRaft controller looks for leaderless partitions that unclean
    # election (turned on later) may now give a leader; Kafka's internal setting.
    unclean_leader_election_interval_ms: int = 300000
    # 3.7 (KAFKA-15489): a KRaft quorum leader that no majority fetched from for 1.5 times
    # controller.quorum.fetch.timeout.ms resigns; before, it stayed leader, cut off or not.
    kraft_check_quorum: bool = True
    # 3.2 (KAFKA-13682): a KRaft controller moves leaders back to their preferred replica when
    # auto.leader.rebalance.enable is on; before, only on request.
    kraft_leader_balancing: bool = True
    hw_includes_caught_up_followers: bool = True  # 0.10.2 (KAFKA-4485)
    # 3.6 (KAFKA-15021): in KRaft an ISR shrink no longer bumps the leader epoch; so that a dead
    # follower does not hold the HW back, a caught-up follower outside the ISR counts only if it
    # may join the ISR (alive; in KRaft also unfenced, not shutting down, current broker epoch).
    kafka_15021: bool = True
    # 3.7 (KAFKA-15583): no HW advance while ISR < min ISR; min ISR counts as at most the
    # replication factor (Partition.effectiveMinIsr), so a larger one no longer refuses every
    # acks=all write with NOT_ENOUGH_REPLICAS.
    hw_freeze_under_min_isr: bool = True
    # KIP-890 part 1 (3.6): a partition leader checks with the transaction coordinator before a
    # producer's first transactional write, so a late write cannot open a "hanging" transaction.
    transaction_partition_verification_enable: bool = True
    # KIP-890 part 2 (4.0, transaction.version=2): every transaction ends with an epoch bump, and
    # partitions join a transaction through that same check.
    transaction_version: int = 1
    # How often a transaction coordinator aborts the transactions open longer than their
    # transaction.timeout.ms (60000 ms until 2.4, 10000 ms since 2.5).
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10000
    # 2.5 (KIP-447, KAFKA-9346): a consumer fetches its committed offsets with require_stable
    # (OffsetFetch v7), and the group coordinator answers UNSTABLE_OFFSET_COMMIT for a
    # partition with offsets still pending (in an open transaction, or awaiting replication);
    # the consumer backs off and asks again. Before, it got the last stable committed offset.
    offset_fetch_require_stable: bool = True

    def __post_init__(self) -> None:
        _validate(self)
        check_needs(vars(self))  # a fix on whose need is off: a combination Kafka never shipped

    @property
    def acks_value(self) -> int:
        """acks as Kafka's wire value: 0, 1 or -1 (all)."""
        return -1 if self.acks in ("all", "-1") else int(self.acks)

    def replace(self, **changes: Any) -> Config:
        """A copy with some settings changed (validated again); a fix switched off here also
        switches off the fixes that need it (kafkalab.fixes)."""
        explicit = {normalize_key(key): value for key, value in changes.items()}
        if "preset" in explicit:
            return make_config({**self.as_dict(), **explicit})
        return _build(self.as_dict(), explicit, self.preset)[0]

    def as_dict(self) -> dict[str, Any]:
        """The settings as a plain dict with underscore keys."""
        return dataclasses.asdict(self)


_FIELDS = {f.name: f for f in fields(Config)}
_DEFAULTS = {f.name: f.default for f in fields(Config)}

# The switches each Kafka release turned on or changed; later presets build on earlier ones.
# A preset "X.Y" is the last release of that line (0.8 is 0.8.2.2, 0.10 is 0.10.2.2, 2.0 is
# 2.0.1, 3.0 is 3.0.2): the fixes a line received are in it. They come from the declaration in
# kafkalab.fixes (every fix's releases, and the settings whose defaults changed), which
# docs/sources.md's switch and preset tables are generated from.
_PRESET_STEPS: list[tuple[str, dict[str, Any]]] = preset_steps()


def _build_presets() -> dict[str, dict[str, Any]]:
    presets: dict[str, dict[str, Any]] = {}
    acc: dict[str, Any] = {}
    for name, step in _PRESET_STEPS:
        acc = {**acc, **step}
        presets[name] = dict(acc)
    return presets


PRESETS: dict[str, dict[str, Any]] = _build_presets()


def normalize_key(key: str) -> str:
    """'min.insync.replicas' and 'min_insync_replicas' both become 'min_insync_replicas'."""
    name = str(key).strip().replace(".", "_").replace("-", "_")
    if name not in _FIELDS:
        dotted = [k.replace("_", ".") for k in _FIELDS]
        hint = did_you_mean(str(key).replace("_", "."), dotted)
        raise ConfigError(f"unknown config key {key!r}{hint}")
    return name


def make_config(settings: Mapping[str, Any] | None = None, **overrides: Any) -> Config:
    """Build a :class:`Config` from Kafka-named settings; a ``preset`` key applies its switches
    first, and every other key overrides them. A fix switched off also switches off the fixes
    that need it unless they are given too (kafkalab.fixes; :func:`implied_switches` says
    which)."""
    return _make(settings, overrides)[0]


def implied_switches(settings: Mapping[str, Any] | None = None, **overrides: Any) -> list[str]:
    """For a learner: one line per switch given false that turned off the fixes needing it
    ("leader_epochs=false also turns off kip279, ..."); none when nothing was implied."""
    return implied_off(_make(settings, overrides)[1])


def _make(
    settings: Mapping[str, Any] | None, overrides: Mapping[str, Any]
) -> tuple[Config, dict[str, list[str]]]:
    merged: dict[str, Any] = {}
    for source in (settings or {}, overrides):
        for key, value in source.items():
            merged[normalize_key(key)] = value
    preset = merged.pop("preset", None)
    base: dict[str, Any] = {}
    if preset is not None:
        preset = _coerce("preset", preset)
        if preset not in PRESETS:
            allowed = ", ".join(PRESETS)
            raise ConfigError(f"unknown preset {preset!r}: allowed presets are {allowed}")
        base = {**PRESETS[preset], "preset": preset}
    return _build(base, merged, preset)


def _build(
    base: Mapping[str, Any], explicit: Mapping[str, Any], preset: str | None
) -> tuple[Config, dict[str, list[str]]]:
    """``base`` (a preset's settings) with the ``explicit`` ones over it, and every fix whose
    need is off turned off too."""
    values = {k: _coerce(k, v) for k, v in {**base, **explicit}.items()}
    full = {**_DEFAULTS, **values}
    resolved, implied = resolve(full, explicit, preset)
    values.update({k: v for k, v in resolved.items() if v != full[k]})
    return Config(**values), implied


def _coerce(name: str, value: Any) -> Any:
    kind = _FIELDS[name].type
    dotted = name.replace("_", ".")
    if name == "acks":
        text = str(value).strip().lower()
        if text not in ACKS_ALLOWED:
            raise ConfigError(f"acks={value!r} is not allowed: use 0, 1 or all (-1)")
        return "all" if text == "-1" else text
    if name == "controller_mode":
        if value not in CONTROLLER_MODES:
            allowed = ", ".join(CONTROLLER_MODES)
            raise ConfigError(f"controller_mode={value!r} is not allowed: use one of {allowed}")
        return value
    if name == "preset":
        if isinstance(value, float):  # an unquoted 0.10 in YAML reads as the number 0.1
            value = next((p for p in PRESETS if float(p) == value), value)
        return None if value is None else str(value)
    if "bool" in str(kind):
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if not isinstance(value, bool):
            raise ConfigError(f"{dotted}={value!r} is not allowed: use true or false")
        return value
    if value is None and "None" in str(kind):
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{dotted}={value!r} is not allowed: use a whole number")
    return value


def _validate(c: Config) -> None:
    for name in (
        "request_timeout_ms",
        "replica_lag_time_max_ms",
        "replica_high_watermark_checkpoint_interval_ms",
        "log_retention_check_interval_ms",
        "zookeeper_session_timeout_ms",
        "leader_imbalance_check_interval_ms",
        "broker_heartbeat_interval_ms",
        "broker_session_timeout_ms",
        "controller_quorum_election_timeout_ms",
        "controller_quorum_fetch_timeout_ms",
        "transaction_abort_timed_out_transaction_cleanup_interval_ms",
        "unclean_leader_election_interval_ms",
        "socket_connection_setup_timeout_ms",
    ):
        value = getattr(c, name)
        if value < 1:
            raise ConfigError(f"{name.replace('_', '.')}={value} is not allowed: use a time > 0 ms")
    if not 0 <= c.replica_fetch_wait_max_ms <= c.replica_lag_time_max_ms:
        # KafkaConfig: a longer wait than the lag time would make the ISR flap.
        raise ConfigError(
            f"replica.fetch.wait.max.ms={c.replica_fetch_wait_max_ms} is not allowed: use "
            f"0..replica.lag.time.max.ms ({c.replica_lag_time_max_ms}); 0 answers every fetch "
            "at once"
        )
    if c.replica_fetch_backoff_ms < 0:
        raise ConfigError(
            f"replica.fetch.backoff.ms={c.replica_fetch_backoff_ms} is not allowed: use a time "
            ">= 0 ms (0: no back-off after a failed fetch, as before 0.9)"
        )
    if not 0 <= c.leader_imbalance_per_broker_percentage <= 100:
        raise ConfigError(
            f"leader.imbalance.per.broker.percentage={c.leader_imbalance_per_broker_percentage} "
            "is not allowed: use 0..100"
        )
    if c.controlled_shutdown_max_retries < 0:
        raise ConfigError(
            f"controlled.shutdown.max.retries={c.controlled_shutdown_max_retries} is not "
            "allowed: use >= 0 (attempts in all; 0 stops without asking the controller)"
        )
    if c.controlled_shutdown_retry_backoff_ms < 0:
        raise ConfigError(
            f"controlled.shutdown.retry.backoff.ms={c.controlled_shutdown_retry_backoff_ms} is "
            "not allowed: use a time >= 0 ms"
        )
    if c.transaction_version not in (1, 2):
        raise ConfigError(
            f"transaction.version={c.transaction_version} is not allowed: use 1 or 2 (KIP-890)"
        )
    if c.controller_quorum_election_backoff_max_ms < 0:
        raise ConfigError(
            f"controller.quorum.election.backoff.max.ms="
            f"{c.controller_quorum_election_backoff_max_ms} is not allowed: use a time >= 0 ms"
        )
    _validate_release(c)
    if c.min_insync_replicas < 1:
        raise ConfigError(f"min.insync.replicas={c.min_insync_replicas} is not allowed: use >= 1")
    if c.replication_factor is not None:
        if c.replication_factor < 1:
            raise ConfigError(f"replication.factor={c.replication_factor} is not allowed: use >= 1")
    if c.retention_bytes < -1:
        raise ConfigError(
            f"retention.bytes={c.retention_bytes} is not allowed: use -1 (no size limit) or a "
            "size in bytes >= 0"
        )
    if c.segment_bytes < RECORD_BYTES:
        raise ConfigError(
            f"segment.bytes={c.segment_bytes} is not allowed: use at least {RECORD_BYTES} "
            "(one record)"
        )
    if c.replica_fetch_max_bytes < 1:
        raise ConfigError(
            f"replica.fetch.max.bytes={c.replica_fetch_max_bytes} is not allowed: use >= 1 "
            "(bytes; a fetch returns at least one record whatever the limit)"
        )
    if c.replica_fetch_response_max_bytes < 0:
        raise ConfigError(
            f"replica.fetch.response.max.bytes={c.replica_fetch_response_max_bytes} is not "
            "allowed: use >= 0 (bytes; a fetch returns at least one record whatever the limit)"
        )
    if c.replica_lag_max_messages is not None and c.replica_lag_max_messages < 1:
        raise ConfigError(
            f"replica.lag.max.messages={c.replica_lag_max_messages} is not allowed: "
            "use >= 1, or null to turn the legacy rule off"
        )


# KRaft came in 2.8 (KIP-500); Eligible Leader Replicas became usable in 4.0 (KIP-966).
KRAFT_FIRST_RELEASE = (2, 8)
ELR_FIRST_RELEASE = (4, 0)


def _release(preset: str) -> tuple[int, ...]:
    return tuple(int(part) for part in preset.split("."))


def _validate_release(c: Config) -> None:
    """Refuse what the preset's release did not have."""
    if c.preset is None:
        return
    release = _release(c.preset)
    if c.controller_mode == "kraft" and release < KRAFT_FIRST_RELEASE:
        raise ConfigError(
            f"controller_mode='kraft' is not allowed with preset {c.preset!r}: KRaft came in "
            "2.8 (KIP-500); use a preset from 3.0 on, or controller_mode 'zk' or 'dedicated'"
        )
    if c.eligible_leader_replicas_enable and release < ELR_FIRST_RELEASE:
        raise ConfigError(
            f"eligible.leader.replicas.enable=true is not allowed with preset {c.preset!r}: "
            "Eligible Leader Replicas (KIP-966) work from 4.0 on (3.7 to 3.9 only under an "
            "unreleased metadata version); use preset '4.0' or later, or no preset"
        )
