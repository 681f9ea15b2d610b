"""A KRaft controller node (Kafka 3.x/4.x, no ZooKeeper).

Each controller node ("c1", "c2", "c3") is a voter of the Raft quorum (:mod:`raft`) and applies
the committed metadata records to the same picture of the cluster: registered brokers (with
their broker epoch, fenced or not, shutting down or not) and partitions. The Raft leader is the
*active controller* once its own leader-change record is committed (it has then replayed
everything before it, as QuorumController.handleLeaderChange waits for). It alone decides, and
every decision is a metadata record: it acts on one only after the quorum committed it.

What the active controller does (ClusterControlManager, ReplicationControlManager):

- a broker registers (BrokerRegistrationRequest) and starts fenced; its broker epoch is the
  offset of its registration record. A broker that registers again while its old incarnation
  was still unfenced shut down uncleanly: it is fenced first (KAFKA-18106);
- brokers heartbeat broker.heartbeat.interval.ms after each answer, saying how far they have
  applied the metadata log; a fenced broker that heartbeats is unfenced; one silent for
  broker.session.timeout.ms is fenced: its leaderships move and it leaves the ISRs
  (generateLeaderAndIsrUpdates, :func:`kraft.remove_from_isr`; without ELR the last member of
  an ISR stays in it);
- AlterPartition from leaders, where a fenced or shutting-down replica may not join (KIP-841);
- controlled shutdown through the heartbeat (wantShutDown): leaderships move first, and the
  broker is told it may stop once it leads nothing and every active broker has applied the
  records that moved them; it is then fenced;
- preferred-leader elections, on request and, with auto.leader.rebalance.enable, for every
  partition whose leader is not its preferred replica (KAFKA-13682, 3.2).

A shortcut: in Kafka a KRaft broker gets no LeaderAndIsr or UpdateMetadata (those requests are
for ZooKeeper-mode brokers only); it replicates the metadata log itself, fetching it from the
active controller, and applies each committed record (BrokerMetadataPublisher). Here the active
controller sends each broker what a committed record changes for it, as an UpdateMetadata or a
LeaderAndIsr carrying the Raft epoch as controller epoch. What a broker learns, and that it
learns it only once the record is committed, is the same; the messages stand for the records.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from kafkalab.config import Config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.controller import partition_metrics
from kafkalab.protocol.kraft import (
    ElectionRules,
    PartitionRegistration,
    partition_change,
    remove_from_isr,
)
from kafkalab.protocol.raft import QuorumController
from kafkalab.protocol.raft_messages import RAFT_TYPES, LeaderChange, MetadataRecord, QuorumStore

__all__ = ["BrokerInfo", "KRaftNode"]

FENCE_CHECK_MS = 1000
# ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE: the most partition changes one leader
# balancing run makes; the rest wait for a run scheduled BALANCE_AGAIN_MS later.
MAX_ELECTIONS_PER_IMBALANCE = 1000
NO_LIMIT = 2**62  # lowestActiveOffset with no active broker (Long.MAX_VALUE)
BALANCE_AGAIN_MS = 10  # QuorumController: an "immediate" run still waits 10 ms


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_epoch: int
    fenced: bool = True
    shutting_down: bool = False


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    broker: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class BrokerStateRecord:
    """BrokerRegistrationChangeRecord: fenced or not, in controlled shutdown or not."""

    broker: int
    fenced: bool
    shutting_down: bool


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    tp: str
    registration: PartitionRegistration


class KRaftNode:
    """One controller node: a Raft voter plus, while it leads, the active controller."""

    def __init__(
        self,
        node_id: str,
        voters: Iterable[str],
        config: Config,
        partitions: dict[str, PartitionRegistration],
        *,
        election_draws: Iterable[int],
        backoff_draws: Iterable[int],
        store: QuorumStore | None = None,
    ) -> None:
        self.id = node_id
        self.config = config
        self.raft = QuorumController(
            node_id,
            voters,
            election_draws=election_draws,
            backoff_draws=backoff_draws,
            election_timeout_ms=config.controller_quorum_election_timeout_ms,
            election_backoff_max_ms=config.controller_quorum_election_backoff_max_ms,
            fetch_timeout_ms=config.controller_quorum_fetch_timeout_ms,
            store=store,
        )
        self.bootstrap = dict(partitions)  # the topic as it was created
        self.brokers: dict[int, BrokerInfo] = {}
        self.partitions: dict[str, PartitionRegistration] = dict(partitions)
        self.applied = 0
        self.active = False
        self.last_contact: dict[int, int] = {}
        self._replies: dict[int, list[tuple[Any, Any]]] = {}  # offset -> sends once committed
        # BrokerHeartbeatManager's controlledShutdownOffset: where each broker in controlled
        # shutdown entered it (the last record of that heartbeat's changes).
        self._shutdown_offsets: dict[int, int] = {}
        # BrokerHeartbeatManager's metadataOffset: the last record each broker said, in its
        # latest heartbeat, it has applied (-1: none yet, or no heartbeat to this controller).
        self._metadata_offsets: dict[int, int] = {}
        self._balance_scheduled = False  # a leader balancing run is pending
        self._balance_again = False  # the last run stopped at its cap: the next one comes soon
        self._balance_token = 0  # identifies the pending run's timer
        self.max_elections_per_imbalance = MAX_ELECTIONS_PER_IMBALANCE

    @property
    def controller_epoch(self) -> int:
        return self.raft.epoch

    def disk(self) -> QuorumStore:
        return self.raft.durable()

    # ---- actor interface ---------------------------------------------------------------------

    def start(self, ctx: Context) -> None:
        self.raft.start(ctx)
        self._after_raft(ctx)

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        if name.startswith("raft:"):
            self.raft.on_timer(ctx, name, data)
        elif name == "kraft:fence_check" and self.active:
            self._fence_silent_brokers(ctx)
            ctx.set_timer(FENCE_CHECK_MS, "kraft:fence_check")
        elif name == "kraft:rebalance" and self.active and data == self._balance_token:
            self._balance_scheduled = False
            self._balance_partition_leaders(ctx)
        self._after_raft(ctx)

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if type(msg) in RAFT_TYPES:
            self.raft.handle(ctx, src, msg)
        elif not self.active:
            ctx.send(
                src, m.NotController(self.raft.leader if self.raft.leader != self.id else None)
            )
        elif isinstance(msg, m.BrokerRegistration):
            self._on_registration(ctx, src, msg)
        elif isinstance(msg, m.BrokerHeartbeat):
            self._on_heartbeat(ctx, src, msg)
        elif isinstance(msg, m.AlterIsr):
            self._on_alter_partition(ctx, src, msg)
        elif isinstance(msg, m.ElectPreferredLeaders):
            self._elect_preferred(ctx, msg.tp)
        elif isinstance(msg, m.ReconfigureRequest):
            # KAFKA-12670 (3.9): the controller's periodic check elects leaderless partitions
            # that the new config allows (unclean election turned on); here it runs at once.
            self.config = msg.config
            self._elect_where_possible(ctx)
        self._after_raft(ctx)

    # ---- committed records -------------------------------------------------------------------

    def _after_raft(self, ctx: Context) -> None:
        """Apply what the quorum committed since last time; step down when no longer leader."""
        if self.active and not self.raft.is_leader:
            self.active = False
            self._balance_scheduled = self._balance_again = False  # renounce cancels it
            ctx.emit(
                "controller_resigned",
                controller=self.id,
                controller_epoch=self.controller_epoch,
                current_epoch=self.raft.epoch,
            )
        # Answers first: a registering broker learns its epoch before its partitions' state.
        for offset in [o for o in self._replies if o < self.raft.hw]:
            for dst, msg in self._replies.pop(offset):
                ctx.send(dst, self._with_offset(msg), hold=True)
        for record in self.raft.committed()[self.applied :]:
            self.applied = record.offset + 1
            self._apply(ctx, record)
        if self.active:
            self._maybe_schedule_balance(ctx)

    def _apply(self, ctx: Context, record: MetadataRecord) -> None:
        p = record.payload
        if isinstance(p, LeaderChange):
            if p.leader == self.id and record.epoch == self.raft.epoch and self.raft.is_leader:
                self._activate(ctx)
        elif isinstance(p, RegisterBrokerRecord):
            self.brokers[p.broker] = BrokerInfo(p.broker_epoch)
            self._after_broker_change(ctx)
            if self.active:  # a new broker replays the metadata: it learns its partitions
                for tp, reg in self.partitions.items():
                    if p.broker in reg.replicas:
                        self._send_leader_and_isr(ctx, tp, reg, only=p.broker)
        elif isinstance(p, BrokerStateRecord):
            info = self.brokers[p.broker]
            self.brokers[p.broker] = replace(info, fenced=p.fenced, shutting_down=p.shutting_down)
            self._after_broker_change(ctx)
        elif isinstance(p, PartitionChangeRecord):
            old = self.partitions.get(p.tp)
            self.partitions[p.tp] = p.registration
            if self.active:
                self._announce_partition(ctx, p.tp, old, p.registration)

    def _activate(self, ctx: Context) -> None:
        """QuorumController becomes active: every broker gets a grace period for its next
        heartbeat, and the full state is sent out."""
        self.active = True
        self.last_contact = dict.fromkeys(self.brokers, ctx.now)
        self._shutdown_offsets = {}  # a new BrokerHeartbeatManager
        self._metadata_offsets = {}
        ctx.emit("controller_elected", broker=self.id, controller_epoch=self.controller_epoch)
        ctx.emit(
            "controller_failover",
            controller=self.id,
            controller_epoch=self.controller_epoch,
            live=self._live(),
        )
        self._send_metadata(ctx)
        for tp, reg in self.partitions.items():
            self._send_leader_and_isr(ctx, tp, reg)
        ctx.set_timer(FENCE_CHECK_MS, "kraft:fence_check")

    def _rules(self) -> ElectionRules:
        c = self.config
        return ElectionRules(
            c.min_insync_replicas,
            c.eligible_leader_replicas_enable,
            c.unclean_leader_election_enable,
            bump_epoch_on_isr_shrink=not c.kafka_15021,
        )

    def _live(self) -> list[int]:
        return sorted(b for b, info in self.brokers.items() if not info.fenced)

    def _acceptable(self, broker: int) -> bool:
        info = self.brokers.get(broker)
        return info is not None and not info.fenced and not info.shutting_down

    def _after_broker_change(self, ctx: Context) -> None:
        if self.active:
            self._send_metadata(ctx)

    def _send_metadata(self, ctx: Context) -> None:
        live = self._live()
        msg = m.UpdateMetadata(
            self.controller_epoch,
            tuple(live),
            self.id,
            shutting_down=tuple(b for b in live if self.brokers[b].shutting_down),
            live_broker_epochs=tuple((b, self.brokers[b].broker_epoch) for b in live),
            metadata_offset=self.raft.hw - 1,
        )
        for b in sorted(self.brokers):
            ctx.send(b, replace(msg, broker_epoch=self.brokers[b].broker_epoch), hold=True)

    def _send_leader_and_isr(
        self, ctx: Context, tp: str, reg: PartitionRegistration, only: int | None = None
    ) -> None:
        msg = m.LeaderAndIsr(
            tp,
            self.controller_epoch,
            reg.leader,
            reg.leader_epoch,
            reg.isr,
            reg.partition_epoch,
            reg.replicas,
            metadata_offset=self.raft.hw - 1,
        )
        for b in reg.replicas:
            if b in self.brokers and (only is None or b == only):
                epoch = self.brokers[b].broker_epoch
                ctx.send(b, replace(msg, broker_epoch=epoch), hold=True)

    def _announce_partition(
        self, ctx: Context, tp: str, old: PartitionRegistration | None, new: PartitionRegistration
    ) -> None:
        ctx.emit(
            "partition_state",
            tp=tp,
            leader=new.leader,
            leader_epoch=new.leader_epoch,
            isr=list(new.isr),
            elr=list(new.elr),
            partition_epoch=new.partition_epoch,
            reason="partition_change",
            controller_epoch=self.controller_epoch,
            unclean=new.leader is not None
            and old is not None
            and new.leader not in old.isr
            and new.leader not in old.elr,
        )
        ctx.emit("metrics", **partition_metrics(self.partitions.values()))
        self._send_leader_and_isr(ctx, tp, new)

    # ---- decisions (active controller only) --------------------------------------------------

    def _append(self, ctx: Context, payload: Any) -> int:
        offset = self.raft.append(ctx, payload)
        assert offset is not None  # only the active controller decides, and it leads
        return offset

    def _change(self, ctx: Context, tp: str, new: PartitionRegistration) -> int | None:
        """Record a partition change, if it changes anything."""
        if new == self._current(tp):
            return None
        return self._append(ctx, PartitionChangeRecord(tp, new))

    def _current(self, tp: str) -> PartitionRegistration:
        """The latest decided state of a partition, committed or not: decisions build on each
        other like the controller's timeline snapshots."""
        for record in reversed(self.raft.log[self.applied :]):
            p = record.payload
            if isinstance(p, PartitionChangeRecord) and p.tp == tp:
                return p.registration
        return self.partitions[tp]

    def _set_broker(self, ctx: Context, broker: int, *, fenced: bool, shutting_down: bool) -> int:
        info = self.brokers[broker]
        self.brokers[broker] = replace(info, fenced=fenced, shutting_down=shutting_down)
        return self._append(ctx, BrokerStateRecord(broker, fenced, shutting_down))

    def _move_away(self, ctx: Context, broker: int) -> int | None:
        """generateLeaderAndIsrUpdates: take ``broker`` out of every ISR it is in."""
        last = None
        for tp in sorted(self.partitions):
            reg = self._current(tp)
            new = remove_from_isr(
                reg,
                broker,
                acceptable=self._acceptable,
                rules=self._rules(),
            )
            last = self._change(ctx, tp, new) or last
        return last

    def _elect_where_possible(self, ctx: Context) -> None:
        """After a broker is unfenced: partitions without a leader may get one back."""
        for tp in sorted(self.partitions):
            reg = self._current(tp)
            if reg.leader is None:
                new = partition_change(
                    reg,
                    target_isr=reg.isr,
                    acceptable=self._acceptable,
                    rules=self._rules(),
                )
                self._change(ctx, tp, new)

    def _on_registration(self, ctx: Context, src: Any, req: m.BrokerRegistration) -> None:
        info = self.brokers.get(req.broker)
        if info is not None and not info.fenced:
            # The old incarnation never shut down cleanly: fence it first (KAFKA-18106).
            self._set_broker(ctx, req.broker, fenced=True, shutting_down=False)
            self._move_away(ctx, req.broker)
        if info is not None and not req.clean_shutdown:
            self._forget_elr(ctx, req.broker)
        self._shutdown_offsets.pop(req.broker, None)
        self._metadata_offsets.pop(req.broker, None)
        epoch = self.raft.leo
        offset = self._append(ctx, RegisterBrokerRecord(req.broker, epoch))
        self.brokers[req.broker] = BrokerInfo(epoch)
        self.last_contact[req.broker] = ctx.now
        self._replies.setdefault(offset, []).append((src, m.BrokerRegistrationResponse(epoch)))

    def _forget_elr(self, ctx: Context, broker: int) -> None:
        """KAFKA-15586: a broker back from an unclean shutdown may have lost unflushed records,
        so it leaves every ELR; one that shut down cleanly keeps its place."""
        for tp in sorted(self.partitions):
            reg = self._current(tp)
            if broker in reg.elr or broker in reg.last_known_elr:
                new = replace(
                    reg,
                    elr=tuple(r for r in reg.elr if r != broker),
                    last_known_elr=tuple(r for r in reg.last_known_elr if r != broker),
                    partition_epoch=reg.partition_epoch + 1,
                )
                self._change(ctx, tp, new)

    def _on_heartbeat(self, ctx: Context, src: Any, hb: m.BrokerHeartbeat) -> None:
        info = self.brokers.get(hb.broker)
        if info is None or info.broker_epoch != hb.broker_epoch:
            ctx.send(src, m.BrokerHeartbeatResponse(m.STALE_BROKER_EPOCH, True, False))
            return
        self.last_contact[hb.broker] = ctx.now
        offset, ready = None, False
        if hb.want_shutdown or hb.broker in self._shutdown_offsets:
            offset, ready = self._shutdown_step(ctx, hb.broker)
        elif info.fenced:
            offset = self._set_broker(ctx, hb.broker, fenced=False, shutting_down=False)
            self._elect_where_possible(ctx)
            offset = max(offset, self.raft.leo - 1)
        self._metadata_offsets[hb.broker] = hb.metadata_offset  # touch
        reply = m.BrokerHeartbeatResponse(m.NONE, self.brokers[hb.broker].fenced, ready)
        if offset is None:
            ctx.send(src, self._with_offset(reply))
        else:
            self._replies.setdefault(offset, []).append((src, reply))

    def _shutdown_step(self, ctx: Context, broker: int) -> tuple[int | None, bool]:
        """BrokerHeartbeatManager.calculateNextBrokerState for a broker that wants to stop.
        Fenced, or unfenced and leading nothing: it may stop now, and is fenced. Unfenced and
        leading: it enters controlled shutdown, its leaderships move and it leaves the ISRs,
        and the answer is "not yet". In controlled shutdown: it may stop once it leads nothing
        and every active broker has said in a heartbeat that it applied the records that moved
        them (:meth:`_lowest_active_offset`). Returns the offset the answer waits for, and
        whether the broker may stop."""
        info = self.brokers[broker]
        leads = any(self._current(tp).leader == broker for tp in self.partitions)
        if broker in self._shutdown_offsets:
            if leads or self._shutdown_offsets[broker] > self._lowest_active_offset():
                return None, False
        elif not info.fenced and leads:
            offset = None
            if not info.shutting_down:  # handleBrokerInControlledShutdown
                offset = self._set_broker(ctx, broker, fenced=False, shutting_down=True)
            offset = self._move_away(ctx, broker) or offset
            self._shutdown_offsets[broker] = self.raft.leo - 1 if offset is None else offset
            return offset, False
        return self._fence(ctx, broker), True

    def _lowest_active_offset(self) -> int:
        """BrokerHeartbeatManager.lowestActiveOffset: the lowest metadata offset reported by an
        unfenced broker that is not in controlled shutdown (no such broker: no limit). Brokers
        report only what they applied, so what it passes is committed."""
        active = [
            self._metadata_offsets.get(b, -1)
            for b, info in self.brokers.items()
            if not info.fenced and b not in self._shutdown_offsets
        ]
        return min(active, default=NO_LIMIT)

    def _with_offset(self, msg: Any) -> Any:
        """A broker's answer, carrying how far the metadata log is committed: by the time it
        arrives the broker would have fetched that far."""
        if isinstance(msg, (m.BrokerHeartbeatResponse, m.BrokerRegistrationResponse)):
            return replace(msg, metadata_offset=self.raft.hw - 1)
        return msg

    def _fence(self, ctx: Context, broker: int) -> int:
        """ReplicationControlManager.handleBrokerFenced: the broker's leaderships move and it
        leaves the ISRs, then the record that fences it."""
        self._shutdown_offsets.pop(broker, None)  # a fenced broker leaves controlled shutdown
        self._move_away(ctx, broker)
        info = self.brokers[broker]
        return self._set_broker(ctx, broker, fenced=True, shutting_down=info.shutting_down)

    def _fence_silent_brokers(self, ctx: Context) -> None:
        """BrokerHeartbeatManager: a broker silent for broker.session.timeout.ms is fenced."""
        timeout = self.config.broker_session_timeout_ms
        for b, info in sorted(self.brokers.items()):
            if not info.fenced and self.last_contact.get(b, ctx.now) + timeout < ctx.now:
                ctx.emit("broker_fenced", broker=b, controller_epoch=self.controller_epoch)
                self._fence(ctx, b)

    def _on_alter_partition(self, ctx: Context, src: Any, req: m.AlterIsr) -> None:
        reg = self._current(req.tp)
        if req.leader != reg.leader or req.leader_epoch != reg.leader_epoch:
            error = m.FENCED_LEADER_EPOCH
        elif req.partition_epoch != reg.partition_epoch:
            error = m.INVALID_UPDATE_VERSION
        elif any(r not in reg.isr and not self._acceptable(r) for r in req.isr):
            error = m.INELIGIBLE_REPLICA  # KIP-841: fenced or shutting-down replicas stay out
        else:
            new = partition_change(
                reg,
                target_isr=tuple(req.isr),
                acceptable=self._acceptable,
                rules=replace(self._rules(), unclean=False),
            )
            offset = self._change(ctx, req.tp, new)
            resp = m.AlterIsrResponse(
                req.tp, m.NONE, new.leader_epoch, new.partition_epoch, new.isr
            )
            if offset is None:
                ctx.send(src, resp)
            else:
                self._replies.setdefault(offset, []).append((src, resp))
            return
        ctx.send(
            src, m.AlterIsrResponse(req.tp, error, reg.leader_epoch, reg.partition_epoch, reg.isr)
        )

    # ---- leader balancing (QuorumController, ReplicationControlManager; KAFKA-13682, 3.2) ------

    def _imbalanced(self) -> list[str]:
        """The partitions whose leader (none counts) is not their preferred, first, replica."""
        return [
            tp for tp in sorted(self.partitions) if not _has_preferred_leader(self._current(tp))
        ]

    def _maybe_schedule_balance(self, ctx: Context) -> None:
        """maybeScheduleNextBalancePartitionLeaders, after every controller write: with
        auto.leader.rebalance.enable on, some partition's leader not its preferred replica and
        no run pending, a run is scheduled leader.imbalance.check.interval.seconds from now (10
        ms if the last run stopped at its cap). No fixed clock: the interval counts from the
        change that left a partition off its preferred leader, or from the last run."""
        if self._balance_scheduled or not self.config.auto_leader_rebalance_enable:
            return
        if not self._imbalanced():
            return
        again = self._balance_again
        delay = BALANCE_AGAIN_MS if again else self.config.leader_imbalance_check_interval_ms
        self._balance_token += 1
        self._balance_scheduled = True
        ctx.set_timer(delay, "kraft:rebalance", self._balance_token)

    def _balance_partition_leaders(self, ctx: Context) -> None:
        """maybeBalancePartitionLeaders: a preferred-replica election for every partition whose
        leader is not its preferred replica, at most ``max_elections_per_imbalance`` changes in
        one run. Unlike the ZooKeeper-era controller it looks at no per-broker share:
        leader.imbalance.per.broker.percentage is not read in KRaft mode."""
        changes = 0
        self._balance_again = False
        for tp in self._imbalanced():
            if changes >= self.max_elections_per_imbalance:
                self._balance_again = True
                break
            changes += self._elect_preferred(ctx, tp)

    def _elect_preferred(self, ctx: Context, only: str | None) -> int:
        """PartitionChangeBuilder's preferred election: the preferred replica leads again when
        it is in the ISR and acceptable. Returns how many partitions changed."""
        changes = 0
        for tp in sorted(self.partitions):
            if only is not None and tp != only:
                continue
            reg = self._current(tp)
            preferred = reg.replicas[0]
            if reg.leader != preferred and preferred in reg.isr and self._acceptable(preferred):
                new = replace(
                    reg,
                    leader=preferred,
                    leader_epoch=reg.leader_epoch + 1,
                    partition_epoch=reg.partition_epoch + 1,
                )
                changes += self._change(ctx, tp, new) is not None
        return changes


def _has_preferred_leader(reg: PartitionRegistration) -> bool:
    """PartitionRegistration.hasPreferredLeader."""
    return bool(reg.replicas) and reg.leader == reg.replicas[0]
