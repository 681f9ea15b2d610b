"""The controller (KafkaController, ZooKeeper era): broker liveness, leader election, ISR
changes, controlled shutdown and preferred leaders.

The same :class:`Controller` runs in two places:

- a dedicated node ("controller", beside ZooKeeper, never failing), for lessons about
  replication alone; its decisions take effect at once;
- inside the broker that won the /controller race. Then every decision is first written to
  ZooKeeper with the controller epoch and only sent to brokers once ZooKeeper accepted it, so a
  controller that was replaced while paused (a zombie) is fenced: its writes fail and it resigns,
  and brokers ignore requests carrying an older controller epoch.

The elections an operator asks for and the automatic leader rebalance are in
:mod:`kafkalab.protocol.controller_elections`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from kafkalab.config import Config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.controller_elections import auto_rebalance, on_elect_leaders
from kafkalab.protocol.zookeeper import DEDICATED_CONTROLLER, ZOOKEEPER, ZooKeeper

__all__ = ["CommittedPartition", "Controller", "ControllerNode", "PartitionState", "ZooKeeper"]

AUTO_REBALANCE_TIMER = "controller:auto_leader_rebalance"
# KafkaController.onControllerFailover: the first leader-imbalance check comes this long after
# the controller takes over (a fixed 5 s since auto leader rebalancing came, 0.8.1), the next
# ones leader.imbalance.check.interval.seconds after the previous.
FIRST_REBALANCE_CHECK_MS = 5000


@dataclass(frozen=True, slots=True)
class PartitionState:
    """The partition's state as the controller holds it (the /brokers/topics/.../state znode)."""

    replicas: tuple[int, ...]
    leader: int | None
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int = 0


class CommittedPartition(Protocol):
    """What a controller has committed for a partition, in either mode: ZooKeeper's
    :class:`PartitionState` and KRaft's ``PartitionRegistration`` both answer it."""

    @property
    def replicas(self) -> tuple[int, ...]: ...

    @property
    def leader(self) -> int | None: ...

    @property
    def leader_epoch(self) -> int: ...

    @property
    def isr(self) -> tuple[int, ...]: ...

    @property
    def partition_epoch(self) -> int: ...


