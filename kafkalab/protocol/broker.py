"""A Kafka broker: the replicas it hosts, as leader or follower, and its ZooKeeper session.

Each rule names the Kafka function it mirrors (apache/kafka, core/src/main/scala/kafka/...).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkalab.config import Config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.controller import Controller
from kafkalab.protocol.log import RECORD_BYTES, UNDEFINED_EPOCH, UNDEFINED_OFFSET, Disk, Log
from kafkalab.protocol.offsets import GroupCoordinator
from kafkalab.protocol.producer_state import DUPLICATE, ProducerStateManager
from kafkalab.protocol.rules import DEFAULT_RULES, Rules
from kafkalab.protocol.transactions import (
    TRANSACTION_STATE_TOPIC,
    TransactionCoordinator,
    txn_partition,
)
from kafkalab.protocol.zookeeper import DEDICATED_CONTROLLER

__all__ = ["Broker", "FetchNow", "Reconfigure", "ReplicaState", "Stop"]

# Timers that fire at the earliest waiting deadline, and the method that handles them.
_DEADLINE_TIMERS = {
    "produce_timeout": "_expire_produces",
    "fetch_wait": "_expire_fetches",
    "fetch_timeout": "_fetch_timed_out",
}
# ReplicaManager: how a failed transaction verification reaches the producer.
_VERIFICATION_ERRORS = {
    m.PRODUCER_FENCED: m.INVALID_PRODUCER_EPOCH,
    m.CONCURRENT_TRANSACTIONS: m.NOT_ENOUGH_REPLICAS,
    m.COORDINATOR_LOAD_IN_PROGRESS: m.NOT_ENOUGH_REPLICAS,
    m.COORDINATOR_NOT_AVAILABLE: m.NOT_ENOUGH_REPLICAS,
    m.NOT_COORDINATOR: m.NOT_ENOUGH_REPLICAS,
}
INTERNAL_MIN_ISR = 2  # transaction.state.log.min.isr
# Partition.handleAlterPartitionError: answers that keep the proposal pending until new
# metadata arrives, and answers that restore the committed state.
_ALTER_PARTITION_WAIT = frozenset(
    {
        m.FENCED_LEADER_EPOCH,
        m.INVALID_UPDATE_VERSION,
        m.UNKNOWN_TOPIC_OR_PARTITION,
        m.INVALID_REQUEST,
        m.NEW_LEADER_ELECTED,
    }
)
_ALTER_PARTITION_RESET = frozenset(
    {m.INELIGIBLE_REPLICA, m.OPERATION_NOT_ATTEMPTED, m.NOT_CONTROLLER}
)
READ_COMMITTED = "read_committed"

ZOOKEEPER = "zk"
UNKNOWN_LEO = -1
NEVER_MS = -(2**62)  # "never caught up": Kafka uses 0 on a wall clock; simulated time starts at 0


@dataclass(frozen=True, slots=True)
class Stop:
    """A local command: stop cleanly (controlled shutdown)."""


@dataclass(frozen=True, slots=True)
class Reconfigure:
    """A local command: a dynamic config change reached this broker (DynamicBrokerConfig, or a
    topic config change, KIP-226, 1.1); from now on it applies ``config``."""

    config: Config


@dataclass(frozen=True, slots=True)
class FetchNow:
    """A local command in stepped mode: follower, do your next round trip with the leader.
    ``max_wait_ms`` overrides replica.fetch.wait.max.ms for this one fetch (0: the leader
    answers at once, even when it has nothing new)."""

    tp: str
    max_wait_ms: int | None = None


@dataclass(slots=True)
class Remote:
    """The leader's view of one follower (kafka.cluster.Replica / ReplicaState)."""

    leo: int = UNKNOWN_LEO
    last_caught_up_ms: int = NEVER_MS
    last_fetch_leader_leo: int = UNKNOWN_LEO
    last_fetch_ms: int = NEVER_MS
    broker_epoch: int = -1  # carried by the follower's latest fetch (KRaft)
    last_sent_hw: int = -1  # the HW in the latest fetch response to this follower


@dataclass(slots=True)
class DelayedProduce:
    src: int | str
    request: m.ProduceRequest | None  # None: the broker's own write (a coordinator, a marker)
    base_offset: int
    required_offset: int  # HW that acknowledges the batch: its last offset + 1
    deadline_ms: int
    reply: Callable[[Context, str], None] | None = None  # called instead of a response


@dataclass(slots=True)
class DelayedFetch:
    src: int | str
    request: m.FetchRequest
    deadline_ms: int


@dataclass(slots=True)
class ReplicaState:
    """One broker's replica of one partition, with its leader-side and follower-side state."""

    tp: str
    log: Log
    role: str | None = None  # "leader", "follower" or None (no LeaderAndIsr yet, or offline)
    leader: int | None = None
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1
    replicas: tuple[int, ...] = ()
    remotes: dict[int, Remote] = field(default_factory=dict)
    delayed_produces: deque[DelayedProduce] = field(default_factory=deque)
    delayed_fetches: list[DelayedFetch] = field(default_factory=list)
    alter_isr_pending: bool = False
    alter_isr_inflight: tuple[int, ...] | None = None  # the ISR sent, until its answer comes
    alter_isr_target: Any = None  # where it went
    maximal_isr: tuple[int, ...] = ()  # the ISR plus a member whose join is not yet committed
    truncating: bool = False  # follower must find its truncation point before fetching
    producers: ProducerStateManager = field(default_factory=ProducerStateManager)
    inflight: int | None = None  # correlation id of the follower's outstanding request
    fetch_deadline_ms: int = 0  # when the outstanding request times out (timed mode)
    armed: dict[str, int] = field(default_factory=dict)  # timer name -> when it fires


