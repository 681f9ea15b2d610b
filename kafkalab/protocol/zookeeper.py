"""ZooKeeper as the ZooKeeper-era controller uses it.

- Broker sessions (/brokers/ids/N): created on registration, kept alive by heartbeats, expired
  after zookeeper.session.timeout.ms without one, closed at once by a clean shutdown. The
  session id is the broker epoch (the czxid of the registration znode, KIP-380). A restarted
  broker cannot register while its previous run's session lives (NODEEXISTS), whatever the
  controller mode. Only a cluster built with ``restart_replaces_session`` (KIP-101's stepped
  stories, see docs/sources.md "Known differences") lets its new session replace the old one.
- /controller: an ephemeral znode brokers race to create; the winner bumps /controller_epoch.
  When its owner's session ends the znode goes, and every broker is told to race again.
- Partition state znodes, written by the controller only while its epoch is current: a write
  from an older controller epoch fails (ControllerMovedException), which is how a zombie
  controller is fenced.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafkalab.config import Config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context

__all__ = ["ZooKeeper"]

DEDICATED_CONTROLLER = "controller"
ZOOKEEPER = "zk"  # the address of the ZooKeeper ensemble


class ZooKeeper:
    """``elected``: the controller is a broker that won /controller (the ZooKeeper era); else a
    dedicated controller at the address "controller" that never fails (for lessons about
    replication alone). ``restart_replaces_session``: a restarted broker registers at once, its
    new session replacing its previous run's live one; no Kafka release does that (it is for the
    stepped scenarios that tell KIP-101's stories with an immediate restart)."""

    def __init__(
        self,
        config: Config,
        partitions: dict[str, Any] | None = None,
        *,
        elected: bool = False,
        restart_replaces_session: bool = False,
    ) -> None:
        self.config = config
        self.elected = elected
        self.restart_replaces_session = restart_replaces_session
        self.sessions: dict[int, tuple[int, int]] = {}  # broker -> (session id, last heard ms)
        self.owners: dict[int, int] = {}  # broker -> the run (incarnation) that owns its session
        self.next_zxid = 0
        self.controller: tuple[int, int] | None = None  # (broker, session) owning /controller
        self.controller_epoch = 0
        self.partitions: dict[str, Any] = dict(partitions or {})

    def start(self, ctx: Context) -> None:
        pass

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if isinstance(msg, m.ZkRegister):
            self._register(ctx, src, msg)
        elif isinstance(msg, m.ZkGetBrokers):
            self._get_brokers(ctx, src, msg)
        elif isinstance(msg, m.ZkHeartbeat):
            session = self.sessions.get(msg.broker)
            if session is not None and session[0] == msg.session:
                self.sessions[msg.broker] = (msg.session, ctx.now)
            else:
                _send(ctx, src, m.ZkSessionExpired(msg.session))
        elif isinstance(msg, m.ZkClose):
            current = self.sessions.get(msg.broker)
            if current is not None and current[0] == msg.session:
                self._end_session(ctx, msg.broker, msg.session, "closed")
        elif isinstance(msg, m.ZkElect):
            self._elect(ctx, msg)
        elif isinstance(msg, m.ZkWrite):
            self._write(ctx, src, msg)
        elif isinstance(msg, m.AlterIsr):
            self._leader_isr_write(ctx, src, msg)
        elif isinstance(msg, m.IsrChangeNotification):
            self._isr_change_notification(ctx, msg)

    def _register(self, ctx: Context, src: Any, msg: m.ZkRegister) -> None:
        """Create /brokers/ids/N with a new session. The znode of an earlier run of the broker
        stays until its session expires: creating it again fails with NODEEXISTS (a
        restarted broker cannot register inside its old session; KafkaZkClient.registerBroker,
        ZkUtils.registerBrokerInZk). The same run asking again owns the znode already."""
        broker = msg.broker
        old = self.sessions.get(broker)
        if old is not None and self.owners.get(broker) == msg.incarnation:
            self.sessions[broker] = (old[0], ctx.now)
            _send(ctx, src, m.ZkRegistered(old[0], self._controller_id(), self.controller_epoch))
            return
        if old is not None and not self.restart_replaces_session:
            _send(ctx, src, m.ZkRegistrationRefused(old[0]))
            return
        self.next_zxid += 1
        self.sessions[broker] = (self.next_zxid, ctx.now)
        self.owners[broker] = msg.incarnation
        ctx.emit("zk_session", broker=broker, session=self.next_zxid)
        _send(
            ctx, src, m.ZkRegistered(self.next_zxid, self._controller_id(), self.controller_epoch)
        )
        ctx.set_timer(self.config.zookeeper_session_timeout_ms, "expire", (broker, self.next_zxid))
        self._notify(ctx)

    def _get_brokers(self, ctx: Context, src: Any, msg: m.ZkGetBrokers) -> None:
        """A read through an expired session fails (ZooKeeperClient.waitUntilConnected throws
        once the client is CLOSED): the reader learns its session is gone instead."""
        current = self.sessions.get(msg.broker)
        if current is None or current[0] != msg.session:
            _send(ctx, src, m.ZkSessionExpired(msg.session))
            return
        _send(ctx, src, m.ZkBrokers(self._live()))

    def _live(self) -> tuple[tuple[int, int], ...]:
        return tuple(sorted((b, s) for b, (s, _) in self.sessions.items()))

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        broker, session = data
        current = self.sessions.get(broker)
        if current is None or current[0] != session:
            return
        due = current[1] + self.config.zookeeper_session_timeout_ms
        if ctx.now >= due:
            self._end_session(ctx, broker, session, "expired")
        else:
            ctx.set_timer(due - ctx.now, "expire", data)

    def _end_session(self, ctx: Context, broker: int, session: int, how: str) -> None:
        del self.sessions[broker]
        kind = "zk_session_expired" if how == "expired" else "zk_session_closed"
        ctx.emit(kind, broker=broker, session=session)
        if self.controller == (broker, session):
            self._controller_gone(ctx, broker)
        self._notify(ctx)

    def _controller_gone(self, ctx: Context, broker: int) -> None:
        """The ephemeral /controller znode goes with its session: every broker races again."""
        self.controller = None
        ctx.emit("controller_znode_deleted", broker=broker, controller_epoch=self.controller_epoch)
        for b in sorted(self.sessions):
            _send(ctx, b, m.ZkControllerChange(None, self.controller_epoch))

    def _controller_id(self) -> Any:
        if not self.elected:
            return DEDICATED_CONTROLLER
        return self.controller[0] if self.controller else None

    def _notify(self, ctx: Context) -> None:
        """The controller's watch on /brokers/ids fires."""
        target = self._controller_id()
        if target is not None:
            _send(ctx, target, m.BrokerChange(self._live()))

    def _elect(self, ctx: Context, msg: m.ZkElect) -> None:
        """KafkaController.elect: the first broker to create /controller wins and bumps
        /controller_epoch; the others learn who won."""
        session = self.sessions.get(msg.broker)
        if session is None or session[0] != msg.session:
            return  # a broker whose session is gone cannot create an ephemeral znode
        if self.controller is not None:
            _send(ctx, msg.broker, m.ZkControllerChange(self.controller[0], self.controller_epoch))
            return
        self.controller = (msg.broker, msg.session)
        self.controller_epoch += 1
        ctx.emit("controller_elected", broker=msg.broker, controller_epoch=self.controller_epoch)
        _send(
            ctx,
            msg.broker,
            m.ZkElected(
                self.controller_epoch, self._live(), tuple(sorted(self.partitions.items()))
            ),
        )
        for b in sorted(self.sessions):
            if b != msg.broker:
                _send(ctx, b, m.ZkControllerChange(msg.broker, self.controller_epoch))

    def _write(self, ctx: Context, src: Any, msg: m.ZkWrite) -> None:
        """A controller's writes carry its epoch; since 2.1 (KAFKA-6082) ZooKeeper refuses them
        once another controller has been elected (KafkaZkClient's multi-op checks the
        /controller_epoch znode version). Before, a partition's state was written conditionally
        on that znode's version only, so a zombie's write went through when nobody had changed
        the partition since it read it."""
        if not self.config.zk_writes_fenced_by_controller_epoch:
            ok = all(
                tp not in self.partitions or self.partitions[tp].partition_epoch == version
                for tp, version in msg.expected_versions
            )
        else:
            ok = msg.controller_epoch == self.controller_epoch and (
                not self.elected or (self.controller is not None and self.controller[0] == src)
            )
        if ok:
            self.partitions.update(dict(msg.partitions))
        else:
            ctx.emit(
                "zk_write_rejected",
                controller=src,
                controller_epoch=msg.controller_epoch,
                current_epoch=self.controller_epoch,
            )
        _send(ctx, src, m.ZkWriteResult(msg.write_id, ok, self.controller_epoch))

    def _leader_isr_write(self, ctx: Context, src: Any, req: m.AlterIsr) -> None:
        """Before 2.7: a leader rewrites its partition's state znode with a new ISR
        (ReplicationUtils.updateLeaderAndIsr), conditional on the znode version (the partition
        epoch here) and on still being the leader of that epoch; then the controller learns of
        it (isr_change_notification)."""
        state = self.partitions.get(req.tp)
        if state is None or (state.leader, state.leader_epoch) != (req.leader, req.leader_epoch):
            error = m.FENCED_LEADER_EPOCH
        elif state.partition_epoch != req.partition_epoch:
            error = m.INVALID_UPDATE_VERSION
        else:
            error = m.NONE
            old = state
            state = replace(state, isr=req.isr, partition_epoch=state.partition_epoch + 1)
            self.partitions[req.tp] = state
            ctx.emit(
                "partition_state",
                tp=req.tp,
                leader=state.leader,
                leader_epoch=state.leader_epoch,
                isr=list(state.isr),
                partition_epoch=state.partition_epoch,
                reason="expand" if len(state.isr) > len(old.isr) else "shrink",
                unclean=False,
                controller_epoch=self.controller_epoch,
            )
            if self.controller is not None:
                _send(ctx, self.controller[0], m.ZkPartitionState(req.tp, state))
        response = m.AlterIsrResponse(
            req.tp,
            error,
            -1 if state is None else state.leader_epoch,
            -1 if state is None else state.partition_epoch,
            () if state is None else state.isr,
        )
        _send(ctx, src, response)

    def _isr_change_notification(self, ctx: Context, msg: m.IsrChangeNotification) -> None:
        """A broker created an /isr_change_notification/isr_change_N znode: the controller's
        watch on that path fires and it reads the notification. Without a controller nobody
        reads it; the next one reads every partition when it takes over anyway."""
        if self.controller is not None:
            _send(ctx, self.controller[0], msg)


def _send(ctx: Context, dst: Any, msg: Any) -> None:
    """ZooKeeper's replies and watch events reach a client whose session survives a broken
    connection once it reconnects, in order; they are never just dropped."""
    ctx.send(dst, msg, hold=True)
