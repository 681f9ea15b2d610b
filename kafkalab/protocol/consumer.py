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
  there, or at the beginning (auto.offset.reset=earliest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.errors import ConfigError
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.log import Record
from kafkalab.protocol.offsets import offsets_partition

__all__ = ["ConsumerSettings", "KafkaConsumer", "Poll"]

ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


@dataclass(frozen=True)
class ConsumerSettings:
    """The consumer settings that shape what is read (Kafka's names, underscores for dots)."""

    group_id: str = ""
    isolation_level: str = "read_uncommitted"
    enable_auto_commit: bool = False
    auto_commit_interval_ms: int = 5000
    max_poll_records: int = 500
    retry_backoff_ms: int = 100

    def __post_init__(self) -> None:
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
        # Without a group there is nothing committed: start at the beginning.
        self.positions: dict[str, int] = {} if settings.group_id else dict.fromkeys(tps, 0)
        self.leaders: dict[str, Any] = {}
        self.unprocessed: list[tuple[str, Record]] = []
        self.correlation = 0
        self.last_commit_ms = 0
        self._broker_turn = 0
        self._offsets_known = not settings.group_id
        self._waiting_process: dict[int, bool] = {}  # fetch correlation id -> process at once
        self._commits = 0  # offset commits waiting for an answer

    @property
    def idle(self) -> bool:
        """It knows where to read, and no fetch or commit is waiting for an answer."""
        return self._offsets_known and not self._waiting_process and not self._commits

    def start(self, ctx: Context) -> None:
        self.last_commit_ms = ctx.now
        self._refresh(ctx)
        ctx.set_timer(self.settings.retry_backoff_ms, "metadata")

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        if name == "metadata" and (not self._offsets_known or len(self.leaders) < len(self.tps)):
            self._refresh(ctx)
            self._fetch_offsets(ctx)
            ctx.set_timer(self.settings.retry_backoff_ms, "metadata")

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
        elif isinstance(msg, m.OffsetCommitResponse):
            self._commits = max(0, self._commits - 1)
            ctx.emit("consumer_commit", consumer=self.name, group=msg.group, error=msg.error)
            if msg.error == m.NOT_COORDINATOR:
                self.leaders.pop(offsets_partition(msg.group), None)

    # ---- offsets ------------------------------------------------------------------------------

    def _refresh(self, ctx: Context) -> None:
        ctx.send(self.brokers[self._broker_turn % len(self.brokers)], m.MetadataRequest())
        self._broker_turn += 1

    def _fetch_offsets(self, ctx: Context) -> None:
        if self._offsets_known:
            return
        coordinator = self.leaders.get(offsets_partition(self.settings.group_id))
        if coordinator is not None:
            ctx.send(coordinator, m.OffsetFetchRequest(self.settings.group_id, self.tps))

    def _on_offsets(self, ctx: Context, msg: m.OffsetFetchResponse) -> None:
        if msg.error != m.NONE or self._offsets_known:
            self.leaders.pop(offsets_partition(self.settings.group_id), None)
            return
        self._offsets_known = True
        committed = dict(msg.offsets)
        self.positions = {tp: committed.get(tp, 0) for tp in self.tps}  # else earliest
        ctx.emit("consumer_position", consumer=self.name, positions=dict(self.positions))

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
                continue
            self.correlation += 1
            self._waiting_process[self.correlation] = cmd.process
            ctx.send(
                leader,
                m.ConsumerFetchRequest(tp, self.correlation, self.positions[tp], s.isolation_level),
            )

    def _on_fetch(self, ctx: Context, resp: m.ConsumerFetchResponse) -> None:
        process = self._waiting_process.pop(resp.correlation_id, None)
        if process is None:
            return
        if resp.error != m.NONE:
            self.leaders.pop(resp.tp, None)
            ctx.emit("consumer_error", consumer=self.name, tp=resp.tp, error=resp.error)
            return
        position = self.positions[resp.tp]
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