class Broker:
    """A broker actor. ``auto_fetch`` is timed mode: the follower fetches on its own, in a loop;
    in stepped mode it only fetches when told (:class:`FetchNow`). ``rules`` are the HW,
    truncation and sequence-number rules it applies (Kafka's by default)."""

    def __init__(
        self,
        broker_id: int,
        config: Config,
        disks: dict[str, Disk],
        *,
        auto_fetch: bool,
        controller_nodes: tuple[str, ...] = (),
        clean_restart: bool = False,
        rules: Rules = DEFAULT_RULES,
    ) -> None:
        self.id = broker_id
        self.rules = rules
        self.kraft = config.controller_mode == "kraft"
        self.controller_nodes = controller_nodes  # the KRaft quorum, when there is one
        self.clean_restart = clean_restart  # the last run ended in a clean shutdown
        self.config = config
        self.auto_fetch = auto_fetch
        self.partitions = {tp: _load_replica(tp, disk) for tp, disk in disks.items()}
        self.session: int | None = None
        self.live_brokers: frozenset[int] = frozenset()
        self.shutting_down_brokers: frozenset[int] = frozenset()  # KRaft metadata
        self.live_broker_epochs: dict[int, int] = {}  # KRaft metadata
        self.correlation = 0
        # Where AlterIsr goes: the dedicated controller, or the broker ZooKeeper says won.
        self.controller_address: Any = (
            DEDICATED_CONTROLLER
            if config.controller_mode == "dedicated"
            else (controller_nodes[0] if self.kraft and controller_nodes else None)
        )
        self.controller_epoch = 0  # the highest controller epoch seen
        self.controller: Controller | None = None  # set while this broker is the controller
        self.stopping = False
        self._next_producer_id = 0
        self._early: list[tuple[Any, Any]] = []  # control requests that came before registering
        self.txn_coordinator = TransactionCoordinator(self)
        self.group_coordinator = GroupCoordinator(self)
        # Transactional produce requests waiting for the coordinator's verification (KIP-890).
        # correlation id -> (client, request, the coordinator asked; None: every broker)
        self._verifying: dict[int, tuple[Any, m.ProduceRequest, Any]] = {}
        self._handlers = {
            m.ProduceRequest: self._on_produce,
            m.FetchRequest: self._on_fetch,
            m.FetchResponse: self._on_fetch_response,
            m.OffsetsForLeaderEpochRequest: self._on_epoch_request,
            m.OffsetsForLeaderEpochResponse: self._on_epoch_response,
            m.LeaderAndIsr: self._on_leader_and_isr,
            m.UpdateMetadata: self._on_update_metadata,
            m.AlterIsrResponse: self._on_alter_isr_response,
            m.ZkSessionExpired: self._on_session_expired,
            m.ZkRegistered: self._on_registered,
            m.ZkControllerChange: self._on_controller_change,
            m.ZkElected: self._on_elected,
            m.ControlledShutdownResponse: self._on_controlled_shutdown_response,
            m.NotController: self._on_not_controller,
            m.InitProducerIdRequest: self._on_init_producer_id,
            m.MetadataRequest: self._on_metadata_request,
            m.BrokerRegistrationResponse: self._on_kraft_registered,
            m.BrokerHeartbeatResponse: self._on_heartbeat_response,
            m.AddPartitionsToTxnRequest: self.txn_coordinator.handle,
            m.AddOffsetsToTxnRequest: self.txn_coordinator.handle,
            m.EndTxnRequest: self.txn_coordinator.handle,
            m.WriteTxnMarkersResponse: self.txn_coordinator.handle,
            m.WriteTxnMarkersRequest: self._on_write_markers,
            m.AddPartitionsToTxnResponse: self._on_verified,
            m.OffsetCommitRequest: self.group_coordinator.handle,
            m.TxnOffsetCommitRequest: self.group_coordinator.handle,
            m.OffsetFetchRequest: self.group_coordinator.handle,
            m.ConsumerFetchRequest: self._on_consumer_fetch,
            m.ListOffsetsRequest: self._on_list_offsets,
            m.DeleteRecordsRequest: self._on_delete_records,
            Reconfigure: self._on_reconfigure,
            FetchNow: self._on_fetch_now,
            Stop: self._on_stop,
        }

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self, ctx: Context) -> None:
        """KafkaServer.startup (BrokerServer in KRaft): register, and start the periodic tasks."""
        if self.kraft:
            ctx.send(self.controller_address, m.BrokerRegistration(self.id, self.clean_restart))
            ctx.set_timer(self.config.broker_heartbeat_interval_ms, "kraft_heartbeat")
        else:
            ctx.send(ZOOKEEPER, m.ZkRegister(self.id))
            ctx.set_timer(self.config.zookeeper_session_timeout_ms // 3, "zk_heartbeat")
        ctx.set_timer(self.config.replica_high_watermark_checkpoint_interval_ms, "hw_checkpoint")
        if self.config.retention_bytes >= 0:  # LogManager's "kafka-log-retention" task
            ctx.set_timer(self.config.log_retention_check_interval_ms, "log_retention")
        ctx.set_timer(self._isr_check_period_ms(), "isr_expiration")

    def _apply_retention(self, ctx: Context) -> None:
        """LogManager.cleanupLogs: every replica, leader or follower, deletes its own segments
        past retention.bytes; the log start offset moves to the first segment kept."""
        config = self.config
        for r in self.partitions.values():
            if r.tp.startswith("__"):
                continue  # the internal topics keep their own retention, not modelled
            start = r.log.retention_start(config.retention_bytes, config.segment_bytes)
            if start is not None and r.log.increment_log_start_offset(start):
                ctx.emit("log_start_offset", broker=self.id, tp=r.tp, offset=start)

    def _isr_check_period_ms(self) -> int:
        """ReplicaManager's "isr-expiration" task: every replica.lag.time.max.ms / 2 since 0.10.2
        (KAFKA-4485), every replica.lag.time.max.ms before."""
        lag = self.config.replica_lag_time_max_ms
        return lag // 2 if self.config.isr_check_half_lag else lag

    def disks(self, lose_unflushed: bool) -> dict[str, Disk]:
        return {tp: r.log.disk(lose_unflushed) for tp, r in self.partitions.items()}

    def handle(self, ctx: Context, src: int | str, msg: Any) -> None:
        handler = self._handlers.get(type(msg))
        if handler is not None:
            handler(ctx, src, msg)
        elif self.controller is not None:
            self.controller.handle(ctx, src, msg)  # a request for the controller this broker runs
        elif isinstance(msg, m.AlterIsr):
            ctx.send(src, m.AlterIsrResponse(msg.tp, m.NOT_CONTROLLER, -1, -1, ()))

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        if name.startswith("controller:"):
            if self.controller is not None:
                self.controller.on_timer(ctx, name, data)
        elif name.startswith("txn_"):
            self.txn_coordinator.on_timer(ctx, name, data)
        elif name == "stop_timeout":
            self._stop_now(ctx, "controlled shutdown got no answer")
        elif name == "kraft_heartbeat":
            self._send_heartbeat(ctx)
            ctx.set_timer(self.config.broker_heartbeat_interval_ms, "kraft_heartbeat")
        elif name == "zk_heartbeat":
            if self.session is not None:
                ctx.send(ZOOKEEPER, m.ZkHeartbeat(self.id, self.session))
                if self.config.controller_mode == "zk" and self.controller_address is None:
                    ctx.send(ZOOKEEPER, m.ZkElect(self.id, self.session))  # race again
            elif not self.stopping:
                # The ZooKeeper client keeps trying to establish a session.
                ctx.send(ZOOKEEPER, m.ZkRegister(self.id))
            ctx.set_timer(self.config.zookeeper_session_timeout_ms // 3, "zk_heartbeat")
        elif name == "log_retention":
            self._apply_retention(ctx)
            ctx.set_timer(self.config.log_retention_check_interval_ms, "log_retention")
        elif name == "hw_checkpoint":
            for r in self.partitions.values():
                r.log.checkpoint_hw()
            ctx.set_timer(
                self.config.replica_high_watermark_checkpoint_interval_ms, "hw_checkpoint"
            )
        elif name == "isr_expiration":
            for r in self.partitions.values():
                if r.role == "leader":
                    self._maybe_shrink_isr(ctx, r)
            ctx.set_timer(self._isr_check_period_ms(), "isr_expiration")
        elif name in _DEADLINE_TIMERS:
            r = self.partitions[data]
            # A timer can fire late (its broker was paused): the entry it leaves is spent too.
            if r.armed.get(name, ctx.now + 1) <= ctx.now:
                del r.armed[name]
            getattr(self, _DEADLINE_TIMERS[name])(ctx, r)
        elif name == "fetch_backoff":
            r = self.partitions[data]
            if r.role == "follower" and r.inflight is None:
                self._send_fetch(ctx, r)
        elif name == "alter_isr_timeout":
            tp, leader_epoch = data
            r = self.partitions[tp]
            r.alter_isr_inflight = None  # the request timed out: the answer will not come
            if r.leader_epoch == leader_epoch:
                r.alter_isr_pending = False
                r.maximal_isr = ()

    # ---- ZooKeeper and controller ----------------------------------------------------------

    def _on_session_expired(self, ctx: Context, src: Any, msg: m.ZkSessionExpired) -> None:
        """The ZooKeeper client re-creates its session and the broker registers again."""
        if msg.session == self.session:
            self.session = None
            ctx.emit("zk_reregister", broker=self.id)
            ctx.send(ZOOKEEPER, m.ZkRegister(self.id))

    def _replay_early(self, ctx: Context) -> None:
        early, self._early = self._early, []
        for src, msg in early:
            self.handle(ctx, src, msg)

    def _on_registered(self, ctx: Context, src: Any, msg: m.ZkRegistered) -> None:
        self.session = msg.session
        self._replay_early(ctx)
        self.controller_address = msg.controller
        if msg.controller != self.id and self.controller is not None:
            self._resign(ctx, msg.controller_epoch)  # it lost /controller with its old session
        if self.config.controller_mode == "zk" and msg.controller is None:
            ctx.send(ZOOKEEPER, m.ZkElect(self.id, msg.session))  # KafkaController.startup

    # ---- KRaft: registration and heartbeats (BrokerLifecycleManager) -------------------------

    def _send_heartbeat(self, ctx: Context) -> None:
        if self.session is None:
            ctx.send(self.controller_address, m.BrokerRegistration(self.id, self.clean_restart))
        else:
            hb = m.BrokerHeartbeat(self.id, self.session, want_shutdown=self.stopping)
            ctx.send(self.controller_address, hb)

    def _on_not_controller(self, ctx: Context, src: Any, msg: m.NotController) -> None:
        """Try the active controller the node named, or else the next controller node (the
        retry waits for the next heartbeat)."""
        nodes = self.controller_nodes
        if msg.leader is not None:
            self.controller_address = msg.leader
            self._send_heartbeat(ctx)
        elif nodes:
            i = nodes.index(src) if src in nodes else -1
            self.controller_address = nodes[(i + 1) % len(nodes)]

    def _on_kraft_registered(
        self, ctx: Context, src: Any, msg: m.BrokerRegistrationResponse
    ) -> None:
        self.session = msg.broker_epoch
        self.controller_address = src
        self._replay_early(ctx)
        self._send_heartbeat(ctx)  # a fenced broker is unfenced by its first heartbeat

    def _on_heartbeat_response(
        self, ctx: Context, src: Any, msg: m.BrokerHeartbeatResponse
    ) -> None:
        if msg.error == m.STALE_BROKER_EPOCH:
            self.session = None  # the controller does not know this incarnation: register again
            self._send_heartbeat(ctx)
        elif msg.shutdown_ready and self.stopping:
            self._stop_now(ctx, "controlled shutdown done")

    def _on_controller_change(self, ctx: Context, src: Any, msg: m.ZkControllerChange) -> None:
        """The watch on /controller: race for it when it is gone, else note who holds it."""
        self.controller_address = msg.controller
        if msg.controller is None and self.session is not None and not self.stopping:
            ctx.send(ZOOKEEPER, m.ZkElect(self.id, self.session))
        elif msg.controller != self.id and self.controller is not None:
            self._resign(ctx, msg.controller_epoch)

    def _on_elected(self, ctx: Context, src: Any, msg: m.ZkElected) -> None:
        """This broker created /controller: it becomes the controller (onControllerFailover)."""
        self.controller_address = self.id
        self.controller = Controller(
            self.config,
            dict(msg.partitions),
            msg.controller_epoch,
            write_through=True,
            live=dict(msg.live),
            address=self.id,
        )
        self.controller.on_failover(ctx)

    def _resign(self, ctx: Context, current_epoch: int) -> None:
        if self.controller is not None and self.controller.active:
            self.controller.active = False
            ctx.emit(
                "controller_resigned",
                controller=self.id,
                controller_epoch=self.controller.controller_epoch,
                current_epoch=current_epoch,
            )

    def _is_stale_controller(self, ctx: Context, kind: str, controller_epoch: int) -> bool:
        """Brokers remember the highest controller epoch they have seen and reject requests
        from an older one (STALE_CONTROLLER_EPOCH): a zombie controller changes nothing."""
        if controller_epoch < self.controller_epoch:
            ctx.emit(
                "stale_controller_request",
                broker=self.id,
                request=kind,
                controller_epoch=controller_epoch,
                current_epoch=self.controller_epoch,
            )
            return True
        self.controller_epoch = controller_epoch
        return False

    def _not_for_this_incarnation(self, ctx: Context, src: Any, msg: Any) -> bool:
        """KIP-380: a control request addressed to this broker's previous incarnation (an older
        broker epoch) is rejected (STALE_BROKER_EPOCH). One that arrives before this broker has
        registered waits: KafkaServer starts processing requests only at the end of startup."""
        if not self.config.broker_epoch or msg.broker_epoch < 0:
            return False
        if self.session is None:
            self._early.append((src, msg))
            return True
        if msg.broker_epoch < self.session:
            ctx.emit(
                "stale_broker_epoch",
                broker=self.id,
                request=type(msg).__name__,
                broker_epoch=msg.broker_epoch,
                current=self.session,
            )
            return True
        return False

    def _on_update_metadata(self, ctx: Context, src: Any, msg: m.UpdateMetadata) -> None:
        if self._not_for_this_incarnation(ctx, src, msg):
            return
        if self._is_stale_controller(ctx, "UpdateMetadata", msg.controller_epoch):
            return
        self.live_brokers = frozenset(msg.live_brokers)
        self.shutting_down_brokers = frozenset(msg.shutting_down)
        self.live_broker_epochs = dict(msg.live_broker_epochs)
        if msg.controller is not None:
            self.controller_address = msg.controller

    def _on_leader_and_isr(self, ctx: Context, src: Any, msg: m.LeaderAndIsr) -> None:
        """ReplicaManager.becomeLeaderOrFollower: requests from an older controller epoch, or
        with an older leader epoch than the replica already has, are ignored."""
        if self._not_for_this_incarnation(ctx, src, msg):
            return
        if self._is_stale_controller(ctx, "LeaderAndIsr", msg.controller_epoch):
            return
        r = self.partitions.get(msg.tp)
        if r is None:
            return
        if msg.leader_epoch < r.leader_epoch:
            ctx.emit("stale_leader_and_isr", broker=self.id, leader_epoch=msg.leader_epoch)
            return
        if msg.leader_epoch == r.leader_epoch and r.role is not None:
            if msg.partition_epoch > r.partition_epoch:
                self._update_partition(ctx, r, msg)
            return
        if msg.leader == self.id:
            self._make_leader(ctx, r, msg)
        else:
            self._make_follower(ctx, r, msg)

    def _update_partition(self, ctx: Context, r: ReplicaState, msg: m.LeaderAndIsr) -> None:
        """Same leader epoch, newer partition epoch: only the ISR changed (in KRaft an ISR
        change does not bump the leader epoch; Partition.makeLeader compares partition
        epochs)."""
        r.isr = msg.isr
        r.partition_epoch = msg.partition_epoch
        r.alter_isr_pending = False  # the committed state replaces any pending proposal
        r.maximal_isr = ()
        if r.role == "leader":
            ctx.emit("isr_applied", broker=self.id, tp=r.tp, isr=list(msg.isr))
            self._maybe_increment_hw(ctx, r)
            self._complete_produces(ctx, r)

    def _make_leader(self, ctx: Context, r: ReplicaState, msg: m.LeaderAndIsr) -> None:
        """Partition.makeLeader: record the new epoch at the LEO at once, and reset the view of
        every follower (:meth:`_reset_remotes`). The HW starts from this replica's own, possibly
        stale, HW."""
        was_leader = r.role == "leader"
        new_epoch = msg.leader_epoch > r.leader_epoch
        self._set_partition_state(r, msg)
        r.role = "leader"
        if self.config.leader_epoch_on_election:  # else with the first append (before 2.0.1)
            r.log.assign_epoch(msg.leader_epoch, r.log.leo)
        r.truncating = False
        r.inflight = None
        if not was_leader or new_epoch:
            self._reset_remotes(ctx, r, msg, new_leader=not was_leader)
        r.alter_isr_pending = False  # the committed state replaces any pending proposal
        r.maximal_isr = ()
        ctx.emit(
            "became_leader",
            broker=self.id,
            tp=r.tp,
            controller_epoch=msg.controller_epoch,
            leader_epoch=msg.leader_epoch,
            isr=list(msg.isr),
            leo=r.log.leo,
            hw=r.log.hw,
        )
        self._maybe_increment_hw(ctx, r)
        self._complete_produces(ctx, r)
        if r.tp.startswith(TRANSACTION_STATE_TOPIC):
            self.txn_coordinator.load(ctx, r)

    def _reset_remotes(
        self, ctx: Context, r: ReplicaState, msg: m.LeaderAndIsr, *, new_leader: bool
    ) -> None:
        """Replica.resetReplicaState, for every new leader epoch (since 0.10.2, KAFKA-4485), not
        only when this broker newly leads: a follower in the new ISR gets a fresh lag window
        (caught up now), one outside it counts as never caught up, so it holds the HW back
        only once it has caught up again. A newly elected leader knows no follower's LEO
        until each fetches; a re-elected one keeps them. Under the pre-0.9 rule
        (``lag_time_from_caught_up`` off) the lag clock is the time of the last fetch, which a
        new leader starts at now."""
        legacy = not self.config.lag_time_from_caught_up
        remotes: dict[int, Remote] = {}
        for rid in msg.replicas:
            if rid == self.id:
                continue
            old = r.remotes.get(rid)
            in_sync = rid in msg.isr
            remote = Remote() if new_leader or old is None else old
            remote.last_caught_up_ms = ctx.now if in_sync else NEVER_MS
            remote.last_fetch_ms = ctx.now if in_sync or legacy else NEVER_MS
            remote.last_fetch_leader_leo = UNKNOWN_LEO if new_leader else r.log.leo
            remotes[rid] = remote
        r.remotes = remotes

    def _make_follower(self, ctx: Context, r: ReplicaState, msg: m.LeaderAndIsr) -> None:
        """Partition.makeFollower and ReplicaManager.makeFollowers. Before leader epochs (0.11) the
        follower truncates to its HW at once; with them it first asks the leader where the epoch
        it holds ends (OffsetsForLeaderEpoch)."""
        same_leader = r.role == "follower" and r.leader == msg.leader
        self._fail_pending(ctx, r, m.NOT_LEADER_OR_FOLLOWER)
        self.txn_coordinator.unload(r.tp)
        self._set_partition_state(r, msg)
        r.role = "follower" if msg.leader is not None else None
        r.remotes = {}
        r.alter_isr_inflight = None
        r.alter_isr_pending = False
        r.maximal_isr = ()
        r.inflight = None
        ctx.emit(
            "became_follower",
            broker=self.id,
            tp=r.tp,
            controller_epoch=msg.controller_epoch,
            leader=msg.leader,
            leader_epoch=msg.leader_epoch,
        )
        if self.config.leader_epochs and r.log.latest_epoch != UNDEFINED_EPOCH:
            # Since 3.x a new leader epoch restarts the fetcher with truncation, leader changed
            # or not (Partition.makeFollower returns isNewLeaderEpoch).
            r.truncating = True
        elif not same_leader:
            # ReplicaManager.makeFollowers (0.10) truncates to the HW only for partitions whose
            # leader changed; the others are skipped.
            self._truncate(ctx, r, r.log.hw, "truncate_to_hw")
            r.truncating = False
        if r.role == "follower" and self._auto(r):
            self._send_fetch(ctx, r)

    def _auto(self, r: ReplicaState) -> bool:
        """Whether the follower fetches on its own: always in timed mode, and for the internal
        topics in stepped mode too (a lesson steps the data partition by hand, not them)."""
        return self.auto_fetch or r.tp.startswith("__")

    def _min_isr(self, r: ReplicaState) -> int:
        """min.insync.replicas for this partition: __transaction_state uses its own, 2
        (transaction.state.log.min.isr, TransactionStateManager.transactionTopicConfigs),
        capped by its replication factor; __consumer_offsets has no such override
        (GroupMetadataManager.offsetsTopicConfigs), so it uses the broker's."""
        if r.tp.startswith(TRANSACTION_STATE_TOPIC):
            return min(INTERNAL_MIN_ISR, len(r.replicas))
        return self.config.min_insync_replicas

    def _set_partition_state(self, r: ReplicaState, msg: m.LeaderAndIsr) -> None:
        r.leader = msg.leader
        r.leader_epoch = msg.leader_epoch
        r.isr = msg.isr
        r.partition_epoch = msg.partition_epoch
        r.replicas = msg.replicas

    # ---- client requests ---------------------------------------------------------------------

    def _on_init_producer_id(self, ctx: Context, src: Any, msg: m.InitProducerIdRequest) -> None:
        """InitProducerId: an idempotent producer gets a new producer id from any broker; a
        transactional one asks its transaction coordinator."""
        if msg.transactional_id:
            self.txn_coordinator.handle(ctx, src, msg)
        else:
            ctx.send(src, m.InitProducerIdResponse(self.new_producer_id(), 0))

    def new_producer_id(self) -> int:
        """A producer id unique in the cluster (here from this broker's own block of ids, as
        the controller hands out blocks in KIP-730)."""
        self._next_producer_id += 1
        return self.id * 1_000_000 + self._next_producer_id

    def known_brokers(self) -> list[int]:
        """The brokers this one knows to be alive (itself included)."""
        return sorted(self.live_brokers | {self.id})

    def _on_metadata_request(self, ctx: Context, src: Any, msg: m.MetadataRequest) -> None:
        """What this broker's metadata cache says about the partitions it holds."""
        leaders = tuple(
            (tp, r.leader) for tp, r in sorted(self.partitions.items()) if r.leader is not None
        )
        ctx.send(src, m.MetadataResponse(leaders))

    # ---- controlled shutdown -------------------------------------------------------------------

    def _on_stop(self, ctx: Context, src: Any, cmd: Stop) -> None:
        """KafkaServer.controlledShutdown: ask the controller to move leaderships away first,
        then stop. Without an answer (or with controlled.shutdown.enable off) it stops anyway."""
        if self.stopping:
            return
        self.stopping = True
        if not self.config.controlled_shutdown_enable or self.session is None:
            self._stop_now(ctx, "stopped without controlled shutdown")
            return
        ctx.set_timer(self.config.request_timeout_ms, "stop_timeout")
        if self.kraft:
            self._send_heartbeat(ctx)  # wantShutDown: the controller moves leaderships first
            return
        target = self.controller_address
        request = m.ControlledShutdownRequest(self.id, self.session)
        if target == self.id and self.controller is not None:
            self.controller.handle(ctx, self.id, request)
        else:
            ctx.send(target, request)

    def _on_controlled_shutdown_response(
        self, ctx: Context, src: Any, msg: m.ControlledShutdownResponse
    ) -> None:
        if self.stopping:
            self._stop_now(ctx, "controlled shutdown done")

    def _stop_now(self, ctx: Context, why: str) -> None:
        """A clean stop flushes every log and closes the ZooKeeper session, so the controller
        learns at once instead of after the session timeout."""
        for r in self.partitions.values():
            r.log.flush()
        if self.session is not None and not self.kraft:
            ctx.send(ZOOKEEPER, m.ZkClose(self.id, self.session))
        ctx.stop_process(why, clean=True)

    # ---- produce (leader) ------------------------------------------------------------------

    def _on_produce(
        self, ctx: Context, src: Any, req: m.ProduceRequest, verified: bool = False
    ) -> None:
        """Partition.appendRecordsToLeader, then ReplicaManager's produce purgatory."""
        r = self.partitions[req.tp]

        def reply(error: str, base_offset: int = -1) -> None:
            if req.acks != 0:
                ctx.send(src, m.ProduceResponse(req.tp, req.correlation_id, error, base_offset))

        if r.role != "leader":
            reply(m.NOT_LEADER_OR_FOLLOWER)
            return
        if req.acks == -1 and len(r.isr) < self._min_isr(r):
            reply(m.NOT_ENOUGH_REPLICAS)
            return
        if req.transactional_id and not verified and self._needs_verification(r, req):
            self._verify(ctx, src, req)
            return
        appended = self._append_client_batch(ctx, src, r, req)
        if appended is None:
            return
        first, last = appended
        self._complete_fetches(ctx, r)
        self._maybe_increment_hw(ctx, r)
        if req.acks == -1 and r.log.hw > last and len(r.isr) >= self._min_isr(r):
            reply(m.NONE, first)  # a duplicate of records already committed
        elif req.acks == -1:
            deadline = ctx.now + req.timeout_ms
            r.delayed_produces.append(DelayedProduce(src, req, first, last + 1, deadline))
            self._arm(ctx, r, "produce_timeout", deadline)
            self._complete_produces(ctx, r)
        else:
            reply(m.NONE, first)

    def _append_client_batch(
        self, ctx: Context, src: Any, r: ReplicaState, req: m.ProduceRequest
    ) -> tuple[int, int] | None:
        """Append a producer's batch; an idempotent batch is checked first (ProducerAppendInfo):
        a duplicate is not appended again, and its original offsets are acknowledged."""
        if req.producer_id < 0:
            first, last = r.log.append_as_leader(req.values, r.leader_epoch)
        else:
            if (
                not self.config.kip360
                and req.base_sequence != 0
                and req.producer_id not in r.producers.producers
            ):
                self._reject(ctx, src, req, m.UNKNOWN_PRODUCER_ID)  # checkSequence before 2.5
                return None
            last_seq = req.base_sequence + len(req.values) - 1
            verdict, original = r.producers.check(
                req.producer_id,
                req.producer_epoch,
                req.base_sequence,
                last_seq,
                self.rules.sequence_verdict,
            )
            if verdict == DUPLICATE and original is not None:
                ctx.emit(
                    "duplicate",
                    broker=self.id,
                    tp=r.tp,
                    producer_id=req.producer_id,
                    first=original.first_offset,
                    last=original.last_offset,
                )
                return original.first_offset, original.last_offset
            if verdict != "APPEND":
                self._reject(ctx, src, req, verdict)
                return None
            producer = (req.producer_id, req.producer_epoch, req.base_sequence)
            transactional = bool(req.transactional_id)
            first, last = r.log.append_as_leader(
                req.values, r.leader_epoch, producer, transactional
            )
            r.producers.observe(r.log.records[first : last + 1])
        ctx.emit(
            "append", broker=self.id, tp=r.tp, first=first, last=last, leader_epoch=r.leader_epoch
        )
        return first, last

    def _complete_produces(self, ctx: Context, r: ReplicaState) -> None:
        """Partition.checkEnoughReplicasReachOffset for the waiting acks=all requests. They wait
        in append order, so their required offsets increase: the ones the HW has passed (or all
        of them, once this replica is no longer leader) are at the front."""
        queue = r.delayed_produces
        while queue:
            p = queue[0]
            error = self._produce_outcome(r, p)
            if error is None:
                return
            queue.popleft()
            self._answer_produce(ctx, r, p, error, p.base_offset)

    def _answer_produce(
        self, ctx: Context, r: ReplicaState, p: DelayedProduce, error: str, base_offset: int = -1
    ) -> None:
        if p.reply is not None:
            p.reply(ctx, error)
        elif p.request is not None:
            resp = m.ProduceResponse(r.tp, p.request.correlation_id, error, base_offset)
            ctx.send(p.src, resp)

    def append_internal(
        self,
        ctx: Context,
        tp: str,
        values: tuple[str, ...],
        reply: Callable[[Context, str], None],
        *,
        transactional: tuple[int, int] | None = None,
        marker: tuple[str, int, int, int] | None = None,
    ) -> None:
        """The broker's own acks=all write (ReplicaManager.appendRecords with requiredAcks -1):
        a coordinator's state record, an offset commit, or a transaction ``marker`` (control,
        producer id, producer epoch). ``reply(ctx, error)`` runs once it is committed or
        fails."""
        r = self.partitions.get(tp)
        if r is None or r.role != "leader":
            reply(ctx, m.NOT_LEADER_OR_FOLLOWER)
            return
        if len(r.isr) < self._min_isr(r):
            reply(ctx, m.NOT_ENOUGH_REPLICAS)
            return
        if marker is not None:
            control, pid, epoch, coordinator_epoch = marker
            first = last = r.log.append_marker(
                control, r.leader_epoch, pid, epoch, coordinator_epoch
            )
        elif transactional is not None:
            pid, epoch = transactional
            first, last = r.log.append_as_leader(values, r.leader_epoch, (pid, epoch, -1), True)
        else:
            first, last = r.log.append_as_leader(values, r.leader_epoch)
        r.producers.observe(r.log.records[first : last + 1])
        ctx.emit(
            "append", broker=self.id, tp=r.tp, first=first, last=last, leader_epoch=r.leader_epoch
        )
        deadline = ctx.now + self.config.request_timeout_ms
        r.delayed_produces.append(DelayedProduce(self.id, None, first, last + 1, deadline, reply))
        self._arm(ctx, r, "produce_timeout", deadline)
        self._complete_fetches(ctx, r)
        self._maybe_increment_hw(ctx, r)
        self._complete_produces(ctx, r)

    def _produce_outcome(self, r: ReplicaState, p: DelayedProduce) -> str | None:
        if r.role != "leader":
            return m.NOT_LEADER_OR_FOLLOWER
        if r.log.hw < p.required_offset:
            return None
        if len(r.isr) >= self._min_isr(r):
            return m.NONE
        return m.NOT_ENOUGH_REPLICAS_AFTER_APPEND

    def _expire_produces(self, ctx: Context, r: ReplicaState) -> None:
        # Every request carries the producer's request.timeout.ms, so deadlines follow append
        # order too.
        queue = r.delayed_produces
        while queue and queue[0].deadline_ms <= ctx.now:
            p = queue.popleft()
            self._answer_produce(ctx, r, p, m.REQUEST_TIMED_OUT)
        if queue:
            self._arm(ctx, r, "produce_timeout", queue[0].deadline_ms)

    def _fetch_timed_out(self, ctx: Context, r: ReplicaState) -> None:
        if r.role != "follower" or r.inflight is None:
            return
        if r.fetch_deadline_ms <= ctx.now:
            r.inflight = None
            self._send_fetch(ctx, r)
        else:
            self._arm(ctx, r, "fetch_timeout", r.fetch_deadline_ms)

    def _arm(self, ctx: Context, r: ReplicaState, name: str, due_ms: int) -> None:
        """One timer per purpose instead of one per request: a timer already armed for an
        earlier time re-arms itself for what is still waiting when it fires."""
        armed = r.armed.get(name)
        if armed is not None and armed <= due_ms:
            return
        r.armed[name] = due_ms
        ctx.set_timer(due_ms - ctx.now, name, r.tp)

    def _fail_pending(self, ctx: Context, r: ReplicaState, error: str) -> None:
        for p in r.delayed_produces:
            self._answer_produce(ctx, r, p, error)
        r.delayed_produces.clear()
        for f in r.delayed_fetches:
            ctx.send(f.src, m.FetchResponse(r.tp, f.request.correlation_id, error))
        r.delayed_fetches = []

    # ---- transactions on a data partition (leader) ---------------------------------------------

    def _needs_verification(self, r: ReplicaState, req: m.ProduceRequest) -> bool:
        """KIP-890: the first transactional write of a producer to a partition is checked with
        the coordinator (transaction.partition.verification.enable, 3.6); with transaction
        version 2 (4.0) the partition is added to the transaction that way too."""
        config = self.config
        if not (
            config.transaction_partition_verification_enable or config.transaction_version >= 2
        ):
            return False
        return req.producer_id not in r.producers.ongoing

    def _verify(self, ctx: Context, src: Any, req: m.ProduceRequest) -> None:
        self.correlation += 1
        hosted = self.partitions.get(txn_partition(req.transactional_id))
        coordinator = None if hosted is None else hosted.leader
        self._verifying[self.correlation] = (src, req, coordinator)
        check = m.AddPartitionsToTxnRequest(
            req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            (req.tp,),
            verify_only=self.config.transaction_version < 2,
            correlation_id=self.correlation,
        )
        if hosted is not None and coordinator is None:
            unavailable = m.AddPartitionsToTxnResponse(
                req.transactional_id, self.correlation, m.COORDINATOR_NOT_AVAILABLE
            )
            self._on_verified(ctx, self.id, unavailable)
            return
        # AddPartitionsToTxnManager asks the leader of the id's __transaction_state partition,
        # as this broker's metadata names it. A broker without a replica of that partition has
        # no metadata for it in the simulator: it asks every broker, and only the coordinator
        # answers with more than NOT_COORDINATOR.
        targets = [coordinator] if hosted is not None else self.known_brokers()
        for b in targets:
            ctx.send(b, check)

    def _on_verified(self, ctx: Context, src: Any, resp: m.AddPartitionsToTxnResponse) -> None:
        """The coordinator's answer, as ReplicaManager hands it to the producer: PRODUCER_FENCED
        becomes INVALID_PRODUCER_EPOCH, which producers expect here (AddPartitionsToTxnManager,
        3.6, KAFKA-14561); coordinator errors a client might not retry become the retriable
        NOT_ENOUGH_REPLICAS."""
        pending = self._verifying.get(resp.correlation_id)
        if pending is None:
            return
        if resp.error == m.NOT_COORDINATOR and src != pending[2]:
            return  # another broker's answer to the fallback broadcast
        client, req, _ = self._verifying.pop(resp.correlation_id)
        if resp.error != m.NONE:
            error = _VERIFICATION_ERRORS.get(resp.error, resp.error)
            self._reject(ctx, client, req, error)
            return
        self._on_produce(ctx, client, req, verified=True)

    def _reject(self, ctx: Context, src: Any, req: m.ProduceRequest, error: str) -> None:
        """Refuse a producer's batch without appending it."""
        ctx.emit(
            "produce_rejected",
            broker=self.id,
            tp=req.tp,
            error=error,
            producer_id=req.producer_id,
            sequence=req.base_sequence,
        )
        if req.acks != 0:
            ctx.send(src, m.ProduceResponse(req.tp, req.correlation_id, error))

    def _on_write_markers(self, ctx: Context, src: Any, req: m.WriteTxnMarkersRequest) -> None:
        """KafkaApis.handleWriteTxnMarkersRequest: the leader appends the COMMIT or ABORT
        control record with acks=all, closing the producer's transaction on this partition
        (a marker from an older producer epoch, or an older coordinator epoch, is refused).
        Other brokers stay silent."""
        r = self.partitions.get(req.tp)
        if r is None or r.role != "leader":
            return

        def answer(c: Context, error: str) -> None:
            c.send(
                src,
                m.WriteTxnMarkersResponse(
                    req.tp, req.producer_id, req.control, error, req.transactional_id
                ),
            )

        error = r.producers.check_marker(req.producer_id, req.producer_epoch, req.coordinator_epoch)
        if error is not None:
            ctx.emit(
                "marker_rejected",
                broker=self.id,
                tp=req.tp,
                control=req.control,
                producer_id=req.producer_id,
                coordinator_epoch=req.coordinator_epoch,
                error=error,
            )
            answer(ctx, error)
            return
        first = r.producers.ongoing.get(req.producer_id)
        ctx.emit(
            "marker",
            broker=self.id,
            tp=req.tp,
            control=req.control,
            producer_id=req.producer_id,
            producer_epoch=req.producer_epoch,
            offset=r.log.leo,
            first_offset=first,
        )
        marker = (req.control, req.producer_id, req.producer_epoch, req.coordinator_epoch)
        self.append_internal(ctx, req.tp, (), answer, marker=marker)

    def _on_consumer_fetch(self, ctx: Context, src: Any, req: m.ConsumerFetchRequest) -> None:
        """A consumer's fetch (ReplicaManager.fetchMessages with FetchIsolation HIGH_WATERMARK
        or TXN_COMMITTED): up to the HW, or up to the LSO with the aborted transactions in that
        range, which the consumer uses to skip aborted records."""
        r = self.partitions.get(req.tp)
        if r is None or r.role != "leader":
            ctx.send(
                src, m.ConsumerFetchResponse(req.tp, req.correlation_id, m.NOT_LEADER_OR_FOLLOWER)
            )
            return
        hw = r.log.hw
        lso = r.producers.last_stable_offset(hw)
        end = lso if req.isolation == READ_COMMITTED else hw
        if not r.log.log_start_offset <= req.fetch_offset <= r.log.leo:
            ctx.send(
                src, m.ConsumerFetchResponse(req.tp, req.correlation_id, m.OFFSET_OUT_OF_RANGE)
            )
            return
        records = tuple(r.log.records[req.fetch_offset : end])
        aborted = ()
        if req.isolation == READ_COMMITTED:
            aborted = r.producers.aborted_between(req.fetch_offset, end)
        ctx.send(
            src,
            m.ConsumerFetchResponse(req.tp, req.correlation_id, m.NONE, records, hw, lso, aborted),
        )

    def _on_list_offsets(self, ctx: Context, src: Any, req: m.ListOffsetsRequest) -> None:
        """Partition.fetchOffsetForTimestamp for EARLIEST (the log start offset) and LATEST
        (the HW, or the LSO for read_committed: what that consumer could read next)."""
        r = self.partitions.get(req.tp)
        if r is None or r.role != "leader":
            reply = m.ListOffsetsResponse(req.tp, req.correlation_id, m.NOT_LEADER_OR_FOLLOWER)
        elif req.timestamp == m.EARLIEST:
            reply = m.ListOffsetsResponse(
                req.tp, req.correlation_id, m.NONE, r.log.log_start_offset
            )
        else:
            hw = r.log.hw
            end = r.producers.last_stable_offset(hw) if req.isolation == READ_COMMITTED else hw
            reply = m.ListOffsetsResponse(req.tp, req.correlation_id, m.NONE, end)
        ctx.send(src, reply)

    def _on_delete_records(self, ctx: Context, src: Any, req: m.DeleteRecordsRequest) -> None:
        """Partition.deleteRecordsOnLeader (DeleteRecords, KIP-107, 0.11): offset -1 means the
        HW; an offset above the HW is OFFSET_OUT_OF_RANGE. The log start offset only moves
        forward; followers learn it from their next fetch response."""
        r = self.partitions.get(req.tp)
        if r is None or r.role != "leader":
            error, offset = m.NOT_LEADER_OR_FOLLOWER, req.offset
        else:
            offset = r.log.hw if req.offset == -1 else req.offset
            error = m.OFFSET_OUT_OF_RANGE if not 0 <= offset <= r.log.hw else m.NONE
            if error == m.NONE and r.log.increment_log_start_offset(offset):
                ctx.emit("log_start_offset", broker=self.id, tp=r.tp, offset=offset)
        ctx.emit("delete_records", broker=self.id, tp=req.tp, offset=offset, error=error)
        low = r.log.log_start_offset if r is not None else -1
        ctx.send(src, m.DeleteRecordsResponse(req.tp, error, low))

    def _on_reconfigure(self, ctx: Context, src: Any, cmd: Reconfigure) -> None:
        self.config = cmd.config
        ctx.emit("reconfigured", broker=self.id)

    # ---- fetch (leader) --------------------------------------------------------------------

    def _on_fetch(self, ctx: Context, src: Any, req: m.FetchRequest) -> None:
        """ReplicaManager.fetchMessages: check the epoch (KIP-320) and the offset, read the log and
        the HW, apply the follower's fetch offset (Partition.updateFollowerFetchState), and park
        a read that found nothing in the fetch purgatory.

        Since 0.8.2 (KAFKA-1430) the read comes *before* the fetch offset is applied, so a
        response sent at once carries the HW as it was before this fetch; before, the offset
        was applied first (``hw_read_before_fetch_update`` off). A parked fetch is answered by
        DelayedFetch.onComplete, which reads again: it carries the HW this very fetch raised.
        In stepped mode nothing else can happen while a fetch waits, so its wait ends within
        the step and the clock does not move."""
        r = self.partitions.get(req.tp)
        if r is None:  # a partition this broker does not host
            ctx.send(src, m.FetchResponse(req.tp, req.correlation_id, m.NOT_LEADER_OR_FOLLOWER))
            return
        error = self._check_fetch(r, req.current_leader_epoch)
        if error is None and req.fetch_offset > r.log.leo:
            error = m.OFFSET_OUT_OF_RANGE
        if error is not None:
            ctx.send(src, m.FetchResponse(r.tp, req.correlation_id, error, leader_leo=r.log.leo))
            return
        read_first = self.config.hw_read_before_fetch_update
        if read_first:
            records, hw = _read(r, req), r.log.hw
        self._update_follower_fetch_state(
            ctx, r, req.replica_id, req.fetch_offset, req.broker_epoch
        )
        if not read_first:
            records, hw = _read(r, req), r.log.hw
        if not records and req.max_wait_ms > 0 and not self._needs_hw_update(r, req, hw):
            deadline = ctx.now + req.max_wait_ms if self._auto(r) else ctx.now
            r.delayed_fetches.append(DelayedFetch(src, req, deadline))
            self._arm(ctx, r, "fetch_wait", deadline)
            return
        self._send_fetch_response(ctx, src, r, req, records, hw)

    def _needs_hw_update(self, r: ReplicaState, req: m.FetchRequest, hw: int) -> bool:
        """2.4 to 2.5 (KAFKA-8443, ``follower_fetch_completes_on_hw_change``): a follower whose
        last answer carried an older HW is answered now (ReplicaManager followerNeedsHwUpdate,
        DelayedFetch case H)."""
        if not self.config.follower_fetch_completes_on_hw_change:
            return False
        remote = r.remotes.get(req.replica_id)
        return remote is not None and remote.last_sent_hw < hw

    def _send_fetch_response(
        self,
        ctx: Context,
        src: Any,
        r: ReplicaState,
        req: m.FetchRequest,
        records: tuple[Any, ...],
        hw: int,
    ) -> None:
        remote = r.remotes.get(req.replica_id)
        if remote is not None:
            remote.last_sent_hw = hw
        ctx.send(src, _fetch_response(r, req, records, hw))

    def _check_fetch(self, r: ReplicaState, current_leader_epoch: int | None) -> str | None:
        """Partition.checkCurrentLeaderEpoch (KIP-320) and the leadership check."""
        if current_leader_epoch is not None and self.config.kip320:
            if current_leader_epoch < r.leader_epoch:
                return m.FENCED_LEADER_EPOCH
            if current_leader_epoch > r.leader_epoch:
                return m.UNKNOWN_LEADER_EPOCH
        if r.role != "leader":
            return m.NOT_LEADER_OR_FOLLOWER
        return None

    def _complete_fetches(self, ctx: Context, r: ReplicaState) -> None:
        """DelayedFetch.tryComplete: new data completes every waiting fetch."""
        self._answer_fetches_where(ctx, r, lambda f: True)

    def _complete_fetches_behind(self, ctx: Context, r: ReplicaState, hw: int) -> None:
        """DelayedFetch case H (2.4 to 2.5): a waiting follower fetch completes once the HW is
        ahead of what that follower was last told."""

        def behind(f: DelayedFetch) -> bool:
            remote = r.remotes.get(f.request.replica_id)
            return remote is not None and remote.last_sent_hw < hw

        self._answer_fetches_where(ctx, r, behind)

    def _expire_fetches(self, ctx: Context, r: ReplicaState) -> None:
        self._answer_fetches_where(ctx, r, lambda f: f.deadline_ms <= ctx.now)
        if r.delayed_fetches:
            self._arm(ctx, r, "fetch_wait", min(f.deadline_ms for f in r.delayed_fetches))

    def _answer_fetches_where(
        self, ctx: Context, r: ReplicaState, done: Callable[[DelayedFetch], bool]
    ) -> None:
        """Answer the waiting fetches ``done`` accepts, in arrival order; the rest wait on."""
        waiting, r.delayed_fetches = r.delayed_fetches, []
        for f in waiting:
            if done(f):
                self._answer_delayed_fetch(ctx, r, f)
            else:
                r.delayed_fetches.append(f)

    def _answer_delayed_fetch(self, ctx: Context, r: ReplicaState, f: DelayedFetch) -> None:
        """DelayedFetch.onComplete reads again (readFromPurgatory) without updating the
        follower's state, which was applied when the request arrived."""
        req = f.request
        self._send_fetch_response(ctx, f.src, r, req, _read(r, req), r.log.hw)

    def _update_follower_fetch_state(
        self,
        ctx: Context,
        r: ReplicaState,
        follower: int,
        fetch_offset: int,
        broker_epoch: int = -1,
    ) -> None:
        """Replica.updateFetchState, then Partition.maybeExpandIsr and maybeIncrementLeaderHW.

        lastCaughtUpTime: now if the fetch reaches the leader's LEO; else the time of the previous
        fetch if this one reaches the LEO the leader had then; else unchanged."""
        remote = r.remotes.get(follower)
        if remote is None:
            return
        leader_leo = r.log.leo
        if fetch_offset >= leader_leo:
            remote.last_caught_up_ms = max(remote.last_caught_up_ms, ctx.now)
        elif fetch_offset >= remote.last_fetch_leader_leo:
            remote.last_caught_up_ms = max(remote.last_caught_up_ms, remote.last_fetch_ms)
        remote.last_fetch_leader_leo = leader_leo
        remote.last_fetch_ms = ctx.now
        remote.leo = fetch_offset
        remote.broker_epoch = broker_epoch
        self._maybe_expand_isr(ctx, r, follower, remote)
        self._maybe_increment_hw(ctx, r)

    # ---- HW and ISR (leader) ---------------------------------------------------------------

    def _caught_up(self, r: ReplicaState, remote: Remote, now: int) -> bool:
        """Replica.isCaughtUp: at the leader's LEO, or caught up with it within the lag time.
        Before 0.9 (KAFKA-1546) Partition.getOutOfSyncReplicas instead dropped a follower that
        had not fetched for replica.lag.time.max.ms ("stuck") or was more than
        replica.lag.max.messages behind ("slow"); the message rule can be switched on alone."""
        config = self.config
        lag_messages = config.replica_lag_max_messages
        known = remote.leo != UNKNOWN_LEO  # the message rule skips a follower not heard from
        if lag_messages is not None and known and r.log.leo - remote.leo > lag_messages:
            return False
        if not config.lag_time_from_caught_up:
            return now - remote.last_fetch_ms <= config.replica_lag_time_max_ms
        return remote.leo == r.log.leo or now - remote.last_caught_up_ms <= (
            config.replica_lag_time_max_ms
        )

    def _maybe_increment_hw(self, ctx: Context, r: ReplicaState) -> None:
        """Partition.maybeIncrementLeaderHW: the HW is the smallest LEO of the leader and every
        member of the ISR, and since 0.10.2 (KAFKA-4485, ``hw_includes_caught_up_followers``) of
        any caught-up follower outside it, which is about to join. Since 3.6 (KAFKA-15021,
        ``kafka_15021``) such a follower counts only if it may join
        (:meth:`_isr_eligible`). While an ISR change is in flight the wider ISR counts (the
        maximal ISR of KIP-497), so a joining follower can never be elected without what was
        acknowledged. Since 3.7 (KAFKA-15583) the HW does not move while the ISR is below
        min(min.insync.replicas, replication factor)."""
        if r.role != "leader":
            return
        config = self.config
        isr = r.maximal_isr or r.isr
        if config.hw_freeze_under_min_isr:
            effective_min_isr = min(self._min_isr(r), len(r.replicas))
            if len(r.isr) < effective_min_isr:
                return
        waited_for = {self.id, *isr}
        if config.hw_includes_caught_up_followers:
            check_eligible = config.kafka_15021
            for rid, remote in r.remotes.items():
                if (
                    rid not in waited_for
                    and self._caught_up(r, remote, ctx.now)
                    and (not check_eligible or self._isr_eligible(rid, remote))
                ):
                    waited_for.add(rid)
        remote_leos = {rid: remote.leo for rid, remote in r.remotes.items()}
        old_hw = r.log.hw
        new_hw = self.rules.leader_hw(old_hw, r.log.leo, waited_for, remote_leos)
        if new_hw != old_hw:
            self._set_hw(ctx, r, new_hw)
        if new_hw > old_hw:
            self._complete_produces(ctx, r)
            if config.follower_fetch_completes_on_hw_change:
                self._complete_fetches_behind(ctx, r, new_hw)

    def _isr_eligible(self, follower: int, remote: Remote) -> bool:
        """Partition.isReplicaIsrEligible. With ZooKeeper: the broker is alive. In KRaft: it is
        not fenced and not in controlled shutdown (KIP-841, 3.3), and the broker epoch of its
        latest fetch is the one the metadata holds (KAFKA-14617, 3.5), so a fetch state left by
        an earlier incarnation of a bounced broker does not count."""
        if follower not in self.live_brokers:
            return False
        if not self.kraft:
            return True
        if follower in self.shutting_down_brokers:
            return False
        cached = self.live_broker_epochs.get(follower, -1)
        return remote.broker_epoch in (-1, cached)

    def _set_hw(self, ctx: Context, r: ReplicaState, hw: int) -> None:
        ctx.emit("hw", broker=self.id, tp=r.tp, old=r.log.hw, new=hw)
        r.log.hw = hw

    def _maybe_expand_isr(
        self, ctx: Context, r: ReplicaState, follower: int, remote: Remote
    ) -> None:
        """Partition.maybeExpandIsr / isFollowerInSync: a follower outside the ISR joins once its
        LEO reaches the HW and the start of the leader's current epoch (KAFKA-7128)."""
        if follower in r.isr or r.alter_isr_pending or not self._isr_eligible(follower, remote):
            return
        epoch_start = r.log.epoch_start_offset(r.leader_epoch) or 0
        if remote.leo >= r.log.hw and remote.leo >= epoch_start:
            self._alter_isr(ctx, r, r.isr + (follower,), "expand")

    def _maybe_shrink_isr(self, ctx: Context, r: ReplicaState) -> None:
        """Partition.maybeShrinkIsr (every replica.lag.time.max.ms / 2): drop every follower
        that is not caught up."""
        if r.alter_isr_pending:
            return
        out = [
            rid
            for rid in r.isr
            if rid != self.id and not self._caught_up(r, r.remotes[rid], ctx.now)
        ]
        if out:
            self._alter_isr(ctx, r, tuple(i for i in r.isr if i not in out), "shrink")

    def _alter_isr(self, ctx: Context, r: ReplicaState, isr: tuple[int, ...], why: str) -> None:
        """Partition.alterIsr (AlterIsr/AlterPartition since 2.7, KIP-497): the request goes to
        the controller and, while it is pending, the HW counts the wider, maximal ISR. Before
        2.7 (``alter_isr`` off) Partition.updateIsr wrote the znode itself, through ZooKeeper
        in the ZooKeeper era (the dedicated controller stands beside ZooKeeper and takes the
        write), and only the written ISR counted. One change per partition is in flight at a
        time (DefaultAlterPartitionManager.submit): another attempt before its answer is not
        made (OPERATION_NOT_ATTEMPTED), and the partition stays at its committed state."""
        if r.alter_isr_inflight is not None:
            return
        r.alter_isr_pending = True
        if self.config.alter_isr:
            r.maximal_isr = r.isr + tuple(i for i in isr if i not in r.isr)
            target = self.controller_address
        else:
            zk_mode = self.config.controller_mode == "zk"
            target = ZOOKEEPER if zk_mode else self.controller_address
        ctx.emit("alter_isr", broker=self.id, tp=r.tp, isr=list(isr), reason=why)
        self._send_alter_isr(ctx, r, isr, target)
        ctx.set_timer(self.config.request_timeout_ms, "alter_isr_timeout", (r.tp, r.leader_epoch))

    def _send_alter_isr(
        self, ctx: Context, r: ReplicaState, isr: tuple[int, ...], target: Any
    ) -> None:
        r.alter_isr_inflight, r.alter_isr_target = isr, target
        ctx.send(target, m.AlterIsr(r.tp, self.id, r.leader_epoch, r.partition_epoch, isr))

    def _on_alter_isr_response(self, ctx: Context, src: Any, msg: m.AlterIsrResponse) -> None:
        """Partition.handleAlterPartitionUpdate and handleAlterPartitionError. An answer to a
        proposal that new partition state has already replaced is ignored. Otherwise: when the
        controller says the proposal was not applied (INELIGIBLE_REPLICA,
        OPERATION_NOT_ATTEMPTED) the committed state is restored; when the leader's view is
        out of date (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, UNKNOWN_TOPIC_OR_PARTITION,
        INVALID_REQUEST, NEW_LEADER_ELECTED) the proposal stays pending, unretried, until new
        metadata replaces it; an error it does not know is retried at once with the same
        proposal. (NOT_CONTROLLER, which Kafka's controller channel handles by finding the new
        controller, frees the proposal to be made again.)"""
        r = self.partitions[msg.tp]
        proposed, r.alter_isr_inflight = r.alter_isr_inflight, None
        if not r.alter_isr_pending or proposed is None:
            return
        if msg.error != m.NONE:
            ctx.emit("alter_isr_failed", broker=self.id, tp=r.tp, error=msg.error)
        if msg.error in _ALTER_PARTITION_WAIT:
            return
        if msg.error not in _ALTER_PARTITION_RESET and msg.error != m.NONE:
            if r.role == "leader":
                self._send_alter_isr(ctx, r, proposed, r.alter_isr_target)
            return
        r.alter_isr_pending = False
        r.maximal_isr = ()
        if msg.error != m.NONE or r.role != "leader" or msg.leader_epoch != r.leader_epoch:
            return
        r.isr = msg.isr
        r.partition_epoch = msg.partition_epoch
        ctx.emit("isr_applied", broker=self.id, tp=r.tp, isr=list(msg.isr))
        self._maybe_increment_hw(ctx, r)
        self._complete_produces(ctx, r)

    # ---- OffsetsForLeaderEpoch (leader) ----------------------------------------------------

    def _on_epoch_request(
        self, ctx: Context, src: Any, req: m.OffsetsForLeaderEpochRequest
    ) -> None:
        """ReplicaManager.lastOffsetForLeaderEpoch -> LeaderEpochFileCache.endOffsetFor. Before
        KIP-279 the answer carries no epoch."""
        r = self.partitions.get(req.tp)
        if r is None:  # ReplicaManager.lastOffsetForLeaderEpoch: a partition it does not host
            ctx.send(
                src,
                m.OffsetsForLeaderEpochResponse(
                    req.tp,
                    req.correlation_id,
                    m.NOT_LEADER_OR_FOLLOWER,
                    UNDEFINED_EPOCH,
                    UNDEFINED_OFFSET,
                ),
            )
            return
        error = self._check_fetch(r, req.current_leader_epoch)
        if error is not None:
            reply = m.OffsetsForLeaderEpochResponse(
                r.tp, req.correlation_id, error, UNDEFINED_EPOCH, UNDEFINED_OFFSET
            )
        elif not self.config.leader_epoch_on_election and (
            not r.log.epochs or req.leader_epoch < r.log.epochs[0][0]
        ):
            # Before 2.0.1 (KAFKA-7415) an epoch older than every cached one was undefined.
            reply = m.OffsetsForLeaderEpochResponse(
                r.tp, req.correlation_id, m.NONE, UNDEFINED_EPOCH, UNDEFINED_OFFSET
            )
        else:
            epoch, end_offset = self.rules.end_offset_for(
                tuple(r.log.epochs), r.log.leo, req.leader_epoch
            )
            if not self.config.kip279:
                epoch = UNDEFINED_EPOCH
            reply = m.OffsetsForLeaderEpochResponse(
                r.tp, req.correlation_id, m.NONE, epoch, end_offset
            )
        ctx.send(src, reply)

    # ---- follower ----------------------------------------------------------------------------

    def _on_fetch_now(self, ctx: Context, src: Any, cmd: FetchNow) -> None:
        r = self.partitions[cmd.tp]
        if r.role == "follower":
            r.inflight = None  # an outstanding request whose response was lost has timed out
            self._send_fetch(ctx, r, cmd.max_wait_ms)

    def _send_fetch(self, ctx: Context, r: ReplicaState, max_wait_ms: int | None = None) -> None:
        """AbstractFetcherThread: truncate first when needed, else fetch from the LEO."""
        assert r.leader is not None
        self.correlation += 1
        r.inflight = self.correlation
        current_epoch = r.leader_epoch if self.config.kip320 else None
        if r.truncating:
            req: Any = m.OffsetsForLeaderEpochRequest(
                r.tp, self.id, r.log.latest_epoch, current_epoch, self.correlation
            )
        else:
            wait = self.config.replica_fetch_wait_max_ms if max_wait_ms is None else max_wait_ms
            req = m.FetchRequest(
                r.tp,
                self.id,
                r.log.leo,
                current_epoch,
                wait,
                self.correlation,
                self.config.replica_fetch_max_bytes,
                self.session if self.kraft and self.session is not None else -1,
                self.config.replica_fetch_response_max_bytes,
            )
        ctx.send(r.leader, req)
        if self._auto(r):
            # The fetcher's request timeout: a lost request or response does not stall it forever.
            r.fetch_deadline_ms = ctx.now + self.config.request_timeout_ms
            self._arm(ctx, r, "fetch_timeout", r.fetch_deadline_ms)

    def _accept_response(self, r: ReplicaState, correlation_id: int) -> bool:
        if r.role != "follower" or r.inflight != correlation_id:
            return False
        r.inflight = None
        return True

    def _on_fetch_response(self, ctx: Context, src: Any, resp: m.FetchResponse) -> None:
        """ReplicaFetcherThread.processPartitionData: append, then follower HW =
        min(leader's HW, own LEO); the HW of a follower only moves forward."""
        r = self.partitions[resp.tp]
        if not self._accept_response(r, resp.correlation_id):
            return
        if resp.error == m.NONE:
            if resp.records and resp.records[0].offset == r.log.leo:
                r.log.append_replicated(resp.records)
                r.producers.observe(resp.records)  # followers rebuild producer state as they go
                ctx.emit(
                    "replicate",
                    broker=self.id,
                    tp=r.tp,
                    first=resp.records[0].offset,
                    last=resp.records[-1].offset,
                )
            new_hw = self.rules.follower_hw(resp.hw, r.log.leo)
            if new_hw != r.log.hw:  # assigned as is: a new leader's stale HW can be lower
                self._set_hw(ctx, r, new_hw)
            if r.log.increment_log_start_offset(resp.log_start_offset):
                ctx.emit("log_start_offset", broker=self.id, tp=r.tp, offset=resp.log_start_offset)
            self._next_fetch(ctx, r, 0)
        elif resp.error == m.OFFSET_OUT_OF_RANGE:
            self._handle_offset_out_of_range(ctx, r, resp.leader_leo)
        else:
            ctx.emit("fetch_error", broker=self.id, tp=r.tp, error=resp.error)
            self._next_fetch(ctx, r, self.config.replica_fetch_backoff_ms)

    def _handle_offset_out_of_range(self, ctx: Context, r: ReplicaState, leader_leo: int) -> None:
        """ReplicaFetcherThread.handleOffsetOutOfRange: a follower ahead of the leader truncates to
        the leader's LEO (the pre-0.11 path that loses acknowledged records)."""
        if r.log.leo > leader_leo:
            if not self.config.unclean_leader_election_enable and self.config.out_of_range_halts:
                # 0.8.2 to 2.0.0: "Exiting because log truncation is not allowed" (System.exit).
                ctx.stop_process(
                    f"broker {self.id} is ahead of the leader ({r.log.leo} > {leader_leo}) and "
                    "unclean leader election is disabled, so it may not truncate: it halts"
                )
                return
            self._truncate(ctx, r, leader_leo, "offset_out_of_range")
        self._next_fetch(ctx, r, 0)

    def _on_epoch_response(
        self, ctx: Context, src: Any, resp: m.OffsetsForLeaderEpochResponse
    ) -> None:
        """AbstractFetcherThread.maybeTruncate / getOffsetTruncationState.

        KIP-101: truncate to min(leader's end offset, own LEO); an undefined answer falls back to
        the HW. KIP-279: if the leader answered with an epoch this replica does not end at the same
        place, truncate to where this replica's copy of that epoch ends and ask again."""
        r = self.partitions[resp.tp]
        if not self._accept_response(r, resp.correlation_id):
            return
        if resp.error != m.NONE:
            ctx.emit("fetch_error", broker=self.id, tp=r.tp, error=resp.error)
            self._next_fetch(ctx, r, self.config.replica_fetch_backoff_ms)
            return
        target, done = self.rules.truncation_offset(
            resp.leader_epoch, resp.end_offset, tuple(r.log.epochs), r.log.leo, r.log.hw
        )
        self._truncate(ctx, r, target, "leader_epoch")
        r.truncating = not done or not r.log.epochs
        if not r.log.epochs:
            r.truncating = False
        self._next_fetch(ctx, r, 0)

    def _next_fetch(self, ctx: Context, r: ReplicaState, backoff_ms: int) -> None:
        if not self._auto(r) or r.role != "follower":
            return
        if backoff_ms:
            ctx.set_timer(backoff_ms, "fetch_backoff", r.tp)
        else:
            self._send_fetch(ctx, r)

    def _truncate(self, ctx: Context, r: ReplicaState, offset: int, reason: str) -> None:
        old_leo, old_hw = r.log.leo, r.log.hw
        if offset >= old_leo:
            return
        removed = [rec.value for rec in r.log.records[offset:]]
        r.log.truncate_to(offset)
        r.producers = ProducerStateManager.rebuild(r.log.records)
        ctx.emit(
            "truncate",
            broker=self.id,
            tp=r.tp,
            to=offset,
            old_leo=old_leo,
            old_hw=old_hw,
            removed=removed,
            reason=reason,
        )


def _load_replica(tp: str, disk: Disk) -> ReplicaState:
    """A replica as a starting broker loads it: its log, and the producer state rebuilt from
    that log."""
    log = Log(disk)
    return ReplicaState(tp, log, producers=ProducerStateManager.rebuild(log.records))


def _fetch_response(
    r: ReplicaState, req: m.FetchRequest, records: tuple[Any, ...], hw: int
) -> m.FetchResponse:
    """A successful fetch response: the records, the HW, and the leader's log start offset,
    which the follower follows (ReplicaFetcherThread.processPartitionData)."""
    return m.FetchResponse(
        r.tp, req.correlation_id, m.NONE, records, hw, r.log.leo, r.log.log_start_offset
    )


def _read(r: ReplicaState, req: m.FetchRequest) -> tuple[Any, ...]:
    """UnifiedLog.read(maxLength, minOneMessage = true): the records from the fetch offset that
    fit in the request's byte budget, and always at least one, so a follower makes progress
    whatever the limits (every record weighs RECORD_BYTES). ReplicaManager.readFromLocalLog caps
    each partition's replica.fetch.max.bytes by what is left of the whole response's
    replica.fetch.response.max.bytes (KIP-74); a fetch here asks for one partition, so the
    smaller of the two applies."""
    count = max(1, min(req.max_bytes, req.response_max_bytes) // RECORD_BYTES)
    return tuple(r.log.records[req.fetch_offset : req.fetch_offset + count])
