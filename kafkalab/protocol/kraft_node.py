"""A KRaft controller node (Kafka 3.x/4.x, no ZooKeeper).

Each controller node ("c1", "c2", "c3") is a voter of the Raft quorum (:mod:`raft`) and applies
the committed metadata records to the same picture of the cluster: registered brokers (with
their broker epoch, fenced or not, shutting down or not) and partitions. The Raft leader is the
*active controller* once its own leader-change record is committed (it has then replayed
everything before it, as QuorumController.handleLeaderChange waits for). It alone decides, and
every decision is a metadata record: it acts on one only after the quorum committed it.

What the active controller does (ClusterControlManager, ReplicationControlManager):

- a broker registers (BrokerRegistrationRequest) and starts fenced; its broker epoch is the
  offset of its registration record. A new incarnation is refused while the old one's session
  is valid (DUPLICATE_BROKER_REGISTRATION); one whose old incarnation was still unfenced is
  fenced first (KAFKA-18106);
- brokers heartbeat broker.heartbeat.interval.ms after each answer; a fenced broker that
  heartbeats is unfenced; one silent for broker.session.timeout.ms is fenced when its session
  runs out: its leaderships move and it leaves the ISRs (generateLeaderAndIsrUpdates);
- AlterPartition from leaders, where a fenced or shutting-down replica may not be (KIP-841, 3.3);
- controlled shutdown through the heartbeat (wantShutDown): leaderships move first, and the
  broker may stop once it leads nothing and every active broker has applied those records;
- an operator's ElectLeaders, preferred or unclean (KAFKA-13162, 3.1; refused before);
  preferred-leader elections, with auto.leader.rebalance.enable, periodically (KAFKA-13682,
  3.2); unclean elections of leaderless partitions, periodically (KAFKA-12670, 3.9).

A shortcut: a KRaft broker fetches the metadata log and applies each committed record
(BrokerMetadataPublisher). Here the active controller sends each broker what a committed record
changes for it as a LeaderAndIsr or UpdateMetadata (Raft epoch as controller epoch).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from kafkalab.config import Config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.controller import metadata_partitions, partition_metrics
from kafkalab.protocol.kraft import (
    BrokerInfo,
    BrokerStateRecord,
    ElectionRules,
    PartitionChangeRecord,
    PartitionRegistration,
    RegisterBrokerRecord,
    has_preferred_leader,
    partition_change,
    preferred_election,
    remove_from_isr,
    requested_election,
    without_elr_member,
)
from kafkalab.protocol.raft import QuorumController
from kafkalab.protocol.raft_messages import RAFT_TYPES, LeaderChange, MetadataRecord, QuorumStore

__all__ = ["BrokerInfo", "KRaftNode"]

# ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE: the most partition changes one leader
# balancing run makes; the rest wait for a run scheduled BALANCE_AGAIN_MS later.
MAX_ELECTIONS_PER_IMBALANCE = 1000
NO_LIMIT = 2**62  # lowestActiveOffset with no active broker (Long.MAX_VALUE)
BALANCE_AGAIN_MS = 10  # QuorumController: an "immediate" run still waits 10 ms


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
            check_quorum=config.kraft_check_quorum,
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
        self._fence_deadline: int | None = None  # when the fence timer set last goes off
        self._unclean_scheduled = False  # an unclean-election run is pending (3.9+)
        self._unclean_again = False  # the last run stopped at its cap
        self._unclean_token = 0

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
        elif name == "kraft:fence_check" and self.active and data == self._fence_deadline:
            self._fence_deadline = None
            self._fence_silent_brokers(ctx)
        elif name == "kraft:rebalance" and self.active and data == self._balance_token:
            self._balance_scheduled = False
            self._balance_partition_leaders(ctx)
        elif name == "kraft:unclean" and self.active and data == self._unclean_token:
            self._unclean_scheduled = False
            self._elect_unclean_leaders(ctx)
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
        elif isinstance(msg, m.ElectLeaders):
            self._on_elect_leaders(ctx, msg)
        elif isinstance(msg, m.ReconfigureRequest):
            # A config change elects nothing by itself: unclean election turned on reaches a
            # leaderless partition at the periodic check (KAFKA-12670, 3.9).
            self.config = msg.config
        self._after_raft(ctx)

    # ---- committed records -------------------------------------------------------------------

    def _after_raft(self, ctx: Context) -> None:
        """Apply what the quorum committed since last time; step down when no longer leader."""
        if self.active and not self.raft.is_leader:
            self.active = False
            self._balance_scheduled = self._balance_again = False  # renounce cancels it
            self._unclean_scheduled = self._unclean_again = False
            self._fence_deadline = None
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
            self._maybe_schedule_unclean(ctx)
            self._arm_fence_timer(ctx)

    def _apply(self, ctx: Context, record: MetadataRecord) -> None:
        p = record.payload
        if isinstance(p, LeaderChange):
            if p.leader == self.id and record.epoch == self.raft.epoch and self.raft.is_leader:
                self._activate(ctx)
        elif isinstance(p, RegisterBrokerRecord):
            self.brokers[p.broker] = BrokerInfo(p.broker_epoch, incarnation=p.incarnation)
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

    def _rules(self) -> ElectionRules:
        c = self.config
        return ElectionRules(
            c.min_insync_replicas,
            c.eligible_leader_replicas_enable,
            c.unclean_leader_election_enable and c.kraft_unclean_election,
            bump_epoch_on_isr_shrink=not c.kafka_15021,
        )

    def _live(self) -> list[int]:
        return sorted(b for b, info in self.brokers.items() if not info.fenced)

    def _acceptable(self, broker: int) -> bool:
        """May lead or join the ISR: registered and unfenced; since KIP-841 (3.3, KAFKA-13916)
        not shutting down either (isActive; before, clusterControl.unfenced alone)."""
        info = self.brokers.get(broker)
        if info is None or info.fenced:
            return False
        return not (info.shutting_down and self.config.isr_join_only_eligible)

    def _after_broker_change(self, ctx: Context) -> None:
        if self.active:
            self._send_metadata(ctx)

    def _send_metadata(self, ctx: Context, skip: Iterable[int] = ()) -> None:
        live = self._live()
        msg = m.UpdateMetadata(
            self.controller_epoch,
            tuple(live),
            self.id,
            shutting_down=tuple(b for b in live if self.brokers[b].shutting_down),
            live_broker_epochs=tuple((b, self.brokers[b].broker_epoch) for b in live),
            metadata_offset=self.raft.hw - 1,
            partitions=metadata_partitions(self.partitions),  # the image clients read
        )
        for b in sorted(set(self.brokers) - set(skip)):
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
                ctx.send(b, replace(msg, broker_epoch=self.brokers[b].broker_epoch), hold=True)

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
        self._send_metadata(ctx, skip=new.replicas)  # the other brokers apply the record too

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
            new = remove_from_isr(reg, broker, acceptable=self._acceptable, rules=self._rules())
            last = self._change(ctx, tp, new) or last
        return last

    def _elect_where_possible(self, ctx: Context) -> None:
        """After a broker is unfenced: partitions without a leader may get one back."""
        for tp in sorted(self.partitions):
            reg = self._current(tp)
            if reg.leader is None:
                new = partition_change(
                    reg, target_isr=reg.isr, acceptable=self._acceptable, rules=self._rules()
                )
                self._change(ctx, tp, new)

    def _on_registration(self, ctx: Context, src: Any, req: m.BrokerRegistration) -> None:
        """ClusterControlManager.registerBroker. Another incarnation of a broker whose session
        is still valid is refused (DuplicateBrokerRegistrationException, since 2.8): it tries
        again until the old session expires and is fenced."""
        info = self.brokers.get(req.broker)
        if (
            info is not None
            and info.incarnation != req.incarnation
            and self._valid(req.broker, ctx)
        ):
            error = m.DUPLICATE_BROKER_REGISTRATION
            ctx.send(src, self._with_offset(m.BrokerRegistrationResponse(-1, error=error)))
            return
        if info is not None and not info.fenced:
            # The old incarnation never shut down cleanly: fence it first (KAFKA-18106).
            self._set_broker(ctx, req.broker, fenced=True, shutting_down=False)
            self._move_away(ctx, req.broker)
        if info is not None and not req.clean_shutdown:
            self._forget_elr(ctx, req.broker)
        self._shutdown_offsets.pop(req.broker, None)
        self._metadata_offsets.pop(req.broker, None)
        epoch = self.raft.leo
        offset = self._append(ctx, RegisterBrokerRecord(req.broker, epoch, req.incarnation))
        self.brokers[req.broker] = BrokerInfo(epoch, incarnation=req.incarnation)
        self.last_contact[req.broker] = ctx.now
        self._replies.setdefault(offset, []).append((src, m.BrokerRegistrationResponse(epoch)))

    def _forget_elr(self, ctx: Context, broker: int) -> None:
        """KAFKA-15586: a broker back from an unclean shutdown may have lost unflushed records,
        so it leaves every ELR; one that shut down cleanly keeps its place."""
        for tp in sorted(self.partitions):
            self._change(ctx, tp, without_elr_member(self._current(tp), broker))

    def _on_heartbeat(self, ctx: Context, src: Any, hb: m.BrokerHeartbeat) -> None:
        info = self.brokers.get(hb.broker)
        if info is None or info.broker_epoch != hb.broker_epoch:
            ctx.send(src, m.BrokerHeartbeatResponse(m.STALE_BROKER_EPOCH, True, False))
            return
        self.last_contact[hb.broker] = ctx.now
        offset, ready = None, False
        if hb.want_shutdown or hb.broker in self._shutdown_offsets:
            offset, ready = self._shutdown_step(ctx, hb.broker)
        elif info.fenced and hb.metadata_offset >= info.broker_epoch:  # caught up: 3.3.2+
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

    def _valid(self, broker: int, ctx: Context) -> bool:
        """BrokerHeartbeatManager.hasValidSession: unfenced, heard from in the session timeout."""
        timeout = self.config.broker_session_timeout_ms
        return not self.brokers[broker].fenced and (
            self.last_contact.get(broker, ctx.now) + timeout >= ctx.now
        )

    def _arm_fence_timer(self, ctx: Context) -> None:
        """QuorumController.rescheduleMaybeFenceStaleBrokers (since 2.8): one timer at the
        first moment an unfenced broker's session is no longer valid (nextCheckTimeNs), set
        again whenever a heartbeat or registration moves it."""
        timeout = self.config.broker_session_timeout_ms
        deadlines = [
            self.last_contact.get(b, ctx.now) + timeout + 1
            for b, info in self.brokers.items()
            if not info.fenced
        ]
        deadline = min(deadlines, default=None)
        if deadline is not None and deadline != self._fence_deadline:
            ctx.set_timer(max(deadline - ctx.now, 0), "kraft:fence_check", deadline)
        self._fence_deadline = deadline

    def _fence_silent_brokers(self, ctx: Context) -> None:
        """maybeFenceOneStaleBroker, once per stale broker: one whose session ran out is fenced."""
        for b in sorted(self.brokers):
            if not self.brokers[b].fenced and not self._valid(b, ctx):
                ctx.emit("broker_fenced", broker=b, controller_epoch=self.controller_epoch)
                self._fence(ctx, b)

    def _on_alter_partition(self, ctx: Context, src: Any, req: m.AlterIsr) -> None:
        reg = self._current(req.tp)
        if req.leader != reg.leader or req.leader_epoch != reg.leader_epoch:
            error = m.FENCED_LEADER_EPOCH
        elif req.partition_epoch != reg.partition_epoch:
            error = m.INVALID_UPDATE_VERSION
        elif self.config.isr_join_only_eligible and not all(map(self._acceptable, req.isr)):
            error = m.INELIGIBLE_REPLICA  # KIP-841 (3.3): ineligibleReplicasForIsr
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
        return [tp for tp in sorted(self.partitions) if not has_preferred_leader(self._current(tp))]

    def _maybe_schedule_balance(self, ctx: Context) -> None:
        """maybeScheduleNextBalancePartitionLeaders, after every controller write: with
        auto.leader.rebalance.enable on, some partition's leader not its preferred replica and
        no run pending, a run is scheduled leader.imbalance.check.interval.seconds from now (10
        ms if the last run stopped at its cap). No fixed clock: the interval counts from the
        change that left a partition off its preferred leader, or from the last run."""
        c = self.config
        if self._balance_scheduled or not (
            c.auto_leader_rebalance_enable and c.kraft_leader_balancing
        ):
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
            new = preferred_election(self._current(tp), self._acceptable)
            changes += self._change(ctx, tp, new) is not None

    def _maybe_schedule_unclean(self, ctx: Context) -> None:
        """maybeScheduleNextElectUncleanLeaders (3.9, KAFKA-12670), after every controller
        write: while some partition has no leader and no run is pending, a run is scheduled
        unclean.leader.election.interval.ms from now (10 ms if the last stopped at its cap)."""
        if self._unclean_scheduled or not self.config.kraft_unclean_election:
            return
        if all(self._current(tp).leader is not None for tp in self.partitions):
            return
        delay = (
            BALANCE_AGAIN_MS
            if self._unclean_again
            else self.config.unclean_leader_election_interval_ms
        )
        self._unclean_token += 1
        self._unclean_scheduled = True
        ctx.set_timer(delay, "kraft:unclean", self._unclean_token)

    def _elect_unclean_leaders(self, ctx: Context) -> None:
        """maybeElectUncleanLeaders: an unclean election for each leaderless partition."""
        self._unclean_again = False
        if not self.config.unclean_leader_election_enable:
            return
        changes = 0
        for tp in sorted(self.partitions):
            reg = self._current(tp)
            if reg.leader is not None:
                continue
            if changes >= self.max_elections_per_imbalance:
                self._unclean_again = True
                break
            new = partition_change(
                reg, target_isr=reg.isr, acceptable=self._acceptable, rules=self._rules()
            )
            changes += self._change(ctx, tp, new) is not None

    def _on_elect_leaders(self, ctx: Context, req: m.ElectLeaders) -> None:
        """An operator's ElectLeaders (ReplicationControlManager.electLeaders, KAFKA-13162, 3.1;
        see :func:`requested_election`); asked for every partition, those that needed no
        election are left out of the answer."""
        results, kind = {}, req.election_type
        for tp in [tp for tp in sorted(self.partitions) if req.tp in (None, tp)]:
            reg = self._current(tp)
            new, results[tp] = requested_election(reg, kind, self._acceptable, self._rules())
            if not self.config.kraft_elect_leaders:  # 2.8, 3.0: the broker refused it
                new, results[tp] = reg, m.UNSUPPORTED_VERSION
            self._change(ctx, tp, new)
        if req.tp is None:
            results = {tp: e for tp, e in results.items() if e != m.ELECTION_NOT_NEEDED}
        ctx.emit("elect_leaders_result", controller=self.id, election_type=kind, results=results)
