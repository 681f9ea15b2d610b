"""The Cluster: replicated partitions of one topic (or several) on a set of brokers, with
ZooKeeper and a controller.

This is the facade lessons and scenarios use. In **stepped** mode nothing happens unless a step
asks for it: each step runs to quiescence (the messages it causes are delivered), followers fetch
only when told, and timers fire only when time is advanced. In **timed** mode followers fetch on
their own, messages take time, and workloads and faults are scheduled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from kafkalab.config import Config, make_config
from kafkalab.errors import ActionError
from kafkalab.protocol import messages as msgs
from kafkalab.protocol.consumer import Poll
from kafkalab.protocol.controller import CommittedPartition
from kafkalab.protocol.log import Disk
from kafkalab.protocol.producer import Producer
from kafkalab.protocol.rules import DEFAULT_RULES, Rules
from kafkalab.sim import views
from kafkalab.sim.brokers import ALTER_PARTITION_ANSWERS as ALTER_PARTITION_ANSWERS
from kafkalab.sim.brokers import ALTER_PARTITION_ERRORS as ALTER_PARTITION_ERRORS
from kafkalab.sim.brokers import BrokerSteps
from kafkalab.sim.clients import CLIENT_HOST, ClientSteps
from kafkalab.sim.cluster_args import check_arguments
from kafkalab.sim.control import CONTROLLER_NODES as CONTROLLER_NODES
from kafkalab.sim.control import ControlPlane, control_plane
from kafkalab.sim.elections import elect_leaders
from kafkalab.sim.engine import Simulation, collector_paused
from kafkalab.sim.network import NetworkSteps
from kafkalab.sim.settings import DYNAMIC_BROKER_KEYS as DYNAMIC_BROKER_KEYS
from kafkalab.sim.settings import TOPIC_KEYS as TOPIC_KEYS
from kafkalab.sim.settings import DynamicSettings
from kafkalab.sim.topics import Placement, check_broker
from kafkalab.sim.trace import Trace
from kafkalab.sim.views import ReplicaView

__all__ = ["Cluster", "ReplicaView"]

SYNC_ROUNDS = 20  # Cluster.sync: rounds of fetches at most (replication settles in a few)


class Cluster:
    """A simulated Kafka cluster holding one partition, or several partitions of one topic or
    of several ``topics``.

    ``topics`` lists topic names (one partition each) or maps each name to its number of
    partitions or to ``{"partitions": N, "replicas": R}``, R being a replication factor, a
    broker list (a one-partition topic) or ``{partition: [brokers]}``. The first topic is the
    default one: a partition given as a number N (``partition=1``) is its partition N; any
    other is named "topic-N". Each topic is placed as Kafka's AdminUtils places a new topic,
    with its own random start drawn from ``seed``.

    ``rules`` replaces some of the brokers' HW, truncation and sequence-number rules with your
    own functions (:class:`kafkalab.Rules`); by default every broker applies Kafka's.

    A restarted broker cannot register while its previous run's ZooKeeper session lives
    (NODEEXISTS: 0.8 waits, later releases abort start-up, and in timed mode a supervisor starts
    it again). ``restart_replaces_session=True``, beside the dedicated controller only, lets the
    new session replace the old one at once, and before 2.2 the controller then sends the
    returning broker its partitions' state: no Kafka release does that. It exists for the
    stepped catalog scenarios that tell KIP-101's stories with an immediate restart
    (docs/sources.md, "Known differences").

    >>> c = Cluster(brokers=2, leader=2, config={"preset": "0.10"})
    >>> c.produce("m1", acks=1)
    ['m1']
    """

    # Installed by kafkalab.check (``import kafkalab`` imports it): called with each new cluster,
    # it subscribes the named invariants to the trace and returns the monitor behind report().
    # The simulation imports nothing from kafkalab.check.
    attach_checks: ClassVar[Callable[..., Any]]

    def __init__(
        self,
        brokers: int = 3,
        *,
        config: Config | Mapping[str, Any] | None = None,
        leader: int | None = None,
        replicas: Iterable[int] | Mapping[int, Iterable[int]] | None = None,
        partitions: int = 1,
        racks: Mapping[int, str] | None = None,
        seed: int = 0,
        mode: str = "stepped",
        latency_ms: tuple[int, int] = (1, 5),
        topic: str = "demo",
        topics: Mapping[str, Any] | Iterable[str] | None = None,
        trace_messages: bool = True,
        check_invariants: bool = False,
        loss_rate: float = 0.0,
        transactional_ids: Iterable[str] = (),
        groups: Iterable[str] = (),
        replication: str = "manual",
        rules: Rules | None = None,
        restart_replaces_session: bool = False,
    ) -> None:
        lat = check_arguments(
            mode,
            brokers,
            rules,
            replication,
            partitions,
            latency_ms,
            loss_rate,
            restart_replaces_session,
        )
        self.config = config if isinstance(config, Config) else make_config(config or {})
        self._settings = DynamicSettings(self)  # the static, dynamic and topic-level layers
        self.rules = rules or DEFAULT_RULES
        self.mode = mode
        self.replication = replication
        self.seed = seed
        self.broker_ids = list(range(1, brokers + 1))
        self.racks = dict(racks or {})
        placement = Placement(self.broker_ids, self.racks, seed, self.config)
        self.assignment: dict[str, list[int]] = placement.place(
            topic, topics, partitions, leader, replicas
        )
        self.topic, self.topics = placement.topic, placement.topics
        self.tp = f"{self.topic}-0"  # the partition the single-partition API talks about
        self.replicas: list[int] = self.assignment[self.tp]
        placement.add_internal_partitions(transactional_ids, groups)
        self.sim = Simulation(
            seed=seed, latency_ms=lat, trace_messages=trace_messages, loss_rate=loss_rate
        )
        # The one place the controller mode is read: its control plane answers the rest.
        self.restart_replaces_session = restart_replaces_session
        self.control: ControlPlane = control_plane(
            self.sim, lambda: self.config, restart_replaces_session=restart_replaces_session
        )
        self._client_steps = ClientSteps(self)
        self._network = NetworkSteps(self, self._client_steps)
        self._brokers = BrokerSteps(self, self._settings, self._client_steps, self._network)
        self.sim.on_halt = self._brokers.on_halt
        self.disks = self._brokers.disks  # each stopped broker's disks
        self.monitor = Cluster.attach_checks(self, raise_on_violation=check_invariants)
        self._steps = 0
        self._start()

    # ---- construction ----------------------------------------------------------------------

    def _start(self) -> None:
        self.control.start(self.assignment)
        self.sim.add("producer", Producer("producer"), CLIENT_HOST)
        for b in self.broker_ids:
            self._brokers.start(b, {tp: Disk() for tp, r in self.assignment.items() if b in r})
        self._settle()
        if self.mode == "stepped":
            self.control.await_ready(self.broker_ids)

    def _settle(self) -> None:
        if self.mode == "stepped":
            self.sim.run_until(self.sim.now)

    def _check_broker(self, b: Any) -> int:
        return check_broker(b, self.broker_ids)

    def _step(self, action: str, **args: Any) -> None:
        self._steps += 1
        self.sim.record("step", "cluster", {"index": self._steps, "action": action, "args": args})

    # ---- steps -----------------------------------------------------------------------------

    def produce(
        self,
        value: str | None = None,
        *,
        values: Iterable[str] | None = None,
        count: int | None = None,
        acks: int | str | None = None,
        producer: str = "producer",
        partition: int | str | None = None,
        to: int | None = None,
        producer_id: int | None = None,
        producer_epoch: int = 0,
        sequence: int | None = None,
        response: str = "ok",
        request: str = "ok",
        delay_ms: int = 1000,
    ) -> list[str]:
        """Send records to the partition's leader with ``acks`` (default: the config's).

        ``value`` sends one record; ``values`` a batch; ``count`` with ``value`` sends a batch of
        ``value-1 .. value-count``. ``to`` sends to that broker whatever the metadata says (a
        client with stale metadata, still talking to a replaced leader). ``producer_id``,
        ``producer_epoch`` and ``sequence`` make the batch an idempotent producer's (what its
        client would send; a retry is the same batch sent again). ``response`` "lost": the leader
        handles the request but its answer never arrives (nor what follows on that connection,
        until it is set up again); ``request`` "lost": it never arrives; "delayed" (a named
        client's only): it arrives ``delay_ms`` later. With ``producer`` naming a client made by
        :meth:`producer`, that client sends (and retries) the batch. Returns the values sent."""
        return self._client_steps.produce(
            value,
            values,
            count,
            acks,
            producer,
            partition,
            to,
            producer_id,
            producer_epoch,
            sequence,
            response,
            request,
            delay_ms,
        )

    def _acks(self, acks: Any) -> int:
        return self.config.acks_value if acks is None else parse_acks(acks)

    def producer(self, name: str, **settings: Any) -> None:
        """Create a named producer client with Kafka's producer settings (``acks``,
        ``enable.idempotence``, ``max.in.flight.requests.per.connection``, ``retries``,
        ``retry.backoff.ms``, ``request.timeout.ms``, ``delivery.timeout.ms``; dots or
        underscores). Defaults follow the cluster's config: idempotence as
        ``enable.idempotence`` says (always with a ``transactional.id``), with acks=all, and
        one request in flight before 1.0 (``idempotence_five_in_flight`` off)."""
        self._client_steps.producer(name, settings)

    def consumer(
        self, name: str, *, partitions: Iterable[int | str] | None = None, **settings: Any
    ) -> None:
        """Create a named consumer of ``partitions`` (default: every partition of the topic)
        with Kafka's consumer settings (``group.id``, ``isolation.level``,
        ``enable.auto.commit``, ``auto.commit.interval.ms``, ``max.poll.records``). It starts
        at its group's committed offsets, or at the beginning."""
        self._client_steps.consumer(name, partitions, settings)

    def begin(self, producer: str) -> None:
        """beginTransaction: the producer's next sends belong to a new transaction."""
        self._client_steps.txn(producer, "begin")

    def commit(self, producer: str) -> None:
        """commitTransaction: once every send is answered, EndTxn(commit) to the coordinator,
        which writes PrepareCommit, then COMMIT markers, then CompleteCommit."""
        self._client_steps.txn(producer, "commit")

    def abort(self, producer: str) -> None:
        """abortTransaction: unsent records are dropped; EndTxn(abort), then ABORT markers."""
        self._client_steps.txn(producer, "abort")

    def send_offsets(
        self,
        producer: str,
        *,
        consumer: str | None = None,
        group: str | None = None,
        offsets: Mapping[Any, int] | None = None,
    ) -> None:
        """sendOffsetsToTransaction: commit a consumer's position (or explicit ``offsets``
        for ``group``) as part of the producer's transaction."""
        self._client_steps.send_offsets(producer, consumer, group, offsets)

    def poll(self, consumer: str, *, process: bool = True) -> None:
        """The consumer fetches from each partition's leader and hands the records to the
        application (processed at once unless ``process`` is false)."""
        self._client_steps.consumer_call(consumer, "poll", Poll("poll", process), process=process)

    def process(self, consumer: str) -> None:
        """The application processes what earlier polls returned."""
        self._client_steps.consumer_call(consumer, "process", Poll("process"))

    def commit_offsets(self, consumer: str) -> None:
        """commitSync: write the consumer's position to its group coordinator."""
        self._client_steps.consumer_call(consumer, "commit_offsets", Poll("commit"))

    def fetch(
        self,
        follower: int,
        *,
        response: str = "ok",
        delay_ms: int = 1000,
        partition: int | str | None = None,
        max_wait_ms: int | None = None,
    ) -> None:
        """Follower ``follower`` does its next round trip with the leader: a Fetch, or (0.11 to
        2.7) an OffsetsForLeaderEpoch request when it must first find its truncation point;
        since 2.8 the Fetch itself finds it (a diverging epoch in the answer).
        ``response`` is "ok", "lost" (the leader handles the request; the answer never arrives)
        or "delayed" (it arrives ``delay_ms`` later, once time is advanced).

        A fetch that finds nothing new waits in the leader's fetch purgatory (up to
        replica.fetch.wait.max.ms) and is answered with the HW read again at the end, which this
        fetch may have raised; the wait passes within the step. ``max_wait_ms=0`` asks the
        leader to answer at once instead, with the HW it read before applying this fetch."""
        self._brokers.fetch(follower, response, delay_ms, partition, max_wait_ms)

    def sync(self, partition: int | str | None = None) -> None:
        """Every running follower of ``partition`` does its next round trip with the leader (as
        :meth:`fetch` does, answered at once), round after round, until a round changes no
        replica, at most :data:`SYNC_ROUNDS` rounds. A follower that must find its truncation
        point asks for it first; a follower's HW catches up one round after its LEO."""
        tp = self._tp(partition)
        actors = self.sim.actors
        for _ in range(SYNC_ROUNDS):
            before = self.replicas_view(tp)
            asked = False  # a round that only found a truncation point changes no replica
            for b in self.followers(tp):
                asked |= actors[b].partitions[tp].truncating
                self._brokers.fetch(b, "ok", 0, tp, 0)
            if not asked and self.replicas_view(tp) == before:
                return

    def crash(self, broker: int | str, *, lose_unflushed: bool = False) -> None:
        """Stop a broker. A process crash keeps the page cache; a power loss
        (``lose_unflushed``) keeps only what was flushed to disk. In KRaft mode a controller
        node ("c1", "c2", "c3", or "active": whichever is active now) can crash too; it keeps
        its quorum state and metadata log."""
        self._brokers.crash(broker, lose_unflushed)

    def restart(self, broker: int | str) -> None:
        """Start a stopped broker (or KRaft controller node) again from what its disk holds."""
        self._brokers.restart(broker)

    def flush(self, broker: int) -> None:
        """fsync the broker's log (Log.flush); its HW checkpoint waits for the periodic task."""
        self._brokers.flush(broker)

    def stop(self, broker: int) -> None:
        """Stop a broker cleanly: a controlled shutdown first moves its leaderships to other ISR
        replicas and takes it out of every ISR; then it flushes, checkpoints HWs, closes."""
        self._brokers.stop(broker)

    def pause(self, node: Any) -> None:
        """Stall a node (a long GC pause, a frozen VM): it handles nothing and sends nothing;
        what reaches it waits. Its ZooKeeper session can expire meanwhile."""
        self._network.pause(node)

    def resume(self, node: Any) -> None:
        """Let a paused node run again: it handles what waited, oldest first, with the state
        it had (a zombie, if others moved on)."""
        self._network.resume(node)

    def elect_preferred(self, partition: str | None = None) -> None:
        """Ask the controller to move leadership back to each partition's preferred replica
        (the first assigned) where it is alive and in the ISR."""
        elect_leaders(self, msgs.PREFERRED, partition, "elect_preferred")

    def elect_leaders(self, election_type: str, partition: int | str | None = None) -> None:
        """An operator's ElectLeaders (``preferred`` or ``unclean``; see
        :mod:`kafkalab.sim.elections`): Kafka's answer is the trace's elect_leaders_result."""
        elect_leaders(self, election_type, partition, "elect_leaders")

    def advance(self, ms: int) -> None:
        """Let ``ms`` simulated milliseconds pass: due timers fire (ISR expiry, session expiry,
        request timeouts, checkpoints) and what they cause is delivered."""
        if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
            raise ActionError(f"advance={ms!r} is not allowed: use a whole number of ms >= 0")
        self._step("advance", ms=ms)
        self.sim.run_until(self.sim.now + ms)

    # ---- settings, record deletion, ISR changes --------------------------------------------

    def set_config(
        self, settings: Mapping[str, Any], *, broker: int | None = None, topic: str | None = None
    ) -> None:
        """Change settings while the cluster runs, as IncrementalAlterConfigs does (KIP-339):
        cluster-wide, for one ``broker`` (dynamic broker configs, KIP-226, 1.1), or for a
        ``topic`` (a topic-level setting beats the brokers'). Brokers apply the new settings
        at once; the controller also elects a leader for any leaderless partition the new
        settings allow (unclean.leader.election.enable turned on: KAFKA-6835, 2.1). A KRaft
        controller does so only at its periodic check, every unclean.leader.election.interval.ms
        (KAFKA-12670, 3.9; before, it ignores the setting: see ``elect_leaders``)."""
        self._settings.set_config(settings, broker, topic)

    def delete_records(self, offset: int, *, partition: int | str | None = None) -> None:
        """DeleteRecords (KIP-107, 0.11): the partition's leader moves its log start offset to
        ``offset`` (-1: its HW; above the HW: OFFSET_OUT_OF_RANGE). Readers no longer get the
        records below it; followers move theirs on their next fetch. Refused before 0.11."""
        self._brokers.delete_records(offset, partition)

    def alter_partition(
        self,
        answer: str,
        *,
        partition: int | str | None = None,
        delay_ms: int = 1000,
        error: str = msgs.INVALID_UPDATE_VERSION,
    ) -> None:
        """What becomes of the next AlterPartition (ISR change) the partition's leader sends:
        ``delayed`` reaches the controller ``delay_ms`` later (the change stays in flight until
        time passes), ``lost`` never arrives (the leader sends it again after request.timeout.ms),
        ``refused``: the controller applies nothing and answers ``error``."""
        self._brokers.alter_partition(answer, partition, delay_ms, error)

    def disconnect(self, a: Any, b: Any) -> None:
        """Cut the network link between two nodes (broker ids, "zk" or "client")."""
        self._network.link(a, b, False)

    def reconnect(self, a: Any, b: Any) -> None:
        """Restore the link between two nodes."""
        self._network.link(a, b, True)

    def throttle(self, a: Any, b: Any, mb_per_s: float | None) -> None:
        """Slow the link between two nodes to ``mb_per_s`` megabytes per second (``None``: full
        speed again), as a congested or degraded network would. Records weigh RECORD_BYTES
        (100) each, so a follower behind a 0.1 MB/s link copies a thousand records a second."""
        self._network.throttle(a, b, mb_per_s)

    def partition(self, groups: Iterable[Iterable[Any]]) -> None:
        """Cut every link between nodes of different groups; nodes left out keep their links."""
        self._network.partition(groups)

    def heal(self) -> None:
        """Restore every network link."""
        self._network.heal()

    # ---- timed mode ------------------------------------------------------------------------

    def run(
        self,
        until_ms: int | None = None,
        *,
        for_ms: int | None = None,
        stop_when: Callable[[Cluster], bool] | None = None,
    ) -> None:
        """Timed mode: run until ``until_ms`` (or for ``for_ms``), or until ``stop_when(cluster)``
        holds after an event."""
        if (until_ms is None) == (for_ms is None):
            raise ActionError("run needs exactly one of until_ms or for_ms")
        end = until_ms if until_ms is not None else self.sim.now + int(for_ms)  # type: ignore[arg-type]
        if end < self.sim.now:
            raise ActionError(f"until_ms={end} is in the past (now {self.sim.now} ms)")
        stop = (lambda: stop_when(self)) if stop_when is not None else None
        with collector_paused():
            self.sim.run_until(end, stop)

    def at(self, time_ms: int, action: str, *args: Any, **kwargs: Any) -> None:
        """Schedule a step (``"crash"``, ``"produce"``, ...) at simulated ``time_ms``. A step that
        cannot happen then (restart a running broker) is recorded as skipped."""
        method = getattr(self, action, None)
        if action not in STEP_METHODS or method is None:
            raise ActionError(f"unknown action {action!r}: use one of {', '.join(STEP_METHODS)}")

        def fire() -> None:
            try:
                method(*args, **kwargs)
            except ActionError as err:
                self.sim.record("step", "cluster", {"action": action, "skipped": str(err)})

        self.sim.call_at(time_ms, fire)

    def release(self) -> None:
        """Empty a finished run's trace, logs, disks and pending events, so that reference
        counting frees them at once. The actors and the simulation refer to one another, so
        otherwise the cyclic garbage collector must walk every record and event of the run
        to free it (a tenth of a campaign trial's time). Read everything first: the cluster
        holds nothing afterwards."""
        sim = self.sim
        for b in self.running():
            for replica in sim.actors[b].partitions.values():
                replica.log.records.clear()
        self.disks.clear()
        sim.trace.events.clear()
        sim.pending_clear()

    # ---- state -----------------------------------------------------------------------------

    @property
    def now(self) -> int:
        """Simulated time in ms."""
        return self.sim.now

    @property
    def trace(self) -> Trace:
        return self.sim.trace

    @property
    def partition_state(self) -> CommittedPartition:
        """The partition's leader, leader epoch and ISR as the controller committed them (in
        ZooKeeper, when the controller is an elected broker)."""
        return self.partition_states()[self.tp]

    def partition_states(self) -> dict[str, CommittedPartition]:
        """Every partition's committed leader, leader epoch and ISR, by partition name."""
        return self.control.partition_states()

    def metadata_states(self) -> dict[str, CommittedPartition]:
        """Every partition's leader, leader epoch and ISR as the brokers' metadata caches hold
        them, as clients see them: before 2.7 a leader's ISR changes come late (0.8: never)."""
        return self.control.metadata_states()

    @property
    def metadata_isr(self) -> list[int]:
        """The partition's ISR as clients see it in metadata (see :meth:`metadata_states`)."""
        return list(self.metadata_states()[self.tp].isr)

    def partitions(self) -> list[str]:
        """The partition names, such as "demo-0"."""
        return list(self.assignment)

    def partition_name(self, partition: int | str | None) -> str:
        """The full name of a partition: a number N (or "N") is partition N of the default
        topic, the first one; "topic-N" names any partition; None is the default topic's
        partition 0."""
        return self._tp(partition)

    def _tp(self, partition: int | str | None) -> str:
        if partition is None:
            return self.tp
        numbered = isinstance(partition, int) or (
            isinstance(partition, str) and partition.isdigit()
        )
        if isinstance(partition, bool) or not isinstance(partition, int | str):
            tp = None
        else:
            tp = f"{self.topic}-{int(partition)}" if numbered else str(partition)
        if tp not in self.assignment:
            data = [t for t in self.assignment if not t.startswith("__")]
            internal = [t for t in self.assignment if t.startswith("__")]
            also = f" (and {', '.join(internal)})" if internal else ""
            raise ActionError(
                f"partition {partition!r} does not exist: partitions are {', '.join(data)}"
                f"{also}; a number N names partition N of {self.topic}"
            )
        return tp

    @property
    def controller(self) -> Any:
        """The controller: a broker id, "controller" for the dedicated one, the active KRaft
        controller node, or None while there is none."""
        return self.control.controller

    @property
    def controller_epoch(self) -> int:
        """The controller epoch (in KRaft mode, the Raft epoch of the quorum)."""
        return self.control.controller_epoch

    @property
    def leader(self) -> int | None:
        return self.partition_state.leader

    @property
    def leader_epoch(self) -> int:
        return self.partition_state.leader_epoch

    @property
    def isr(self) -> list[int]:
        return list(self.partition_state.isr)

    def running(self) -> list[int]:
        return [b for b in self.broker_ids if b in self.sim.actors]

    def followers(self, partition: int | str | None = None) -> list[int]:
        tp = self._tp(partition)
        return [
            b
            for b in self.running()
            if (r := self.sim.actors[b].partitions.get(tp)) and r.role == "follower"
        ]

    def replica(self, broker: int, partition: int | str | None = None) -> ReplicaView:
        """The state of one replica: its log with offsets and epochs, LEO, HW, epoch cache."""
        self._check_broker(broker)
        return views.replica(self, broker, self._tp(partition))

    def replicas_view(self, partition: int | str | None = None) -> dict[int, ReplicaView]:
        tp = self._tp(partition)
        return {b: self.replica(b, tp) for b in sorted(self.assignment[tp])}

    def logs(self, partition: int | str | None = None) -> dict[int, list[str]]:
        return {b: v.values for b, v in self.replicas_view(partition).items()}

    def producers(self) -> dict[str, dict[str, int]]:
        """The producer id and epoch of each named producer (-1 before it has one): what its
        client holds, or for a crashed one what it last learned."""
        return views.producers(self, self._client_steps.kinds())

    def report(self) -> Any:
        """The end-of-run report (a :class:`kafkalab.Report`): acknowledged records lost,
        divergence, HW regressions, two leaders in one epoch, and every client error."""
        return self.monitor.report()

    def state(self) -> dict[str, Any]:
        """Everything an expect block can check, as plain data (broker ids as keys)."""
        return views.state(self)

    def txn_states(self) -> dict[str, str]:
        """Each transactional id's state at its coordinator (as last written)."""
        return views.txn_states(self)

    def lso(self) -> dict[str, int]:
        """The last stable offset of each data partition, at its leader: read_committed
        consumers read below it."""
        return views.lso(self)


# Cluster.at schedules the steps the step vocabulary (kafkalab.sim.actions) marks timed.
from kafkalab.sim.actions import ActionView, parse_acks  # noqa: E402

STEP_METHODS: ActionView[str] = ActionView(lambda a: a.timed, lambda a: a.method_name)
