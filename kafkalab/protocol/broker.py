"""A Kafka broker: the actor that puts together its lifecycle (:mod:`.lifecycle`), its replica
manager (:mod:`.replica_manager`, :mod:`.partition`, :mod:`.purgatory`), its replica fetcher
(:mod:`.fetcher`) and the coordinators it hosts (:mod:`.offsets`, :mod:`.transactions`).

The broker owns what those parts share (see :class:`~kafkalab.protocol.host.BrokerHost`) and
routes each message, and each timer, to the part that handles it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalab.config import Config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import ConnectionClosed, Context
from kafkalab.protocol.commands import FetchNow, Reconfigure, Stop
from kafkalab.protocol.controller import AUTO_REBALANCE_TIMER, Controller
from kafkalab.protocol.coordinator import Coordinator
from kafkalab.protocol.fetcher import ReplicaFetcher
from kafkalab.protocol.lifecycle import BrokerLifecycle
from kafkalab.protocol.log import Disk
from kafkalab.protocol.offsets import GroupCoordinator
from kafkalab.protocol.partition import Partition
from kafkalab.protocol.purgatory import Purgatory
from kafkalab.protocol.replica import NEVER_MS, Remote, ReplicaState, load_replica, min_isr
from kafkalab.protocol.replica_manager import ReplicaManager
from kafkalab.protocol.rules import DEFAULT_RULES, Rules
from kafkalab.protocol.transactions import TransactionCoordinator
from kafkalab.protocol.zookeeper import DEDICATED_CONTROLLER

__all__ = ["NEVER_MS", "Broker", "FetchNow", "Reconfigure", "ReplicaState", "Stop"]

Handler = Callable[[Context, Any, Any], None]  # (ctx, src, message); (ctx, name, data) for timers


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
        incarnation: int = 0,
        rules: Rules = DEFAULT_RULES,
    ) -> None:
        self.id = broker_id
        self.rules = rules
        self.kraft = config.controller_mode == "kraft"
        self.controller_nodes = controller_nodes  # the KRaft quorum, when there is one
        self.clean_restart = clean_restart  # the last run ended in a clean shutdown
        self.incarnation = incarnation  # which run of this broker it is (0 the first)
        self.config = config
        self.auto_fetch = auto_fetch
        floor = config.hw_floor_at_log_start
        self.partitions = {
            tp: load_replica(tp, disk, hw_floor_at_log_start=floor) for tp, disk in disks.items()
        }
        self.session: int | None = None
        self.live_brokers: frozenset[int] = frozenset()
        self.shutting_down_brokers: frozenset[int] = frozenset()  # KRaft metadata
        self.live_broker_epochs: dict[int, int] = {}  # KRaft metadata
        # The metadata cache clients read: tp -> (leader, leader epoch). Empty at start, as in
        # Kafka, until the controller's UpdateMetadata (ZooKeeper mode) or the applied metadata
        # log (KRaft) fills it.
        self.metadata_cache: dict[str, tuple[int | None, int]] = {}
        self._correlation = 0
        # Where AlterIsr goes: the dedicated controller, or the broker ZooKeeper says won.
        self.controller_address: Any = (
            DEDICATED_CONTROLLER
            if config.controller_mode == "dedicated"
            else (controller_nodes[0] if self.kraft and controller_nodes else None)
        )
        self._next_producer_id = 0
        self.txn_coordinator: Coordinator = TransactionCoordinator(self)
        self.group_coordinator: Coordinator = GroupCoordinator(self)
        coordinators = (self.txn_coordinator, self.group_coordinator)
        self.lifecycle = BrokerLifecycle(self)
        self.fetcher = ReplicaFetcher(self)
        self.purgatory = Purgatory(self)
        self.partition = Partition(self, self.purgatory, self.fetcher, coordinators)
        self.replica_manager = ReplicaManager(self, self.partition, self.purgatory)
        self._handlers = self._message_handlers(coordinators)
        self._timers = self._timer_handlers(coordinators)

    def _message_handlers(self, coordinators: tuple[Coordinator, ...]) -> dict[type, Handler]:
        life, replicas, partition, fetcher = (
            self.lifecycle,
            self.replica_manager,
            self.partition,
            self.fetcher,
        )
        handlers: dict[type, Handler] = {
            m.ProduceRequest: replicas.on_produce,
            m.FetchRequest: partition.on_fetch,
            m.FetchResponse: fetcher.on_fetch_response,
            m.OffsetsForLeaderEpochRequest: partition.on_epoch_request,
            m.OffsetsForLeaderEpochResponse: fetcher.on_epoch_response,
            m.LeaderAndIsr: self._on_leader_and_isr,
            m.UpdateMetadata: self._on_update_metadata,
            m.AlterIsrResponse: partition.on_alter_isr_response,
            ConnectionClosed: fetcher.on_connection_closed,
            m.ZkSessionExpired: life.on_session_expired,
            m.ZkRegistered: life.on_registered,
            m.ZkRegistrationRefused: life.on_registration_refused,
            m.ZkControllerChange: life.on_controller_change,
            m.ZkElected: life.on_elected,
            m.ControlledShutdownResponse: life.on_controlled_shutdown_response,
            m.NotController: life.on_not_controller,
            m.InitProducerIdRequest: self._on_init_producer_id,
            m.MetadataRequest: self._on_metadata_request,
            m.BrokerRegistrationResponse: life.on_kraft_registered,
            m.BrokerHeartbeatResponse: life.on_heartbeat_response,
            m.WriteTxnMarkersRequest: replicas.on_write_markers,
            m.AddPartitionsToTxnResponse: replicas.on_verified,
            m.ConsumerFetchRequest: replicas.on_consumer_fetch,
            m.ListOffsetsRequest: replicas.on_list_offsets,
            m.DeleteRecordsRequest: replicas.on_delete_records,
            Reconfigure: self._on_reconfigure,
            FetchNow: fetcher.on_fetch_now,
            Stop: life.on_stop,
        }
        for coordinator in coordinators:
            handlers.update(dict.fromkeys(coordinator.requests, coordinator.handle))
        return handlers

    def _timer_handlers(self, coordinators: tuple[Coordinator, ...]) -> dict[str, Handler]:
        life, replicas, partition = self.lifecycle, self.replica_manager, self.partition
        timers: dict[str, Handler] = {
            AUTO_REBALANCE_TIMER: life.on_controller_timer,
            "stop_timeout": life.on_stop_timer,
            "shutdown_retry": life.on_shutdown_retry_timer,
            "kraft_heartbeat": life.on_kraft_heartbeat_timer,
            "kraft_heartbeat_timeout": life.on_kraft_heartbeat_timeout,
            "kraft_channel_retry": life.on_kraft_channel_retry,
            "zk_heartbeat": life.on_zk_heartbeat_timer,
            "zk_register_retry": life.on_register_retry_timer,
            "log_retention": replicas.on_log_retention_timer,
            "hw_checkpoint": replicas.on_hw_checkpoint_timer,
            "isr_expiration": replicas.on_isr_expiration_timer,
            "isr_change_propagation": replicas.on_isr_change_propagation_timer,
            # Timers that fire at the earliest waiting deadline of one partition.
            "produce_timeout": self._deadline(self.purgatory.expire_produces),
            "fetch_wait": self._deadline(self.purgatory.expire_fetches),
            "delete_timeout": self._deadline(self.purgatory.expire_deletes),
            "fetch_timeout": self._deadline(self.fetcher.fetch_timed_out),
            "fetch_backoff": self.fetcher.on_backoff_timer,
            "alter_isr_timeout": partition.on_alter_isr_timeout,
        }
        for coordinator in coordinators:
            timers.update(dict.fromkeys(coordinator.timers, coordinator.on_timer))
        return timers

    def _deadline(self, expire: Callable[[Context, ReplicaState], None]) -> Handler:
        """A per-partition deadline timer (:func:`~kafkalab.protocol.replica.arm`)."""

        def fire(ctx: Context, name: str, tp: str) -> None:
            r = self.partitions[tp]
            # A timer can fire late (its broker was paused): the entry it leaves is spent too.
            if r.armed.get(name, ctx.now + 1) <= ctx.now:
                del r.armed[name]
            expire(ctx, r)

        return fire

    # ---- the actor -------------------------------------------------------------------------

    def start(self, ctx: Context) -> None:
        """KafkaServer.startup (BrokerServer in KRaft): register, and start the periodic tasks."""
        self.lifecycle.start(ctx)
        self.replica_manager.start(ctx)

    def handle(self, ctx: Context, src: int | str, msg: Any) -> None:
        handler = self._handlers.get(type(msg))
        if handler is not None:
            handler(ctx, src, msg)
        elif self.lifecycle.controller is not None:
            # A request for the controller this broker runs.
            self.lifecycle.controller.handle(ctx, src, msg)
        elif isinstance(msg, m.AlterIsr):
            ctx.send(src, m.AlterIsrResponse(msg.tp, m.NOT_CONTROLLER, -1, -1, ()))

    def awaits_answer_from(self, peer: Any) -> bool:
        """Whether a request of this broker's replica fetcher waits for ``peer``'s answer (the
        network tells it when that connection breaks)."""
        return self.fetcher.awaits_answer_from(peer)

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        handler = self._timers.get(name)
        if handler is not None:
            handler(ctx, name, data)

    def disks(self, lose_unflushed: bool) -> dict[str, Disk]:
        return {tp: r.log.disk(lose_unflushed) for tp, r in self.partitions.items()}

    @property
    def controller(self) -> Controller | None:
        """The controller this broker runs while it holds /controller (ZooKeeper mode)."""
        return self.lifecycle.controller

    # ---- what the parts share (BrokerHost, CoordinatorHost) --------------------------------

    def next_correlation(self) -> int:
        self._correlation += 1
        return self._correlation

    def known_brokers(self) -> list[int]:
        """The brokers this one knows to be alive (itself included)."""
        return sorted(self.live_brokers | {self.id})

    def new_producer_id(self) -> int:
        """A producer id unique in the cluster (here from this broker's own block of ids, as
        the controller hands out blocks in KIP-730)."""
        self._next_producer_id += 1
        return self.id * 1_000_000 + self._next_producer_id

    def led_replica(self, tp: str) -> ReplicaState | None:
        r = self.partitions.get(tp)
        return r if r is not None and r.role == "leader" else None

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
        """See :meth:`ReplicaManager.append_internal`."""
        self.replica_manager.append_internal(
            ctx, tp, values, reply, transactional=transactional, marker=marker
        )

    # ---- the rules tests and lessons ask about ---------------------------------------------

    def _min_isr(self, r: ReplicaState) -> int:
        return min_isr(self.config, r)

    def _caught_up(self, r: ReplicaState, remote: Remote, now: int) -> bool:
        return self.partition.caught_up(r, remote, now)

    # ---- metadata and client requests -------------------------------------------------------

    def _on_update_metadata(self, ctx: Context, src: Any, msg: m.UpdateMetadata) -> None:
        if not self.lifecycle.accepts(ctx, src, msg):
            return
        self.live_brokers = frozenset(msg.live_brokers)
        self.shutting_down_brokers = frozenset(msg.shutting_down)
        self.live_broker_epochs = dict(msg.live_broker_epochs)
        for tp, leader, leader_epoch, _isr in msg.partitions:
            self.metadata_cache[tp] = (leader, leader_epoch)
        if msg.controller is not None and msg.controller != self.controller_address:
            self.controller_address = msg.controller
            self.lifecycle.controller_moved(ctx)
        self.lifecycle.applied(msg.metadata_offset)

    def _on_leader_and_isr(self, ctx: Context, src: Any, msg: m.LeaderAndIsr) -> None:
        if self.lifecycle.accepts(ctx, src, msg):
            self.lifecycle.applied(msg.metadata_offset)
            if self.kraft:
                # A KRaft broker's cache is its metadata image: the partition record this
                # LeaderAndIsr stands for is applied to it too. In ZooKeeper mode LeaderAndIsr
                # leaves the cache alone; only UpdateMetadata changes it.
                self.metadata_cache[msg.tp] = (msg.leader, msg.leader_epoch)
            self.replica_manager.become_leader_or_follower(ctx, msg)

    def _on_init_producer_id(self, ctx: Context, src: Any, msg: m.InitProducerIdRequest) -> None:
        """InitProducerId: an idempotent producer gets a new producer id from any broker; a
        transactional one asks its transaction coordinator."""
        if msg.transactional_id:
            self.txn_coordinator.handle(ctx, src, msg)
        else:
            ctx.send(src, m.InitProducerIdResponse(self.new_producer_id(), 0))

    def _on_metadata_request(self, ctx: Context, src: Any, msg: m.MetadataRequest) -> None:
        ctx.send(src, m.MetadataResponse(self.metadata_leaders()))

    def metadata_leaders(self) -> tuple[tuple[str, int], ...]:
        """What this broker answers a Metadata request with: each partition's leader as its
        metadata cache holds it (KafkaApis.handleTopicMetadataRequest reads the cache, never
        the replicas' own state)."""
        return tuple(
            (tp, leader)
            for tp, (leader, _) in sorted(self.metadata_cache.items())
            if leader is not None
        )

    def _on_reconfigure(self, ctx: Context, src: Any, cmd: Reconfigure) -> None:
        self.config = cmd.config
        ctx.emit("reconfigured", broker=self.id)