class Controller:
    """Controller logic. ``write_through``: decisions go through ZooKeeper before anything is
    sent (the elected controller); otherwise they take effect at once (the dedicated one)."""

    def __init__(
        self,
        config: Config,
        partitions: dict[str, PartitionState],
        controller_epoch: int = 1,
        *,
        write_through: bool = False,
        live: dict[int, int] | None = None,
        address: Any = DEDICATED_CONTROLLER,
        session: int | None = None,
        restart_replaces_session: bool = False,
    ) -> None:
        self.config = config
        # ZooKeeper lets a restarted broker replace its previous run's live session (see
        # ZooKeeper.restart_replaces_session): the old simplification of KIP-101's stories.
        self.restart_replaces_session = restart_replaces_session
        self.partitions = dict(partitions)
        # What the controller last published to the brokers' metadata caches (UpdateMetadata),
        # which clients read: a new controller reads every partition and publishes it, and each
        # change it makes is published with it. Before 2.7 a leader's own ISR writes reach it
        # only through /isr_change_notification, seconds later (0.9 to 2.6), or never (0.8).
        self.metadata = dict(partitions)
        self._published: dict[str, PartitionState] = {}  # what the last UpdateMetadata carried
        self.controller_epoch = controller_epoch
        self.live: dict[int, int] = dict(live or {})  # broker -> broker epoch
        self.write_through = write_through
        self.address = address
        self.session = session  # the elected controller's ZooKeeper session, which it reads with
        self.active = True
        self.shutting_down: set[int] = set()
        self._changed: dict[str, PartitionState] = {}  # written by the event being handled
        self._read_versions: dict[str, int] = {}  # the versions those changes were based on
        self._outbox: list[tuple[Any, Any]] = []
        self._events: list[tuple[str, dict[str, Any]]] = []  # state changes, once committed
        # ZooKeeper write id -> (the sends and trace events that wait for it)
        self._waiting: dict[
            int, tuple[list[tuple[Any, Any]], list[tuple[str, dict[str, Any]]]]
        ] = {}
        self._write_id = 0

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self, ctx: Context) -> None:
        """Schedule the first leader-imbalance check (scheduleAutoLeaderRebalanceTask), 5 s
        after this controller took over. The timer carries the controller epoch: a controller
        that resigned and was elected again does not run its old schedule too (Kafka shuts its
        scheduler down on resignation)."""
        if self.config.auto_leader_rebalance_enable:
            ctx.set_timer(FIRST_REBALANCE_CHECK_MS, AUTO_REBALANCE_TIMER, self.controller_epoch)

    def on_failover(self, ctx: Context) -> None:
        """KafkaController.onControllerFailover: tell every live broker the metadata and the
        state of every partition. The replica state machine starts first: since 2.3
        (KAFKA-3143, ``controller_failover_offlines_replicas``) it takes replicas on dead brokers
        out of the ISR, each removal a leader epoch bump, and a dead leader leaves the partition
        leaderless. Then the partition state machine elects a leader where there is none, a
        second bump. Before 2.3 the replica state machine's start-up only brought live replicas
        online, which changes no partition, so the election alone did, keeping the live ISR
        members."""
        ctx.emit(
            "controller_failover",
            controller=self.address,
            controller_epoch=self.controller_epoch,
            live=sorted(self.live),
        )
        self.start(ctx)
        self._update_metadata()
        offline_replicas = self.config.controller_failover_offlines_replicas
        for tp, state in self.partitions.items():
            new = state
            if offline_replicas:
                for b in sorted(new.replicas):
                    if b not in self.live:
                        new = _remove_from_isr(new, b, self._keeps_last_isr_member)
                self._commit(ctx, tp, state, new, "controller_failover_offline_replicas")
            before_election = self.partitions[tp]
            new = before_election
            if new.leader is None or new.leader not in self.live:
                new = self._elect(new) or replace(new, leader=None)
            changed = self._commit(ctx, tp, before_election, new, "controller_failover")
            if not changed and before_election == state:
                self._send_leader_and_isr(tp, new, [b for b in new.replicas if b in self.live])
        self._flush(ctx)

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        if name == AUTO_REBALANCE_TIMER and self.active and data == self.controller_epoch:
            auto_rebalance(self, ctx)
            interval = self.config.leader_imbalance_check_interval_ms
            ctx.set_timer(interval, AUTO_REBALANCE_TIMER, self.controller_epoch)
            self._flush(ctx)

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if not self.active:
            if isinstance(msg, m.AlterIsr):
                state = self.partitions[msg.tp]
                ctx.send(
                    src,
                    m.AlterIsrResponse(
                        msg.tp,
                        m.NOT_CONTROLLER,
                        state.leader_epoch,
                        state.partition_epoch,
                        state.isr,
                    ),
                )
            return
        if isinstance(msg, m.BrokerChange):
            if self.write_through and self.session is not None:
                self._read_brokers(self.session)
            else:  # the dedicated controller stands beside ZooKeeper: the news is what it reads
                self._on_broker_change(ctx, dict(msg.live))
        elif isinstance(msg, m.ZkBrokers):
            self._on_broker_change(ctx, dict(msg.live))
        elif isinstance(msg, m.AlterIsr):
            self._on_alter_isr(ctx, src, msg)
        elif isinstance(msg, m.ZkPartitionState):
            self._on_zk_partition_state(ctx, msg)
        elif isinstance(msg, m.IsrChangeNotification):
            self._on_isr_change_notification(ctx, msg)
        elif isinstance(msg, m.ControlledShutdownRequest):
            self._on_controlled_shutdown(ctx, src, msg)
        elif isinstance(msg, m.ElectLeaders):
            on_elect_leaders(self, ctx, msg)
        elif isinstance(msg, m.ReconfigureRequest):
            self._on_reconfigure(ctx, msg.config)
        elif isinstance(msg, m.ZkWriteResult):
            self._on_write_result(ctx, msg)
            return
        self._flush(ctx)

    # ---- committing through ZooKeeper --------------------------------------------------------

    def _emit(self, kind: str, **data: Any) -> None:
        self._events.append((kind, data))

    def _flush(self, ctx: Context) -> None:
        """Carry out what this event decided: at once, or once ZooKeeper accepted its writes
        (until then the state changes are not in the trace either: they may never happen)."""
        sends, self._outbox = self._with_metadata(self._outbox), []
        events, self._events = self._events, []
        changed, self._changed = self._changed, {}
        versions, self._read_versions = self._read_versions, {}
        if not self.write_through or not changed:
            _carry_out(ctx, sends, events)
            return
        self._write_id += 1
        self._waiting[self._write_id] = (sends, events)
        write = m.ZkWrite(
            self.controller_epoch,
            self._write_id,
            tuple(changed.items()),
            tuple((tp, versions[tp]) for tp in changed),
        )
        ctx.send("zk", write)

    def _on_write_result(self, ctx: Context, msg: m.ZkWriteResult) -> None:
        sends, events = self._waiting.pop(msg.write_id, ([], []))
        if msg.ok:
            _carry_out(ctx, sends, events)
            return
        # ControllerMovedException: another broker is controller now. Resign and send nothing.
        self.active = False
        self._waiting.clear()
        ctx.emit(
            "controller_resigned",
            controller=self.address,
            controller_epoch=self.controller_epoch,
            current_epoch=msg.controller_epoch,
        )

    # ---- broker liveness ---------------------------------------------------------------------

    def _read_brokers(self, session: int) -> None:
        """The watch on /brokers/ids fired. KafkaController.processBrokerChange starts by
        reading the registered brokers and their epochs (getAllBrokerAndEpochsInCluster); a
        controller whose session expired cannot read (its ZooKeeper client is closed: it learns
        of the expiry instead) and so handles nothing: no UpdateMetadata, no LeaderAndIsr, no
        write. The client retries the read until connected, so it waits out a cut link."""
        self._outbox.append((ZOOKEEPER, m.ZkGetBrokers(self.address, session)))

    def _on_broker_change(self, ctx: Context, live: dict[int, int]) -> None:
        """KafkaController's BrokerChange handling with what it read. Since 2.2 (KIP-380) a
        broker whose epoch changed bounced (it registered again before the controller handled
        its going): a failure followed by a startup. Before (2.1.1 BrokerChange.process), the
        controller compared broker ids only, so it did nothing for a bounced broker: no
        LeaderAndIsr, and the broker leads nothing until one comes."""
        dead = [b for b in self.live if b not in live]
        started = [b for b in live if b not in self.live]
        bounced = [b for b in live if b in self.live and live[b] != self.live[b]]
        if self.config.broker_epoch and bounced:
            dead += bounced
            started += bounced
        if dead:
            for b in dead:
                self.live.pop(b, None)
            self.shutting_down -= set(dead)
            self._on_broker_failure(ctx, sorted(dead))
        self.live = dict(live)
        if bounced and not self.config.broker_epoch and self.restart_replaces_session:
            # Only where ZooKeeper lets a broker restart inside its session (KIP-101's stepped
            # stories) does it get its partitions' state, so it can take its old role there.
            started += bounced
        if started:
            self._on_broker_startup(ctx, sorted(started))

    def _on_broker_failure(self, ctx: Context, dead: list[int]) -> None:
        """onReplicasBecomeOffline: first elect new leaders for partitions led by a dead broker,
        then remove the dead replicas from every ISR."""
        ctx.emit("broker_failure", brokers=dead)
        self._update_metadata()
        for tp, state in self.partitions.items():
            new = state
            if new.leader in dead:
                new = self._elect(new) or new
            for b in dead:
                new = _remove_from_isr(new, b, self._keeps_last_isr_member)
            self._commit(ctx, tp, state, new, "broker_failure")

    def _on_broker_startup(self, ctx: Context, started: list[int]) -> None:
        """onBrokerStartup: tell the new brokers their partitions' state, and try to bring
        offline partitions back."""
        ctx.emit("broker_startup", brokers=started)
        self._update_metadata()
        for tp, state in self.partitions.items():
            new = state
            if new.leader is None:
                new = self._elect(new) or new
            changed = self._commit(ctx, tp, state, new, "broker_startup")
            if not changed:
                self._send_leader_and_isr(tp, new, [b for b in started if b in new.replicas])

    def _on_reconfigure(self, ctx: Context, config: Config) -> None:
        """A dynamic config change: apply it, and elect a leader for every leaderless partition
        that now may have one (KafkaController's TopicUncleanLeaderElectionEnable event,
        KAFKA-6835, 2.1)."""
        self.config = config
        for tp, state in self.partitions.items():
            if state.leader is None:
                new = self._elect(state)
                if new is not None:
                    self._commit(ctx, tp, state, new, "config_change")

    @property
    def _keeps_last_isr_member(self) -> bool:
        config = self.config
        return config.isr_keeps_last_member or not config.unclean_leader_election_enable

    def _elect(
        self,
        state: PartitionState,
        exclude: frozenset[int] = frozenset(),
        allow_unclean: bool = False,
    ) -> PartitionState | None:
        """OfflinePartitionLeaderElectionStrategy: the first replica in assignment order that is
        alive and in the ISR, keeping the live ISR members; failing that, with unclean election
        on (or ``allow_unclean``: an operator asked for it), the first live replica with an ISR
        of itself; else None (offline). Replicas in ``exclude`` (shutting down) are never chosen
        and leave the ISR."""
        live = self.live
        for r in state.replicas:
            if r in live and r in state.isr and r not in exclude:
                isr = tuple(i for i in state.isr if i in live and i not in exclude)
                return replace(state, leader=r, leader_epoch=state.leader_epoch + 1, isr=isr)
        unclean = self.config.unclean_leader_election_enable or allow_unclean
        if unclean and not exclude:
            for r in state.replicas:
                if r in live:
                    return replace(state, leader=r, leader_epoch=state.leader_epoch + 1, isr=(r,))
        return None

    def _commit(
        self, ctx: Context, tp: str, old: PartitionState, new: PartitionState, reason: str
    ) -> bool:
        if new == old:
            return False
        new = self._store(tp, old, replace(new, partition_epoch=old.partition_epoch + 1), reason)
        self._send_leader_and_isr(tp, new, [b for b in new.replicas if b in self.live])
        return True

    def _store(
        self, tp: str, old: PartitionState, new: PartitionState, reason: str, publish: bool = True
    ) -> PartitionState:
        """Record a decided partition state (written to ZooKeeper with the event's other
        changes) and its trace events; with ``publish`` it also goes to the brokers' metadata
        caches (the UpdateMetadata that follows every change the controller makes)."""
        self.partitions[tp] = new
        if publish:
            self.metadata[tp] = new
        self._changed[tp] = new
        self._read_versions.setdefault(tp, old.partition_epoch)
        self._emit(
            "partition_state",
            tp=tp,
            leader=new.leader,
            leader_epoch=new.leader_epoch,
            isr=list(new.isr),
            partition_epoch=new.partition_epoch,
            reason=reason,
            unclean=new.leader is not None and new.leader not in old.isr,
            controller_epoch=self.controller_epoch,
        )
        self._emit("metrics", **partition_metrics(self.partitions.values()))
        return new

    def _send_leader_and_isr(self, tp: str, state: PartitionState, brokers: list[int]) -> None:
        msg = m.LeaderAndIsr(
            tp,
            self.controller_epoch,
            state.leader,
            state.leader_epoch,
            state.isr,
            state.partition_epoch,
            state.replicas,
        )
        for b in brokers:
            self._outbox.append((b, replace(msg, broker_epoch=self.live.get(b, -1))))

    def _update_metadata(self) -> None:
        self._outbox += self._update_metadata_requests()

    def _update_metadata_requests(self) -> list[tuple[Any, Any]]:
        msg = m.UpdateMetadata(self.controller_epoch, tuple(sorted(self.live)), self.address)
        return [(b, replace(msg, broker_epoch=self.live[b])) for b in sorted(self.live)]

    def _with_metadata(self, sends: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        """Every change the controller publishes goes out in UpdateMetadata to every live
        broker (ControllerBrokerRequestBatch adds one to each LeaderAndIsr batch;
        processIsrChangeNotification and processAlterPartition send one too), carrying the
        partition states as they stand once the event is handled."""
        has_update = any(isinstance(msg, m.UpdateMetadata) for _, msg in sends)
        if not has_update and self.metadata == self._published:
            return sends
        if not has_update:
            sends = sends + self._update_metadata_requests()
        self._published = dict(self.metadata)
        states = metadata_partitions(self.metadata)
        return [
            (dst, replace(msg, partitions=states) if isinstance(msg, m.UpdateMetadata) else msg)
            for dst, msg in sends
        ]

    # ---- ISR changes from leaders -------------------------------------------------------------

    def _on_alter_isr(self, ctx: Context, src: Any, req: m.AlterIsr) -> None:
        """An ISR change is committed only if it was based on the current leader epoch and
        partition epoch (the ZooKeeper conditional write; AlterPartition since 2.7). It does
        not bump the leader epoch."""
        state = self.partitions[req.tp]
        if req.leader != state.leader or req.leader_epoch != state.leader_epoch:
            error = m.FENCED_LEADER_EPOCH
        elif req.partition_epoch != state.partition_epoch:
            error = m.INVALID_UPDATE_VERSION
        else:
            error = m.NONE
            new = replace(state, isr=req.isr, partition_epoch=state.partition_epoch + 1)
            reason = "expand" if len(req.isr) > len(state.isr) else "shrink"
            # Before 2.7 this is the leader's own ZooKeeper write, which the dedicated
            # controller stands beside: the controller publishes it only when notified.
            state = self._store(req.tp, state, new, reason, publish=self.config.alter_isr)
        self._outbox.append(
            (
                src,
                m.AlterIsrResponse(
                    req.tp, error, state.leader_epoch, state.partition_epoch, state.isr
                ),
            )
        )

    def _on_zk_partition_state(self, ctx: Context, msg: m.ZkPartitionState) -> None:
        """Before 2.7: the state a leader wrote to ZooKeeper, which the controller would read
        before any change of its own (see :class:`~kafkalab.protocol.messages.
        ZkPartitionState`). It is not published: that waits for the notification."""
        current = self.partitions.get(msg.tp)
        if current is None or msg.state.partition_epoch > current.partition_epoch:
            self.partitions[msg.tp] = msg.state
            ctx.emit("metrics", **partition_metrics(self.partitions.values()))

    def _on_isr_change_notification(self, ctx: Context, msg: m.IsrChangeNotification) -> None:
        """0.9 to 2.6: KafkaController's IsrChangeNotification handler
        (processIsrChangeNotification) reads the named partitions from ZooKeeper into its cache
        (updateLeaderAndIsrCache) and sends UpdateMetadata for them to every live broker:
        clients now see the new ISR."""
        for tp in msg.partitions:
            state = self.partitions.get(tp)
            if state is None or self.metadata.get(tp) == state:
                continue
            self.metadata[tp] = state
            ctx.emit(
                "metadata_isr",
                controller=self.address,
                tp=tp,
                isr=list(state.isr),
                leader_epoch=state.leader_epoch,
                notified_by=msg.broker,
            )

    # ---- controlled shutdown ----------------------------------------------------------------

    def _on_controlled_shutdown(
        self, ctx: Context, src: Any, req: m.ControlledShutdownRequest
    ) -> None:
        """KafkaController.doControlledShutdown: move every leadership of the broker to another
        live ISR replica (ControlledShutdownLeaderElection) and take it out of every ISR, so its
        partitions stay available when it stops. The answer lists the partitions it still
        leads (no other live ISR replica could take over); the broker then tries again later.
        Partitions with a single replica are left alone and not listed: nothing can move."""
        if req.broker not in self.live:
            self._outbox.append((src, m.ControlledShutdownResponse(m.BROKER_NOT_AVAILABLE, ())))
            return
        if self.config.broker_epoch and self.live[req.broker] != req.broker_epoch:
            # KIP-380 (2.2): a request from an earlier incarnation of the broker.
            self._outbox.append((src, m.ControlledShutdownResponse(m.STALE_BROKER_EPOCH, ())))
            return
        self.shutting_down.add(req.broker)
        ctx.emit("controlled_shutdown", broker=req.broker)
        exclude = frozenset(self.shutting_down)
        remaining = []
        for tp, state in self.partitions.items():
            if req.broker not in state.replicas or len(state.replicas) < 2:
                continue
            new = state
            if state.leader == req.broker:
                elected = self._elect(state, exclude)
                if elected is None:
                    remaining.append(tp)
                    continue
                new = elected
            elif req.broker in state.isr and len(state.isr) > 1:
                new = replace(
                    state,
                    isr=tuple(i for i in state.isr if i != req.broker),
                    leader_epoch=state.leader_epoch + 1,
                )
            self._commit(ctx, tp, state, new, "controlled_shutdown")
        self._outbox.append((src, m.ControlledShutdownResponse(m.NONE, tuple(remaining))))


class ControllerNode:
    """The dedicated controller: a node of its own that never fails."""

    def __init__(
        self,
        config: Config,
        partitions: dict[str, PartitionState],
        *,
        restart_replaces_session: bool = False,
    ) -> None:
        self.controller = Controller(
            config, partitions, restart_replaces_session=restart_replaces_session
        )

    @property
    def partitions(self) -> dict[str, PartitionState]:
        return self.controller.partitions

    def start(self, ctx: Context) -> None:
        self.controller.start(ctx)

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        self.controller.handle(ctx, src, msg)

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        self.controller.on_timer(ctx, name, data)


def metadata_partitions(
    states: Mapping[str, Any],
) -> tuple[tuple[str, Any, int, tuple[int, ...]], ...]:
    """The partition states an UpdateMetadata carries to the brokers' metadata caches: (tp,
    leader, leader epoch, ISR) for each partition, from states that have those fields."""
    return tuple((tp, s.leader, s.leader_epoch, tuple(s.isr)) for tp, s in sorted(states.items()))


def partition_metrics(states: Iterable[Any]) -> dict[str, int]:
    """OfflinePartitionsCount (no leader) and UnderReplicatedPartitions (an ISR smaller than
    the replica set), from partition states that have leader, isr and replicas."""
    states = list(states)
    return {
        "offline_partitions": sum(1 for s in states if s.leader is None),
        "under_replicated_partitions": sum(1 for s in states if len(s.isr) < len(s.replicas)),
    }


def _remove_from_isr(state: PartitionState, broker: int, keep_last: bool) -> PartitionState:
    """ReplicaStateMachine.doRemoveReplicasFromIsr: a dead replica leaves the ISR, except that the
    last member stays when ``keep_last`` (so it can lead again when it returns); if it was the
    leader the partition has none. Every removal bumps the leader epoch. Since 1.1 (KAFKA-5642)
    the last member always stays; before, only with unclean leader election off
    (KafkaController.removeReplicaFromIsr), so with it on the ISR could become empty and the
    broker that returned first led, by an unclean election, whatever it held."""
    if broker not in state.isr:
        return state
    last = len(state.isr) == 1
    isr = state.isr if last and keep_last else tuple(i for i in state.isr if i != broker)
    leader = None if state.leader == broker else state.leader
    return replace(state, leader=leader, isr=isr, leader_epoch=state.leader_epoch + 1)


def _carry_out(
    ctx: Context, sends: list[tuple[Any, Any]], events: list[tuple[str, dict[str, Any]]]
) -> None:
    for kind, data in events:
        ctx.emit(kind, **data)
    for dst, msg in sends:
        # Kafka's controller-to-broker channel retries until the broker is reachable.
        ctx.send(dst, msg, hold=True)
