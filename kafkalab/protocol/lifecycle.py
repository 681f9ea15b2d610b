"""A broker's membership of the cluster: its ZooKeeper session and the race for /controller
(KafkaServer, KafkaController), or its KRaft registration and heartbeats
(BrokerLifecycleManager); the checks on control requests (controller epoch, broker epoch); and
controlled shutdown.

Each rule names the Kafka function it mirrors (apache/kafka, core/src/main/scala/kafka/...).
"""

from __future__ import annotations

from typing import Any

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.commands import Stop
from kafkalab.protocol.controller import Controller
from kafkalab.protocol.host import BrokerHost
from kafkalab.protocol.zookeeper import ZOOKEEPER

__all__ = ["BrokerLifecycle"]


class BrokerLifecycle:
    """The lifecycle of one broker. It writes the broker's ``session`` (the ZooKeeper session,
    or the KRaft broker epoch) and ``controller_address``, and runs the :class:`Controller`
    while this broker holds /controller (ZooKeeper mode)."""

    def __init__(self, host: BrokerHost) -> None:
        self.host = host
        self.controller_epoch = 0  # the highest controller epoch seen
        self.controller: Controller | None = None  # set while this broker is the controller
        self.stopping = False
        self._early: list[tuple[Any, Any]] = []  # control requests that came before registering

    def start(self, ctx: Context) -> None:
        """KafkaServer.startup (BrokerServer in KRaft): register, and start the heartbeats."""
        host, config = self.host, self.host.config
        if host.kraft:
            ctx.send(host.controller_address, m.BrokerRegistration(host.id, host.clean_restart))
            ctx.set_timer(config.broker_heartbeat_interval_ms, "kraft_heartbeat")
        else:
            ctx.send(ZOOKEEPER, m.ZkRegister(host.id))
            ctx.set_timer(config.zookeeper_session_timeout_ms // 3, "zk_heartbeat")

    def accepts(self, ctx: Context, src: Any, msg: Any) -> bool:
        """Whether a control request (LeaderAndIsr, UpdateMetadata) is for this incarnation
        and from the current controller."""
        if self._not_for_this_incarnation(ctx, src, msg):
            return False
        return not self._is_stale_controller(ctx, type(msg).__name__, msg.controller_epoch)

    # ---- timers ------------------------------------------------------------------------------

    def on_zk_heartbeat_timer(self, ctx: Context, name: str, data: Any) -> None:
        host = self.host
        if host.session is not None:
            ctx.send(ZOOKEEPER, m.ZkHeartbeat(host.id, host.session))
            if host.config.controller_mode == "zk" and host.controller_address is None:
                ctx.send(ZOOKEEPER, m.ZkElect(host.id, host.session))  # race again
        elif not self.stopping:
            # The ZooKeeper client keeps trying to establish a session.
            ctx.send(ZOOKEEPER, m.ZkRegister(host.id))
        ctx.set_timer(host.config.zookeeper_session_timeout_ms // 3, "zk_heartbeat")

    def on_kraft_heartbeat_timer(self, ctx: Context, name: str, data: Any) -> None:
        self._send_heartbeat(ctx)
        ctx.set_timer(self.host.config.broker_heartbeat_interval_ms, "kraft_heartbeat")

    def on_stop_timer(self, ctx: Context, name: str, data: Any) -> None:
        self._stop_now(ctx, "controlled shutdown got no answer")

    def on_controller_timer(self, ctx: Context, name: str, data: Any) -> None:
        if self.controller is not None:
            self.controller.on_timer(ctx, name, data)

    # ---- ZooKeeper and controller ----------------------------------------------------------

    def on_session_expired(self, ctx: Context, src: Any, msg: m.ZkSessionExpired) -> None:
        """The ZooKeeper client re-creates its session and the broker registers again."""
        if msg.session == self.host.session:
            self.host.session = None
            ctx.emit("zk_reregister", broker=self.host.id)
            ctx.send(ZOOKEEPER, m.ZkRegister(self.host.id))

    def _replay_early(self, ctx: Context) -> None:
        early, self._early = self._early, []
        for src, msg in early:
            self.host.handle(ctx, src, msg)

    def on_registered(self, ctx: Context, src: Any, msg: m.ZkRegistered) -> None:
        self.host.session = msg.session
        self._replay_early(ctx)
        self.host.controller_address = msg.controller
        if msg.controller != self.host.id and self.controller is not None:
            self._resign(ctx, msg.controller_epoch)  # it lost /controller with its old session
        if self.host.config.controller_mode == "zk" and msg.controller is None:
            ctx.send(ZOOKEEPER, m.ZkElect(self.host.id, msg.session))  # KafkaController.startup

    # ---- KRaft: registration and heartbeats (BrokerLifecycleManager) -------------------------

    def _send_heartbeat(self, ctx: Context) -> None:
        if self.host.session is None:
            ctx.send(
                self.host.controller_address,
                m.BrokerRegistration(self.host.id, self.host.clean_restart),
            )
        else:
            hb = m.BrokerHeartbeat(self.host.id, self.host.session, want_shutdown=self.stopping)
            ctx.send(self.host.controller_address, hb)

    def on_not_controller(self, ctx: Context, src: Any, msg: m.NotController) -> None:
        """Try the active controller the node named, or else the next controller node (the
        retry waits for the next heartbeat)."""
        nodes = self.host.controller_nodes
        if msg.leader is not None:
            self.host.controller_address = msg.leader
            self._send_heartbeat(ctx)
        elif nodes:
            i = nodes.index(src) if src in nodes else -1
            self.host.controller_address = nodes[(i + 1) % len(nodes)]

    def on_kraft_registered(
        self, ctx: Context, src: Any, msg: m.BrokerRegistrationResponse
    ) -> None:
        self.host.session = msg.broker_epoch
        self.host.controller_address = src
        self._replay_early(ctx)
        self._send_heartbeat(ctx)  # a fenced broker is unfenced by its first heartbeat

    def on_heartbeat_response(self, ctx: Context, src: Any, msg: m.BrokerHeartbeatResponse) -> None:
        if msg.error == m.STALE_BROKER_EPOCH:
            self.host.session = (
                None  # the controller does not know this incarnation: register again
            )
            self._send_heartbeat(ctx)
        elif msg.shutdown_ready and self.stopping:
            self._stop_now(ctx, "controlled shutdown done")

    def on_controller_change(self, ctx: Context, src: Any, msg: m.ZkControllerChange) -> None:
        """The watch on /controller: race for it when it is gone, else note who holds it."""
        self.host.controller_address = msg.controller
        if msg.controller is None and self.host.session is not None and not self.stopping:
            ctx.send(ZOOKEEPER, m.ZkElect(self.host.id, self.host.session))
        elif msg.controller != self.host.id and self.controller is not None:
            self._resign(ctx, msg.controller_epoch)

    def on_elected(self, ctx: Context, src: Any, msg: m.ZkElected) -> None:
        """This broker created /controller: it becomes the controller (onControllerFailover)."""
        self.host.controller_address = self.host.id
        self.controller = Controller(
            self.host.config,
            dict(msg.partitions),
            msg.controller_epoch,
            write_through=True,
            live=dict(msg.live),
            address=self.host.id,
        )
        self.controller.on_failover(ctx)

    def _resign(self, ctx: Context, current_epoch: int) -> None:
        if self.controller is not None and self.controller.active:
            self.controller.active = False
            ctx.emit(
                "controller_resigned",
                controller=self.host.id,
                controller_epoch=self.controller.controller_epoch,
                current_epoch=current_epoch,
            )

    def _is_stale_controller(self, ctx: Context, kind: str, controller_epoch: int) -> bool:
        """Brokers remember the highest controller epoch they have seen and reject requests
        from an older one (STALE_CONTROLLER_EPOCH): a zombie controller changes nothing."""
        if controller_epoch < self.controller_epoch:
            ctx.emit(
                "stale_controller_request",
                broker=self.host.id,
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
        if not self.host.config.broker_epoch or msg.broker_epoch < 0:
            return False
        if self.host.session is None:
            self._early.append((src, msg))
            return True
        if msg.broker_epoch < self.host.session:
            ctx.emit(
                "stale_broker_epoch",
                broker=self.host.id,
                request=type(msg).__name__,
                broker_epoch=msg.broker_epoch,
                current=self.host.session,
            )
            return True
        return False

    # ---- controlled shutdown -------------------------------------------------------------------

    def on_stop(self, ctx: Context, src: Any, cmd: Stop) -> None:
        """KafkaServer.controlledShutdown: ask the controller to move leaderships away first,
        then stop. Without an answer (or with controlled.shutdown.enable off) it stops anyway."""
        if self.stopping:
            return
        self.stopping = True
        if not self.host.config.controlled_shutdown_enable or self.host.session is None:
            self._stop_now(ctx, "stopped without controlled shutdown")
            return
        ctx.set_timer(self.host.config.request_timeout_ms, "stop_timeout")
        if self.host.kraft:
            self._send_heartbeat(ctx)  # wantShutDown: the controller moves leaderships first
            return
        target = self.host.controller_address
        request = m.ControlledShutdownRequest(self.host.id, self.host.session)
        if target == self.host.id and self.controller is not None:
            self.controller.handle(ctx, self.host.id, request)
        else:
            ctx.send(target, request)

    def on_controlled_shutdown_response(
        self, ctx: Context, src: Any, msg: m.ControlledShutdownResponse
    ) -> None:
        if self.stopping:
            self._stop_now(ctx, "controlled shutdown done")

    def _stop_now(self, ctx: Context, why: str) -> None:
        """A clean stop flushes every log and closes the ZooKeeper session, so the controller
        learns at once instead of after the session timeout."""
        for r in self.host.partitions.values():
            r.log.flush()
        if self.host.session is not None and not self.host.kraft:
            ctx.send(ZOOKEEPER, m.ZkClose(self.host.id, self.host.session))
        ctx.stop_process(why, clean=True)
