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
from kafkalab.protocol.host import CONTROLLER_CHANNEL_RETRY_MS, BrokerHost
from kafkalab.protocol.zookeeper import ZOOKEEPER

__all__ = ["REGISTRATION_CONFLICT_SHUTDOWN", "BrokerLifecycle"]

# KRaft (BrokerServer.shutdown, KafkaBroker.shutdown()): how long a stopping broker waits for the
# controller to let it go before it stops anyway.
KRAFT_CONTROLLED_SHUTDOWN_TIMEOUT_MS = 300000
# BrokerLifecycleManager: after the first "not yet" to a heartbeat that asks to shut down, the
# next heartbeat goes after 50 ms instead of a whole heartbeat interval.
KRAFT_FIRST_PENDING_SHUTDOWN_HEARTBEAT_MS = 50
# BrokerLifecycleManager.resendExponentialBackoff: after a heartbeat or registration that got
# no answer, the next goes 100 ms later, doubling with each failure up to
# broker.session.timeout.ms (Kafka adds 2 % jitter; kafkalab leaves it out).
KRAFT_RESEND_BACKOFF_MS = 100
# KafkaServer.startup: registering in ZooKeeper failed (NODEEXISTS, the znode of the broker's
# previous run), a fatal error: the broker shuts down. A supervisor may start it again.
REGISTRATION_CONFLICT_SHUTDOWN = (
    "start-up aborted: /brokers/ids holds this broker's previous run, whose session lives"
)


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
        # 0.8: waiting for the previous run's /brokers/ids znode to go before registering again.
        self._waiting_for_old_session = False
        # Controlled shutdown: attempts left (ZooKeeper mode), the attempt under way, the
        # controller it went to and whether its answer is awaited; KRaft: whether a "not yet"
        # has come back.
        self._attempts_left = 0
        self._attempt = 0
        self._attempt_target: Any = None
        self._awaiting = False
        self._pending_answered = False
        # KRaft: the last metadata record this broker has applied, as the messages standing in
        # for the metadata log told it (BrokerLifecycleManager's highestMetadataOffsetProvider).
        self.metadata_offset = -1
        # KRaft heartbeats (BrokerLifecycleManager): the scheduled one (its token), whether a
        # heartbeat or registration awaits its answer (which one), failures in a row, and
        # whether the next one goes as soon as the answer comes.
        self._heartbeat_token = 0
        self._heartbeat_inflight = False
        self._heartbeat_request = 0
        self._heartbeat_failures = 0
        self._heartbeat_immediate = False

    def applied(self, metadata_offset: int) -> None:
        """The broker has applied the metadata log up to ``metadata_offset``."""
        if metadata_offset > self.metadata_offset:
            self.metadata_offset = metadata_offset

    def start(self, ctx: Context) -> None:
        """KafkaServer.startup (BrokerServer in KRaft): register, and start the heartbeats."""
        host, config = self.host, self.host.config
        if host.kraft:
            self._send_heartbeat(ctx)  # the registration
        else:
            self._register(ctx)
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
        elif not self.stopping and not self._waiting_for_old_session:
            # The ZooKeeper client keeps trying to establish a session.
            self._register(ctx)
        ctx.set_timer(host.config.zookeeper_session_timeout_ms // 3, "zk_heartbeat")

    def on_kraft_heartbeat_timer(self, ctx: Context, name: str, data: Any) -> None:
        """BrokerLifecycleManager's CommunicationEvent: a later scheduling replaced this one, or
        an answer is still awaited (then the next heartbeat goes as soon as it comes)."""
        if data != self._heartbeat_token:
            return
        if self._heartbeat_inflight:
            self._heartbeat_immediate = True
        else:
            self._send_heartbeat(ctx)

    def on_kraft_heartbeat_timeout(self, ctx: Context, name: str, data: Any) -> None:
        """No answer within the heartbeat channel's retry timeout (broker.session.timeout.ms /
        2, KAFKA-14392): scheduleNextCommunicationAfterFailure."""
        if self._heartbeat_inflight and data == self._heartbeat_request:
            self._heartbeat_inflight = False
            self._heartbeat_failed(ctx)

    def _heartbeat_failed(self, ctx: Context) -> None:
        backoff = KRAFT_RESEND_BACKOFF_MS * 2 ** min(self._heartbeat_failures, 30)
        self._heartbeat_failures += 1
        self._heartbeat_immediate = False  # never at once after a failure
        self._schedule_heartbeat(ctx, min(backoff, self.host.config.broker_session_timeout_ms))

    def _schedule_heartbeat(self, ctx: Context, delay_ms: int) -> None:
        """scheduleNextCommunication: the next heartbeat (or registration) ``delay_ms`` from
        now, replacing any scheduled before."""
        if self._heartbeat_immediate:
            delay_ms = 0
        self._heartbeat_immediate = False
        self._heartbeat_token += 1
        ctx.set_timer(delay_ms, "kraft_heartbeat", self._heartbeat_token)

    def on_stop_timer(self, ctx: Context, name: str, data: Any) -> None:
        if self.host.kraft:
            self._stop_now(ctx, "the controller did not let the broker stop in time")
        elif self._awaiting and data == self._attempt:
            self._awaiting = False  # KafkaServer: an IOException, tried again
            self._attempt_failed(ctx, "no answer", m.REQUEST_TIMED_OUT, ())

    def on_shutdown_retry_timer(self, ctx: Context, name: str, data: Any) -> None:
        self._try_controlled_shutdown(ctx)

    def on_controller_timer(self, ctx: Context, name: str, data: Any) -> None:
        if self.controller is not None:
            self.controller.on_timer(ctx, name, data)

    # ---- ZooKeeper and controller ----------------------------------------------------------

    def _register(self, ctx: Context) -> None:
        ctx.send(ZOOKEEPER, m.ZkRegister(self.host.id, self.host.incarnation))

    def on_session_expired(self, ctx: Context, src: Any, msg: m.ZkSessionExpired) -> None:
        """The ZooKeeper client re-creates its session and the broker registers again; its old
        znode went with the old session, so the registration succeeds (KAFKA-7165's re-create
        path is for this run's own earlier session). A controller resigns first: Kafka's
        beforeInitializingSession puts the Expire event in place of every queued one
        (clearAndPut), so nothing it had not yet handled is handled."""
        if msg.session == self.host.session:
            self.host.session = None
            self._resign(ctx, None)
            ctx.emit("zk_reregister", broker=self.host.id)
            self._register(ctx)

    def on_registration_refused(self, ctx: Context, src: Any, msg: m.ZkRegistrationRefused) -> None:
        """/brokers/ids/N belongs to ``msg.session``, a live session of this broker's previous
        run. 0.8 (createEphemeralPathExpectConflictHandleZKBug): the znode looks like its own,
        so it backs off for the session timeout and tries again, until ZooKeeper has expired the
        old session. Since 0.9 (ZKCheckedEphemeral, then KafkaZkClient.checkedEphemeralCreate):
        NODEEXISTS is a fatal start-up error and KafkaServer shuts down."""
        if self.host.session is not None or self.stopping:
            return
        config = self.host.config
        waits = config.zk_registration_waits_for_old_session
        ctx.emit(
            "zk_registration_refused",
            broker=self.host.id,
            old_session=msg.session,
            next="retry" if waits else "shutdown",
            retry_ms=config.zookeeper_session_timeout_ms if waits else None,
        )
        if waits:
            self._waiting_for_old_session = True
            ctx.set_timer(config.zookeeper_session_timeout_ms, "zk_register_retry")
        else:
            self.stopping = True
            self._stop_now(ctx, REGISTRATION_CONFLICT_SHUTDOWN)

    def on_register_retry_timer(self, ctx: Context, name: str, data: Any) -> None:
        self._waiting_for_old_session = False
        if self.host.session is None and not self.stopping:
            self._register(ctx)

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
        """Send a heartbeat, or the registration when this incarnation has no broker epoch yet,
        and wait for its answer."""
        self._heartbeat_inflight = True
        self._heartbeat_request += 1
        timeout = self.host.config.broker_session_timeout_ms // 2
        ctx.set_timer(timeout, "kraft_heartbeat_timeout", self._heartbeat_request)
        self._resend_heartbeat(ctx)

    def on_kraft_channel_retry(self, ctx: Context, name: str, data: Any) -> None:
        """The heartbeat channel, which knew no active controller, looks again (every 100 ms:
        NodeToControllerRequestThread.doWork) and sends the request still awaiting its answer."""
        if self._heartbeat_inflight and data == self._heartbeat_request:
            self._resend_heartbeat(ctx)

    def _resend_heartbeat(self, ctx: Context) -> None:
        """The heartbeat channel sends the request (again) to the controller it knows now."""
        if self.host.session is None:
            ctx.send(
                self.host.controller_address,
                m.BrokerRegistration(self.host.id, self.host.clean_restart, self.host.incarnation),
            )
        else:
            hb = m.BrokerHeartbeat(
                self.host.id, self.host.session, self.stopping, self.metadata_offset
            )
            ctx.send(self.host.controller_address, hb)

    def on_not_controller(self, ctx: Context, src: Any, msg: m.NotController) -> None:
        """NodeToControllerRequestThread.handleResponse: NOT_CONTROLLER sends the request again,
        to the active controller the node named, or else, 100 ms later, to the next
        controller node (kafkalab's brokers learn the quorum's leader only from the nodes)."""
        nodes = self.host.controller_nodes
        if msg.leader is not None:
            self.host.controller_address = msg.leader
            if self._heartbeat_inflight:
                self._resend_heartbeat(ctx)  # the channel sends it to the active controller
        elif nodes:
            i = nodes.index(src) if src in nodes else -1
            self.host.controller_address = nodes[(i + 1) % len(nodes)]
            if self._heartbeat_inflight:
                retry = CONTROLLER_CHANNEL_RETRY_MS
                ctx.set_timer(retry, "kraft_channel_retry", self._heartbeat_request)

    def controller_moved(self, ctx: Context) -> None:
        """The broker learned of another active controller: the heartbeat channel sends what
        still awaits an answer there (NodeToControllerRequestThread)."""
        if self.host.kraft and self._heartbeat_inflight:
            self._resend_heartbeat(ctx)

    def on_kraft_registered(
        self, ctx: Context, src: Any, msg: m.BrokerRegistrationResponse
    ) -> None:
        if msg.error != m.NONE:  # the old incarnation's session is still valid: try again
            self._heartbeat_inflight = False
            self._heartbeat_failed(ctx)  # scheduleNextCommunicationAfterFailure
            return
        self.host.session = msg.broker_epoch
        self.host.controller_address = src
        self.applied(msg.metadata_offset)
        self._heartbeat_inflight = False
        self._heartbeat_failures = 0
        self._replay_early(ctx)
        self._send_heartbeat(ctx)  # a fenced broker is unfenced by its first heartbeat

    def on_heartbeat_response(self, ctx: Context, src: Any, msg: m.BrokerHeartbeatResponse) -> None:
        """BrokerHeartbeatResponseHandler: the next heartbeat goes an interval after this
        answer (scheduleNextCommunicationAfterSuccess), 50 ms after the first "not yet" to a
        broker that wants to stop."""
        self.applied(msg.metadata_offset)
        self._heartbeat_inflight = False
        if msg.error == m.STALE_BROKER_EPOCH:
            self.host.session = (
                None  # the controller does not know this incarnation: register again
            )
            self._send_heartbeat(ctx)
            return
        self._heartbeat_failures = 0
        delay = self.host.config.broker_heartbeat_interval_ms
        if self.stopping and msg.shutdown_ready:
            self._stop_now(ctx, "controlled shutdown done")
            return
        if self.stopping and not self._pending_answered:
            self._pending_answered = True  # the first "not yet": ask again soon
            delay = KRAFT_FIRST_PENDING_SHUTDOWN_HEARTBEAT_MS
        self._schedule_heartbeat(ctx, delay)

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
            session=self.host.session,
        )
        self.controller.on_failover(ctx)

    def _resign(self, ctx: Context, current_epoch: int | None) -> None:
        """Stop acting as controller; ``current_epoch`` is the epoch that replaced it (None when
        the broker only learned that its session expired)."""
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
        """Ask the controller to move this broker's leaderships away first, then stop
        (controlled.shutdown.enable; off, or never registered, the broker stops at once).

        ZooKeeper mode (KafkaServer.controlledShutdown): a ControlledShutdown request to the
        controller; an answer with an error or with partitions still led here, or none within
        request.timeout.ms, fails the attempt; after controlled.shutdown.retry.backoff.ms the
        broker tries again, controlled.shutdown.max.retries attempts in all, then stops anyway.
        KRaft (BrokerLifecycleManager): heartbeats with wantShutDown until the controller says
        the broker may stop, for at most 5 minutes."""
        if self.stopping:
            return
        self.stopping = True
        config = self.host.config
        if not config.controlled_shutdown_enable or self.host.session is None:
            self._stop_now(ctx, "stopped without controlled shutdown")
        elif self.host.kraft:
            ctx.set_timer(KRAFT_CONTROLLED_SHUTDOWN_TIMEOUT_MS, "stop_timeout")
            self._schedule_heartbeat(ctx, 0)  # at once, then with every heartbeat
        else:
            self._attempts_left = config.controlled_shutdown_max_retries
            self._try_controlled_shutdown(ctx)

    def _try_controlled_shutdown(self, ctx: Context) -> None:
        """One pass of KafkaServer.controlledShutdown's loop, to the controller the broker
        knows now (none known: the attempt fails at once)."""
        if self._attempts_left <= 0:
            self._stop_now(ctx, "controlled shutdown failed: stopping anyway")
            return
        self._attempts_left -= 1
        self._attempt += 1
        target = self.host.controller_address
        if target is None:
            self._attempt_failed(ctx, "no controller known", None, ())
            return
        self._attempt_target, self._awaiting = target, True
        ctx.set_timer(self.host.config.request_timeout_ms, "stop_timeout", self._attempt)
        epoch = -1 if self.host.session is None else self.host.session
        request = m.ControlledShutdownRequest(self.host.id, epoch)
        if target == self.host.id and self.controller is not None:
            self.controller.handle(ctx, self.host.id, request)
        else:
            ctx.send(target, request)

    def on_controlled_shutdown_response(
        self, ctx: Context, src: Any, msg: m.ControlledShutdownResponse
    ) -> None:
        """Success needs no error and no partition left to move (KafkaServer)."""
        if not self._awaiting or src != self._attempt_target:
            return  # an answer to an attempt already given up
        self._awaiting = False
        if msg.error == m.NONE and not msg.remaining:
            self._stop_now(ctx, "controlled shutdown done")
        else:
            self._attempt_failed(ctx, "refused", msg.error, msg.remaining)

    def _attempt_failed(
        self, ctx: Context, cause: str, error: str | None, remaining: tuple[str, ...]
    ) -> None:
        config = self.host.config
        ctx.emit(
            "controlled_shutdown_failed",
            broker=self.host.id,
            attempt=self._attempt,
            cause=cause,
            error=error,
            remaining=list(remaining),
            attempts_left=self._attempts_left,
        )
        if self._attempts_left > 0 or config.controlled_shutdown_backoff_after_last_attempt:
            ctx.set_timer(config.controlled_shutdown_retry_backoff_ms, "shutdown_retry")
        else:
            self._try_controlled_shutdown(ctx)  # none left: it stops anyway

    def _stop_now(self, ctx: Context, why: str) -> None:
        """A clean stop flushes every log (LogManager.shutdown), checkpoints every HW
        (ReplicaManager.shutdown calls checkpointHighWatermarks) and closes the ZooKeeper
        session, so the controller learns at once instead of after the session timeout."""
        for r in self.host.partitions.values():
            r.log.flush()
            r.log.checkpoint_hw()
        if self.host.session is not None and not self.host.kraft:
            ctx.send(ZOOKEEPER, m.ZkClose(self.host.id, self.host.session))
        ctx.stop_process(why, clean=True)
