"""A consumer client (KafkaConsumer's Fetcher and ConsumerCoordinator, reduced to what changes
what an application reads): one consumer per group, assigned its partitions, no rebalancing.

- A fetch goes to the partition's leader. ``read_uncommitted`` reads up to the HW;
  ``read_committed`` reads up to the last stable offset (LSO), skips the records of aborted
  transactions (the leader sends the aborted-transaction index for the range) and never shows a
  control record (Fetcher's CompletedFetch.nextFetchedRecord).
- A poll hands records to the application. With ``process`` the application processes them at
  once; otherwise they wait for a ``process`` call, and are lost from memory if the consumer
  crashes first.
- ``commit`` writes the position (the next offset to read) to the group coordinator
  (commitSync); ``enable.auto.commit`` commits the position of earlier polls at the start of a poll
  once auto.commit.interval.ms has passed (ConsumerCoordinator.maybeAutoCommitOffsetsAsync).
- A restarted consumer asks the coordinator for its committed offsets (OffsetFetch) and starts
  there. Since 2.5 (KIP-447, ``offset_fetch_require_stable``) it asks for stable offsets only:
  while a partition's offsets are pending (sent in a transaction not yet ended, or not yet
  replicated) the coordinator answers UNSTABLE_OFFSET_COMMIT, and the consumer asks again after
  retry.backoff.ms, reading nothing meanwhile (ConsumerCoordinator.fetchCommittedOffsets).
  Before, it got the last stable committed offset.
- A partition without a committed offset (or without a group), or whose position is out
  of range (below the log start offset or past the end), starts where ``auto.offset.reset``
  says (SubscriptionState.resetInitializingPositions, OffsetFetcher.resetPositionsIfNeeded):
  ``latest``, Kafka's default, asks the leader for the HW (the LSO for read_committed),
  ``earliest`` for the log start offset, and ``none`` fails the poll with
  NoOffsetForPartitionException (OffsetOutOfRangeException for an out-of-range position).
- When the process of a broker it asked dies (or refuses the connection), NetworkClient fails
  the request at once and asks for a metadata update, in every release since 0.9: a fetch or
  ListOffsets fails (Fetcher's onFailure; the next poll fetches again once the metadata names a
  leader), and a commit fails as DisconnectException, which marks the coordinator unknown
  (AbstractCoordinator's CoordinatorResponseHandler.onFailure: coordinatorDead until 1.1,
  markCoordinatorUnknown since). A power loss or a cut link breaks no connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.errors import ConfigError
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import ConnectionClosed, Context
from kafkalab.protocol.internal_topics import offsets_partition
from kafkalab.protocol.log import Record

__all__ = ["ConsumerSettings", "KafkaConsumer", "Poll"]

ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
OFFSET_RESETS = ("latest", "earliest", "none")


@dataclass(frozen=True)
class ConsumerSettings:
    """The consumer settings that shape what is read (Kafka's names, underscores for dots)."""

    group_id: str = ""
    isolation_level: str = "read_uncommitted"
    # Kafka's default: true with a group.id; without one the consumer cannot commit, so unset
    # means false (ConsumerConfig.maybeOverrideEnableAutoCommit, KIP-289, 2.2).
    enable_auto_commit: bool | None = None
    auto_commit_interval_ms: int = 5000
    max_poll_records: int = 500
    retry_backoff_ms: int = 100
    auto_offset_reset: str = "latest"  # Kafka's default
    # The release's KIP-447 (2.5): OffsetFetch with require_stable, so pending offsets are
    # waited for; before, the last stable committed offset is used.
    offset_fetch_require_stable: bool = True

    def __post_init__(self) -> None:
        if self.auto_offset_reset not in OFFSET_RESETS:
            raise ConfigError(
                f"auto.offset.reset={self.auto_offset_reset!r} is not allowed: use latest "
                "(the default), earliest or none"
            )
        if self.isolation_level not in ISOLATION_LEVELS:
            raise ConfigError(
                f"isolation.level={self.isolation_level!r} is not allowed: use "
                "read_uncommitted or read_committed"
            )
        if self.max_poll_records < 1 or self.auto_commit_interval_ms < 1:
            raise ConfigError(
                "max.poll.records and auto.commit.interval.ms must be >= 1, got "
                f"{self.max_poll_records} and {self.auto_commit_interval_ms}"
            )
        if self.enable_auto_commit is None:
            object.__setattr__(self, "enable_auto_commit", bool(self.group_id))
        elif not isinstance(self.enable_auto_commit, bool):
            raise ConfigError(
                f"enable.auto.commit={self.enable_auto_commit!r} is not allowed: use true or "
                "false (unset: true with a group.id)"
            )
        if self.enable_auto_commit and not self.group_id:
            raise ConfigError("enable.auto.commit=true needs a group.id to commit to")


@dataclass(frozen=True, slots=True)
class Poll:
    """A consumer's call: ``poll`` (``process``: hand the records to the application's
    processing at once), ``process`` (what earlier polls returned) or ``commit``."""

    op: str
    process: bool = True


class KafkaConsumer:
    """A named consumer client actor reading ``tps``."""

    def __init__(
        self, name: str, settings: ConsumerSettings, brokers: tuple[int, ...], tps: tuple[str, ...]
    ) -> None:
        self.name = name
        self.settings = settings
        self.brokers = brokers
        self.tps = tps
        # Without a group there is nothing committed: auto.offset.reset decides at the first poll.
        self.positions: dict[str, int] = {}
        self.leaders: dict[str, Any] = {}
        self.unprocessed: list[tuple[str, Record]] = []
        self.correlation = 0
        self.last_commit_ms = 0
        self._broker_turn = 0
        self._offsets_known = not settings.group_id
        self._waiting_process: dict[int, bool] = {}  # fetch correlation id -> process at once
        self._resets: dict[int, tuple[str, bool]] = {}  # ListOffsets id -> (partition, process)
        self._commits = 0  # offset commits waiting for an answer
        # requests awaiting an answer: correlation id -> (broker, when sent, partition; "" for
        # an offset commit)
        self._sent: dict[int, tuple[Any, int, str]] = {}
        self._metadata_due = -1  # when the metadata timer fires
        # Offsets were answered UNSTABLE_OFFSET_COMMIT: only the back-off timer asks again.
        self._offsets_unstable = False
        self._unstable_reported: tuple[str, ...] = ()  # the trace shows each wait once

    @property
    def idle(self) -> bool:
        """It knows where to read, and no fetch or commit is waiting for an answer."""
        return (
            self._offsets_known
            and not self._waiting_process
            and not self._resets
            and not self._commits
        )

    def start(self, ctx: Context) -> None:
        self.last_commit_ms = ctx.now
        self._refresh(ctx)
        self._arm_metadata(ctx)

    def _arm_metadata(self, ctx: Context) -> None:
        if self._metadata_due <= ctx.now:
            self._metadata_due = ctx.now + self.settings.retry_backoff_ms
            ctx.set_timer(self.settings.retry_backoff_ms, "metadata")

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        if name == "offset_fetch_backoff":
            self._offsets_unstable = False
            self._fetch_offsets(ctx)
        elif name == "metadata" and (not self._offsets_known or len(self.leaders) < len(self.tps)):
            self._refresh(ctx)
            self._fetch_offsets(ctx)
            self._arm_metadata(ctx)

    def awaits_answer_from(self, peer: Any) -> bool:
        """Whether a fetch, ListOffsets or commit waits for ``peer``'s answer (the network tells
        the consumer when that connection breaks)."""
        return any(sent[0] == peer for sent in self._sent.values())

    def _on_connection_closed(self, ctx: Context, msg: ConnectionClosed) -> None:
        """NetworkClient's disconnected response for each request sent to ``msg.peer`` at or
        before ``msg.at_ms``: the fetch or ListOffsets fails and the partition's leader is looked
        up again; the commit fails and the coordinator is unknown. Then a metadata update."""
        group = self.settings.group_id
        for cid, (peer, sent_ms, key) in list(self._sent.items()):
            if peer != msg.peer or sent_ms > msg.at_ms:
                continue
            del self._sent[cid]
            self.leaders.pop(key or offsets_partition(group), None)
            if not key:
                self._commits = max(0, self._commits - 1)
                ctx.emit(
                    "consumer_commit", consumer=self.name, group=group, error=m.NETWORK_EXCEPTION
                )
                continue
            self._waiting_process.pop(cid, None)
            self._resets.pop(cid, None)
            ctx.emit("consumer_error", consumer=self.name, tp=key, error=m.NETWORK_EXCEPTION)
        self._refresh(ctx)
        self._arm_metadata(ctx)

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if isinstance(msg, Poll):
            {"poll": self._poll, "process": self._process, "commit": self._commit}[msg.op](ctx, msg)
        elif isinstance(msg, m.MetadataResponse):
            self.leaders.update({tp: leader for tp, leader in msg.leaders if leader is not None})
            self._fetch_offsets(ctx)
        elif isinstance(msg, m.OffsetFetchResponse):
            self._on_offsets(ctx, msg)
        elif isinstance(msg, m.ConsumerFetchResponse):
            self._on_fetch(ctx, msg)
        elif isinstance(msg, m.ListOffsetsResponse):
            self._on_reset(ctx, msg)
        elif isinstance(msg, ConnectionClosed):
            self._on_connection_closed(ctx, msg)
        elif isinstance(msg, m.OffsetCommitResponse):
            if self._sent.pop(msg.correlation_id, None) is None:
                return  # its connection broke: already failed
            self._commits = max(0, self._commits - 1)
            ctx.emit("consumer_commit", consumer=self.name, group=msg.group, error=msg.error)
            if msg.error == m.NOT_COORDINATOR:
                self.leaders.pop(offsets_partition(msg.group), None)

    # ---- offsets ------------------------------------------------------------------------------

    def _refresh(self, ctx: Context) -> None:
        ctx.send(self.brokers[self._broker_turn % len(self.brokers)], m.MetadataRequest())
        self._broker_turn += 1

    def _fetch_offsets(self, ctx: Context) -> None:
        if self._offsets_known or self._offsets_unstable:
            return
        s = self.settings
        coordinator = self.leaders.get(offsets_partition(s.group_id))
        if coordinator is not None:
            request = m.OffsetFetchRequest(s.group_id, self.tps, s.offset_fetch_require_stable)
            ctx.send(coordinator, request)

    def _on_offsets(self, ctx: Context, msg: m.OffsetFetchResponse) -> None:
        if self._offsets_known:
            return  # a second answer to an OffsetFetch sent again while one was unanswered
        if msg.error != m.NONE:
            self.leaders.pop(offsets_partition(self.settings.group_id), None)
            return
        if msg.unstable:
            self._wait_for_stable_offsets(ctx, msg.unstable)
            return
        self._offsets_known = True
        committed = dict(msg.offsets)
        self.positions = {tp: committed[tp] for tp in self.tps if tp in committed}
        ctx.emit("consumer_position", consumer=self.name, positions=dict(self.positions))

    def _wait_for_stable_offsets(self, ctx: Context, unstable: tuple[str, ...]) -> None:
        """fetchCommittedOffsets (2.5+): UnstableOffsetCommitException is retriable; the
        consumer sleeps retry.backoff.ms and sends the OffsetFetch again."""
        if self._offsets_unstable:
            return  # a second answer in the same back-off
        for tp in unstable:
            if tp not in self._unstable_reported:
                error = m.UNSTABLE_OFFSET_COMMIT
                ctx.emit("consumer_error", consumer=self.name, tp=tp, error=error)
        self._unstable_reported = unstable
        self._offsets_unstable = True
        ctx.set_timer(self.settings.retry_backoff_ms, "offset_fetch_backoff")

    def _commit(self, ctx: Context, _: Poll) -> None:
        if not self.settings.group_id or not self._offsets_known:
            ctx.emit("consumer_commit", consumer=self.name, group="", error="NO_GROUP")
            return
        coordinator = self.leaders.get(offsets_partition(self.settings.group_id))
        offsets = tuple(sorted(self.positions.items()))
        ctx.emit("consumer_commit_sent", consumer=self.name, offsets=dict(offsets))
        self.last_commit_ms = ctx.now
        if coordinator is None:
            self._refresh(ctx)
            ctx.emit(
                "consumer_commit",
                consumer=self.name,
                group=self.settings.group_id,
                error=m.NOT_COORDINATOR,
            )
            return
        self.correlation += 1
        self._commits += 1
        self._sent[self.correlation] = (coordinator, ctx.now, "")
        ctx.send(
            coordinator, m.OffsetCommitRequest(self.settings.group_id, offsets, self.correlation)
        )

    # ---- fetching -----------------------------------------------------------------------------

    def _poll(self, ctx: Context, cmd: Poll) -> None:
        s = self.settings
        if s.enable_auto_commit and ctx.now - self.last_commit_ms >= s.auto_commit_interval_ms:
            self._commit(ctx, cmd)
        if not self._offsets_known:
            self._fetch_offsets(ctx)
            return
        for tp in self.tps:
            leader = self.leaders.get(tp)
            if leader is None:
                self._refresh(ctx)
            elif tp in self.positions:
                self._send_fetch(ctx, tp, leader, cmd.process)
            else:
                self._reset(ctx, tp, leader, cmd.process, m.NO_OFFSET_FOR_PARTITION)

    def _send_fetch(self, ctx: Context, tp: str, leader: Any, process: bool) -> None:
        self.correlation += 1
        self._waiting_process[self.correlation] = process
        self._sent[self.correlation] = (leader, ctx.now, tp)
        isolation = self.settings.isolation_level
        ctx.send(
            leader, m.ConsumerFetchRequest(tp, self.correlation, self.positions[tp], isolation)
        )

    def _reset(self, ctx: Context, tp: str, leader: Any, process: bool, error: str) -> None:
        """auto.offset.reset: ask the leader where to start (ListOffsets), then go on with the
        poll; with ``none`` the poll fails with ``error`` instead."""
        policy = self.settings.auto_offset_reset
        if policy == "none":
            ctx.emit("consumer_error", consumer=self.name, tp=tp, error=error)
            return
        self.correlation += 1
        self._resets[self.correlation] = (tp, process)
        self._sent[self.correlation] = (leader, ctx.now, tp)
        isolation = self.settings.isolation_level
        ctx.send(leader, m.ListOffsetsRequest(tp, self.correlation, policy, isolation))

    def _on_reset(self, ctx: Context, resp: m.ListOffsetsResponse) -> None:
        tp, process = self._resets.pop(resp.correlation_id, (None, False))
        self._sent.pop(resp.correlation_id, None)
        if tp is None:
            return
        if resp.error != m.NONE:
            self.leaders.pop(tp, None)
            ctx.emit("consumer_error", consumer=self.name, tp=tp, error=resp.error)
            return
        self.positions[tp] = resp.offset
        ctx.emit(
            "consumer_position",
            consumer=self.name,
            positions={tp: resp.offset},
            reset=self.settings.auto_offset_reset,
        )
        leader = self.leaders.get(tp)
        if leader is not None:
            self._send_fetch(ctx, tp, leader, process)

    def _on_fetch(self, ctx: Context, resp: m.ConsumerFetchResponse) -> None:
        process = self._waiting_process.pop(resp.correlation_id, None)
        self._sent.pop(resp.correlation_id, None)
        if process is None:
            return
        if resp.error == m.OFFSET_OUT_OF_RANGE and resp.tp in self.leaders:
            # Fetcher: an out-of-range position is reset by auto.offset.reset
            self.positions.pop(resp.tp, None)
            self._reset(ctx, resp.tp, self.leaders[resp.tp], process, m.OFFSET_OUT_OF_RANGE)
            return
        if resp.error != m.NONE:
            self.leaders.pop(resp.tp, None)
            ctx.emit("consumer_error", consumer=self.name, tp=resp.tp, error=resp.error)
            return
        position = self.positions.get(resp.tp)
        if not resp.records or resp.records[0].offset != position:
            return  # a stale answer from before a position change
        delivered, position = self._visible(resp)
        self.positions[resp.tp] = position
        ctx.emit(
            "consumer_records",
            consumer=self.name,
            tp=resp.tp,
            isolation=self.settings.isolation_level,
            records=[[r.offset, r.value, r.producer_id] for r in delivered],
            position=position,
            lso=resp.lso,
            hw=resp.hw,
        )
        if process:
            self._emit_processed(ctx, [(resp.tp, r) for r in delivered])
        else:
            self.unprocessed.extend((resp.tp, r) for r in delivered)

    def _visible(self, resp: m.ConsumerFetchResponse) -> tuple[list[Record], int]:
        """What the application sees, and the next position: control records never; with
        read_committed, no record of an aborted transaction."""
        aborted = resp.aborted if self.settings.isolation_level == "read_committed" else ()
        delivered: list[Record] = []
        position = self.positions[resp.tp]
        for record in resp.records:
            if len(delivered) == self.settings.max_poll_records:
                break
            position = record.offset + 1
            if record.control or any(
                a.producer_id == record.producer_id
                and a.first_offset <= record.offset < a.last_offset
                for a in aborted
            ):
                continue
            delivered.append(record)
        return delivered, position

    def _process(self, ctx: Context, _: Poll) -> None:
        done, self.unprocessed = self.unprocessed, []
        self._emit_processed(ctx, done)

    def _emit_processed(self, ctx: Context, records: list[tuple[str, Record]]) -> None:
        if records:
            ctx.emit(
                "consumer_processed",
                consumer=self.name,
                records=[[tp, r.offset, r.value] for tp, r in records],
            )
