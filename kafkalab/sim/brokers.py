"""The broker steps of a cluster: brokers (and controller nodes) crashing, stopping and
restarting from their disks, followers fetching, and the requests a partition's leader handles
or sends (DeleteRecords, AlterPartition)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.config import Config
from kafkalab.errors import ActionError
from kafkalab.protocol import messages as msgs
from kafkalab.protocol.broker import Broker, FetchNow, Stop
from kafkalab.protocol.lifecycle import (
    KRAFT_CONTROLLED_SHUTDOWN_TIMEOUT_MS,
    REGISTRATION_CONFLICT_SHUTDOWN,
)
from kafkalab.protocol.log import Disk
from kafkalab.sim.action_kinds import ALTER_PARTITION_ANSWERS, ALTER_PARTITION_ERRORS
from kafkalab.sim.clients import ClientSteps
from kafkalab.sim.control import ACTIVE_CONTROLLER
from kafkalab.sim.network import NetworkSteps
from kafkalab.sim.settings import DynamicSettings

if TYPE_CHECKING:
    from kafkalab.sim.facade import Facade

__all__ = [
    "ALTER_PARTITION_ANSWERS",
    "ALTER_PARTITION_ERRORS",
    "SUPERVISOR_RESTART_DELAY_MS",
    "BrokerSteps",
]

# Timed mode: a broker whose start-up failed because its previous run's ZooKeeper session still
# held /brokers/ids/N is started again this long afterwards, as a process supervisor would
# (10 s, the first back-off of a Kubernetes pod whose container exited), until it registers.
# Kafka itself never restarts: it shuts down.
SUPERVISOR_RESTART_DELAY_MS = 10000


class BrokerSteps:
    """What the facade's broker steps do. ``disks`` holds each stopped broker's disks until it
    restarts."""

    def __init__(
        self,
        cluster: Facade,
        settings: DynamicSettings,
        clients: ClientSteps,
        network: NetworkSteps,
    ) -> None:
        self.cluster = cluster
        self.settings, self.clients, self.network = settings, clients, network
        self.sim = cluster.sim
        self.disks: dict[int, dict[str, Disk]] = {}
        self.clean_stops: set[int] = set()  # brokers whose last run ended cleanly
        self.starts: dict[int, int] = {}  # how many times each broker has started

    def start(self, b: int, disks: dict[str, Disk], clean: bool = False) -> None:
        c = self.cluster
        incarnation = self.starts[b] = self.starts.get(b, -1) + 1
        broker = Broker(
            b,
            self.settings.broker_config(b),
            disks,
            auto_fetch=c.mode == "timed" or c.replication == "auto",
            controller_nodes=c.control.broker_controller_nodes,
            clean_restart=clean,
            incarnation=incarnation,
            rules=c.rules,
        )
        self.sim.add(b, broker, b)

    def running(self, b: Any) -> Broker:
        """Running broker ``b``; else an ActionError saying why not."""
        self.cluster._check_broker(b)
        actor = self.sim.actors.get(b)
        if actor is None:
            raise ActionError(f"broker {b} is not running: restart it first")
        assert isinstance(actor, Broker)
        return actor

    # ---- crashes and restarts --------------------------------------------------------------

    def crash(self, broker: Any, lose_unflushed: bool) -> None:
        c = self.cluster
        if broker == ACTIVE_CONTROLLER:
            broker = c.control.active_name()
        if broker in c.control.node_names:
            self._crash_controller_node(str(broker))
            return
        if broker in self.clients.clients:
            self.clients.crash(str(broker))
            return
        self.running(broker)
        c._step("crash", broker=broker, lose_unflushed=lose_unflushed)
        self._crash(broker, lose_unflushed, None)
        c._settle()

    def _crash(
        self, broker: int, lose_unflushed: bool, reason: str | None, clean: bool = False
    ) -> None:
        # Only a power loss takes the host down; otherwise it resets the broker's connections.
        actor = self.sim.remove(broker, host_up=not lose_unflushed)
        self.disks[broker] = actor.disks(lose_unflushed)
        if clean:
            self.clean_stops.add(broker)
            self.sim.record("stopped", broker, {"reason": reason})
            return
        self.clean_stops.discard(broker)
        data: dict[str, Any] = {"lose_unflushed": lose_unflushed}
        if reason:
            data["halted"] = reason
        self.sim.record("crash", broker, data)

    def on_halt(self, broker: Any, reason: str, clean: bool) -> None:
        """A broker stopped itself (a clean stop, or a fatal error). In timed mode a start-up
        that failed to register is followed by the supervisor's restart."""
        if broker not in self.sim.actors:
            return
        self._crash(broker, False, reason, clean)
        if reason == REGISTRATION_CONFLICT_SHUTDOWN and self.cluster.mode == "timed":
            run = self.starts[broker]
            self.sim.call_at(
                self.sim.now + SUPERVISOR_RESTART_DELAY_MS, self._supervisor_restart, broker, run
            )

    def _supervisor_restart(self, broker: int, run: int) -> None:
        """Start the broker again unless someone else already did."""
        if broker not in self.sim.actors and self.starts[broker] == run:
            self.restart(broker)

    def restart(self, broker: Any) -> None:
        c = self.cluster
        if broker == ACTIVE_CONTROLLER:
            stopped = ", ".join(c.control.stopped) or "none"
            raise ActionError(
                f"restart names the node to start, not {ACTIVE_CONTROLLER!r}: stopped controller "
                f"nodes are {stopped}"
            )
        if broker in c.control.node_names:
            self._restart_controller_node(str(broker))
            return
        if broker in self.clients.clients:
            self.clients.restart(str(broker))
            return
        c._check_broker(broker)
        if broker in self.sim.actors:
            raise ActionError(f"broker {broker} is already running: crash it before a restart")
        c._step("restart", broker=broker)
        disks = self.disks.pop(broker)
        self.start(broker, disks, clean=broker in self.clean_stops)
        self.clean_stops.discard(broker)
        r = self.sim.actors[broker].partitions.get(c.tp)
        self.sim.record(
            "restart", broker, {"leo": r.log.leo if r else 0, "hw": r.log.hw if r else 0}
        )
        c._settle()

    def _crash_controller_node(self, node: str) -> None:
        if node not in self.sim.actors:
            raise ActionError(f"controller node {node} is not running: restart it first")
        self.cluster._step("crash", broker=node)
        self.cluster.control.crash(node)
        self.cluster._settle()

    def _restart_controller_node(self, node: str) -> None:
        if node in self.sim.actors:
            raise ActionError(f"controller node {node} is already running: crash it first")
        self.cluster._step("restart", broker=node)
        self.cluster.control.restart(node)
        self.cluster._settle()

    def flush(self, broker: int) -> None:
        actor = self.running(broker)
        self.cluster._step("flush", broker=broker)
        for r in actor.partitions.values():
            r.log.flush()
        self.sim.record("flush", broker, {})
        self.cluster._settle()

    def checkpoint(self, broker: int) -> None:
        """The broker's periodic HW checkpoint task runs now
        (ReplicaManager.checkpointHighWatermarks). It runs every
        replica.high.watermark.checkpoint.interval.ms, so any moment may fall just after one;
        this step picks the moment without letting time pass."""
        actor = self.running(broker)
        self.cluster._step("checkpoint", broker=broker)
        for r in actor.partitions.values():
            r.log.checkpoint_hw()
        self.sim.record("hw_checkpoint", broker, {})
        self.cluster._settle()

    def stop(self, broker: int) -> None:
        c = self.cluster
        self.running(broker)
        if self.network.paused(broker):
            raise ActionError(f"broker {broker} is paused: resume it before a clean stop")
        c._step("stop", broker=broker)
        self.sim.command(broker, Stop())
        c._settle()
        if c.mode == "stepped" and broker in self.sim.actors:
            # The controller did not let it go at once (it could not move every leadership, or
            # it is cut off, paused or gone): time passes until the broker stops, after its
            # attempts, or without the controller once it gives up.
            config = self.sim.actors[broker].config
            self.sim.run_until(
                self.sim.now + _longest_stop_ms(config), lambda: broker not in self.sim.actors
            )

    # ---- replication and partition requests ------------------------------------------------

    def fetch(
        self,
        follower: int,
        response: str,
        delay_ms: int,
        partition: Any,
        max_wait_ms: int | None,
    ) -> None:
        c = self.cluster
        broker = self.running(follower)
        if response not in ("ok", "lost", "delayed"):
            raise ActionError(f"response={response!r} is not allowed: use ok, lost or delayed")
        if max_wait_ms is not None and (
            isinstance(max_wait_ms, bool) or not isinstance(max_wait_ms, int) or max_wait_ms < 0
        ):
            raise ActionError(
                f"max_wait_ms={max_wait_ms!r} is not allowed: use a whole number of ms >= 0 "
                "(0: the leader answers at once)"
            )
        tp = c._tp(partition)
        r = broker.partitions.get(tp)
        if r is None or r.role != "follower":
            what = "the leader" if r is not None and r.role == "leader" else "not a follower"
            raise ActionError(
                f"broker {follower} is {what} of {tp}: only a follower fetches "
                f"(followers now: {c.followers(tp) or 'none'})"
            )
        if self.network.paused(follower):
            raise ActionError(f"broker {follower} is paused: resume it before it can fetch")
        args = {} if max_wait_ms is None else {"max_wait_ms": max_wait_ms}
        c._step("fetch", follower=follower, response=response, **args)
        if response != "ok":
            self.sim.add_rule(
                r.leader,
                follower,
                (msgs.FetchResponse, msgs.OffsetsForLeaderEpochResponse),
                None if response == "lost" else int(delay_ms),
            )
        self.sim.command(follower, FetchNow(tp, max_wait_ms))
        c._settle()

    def delete_records(self, offset: int, partition: Any) -> None:
        c = self.cluster
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < -1:
            raise ActionError(
                f"offset={offset!r} is not allowed: use a whole number >= 0, or -1 for the HW"
            )
        if not c.config.kip107:
            raise ActionError(
                f"delete_records is not allowed with preset {c.config.preset or 'custom'} "
                "(kip107 off): the DeleteRecords request came with KIP-107 in Kafka 0.11.0.0; "
                "use preset 0.11 or later"
            )
        tp = c._tp(partition)
        leader = c.partition_states()[tp].leader
        if leader is None:
            raise ActionError(f"{tp} has no leader: there is nobody to delete records")
        c._step("delete_records", partition=tp, offset=offset)
        self.sim.send("producer", leader, msgs.DeleteRecordsRequest(tp, offset))
        c._settle()

    def alter_partition(self, answer: str, partition: Any, delay_ms: int, error: str) -> None:
        c = self.cluster
        if answer not in ALTER_PARTITION_ANSWERS:
            raise ActionError(
                f"answer={answer!r} is not allowed: use {', '.join(ALTER_PARTITION_ANSWERS)}"
            )
        if error not in ALTER_PARTITION_ERRORS:
            raise ActionError(
                f"error={error!r} is not allowed: use {', '.join(ALTER_PARTITION_ERRORS)}"
            )
        if isinstance(delay_ms, bool) or not isinstance(delay_ms, int) or delay_ms < 0:
            raise ActionError(f"delay_ms={delay_ms!r} is not allowed: use a whole number >= 0")
        tp = c._tp(partition)
        leader = c.partition_states()[tp].leader
        if leader is None or leader not in self.sim.actors:
            raise ActionError(f"{tp} has no running leader to send an AlterPartition")
        target = self.sim.actors[leader].controller_address
        c._step("alter_partition", partition=tp, answer=answer)
        reply = None
        if answer == "refused":

            def reply(req: Any) -> Any:
                return msgs.AlterIsrResponse(req.tp, error, -1, -1, ())

        self.sim.add_rule(
            leader,
            target,
            (msgs.AlterIsr,),
            delay_ms if answer == "delayed" else None,
            match=lambda req: req.tp == tp,
            reply=reply,
        )


def _longest_stop_ms(config: Config) -> int:
    """The longest a controlled shutdown can take: in KRaft the broker's wait for the
    controller; in ZooKeeper mode every attempt timing out, with a back-off after each."""
    if config.controller_mode == "kraft":
        return KRAFT_CONTROLLED_SHUTDOWN_TIMEOUT_MS
    per_attempt = config.request_timeout_ms + config.controlled_shutdown_retry_backoff_ms
    return config.controlled_shutdown_max_retries * per_attempt
