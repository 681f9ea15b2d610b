"""The Cluster: replicated partitions of one topic (or several) on a set of brokers, with
ZooKeeper and a controller.

This is the facade lessons and scenarios use. In **stepped** mode nothing happens unless a step
asks for it: each step runs to quiescence (the messages it causes are delivered), followers fetch
only when told, and timers fire only when time is advanced. In **timed** mode followers fetch on
their own, messages take time, and workloads and faults are scheduled.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.check.invariants import InvariantMonitor, Report, build_report
from kafkalab.config import Config, check_min_isr, make_config, normalize_key
from kafkalab.errors import ActionError, ConfigError, did_you_mean
from kafkalab.protocol import messages as msgs
from kafkalab.protocol.assignment import assign_replicas
from kafkalab.protocol.broker import Broker, FetchNow, Reconfigure, Stop
from kafkalab.protocol.client import (
    KafkaProducer,
    ProduceCommand,
    ProducerSettings,
    TxnCommand,
    idempotence_fits,
)
from kafkalab.protocol.consumer import ConsumerSettings, KafkaConsumer, Poll
from kafkalab.protocol.controller import (
    ControllerNode,
    PartitionState,
    ZooKeeper,
    partition_metrics,
)
from kafkalab.protocol.kraft import PartitionRegistration
from kafkalab.protocol.kraft_node import KRaftNode
from kafkalab.protocol.log import Disk, Log
from kafkalab.protocol.offsets import offsets_partition
from kafkalab.protocol.producer import Producer, Send
from kafkalab.protocol.rules import DEFAULT_RULES, Rules
from kafkalab.protocol.transactions import txn_partition
from kafkalab.sim.engine import Simulation
from kafkalab.sim.trace import Trace

__all__ = ["Cluster", "ReplicaView"]

MODES = ("stepped", "timed")
MAX_BROKERS = 64
CLIENT_HOST = "client"
CONTROLLER_NODES = ("c1", "c2", "c3")  # the KRaft controller quorum
ACTIVE_CONTROLLER = "active"  # a step's name for whichever KRaft controller node is active
# Settings a running cluster can change (IncrementalAlterConfigs, KIP-339; dynamic broker
# configs, KIP-226, 1.1), cluster-wide or for one broker, and the topic-level ones.
DYNAMIC_BROKER_KEYS = (
    "unclean_leader_election_enable",
    "min_insync_replicas",
    "transaction_partition_verification_enable",
)
TOPIC_KEYS = ("unclean_leader_election_enable", "min_insync_replicas")
ALTER_PARTITION_ANSWERS = ("delayed", "lost", "refused")
ALTER_PARTITION_ERRORS = (
    msgs.INVALID_UPDATE_VERSION,
    msgs.FENCED_LEADER_EPOCH,
    msgs.INELIGIBLE_REPLICA,
    msgs.NOT_CONTROLLER,
    msgs.NEW_LEADER_ELECTED,
    msgs.UNKNOWN_TOPIC_OR_PARTITION,
    msgs.INVALID_REQUEST,
    msgs.UNKNOWN_SERVER_ERROR,
)


@dataclass(frozen=True)
class ReplicaView:
    """What one replica holds right now (or, for a stopped broker, what its disk holds)."""

    broker: int
    running: bool
    role: str | None
    leader: int | None
    leader_epoch: int
    records: tuple[tuple[int, str, int], ...]  # (offset, value, leader epoch)
    leo: int
    hw: int
    hw_checkpoint: int
    flushed: int
    epoch_cache: tuple[tuple[int, int], ...]  # (epoch, start offset)
    isr: tuple[int, ...]  # the ISR as this replica knows it (meaningful on the leader)
    log_start_offset: int = 0  # the first offset readers may fetch (DeleteRecords, KIP-107)

    @property
    def values(self) -> list[str]:
        return [value for _, value, _ in self.records]


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

    >>> c = Cluster(brokers=2, leader=2, config={"preset": "0.10"})
    >>> c.produce("m1", acks=1)
    ['m1']
    """

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
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"mode={mode!r} is not allowed: use 'stepped' or 'timed'")
        if (
            isinstance(brokers, bool)
            or not isinstance(brokers, int)
            or not 1 <= brokers <= MAX_BROKERS
        ):
            raise ConfigError(f"brokers={brokers!r} is not allowed: use 1..{MAX_BROKERS}")
        self.config = config if isinstance(config, Config) else make_config(config or {})
        self._static_config = self.config  # what the brokers started with
        self._dynamic: dict[str, Any] = {}  # cluster-wide dynamic settings
        self._broker_dynamic: dict[int, dict[str, Any]] = {}  # per-broker dynamic settings
        self._topic_overrides: dict[str, Any] = {}  # topic-level settings
        if rules is not None and not isinstance(rules, Rules):
            raise ConfigError(
                f"rules={rules!r} is not allowed: use kafkalab.Rules(...) or None for Kafka's"
            )
        self.rules = rules or DEFAULT_RULES
        self.mode = mode
        if replication not in ("manual", "auto"):
            raise ConfigError(
                f"replication={replication!r} is not allowed: use 'manual' (followers fetch "
                "when told, in stepped mode) or 'auto' (they fetch on their own)"
            )
        self.replication = replication
        self.seed = seed
        self.broker_ids = list(range(1, brokers + 1))
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
            raise ConfigError(f"partitions={partitions!r} is not allowed: use a whole number >= 1")
        self.racks = dict(racks or {})
        if topics is None:
            self.topic = topic
            self.topics = [topic]
            self.assignment = self._assign(topic, partitions, leader, replicas)
        else:
            self.assignment = self._assign_topics(topics, topic, partitions, leader, replicas)
        self.tp = f"{self.topic}-0"  # the partition the single-partition API talks about
        self.replicas = self.assignment[self.tp]
        for tp_replicas in self.assignment.values():
            check_min_isr(self.config, len(tp_replicas))
        self._add_internal_partitions(transactional_ids, groups)
        self._clients: dict[str, tuple[str, Any]] = {}  # name -> (kind, settings) for restarts
        lat = latency_ms if mode == "timed" else (0, 0)
        if lat[0] < 0 or lat[1] < lat[0]:
            raise ConfigError(
                f"latency_ms={latency_ms!r} is not allowed: use (low, high), 0 <= low <= high"
            )
        if not 0.0 <= loss_rate < 1.0:
            raise ConfigError(f"loss_rate={loss_rate!r} is not allowed: use 0 <= loss_rate < 1")
        self.sim = Simulation(
            seed=seed, latency_ms=lat, trace_messages=trace_messages, loss_rate=loss_rate
        )
        self.sim.on_halt = self._on_halt
        self.disks: dict[int, dict[str, Disk]] = {}
        self._stopped_nodes: dict[str, Any] = {}  # crashed KRaft controller nodes
        self._clean_stops: set[int] = set()  # brokers whose last run ended cleanly
        self.monitor = InvariantMonitor(self, raise_on_violation=check_invariants)
        self.sim.observers.append(self.monitor.observe)
        self._steps = 0
        self._start()

    # ---- construction ----------------------------------------------------------------------

    def _assign(
        self,
        topic: str,
        partitions: int,
        leader: int | None,
        replicas: Any,
        rf: int | None = None,
        stream: str = "assignment",
    ) -> dict[str, list[int]]:
        """Partition 0 alone follows ``leader``/``replicas``; several partitions are placed as
        Kafka's AdminUtils does (racks included), unless ``replicas`` maps each one. ``stream``
        names the random stream the placement draws from."""
        if isinstance(replicas, Mapping):
            if sorted(replicas) != list(range(partitions)):
                raise ConfigError(
                    f"replicas={dict(replicas)!r} is not allowed: map every partition "
                    f"0..{partitions - 1} to its brokers"
                )
            return {
                f"{topic}-{p}": self._choose_replicas(None, r, rf, stream)
                for p, r in sorted(replicas.items())
            }
        if partitions == 1:
            return {f"{topic}-0": self._choose_replicas(leader, replicas, rf, stream)}
        if leader is not None or replicas is not None:
            raise ConfigError(
                "leader and a replica list describe one partition: with partitions > 1 give "
                "replicas as a mapping {partition: [brokers]}, or let Kafka's assignment choose"
            )
        rf = self._replication_factor(rf)
        rng = random.Random(f"{self.seed}:{stream}")
        placed = assign_replicas(self.broker_ids, partitions, rf, rng, racks=self.racks or None)
        return {f"{topic}-{p}": r for p, r in sorted(placed.items())}

    def _assign_topics(
        self, topics: Any, topic: str, partitions: int, leader: Any, replicas: Any
    ) -> dict[str, list[int]]:
        """Place each of several topics as Kafka places a topic it creates: the first one draws
        from the cluster's assignment stream (so ``topics={"demo": 3}`` is ``partitions=3``),
        each further one from its own, so its random start index is its own."""
        if partitions != 1 or replicas is not None or leader is not None:
            raise ConfigError(
                "partitions, replicas and leader describe the one topic: with topics=... give "
                "each topic its partitions and replicas, like {'foo': {'partitions': 2, "
                "'replicas': 2}}"
            )
        specs = _topic_specs(topics, len(self.broker_ids))
        if topic not in ("demo", specs[0][0]):
            raise ConfigError(
                f"topic={topic!r} is not allowed with topics: the first of topics "
                f"({specs[0][0]!r}) is the default topic"
            )
        self.topic = specs[0][0]
        self.topics = [name for name, *_ in specs]
        assignment: dict[str, list[int]] = {}
        for i, (name, count, placement, rf) in enumerate(specs):
            stream = "assignment" if i == 0 else f"assignment:{name}"
            try:
                assignment.update(self._assign(name, count, None, placement, rf, stream))
            except (ConfigError, ActionError) as err:
                raise ConfigError(f"topic {name!r}: {err}") from None
        return assignment

    def _add_internal_partitions(
        self, transactional_ids: Iterable[str], groups: Iterable[str]
    ) -> None:
        """Kafka creates __transaction_state and __consumer_offsets (50 partitions each,
        replication factor 3) on first use; the simulator creates, at start, the partitions the
        given transactional ids and groups map to, and only those."""
        wanted = [txn_partition(str(t)) for t in transactional_ids]
        wanted += [offsets_partition(str(g)) for g in groups]
        rf = min(3, len(self.broker_ids))
        for tp in sorted(set(wanted)):
            rng = random.Random(f"{self.seed}:{tp}")
            self.assignment[tp] = assign_replicas(self.broker_ids, 1, rf, rng)[0]

    def _replication_factor(self, rf: int | None = None) -> int:
        rf = rf or self.config.replication_factor or len(self.broker_ids)
        if rf > len(self.broker_ids):
            raise ConfigError(
                f"replication.factor={rf} is not allowed with {len(self.broker_ids)} brokers: "
                f"use 1..{len(self.broker_ids)}"
            )
        return rf

    def _choose_replicas(
        self,
        leader: int | None,
        replicas: Iterable[int] | None,
        rf: int | None = None,
        stream: str = "assignment",
    ) -> list[int]:
        rf = self._replication_factor(rf)
        if rf > len(self.broker_ids):
            raise ConfigError(
                f"replication.factor={rf} is not allowed with {len(self.broker_ids)} brokers: "
                f"use 1..{len(self.broker_ids)}"
            )
        if replicas is not None:
            chosen = list(replicas)
            for b in chosen:
                self._check_broker(b)
            if len(set(chosen)) != len(chosen) or not chosen:
                raise ConfigError(f"replicas={chosen!r} is not allowed: list distinct broker ids")
        elif leader is not None:
            self._check_broker(leader)
            chosen = [leader] + [b for b in self.broker_ids if b != leader][: rf - 1]
        elif rf == len(self.broker_ids):
            chosen = list(self.broker_ids)
        else:
            rng = random.Random(f"{self.seed}:{stream}")
            chosen = assign_replicas(self.broker_ids, 1, rf, rng, racks=self.racks or None)[0]
        if leader is not None and leader not in chosen:
            raise ConfigError(
                f"leader={leader} is not allowed: it must be one of the replicas {chosen}"
            )
        if leader is not None and chosen[0] != leader:
            chosen.remove(leader)
            chosen.insert(0, leader)
        return chosen

    def _start(self) -> None:
        partitions = {
            tp: PartitionState(tuple(r), r[0], 0, tuple(r)) for tp, r in self.assignment.items()
        }
        if self.kraft:
            self._start_quorum()
        elif self.config.controller_mode == "zk":
            self.sim.add("zk", ZooKeeper(self.config, partitions, elected=True), "zk")
        else:
            self.sim.add("zk", ZooKeeper(self.config), "zk")
            self.sim.add("controller", ControllerNode(self.config, partitions), "zk")
        self.sim.add("producer", Producer("producer"), CLIENT_HOST)
        for b in self.broker_ids:
            self._start_broker(b, {tp: Disk() for tp, r in self.assignment.items() if b in r})
        self._settle()
        if self.kraft and self.mode == "stepped":
            # A KRaft cluster needs a moment: the quorum elects its leader, the brokers register
            # and are unfenced. A stepped lesson starts once every replica knows its role.
            self.sim.run_until(self.sim.now + 120000, self._kraft_ready)
            self._settle()

    @property
    def kraft(self) -> bool:
        return self.config.controller_mode == "kraft"

    def _start_quorum(self, nodes: Iterable[str] = CONTROLLER_NODES) -> None:
        for node in nodes:
            self._start_controller_node(node, None)

    def _start_controller_node(self, node: str, store: Any) -> None:
        timeout = self.config.controller_quorum_election_timeout_ms
        rng = self.sim.stream(f"raft:{node}")
        draws = (rng.randrange(timeout) for _ in itertools.count())
        partitions = {
            tp: PartitionRegistration(tuple(r), r[0], 0, tuple(r))
            for tp, r in self.assignment.items()
        }
        actor = KRaftNode(
            node, CONTROLLER_NODES, self.config, partitions, election_draws=draws, store=store
        )
        self.sim.add(node, actor, node)

    def _kraft_ready(self) -> bool:
        active = self._active_node()
        if active is None:
            return False
        if any(b not in active.brokers or active.brokers[b].fenced for b in self.broker_ids):
            return False
        for tp, replicas in self.assignment.items():
            for b in replicas:
                actor = self.sim.actors.get(b)
                if actor is None or actor.partitions[tp].role is None:
                    return False
        return True

    def _active_node(self) -> Any:
        """The active KRaft controller: of the nodes that believe they are active (a paused
        former leader may still believe it), the one in the highest Raft epoch."""
        active = [
            actor
            for node in CONTROLLER_NODES
            if (actor := self.sim.actors.get(node)) is not None and actor.active
        ]
        return max(active, key=lambda a: a.controller_epoch) if active else None

    def _start_broker(self, b: int, disks: dict[str, Disk], clean: bool = False) -> None:
        nodes = CONTROLLER_NODES if self.kraft else ()
        broker = Broker(
            b,
            self._broker_config(b),
            disks,
            auto_fetch=self.mode == "timed" or self.replication == "auto",
            controller_nodes=nodes,
            clean_restart=clean,
            rules=self.rules,
        )
        self.sim.add(b, broker, b)

    def _settle(self) -> None:
        if self.mode == "stepped":
            self.sim.run_until(self.sim.now)

    def _check_broker(self, b: Any) -> int:
        if isinstance(b, bool) or not isinstance(b, int) or b not in self.broker_ids:
            raise ActionError(f"broker {b!r} does not exist: brokers are {self._broker_range()}")
        return b

    def _broker_range(self) -> str:
        return f"1..{len(self.broker_ids)}" if len(self.broker_ids) > 1 else "1"

    def _running_broker(self, b: Any) -> Broker:
        self._check_broker(b)
        actor = self.sim.actors.get(b)
        if actor is None:
            raise ActionError(f"broker {b} is not running: restart it first")
        return actor

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
        handles the request but its answer never arrives; ``request`` "lost": the request never
        arrives; "delayed" (a named client's request only): it arrives ``delay_ms`` later. With
        ``producer`` naming a client made by :meth:`producer`, that client sends (and retries)
        the batch with its own settings. Returns the values sent."""
        tp = self._tp(partition)
        batch = self._batch(value, values, count)
        acks_value = self._acks(acks)
        if to is not None:
            self._check_broker(to)
        client = self.sim.actors.get(producer)
        requests = (
            ("ok", "lost", "delayed") if isinstance(client, KafkaProducer) else ("ok", "lost")
        )
        if response not in ("ok", "lost") or request not in requests:
            bad = response if response not in ("ok", "lost") else request
            raise ActionError(
                f"{bad!r} is not allowed for request/response: use ok or lost (a named "
                "producer's request can also be delayed)"
            )
        if isinstance(client, KafkaProducer):
            if acks is not None or producer_id is not None:
                raise ActionError(
                    f"producer {producer!r} has its own settings: acks and producer ids are "
                    "set when it is created"
                )
            return self._client_produce(client, tp, batch, request, response, int(delay_ms))
        if producer_id is not None and (
            not isinstance(sequence, int) or isinstance(sequence, bool) or sequence < 0
        ):
            raise ActionError(
                f"sequence={sequence!r} is not allowed: an idempotent batch (producer_id "
                f"{producer_id}) needs its first sequence number, a whole number >= 0"
            )
        self._step("produce", values=batch, acks=acks_value, partition=tp)
        self._producer(producer)
        leader = self.partition_states()[tp].leader if to is None else to
        idempotent = producer_id is not None and self.config.enable_idempotence
        pid = int(producer_id) if idempotent else -1  # type: ignore[arg-type]
        cmd = Send(
            tp,
            tuple(batch),
            acks_value,
            leader,
            self.config.request_timeout_ms,
            pid,
            producer_epoch if pid >= 0 else -1,
            sequence if pid >= 0 else -1,
        )
        if response == "lost" and leader is not None:
            self.sim.add_rule(leader, producer, (msgs.ProduceResponse,), None)
        self.sim.command(producer, cmd)
        self._settle()
        return batch

    def _batch(self, value: Any, values: Any, count: Any) -> list[str]:
        if values is not None:
            batch = [str(v) for v in values]
        elif value is None:
            raise ActionError("produce needs a value (or values)")
        elif count is not None:
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ActionError(f"count={count!r} is not allowed: use a whole number >= 1")
            batch = [f"{value}-{i}" for i in range(1, count + 1)]
        else:
            batch = [str(value)]
        if not batch:
            raise ActionError("produce needs at least one value")
        return batch

    def _acks(self, acks: Any) -> int:
        if acks is None:
            return self.config.acks_value
        text = str(acks).strip().lower()
        if text not in ("0", "1", "all", "-1"):
            raise ActionError(f"acks={acks!r} is not allowed: use 0, 1 or all (-1)")
        return -1 if text in ("all", "-1") else int(text)

    def producer(self, name: str, **settings: Any) -> None:
        """Create a named producer client with Kafka's producer settings (``acks``,
        ``enable.idempotence``, ``max.in.flight.requests.per.connection``, ``retries``,
        ``retry.backoff.ms``, ``request.timeout.ms``, ``delivery.timeout.ms``; dots or
        underscores). Defaults follow the cluster's config: idempotence as
        ``enable.idempotence`` says, with acks=all."""
        if not isinstance(name, str) or not name or name in self.sim.actors:
            raise ActionError(f"producer name {name!r} is not allowed: use a new, non-empty name")
        values = _client_settings("producer", ProducerSettings, settings)
        # The producer's own default follows the release: acks=1 before 3.0, all since (KIP-679).
        values["acks"] = self._acks(values.get("acks", self.config.acks))
        if "enable_idempotence" not in values:
            values["enable_idempotence"] = self.config.enable_idempotence and idempotence_fits(
                values["acks"],
                values.get("retries", 1),
                values.get("max_in_flight_requests_per_connection", 5),
            )
        values.setdefault("request_timeout_ms", self.config.request_timeout_ms)
        txn_id = values.get("transactional_id")
        if txn_id:
            self._check_internal(txn_partition(str(txn_id)), "transactional_ids", txn_id)
            values["transaction_version"] = self.config.transaction_version
        try:
            settings_obj = ProducerSettings(**values)
        except (ConfigError, TypeError) as err:
            raise ActionError(f"producer {name!r}: {err}") from None
        self._step("producer", name=name, settings=values)
        self._clients[name] = ("producer", settings_obj)
        self._start_client(name)

    def _check_internal(self, tp: str, argument: str, value: Any) -> None:
        if tp not in self.assignment:
            raise ActionError(
                f"{value!r} has no coordinator partition ({tp}) in this cluster: list it when "
                f"the cluster is made, Cluster(..., {argument}=[{value!r}]) or, in a scenario, "
                f"the top-level {argument} key"
            )

    def _start_client(self, name: str) -> None:
        kind, settings = self._clients[name]
        brokers = tuple(self.broker_ids)
        if kind == "producer":
            client: Any = KafkaProducer(name, settings, brokers)
            host = name if settings.transactional_id else CLIENT_HOST
        else:
            settings, tps = settings
            client = KafkaConsumer(name, settings, brokers, tps)
            host = name
        self.sim.add(name, client, host)
        self._settle()
        self._await_client(name)

    def _await_client(self, name: str) -> None:
        """With replication "auto" in stepped mode, a client step runs until the client has
        its answers, at most request.timeout.ms of simulated time: a lesson about transactions
        steps through calls, not fetches."""
        if self.mode != "stepped" or self.replication != "auto":
            return
        client = self.sim.actors.get(name)
        if client is None or self._host_paused(name):
            return

        if not client.idle:
            self.sim.run_until(self.sim.now + self.config.request_timeout_ms, lambda: client.idle)
            self._settle()

    def consumer(
        self, name: str, *, partitions: Iterable[int | str] | None = None, **settings: Any
    ) -> None:
        """Create a named consumer of ``partitions`` (default: every partition of the topic)
        with Kafka's consumer settings (``group.id``, ``isolation.level``,
        ``enable.auto.commit``, ``auto.commit.interval.ms``, ``max.poll.records``). It starts
        at its group's committed offsets, or at the beginning."""
        if (
            not isinstance(name, str)
            or not name
            or name in self.sim.actors
            or name in self._clients
        ):
            raise ActionError(f"consumer name {name!r} is not allowed: use a new, non-empty name")
        aliases = {"group": "group.id"}
        values = _client_settings("consumer", ConsumerSettings, settings, aliases)
        if values.get("group_id"):
            self._check_internal(
                offsets_partition(str(values["group_id"])), "groups", values["group_id"]
            )
        data = [tp for tp in self.assignment if not tp.startswith("__")]
        tps = tuple(self._tp(p) for p in partitions) if partitions is not None else tuple(data)
        try:
            settings_obj = ConsumerSettings(**values)
        except (ConfigError, TypeError) as err:
            raise ActionError(f"consumer {name!r}: {err}") from None
        self._step("consumer", name=name, settings=values, partitions=list(tps))
        self._clients[name] = ("consumer", (settings_obj, tps))
        self._start_client(name)

    def _client(self, name: Any, kind: str) -> Any:
        actor = self.sim.actors.get(name)
        known = self._clients.get(name)
        if known is None or known[0] != kind:
            names = [n for n, (k, _) in self._clients.items() if k == kind] or ["none yet"]
            raise ActionError(f"{kind} {name!r} does not exist: {kind}s are {', '.join(names)}")
        if actor is None:
            raise ActionError(f"{kind} {name!r} has crashed: restart it first")
        return actor

    def _txn(self, producer: str, op: str, **args: Any) -> None:
        client = self._client(producer, "producer")
        if not client.transactional:
            raise ActionError(f"producer {producer!r} has no transactional.id: it cannot {op}")
        self._step(op, producer=producer, **args)
        self.sim.command(producer, TxnCommand(op, **args))
        self._settle()
        self._await_client(producer)

    def begin(self, producer: str) -> None:
        """beginTransaction: the producer's next sends belong to a new transaction."""
        self._txn(producer, "begin")

    def commit(self, producer: str) -> None:
        """commitTransaction: once every send is answered, EndTxn(commit) to the coordinator,
        which writes PrepareCommit, then COMMIT markers, then CompleteCommit."""
        self._txn(producer, "commit")

    def abort(self, producer: str) -> None:
        """abortTransaction: unsent records are dropped; EndTxn(abort), then ABORT markers."""
        self._txn(producer, "abort")

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
        if consumer is not None:
            c = self._client(consumer, "consumer")
            group = c.settings.group_id
            pairs = tuple(sorted(c.positions.items()))
        else:
            pairs = tuple(sorted((self._tp(tp), int(o)) for tp, o in (offsets or {}).items()))
        if not group:
            raise ActionError("send_offsets needs a consumer with a group.id, or a group")
        self._check_internal(offsets_partition(group), "groups", group)
        self._txn(producer, "send_offsets", group=group, offsets=pairs)

    def poll(self, consumer: str, *, process: bool = True) -> None:
        """The consumer fetches from each partition's leader and hands the records to the
        application (processed at once unless ``process`` is false)."""
        self._client(consumer, "consumer")
        self._step("poll", consumer=consumer, process=process)
        self.sim.command(consumer, Poll("poll", process))
        self._settle()
        self._await_client(consumer)

    def process(self, consumer: str) -> None:
        """The application processes what earlier polls returned."""
        self._client(consumer, "consumer")
        self._step("process", consumer=consumer)
        self.sim.command(consumer, Poll("process"))
        self._settle()
        self._await_client(consumer)

    def commit_offsets(self, consumer: str) -> None:
        """commitSync: write the consumer's position to its group coordinator."""
        self._client(consumer, "consumer")
        self._step("commit_offsets", consumer=consumer)
        self.sim.command(consumer, Poll("commit"))
        self._settle()
        self._await_client(consumer)

    def _crash_client(self, name: str) -> None:
        if name not in self.sim.actors:
            raise ActionError(f"client {name!r} is not running: restart it first")
        self._step("crash", broker=name)
        self.sim.remove(name)
        self.sim.record("crash", name, {"client": True})
        self._settle()

    def _restart_client(self, name: str) -> None:
        if name in self.sim.actors:
            raise ActionError(f"client {name!r} is already running: crash it first")
        self._step("restart", broker=name)
        self.sim.record("restart", name, {"client": True})
        self._start_client(name)

    def _client_produce(
        self,
        client: KafkaProducer,
        tp: str,
        batch: list[str],
        request: str,
        response: str,
        delay_ms: int = 1000,
    ) -> list[str]:
        self._step("produce", values=batch, producer=client.name, partition=tp)
        leader = self.partition_states()[tp].leader
        if leader is not None and request != "ok":
            delay = None if request == "lost" else delay_ms
            self.sim.add_rule(client.name, leader, (msgs.ProduceRequest,), delay)
        if leader is not None and response == "lost":
            self.sim.add_rule(leader, client.name, (msgs.ProduceResponse,), None)
        self.sim.command(client.name, ProduceCommand(tp, tuple(batch)))
        self._settle()
        self._await_client(client.name)
        return batch

    def _producer(self, name: str) -> None:
        if name not in self.sim.actors:
            self.sim.add(name, Producer(name), CLIENT_HOST)

    def fetch(
        self,
        follower: int,
        *,
        response: str = "ok",
        delay_ms: int = 1000,
        partition: int | str | None = None,
        max_wait_ms: int | None = None,
    ) -> None:
        """Follower ``follower`` does its next round trip with the leader: a Fetch, or an
        OffsetsForLeaderEpoch request when it must first find its truncation point.
        ``response`` is "ok", "lost" (the leader handles the request; the answer never arrives)
        or "delayed" (it arrives ``delay_ms`` later, once time is advanced).

        A fetch that finds nothing new waits in the leader's fetch purgatory (up to
        replica.fetch.wait.max.ms) and is answered with the HW read again at the end, which this
        fetch may have raised; the wait passes within the step. ``max_wait_ms=0`` asks the
        leader to answer at once instead, with the HW it read before applying this fetch."""
        broker = self._running_broker(follower)
        if response not in ("ok", "lost", "delayed"):
            raise ActionError(f"response={response!r} is not allowed: use ok, lost or delayed")
        if max_wait_ms is not None and (
            isinstance(max_wait_ms, bool) or not isinstance(max_wait_ms, int) or max_wait_ms < 0
        ):
            raise ActionError(
                f"max_wait_ms={max_wait_ms!r} is not allowed: use a whole number of ms >= 0 "
                "(0: the leader answers at once)"
            )
        tp = self._tp(partition)
        r = broker.partitions.get(tp)
        if r is None or r.role != "follower":
            what = "the leader" if r is not None and r.role == "leader" else "not a follower"
            raise ActionError(
                f"broker {follower} is {what} of {tp}: only a follower fetches "
                f"(followers now: {self.followers(tp) or 'none'})"
            )
        if self._host_paused(follower):
            raise ActionError(f"broker {follower} is paused: resume it before it can fetch")
        args = {} if max_wait_ms is None else {"max_wait_ms": max_wait_ms}
        self._step("fetch", follower=follower, response=response, **args)
        if response != "ok":
            self.sim.add_rule(
                r.leader,
                follower,
                (msgs.FetchResponse, msgs.OffsetsForLeaderEpochResponse),
                None if response == "lost" else int(delay_ms),
            )
        self.sim.command(follower, FetchNow(tp, max_wait_ms))
        self._settle()

    def crash(self, broker: int, *, lose_unflushed: bool = False) -> None:
        """Stop a broker. A process crash keeps the page cache; a power loss
        (``lose_unflushed``) keeps only what was flushed to disk. In KRaft mode a controller
        node ("c1", "c2", "c3", or "active": whichever is active now) can crash too; it keeps
        its quorum state and metadata log."""
        if broker == ACTIVE_CONTROLLER:
            broker = self._active_name()  # type: ignore[assignment]
        if self.kraft and broker in CONTROLLER_NODES:
            self._crash_controller_node(str(broker))
            return
        if broker in self._clients:
            self._crash_client(str(broker))
            return
        self._running_broker(broker)
        self._step("crash", broker=broker, lose_unflushed=lose_unflushed)
        self._crash(broker, lose_unflushed, None)
        self._settle()

    def _crash(
        self, broker: int, lose_unflushed: bool, reason: str | None, clean: bool = False
    ) -> None:
        actor = self.sim.remove(broker)
        self.disks[broker] = actor.disks(lose_unflushed)
        if clean:
            self._clean_stops.add(broker)
            self.sim.record("stopped", broker, {"reason": reason})
            return
        self._clean_stops.discard(broker)
        data: dict[str, Any] = {"lose_unflushed": lose_unflushed}
        if reason:
            data["halted"] = reason
        self.sim.record("crash", broker, data)

    def _on_halt(self, broker: Any, reason: str, clean: bool) -> None:
        if broker in self.sim.actors:
            self._crash(broker, False, reason, clean)

    def restart(self, broker: int) -> None:
        """Start a stopped broker (or KRaft controller node) again from what its disk holds."""
        if broker == ACTIVE_CONTROLLER:
            stopped = ", ".join(self._stopped_nodes) or "none"
            raise ActionError(
                f"restart names the node to start, not {ACTIVE_CONTROLLER!r}: stopped controller "
                f"nodes are {stopped}"
            )
        if self.kraft and broker in CONTROLLER_NODES:
            self._restart_controller_node(str(broker))
            return
        if broker in self._clients:
            self._restart_client(str(broker))
            return
        self._check_broker(broker)
        if broker in self.sim.actors:
            raise ActionError(f"broker {broker} is already running: crash it before a restart")
        self._step("restart", broker=broker)
        disks = self.disks.pop(broker)
        self._start_broker(broker, disks, clean=broker in self._clean_stops)
        self._clean_stops.discard(broker)
        r = self.sim.actors[broker].partitions.get(self.tp)
        self.sim.record(
            "restart", broker, {"leo": r.log.leo if r else 0, "hw": r.log.hw if r else 0}
        )
        self._settle()

    def _crash_controller_node(self, node: str) -> None:
        if node not in self.sim.actors:
            raise ActionError(f"controller node {node} is not running: restart it first")
        self._step("crash", broker=node)
        actor = self.sim.remove(node)
        self._stopped_nodes[node] = actor
        self.sim.record("crash", node, {"lose_unflushed": False})
        self._settle()

    def _restart_controller_node(self, node: str) -> None:
        if node in self.sim.actors:
            raise ActionError(f"controller node {node} is already running: crash it first")
        self._step("restart", broker=node)
        stopped = self._stopped_nodes.pop(node)
        self._start_controller_node(node, stopped.disk())
        self.sim.record("restart", node, {})
        self._settle()

    def flush(self, broker: int) -> None:
        """fsync the broker's log and write its HW checkpoint."""
        actor = self._running_broker(broker)
        self._step("flush", broker=broker)
        for r in actor.partitions.values():
            r.log.flush()
        self.sim.record("flush", broker, {})
        self._settle()

    def stop(self, broker: int) -> None:
        """Stop a broker cleanly: a controlled shutdown first moves its leaderships to other ISR
        replicas and takes it out of every ISR, then it flushes and closes its session."""
        self._running_broker(broker)
        if self._host_paused(broker):
            raise ActionError(f"broker {broker} is paused: resume it before a clean stop")
        self._step("stop", broker=broker)
        self.sim.command(broker, Stop())
        self._settle()
        if self.mode == "stepped" and broker in self.sim.actors:
            # No controller answered (it is cut off, paused or gone): stop without it, as
            # Kafka does after its retries.
            self.sim.run_until(self.sim.now + self.config.request_timeout_ms)

    def pause(self, node: Any) -> None:
        """Stall a node (a long GC pause, a frozen VM): it handles nothing and sends nothing;
        what reaches it waits. Its ZooKeeper session can expire meanwhile."""
        host = self._node(node)
        if host in self.sim.paused:
            raise ActionError(f"{node!r} is already paused: resume it first")
        if isinstance(host, int) and host not in self.sim.actors:
            raise ActionError(f"broker {host} is not running: there is nothing to pause")
        self._step("pause", node=node)
        self.sim.pause(host)
        self.sim.record("pause", "network", {"node": host})
        self._settle()

    def resume(self, node: Any) -> None:
        """Let a paused node run again: it handles what waited, oldest first, with the state
        it had (a zombie, if others moved on)."""
        host = self._node(node)
        if host not in self.sim.paused:
            raise ActionError(f"{node!r} is not paused")
        self._step("resume", node=node)
        self.sim.record("resume", "network", {"node": host})
        self.sim.resume(host)
        self._settle()

    def _host_paused(self, node: Any) -> bool:
        return self.sim.hosts.get(node, node) in self.sim.paused

    def elect_preferred(self, partition: str | None = None) -> None:
        """Ask the controller to move leadership back to each partition's preferred replica
        (the first assigned) where it is alive and in the ISR."""
        tp = None if partition is None else self._tp(partition)
        target = self.controller
        if target is None:
            raise ActionError("no controller is elected right now")
        self._step("elect_preferred", partition=tp)
        self.sim.send("client", target, msgs.ElectPreferredLeaders(tp))
        self._settle()

    def advance(self, ms: int) -> None:
        """Let ``ms`` simulated milliseconds pass: due timers fire (ISR expiry, session expiry,
        request timeouts, checkpoints) and what they cause is delivered."""
        if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
            raise ActionError(f"advance={ms!r} is not allowed: use a whole number of ms >= 0")
        self._step("advance", ms=ms)
        self.sim.run_until(self.sim.now + ms)

    # ---- settings, record deletion, ISR changes --------------------------------------------

    def _broker_config(self, broker: int | None) -> Config:
        """The settings a broker applies (``None``: the cluster-wide ones): static, then the
        cluster-wide dynamic ones, then its own, then the topic's, which win (LogConfig)."""
        own = self._broker_dynamic.get(broker, {}) if broker is not None else {}
        layered = {**self._dynamic, **own, **self._topic_overrides}
        return self._static_config.replace(**layered) if layered else self._static_config

    def set_config(
        self, settings: Mapping[str, Any], *, broker: int | None = None, topic: str | None = None
    ) -> None:
        """Change settings while the cluster runs, as IncrementalAlterConfigs does (KIP-339):
        cluster-wide, for one ``broker`` (dynamic broker configs, KIP-226, 1.1), or for a
        ``topic`` (a topic-level setting beats the brokers'). Brokers apply the new settings
        at once; the controller also elects a leader for any leaderless partition the new
        settings allow (unclean.leader.election.enable turned on: KAFKA-6835, 2.1)."""
        if broker is not None and topic is not None:
            raise ActionError("set takes a broker or a topic, not both")
        if not isinstance(settings, Mapping) or not settings:
            raise ActionError("set needs at least one setting, like {min.insync.replicas: 2}")
        allowed = TOPIC_KEYS if topic is not None else DYNAMIC_BROKER_KEYS
        changes = {normalize_key(k): v for k, v in settings.items()}
        for key in changes:
            if key not in allowed:
                what = "a topic" if topic is not None else "a running cluster"
                names = ", ".join(k.replace("_", ".") for k in allowed)
                raise ActionError(
                    f"{key.replace('_', '.')} cannot be changed for {what}: use one of {names}"
                )
        if topic is not None and topic not in self.topics:
            raise ActionError(
                f"topic {topic!r} does not exist: topics are {', '.join(map(repr, self.topics))}"
            )
        if topic is not None and len(self.topics) > 1:
            raise ActionError(
                f"a topic-level setting needs a cluster with one topic, and this one has "
                f"{', '.join(self.topics)}: set it for every broker (leave out topic)"
            )
        if broker is not None:
            self._check_broker(broker)
        saved = (dict(self._dynamic), dict(self._topic_overrides), dict(self._broker_dynamic))
        target = (
            self._topic_overrides
            if topic is not None
            else self._dynamic
            if broker is None
            else self._broker_dynamic.setdefault(broker, {})
        )
        target.update(changes)
        try:
            configs = {b: self._broker_config(b) for b in self.broker_ids}
            cluster_config = self._broker_config(None)
            for tp, replicas in self.assignment.items():
                if not tp.startswith("__"):
                    check_min_isr(cluster_config, len(replicas))
        except ConfigError:
            self._dynamic, self._topic_overrides, self._broker_dynamic = saved
            raise
        self.config = cluster_config
        scope = {"topic": topic} if topic is not None else {"broker": broker} if broker else {}
        self._step("set", settings=dict(changes), **scope)
        self.sim.record("config_change", "cluster", {"settings": dict(changes), **scope})
        for b in self.running():
            self.sim.command(b, Reconfigure(configs[b]))
        self._reconfigure_controllers(configs)
        self._settle()

    def _reconfigure_controllers(self, configs: Mapping[int, Config]) -> None:
        """Every controller applies the cluster's settings (in the ZooKeeper era the elected
        broker's own); the active one then retries elections."""
        if self.kraft:
            for node in CONTROLLER_NODES:
                actor = self.sim.actors.get(node)
                if actor is not None:
                    actor.config = self.config
            active = self._active_node()
            if active is not None:
                self.sim.send(CLIENT_HOST, active.id, msgs.ReconfigureRequest(self.config))
            return
        target = self.controller
        if target is None:
            return
        config = configs[target] if isinstance(target, int) else self.config
        self.sim.send(CLIENT_HOST, target, msgs.ReconfigureRequest(config))

    def delete_records(self, offset: int, *, partition: int | str | None = None) -> None:
        """DeleteRecords (KIP-107, 0.11): the partition's leader moves its log start offset to
        ``offset`` (-1: its HW; above the HW is refused with OFFSET_OUT_OF_RANGE). Readers no
        longer get the records below it; followers move theirs on their next fetch."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < -1:
            raise ActionError(
                f"offset={offset!r} is not allowed: use a whole number >= 0, or -1 for the HW"
            )
        tp = self._tp(partition)
        leader = self.partition_states()[tp].leader
        if leader is None:
            raise ActionError(f"{tp} has no leader: there is nobody to delete records")
        self._step("delete_records", partition=tp, offset=offset)
        self.sim.send("producer", leader, msgs.DeleteRecordsRequest(tp, offset))
        self._settle()

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
        time passes), ``lost`` never arrives (the leader gives up after request.timeout.ms),
        ``refused``: the controller applies nothing and answers ``error``."""
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
        tp = self._tp(partition)
        leader = self.partition_states()[tp].leader
        if leader is None or leader not in self.sim.actors:
            raise ActionError(f"{tp} has no running leader to send an AlterPartition")
        target = self.sim.actors[leader].controller_address
        self._step("alter_partition", partition=tp, answer=answer)
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

    def _hosts(self, node: Any) -> list[Any]:
        """The hosts a node name stands for: in KRaft mode "zk" names the controller quorum,
        so scenarios about losing ZooKeeper ask what losing the controllers does."""
        if self.kraft and node in ("zk", "controller"):
            return list(CONTROLLER_NODES)
        return [self._node(node)]

    def _active_name(self) -> str:
        """The node "active" names: the active KRaft controller right now."""
        if not self.kraft:
            raise ActionError(
                f"{ACTIVE_CONTROLLER!r} names the active KRaft controller node, and this cluster "
                f"has controller_mode {self.config.controller_mode}: name a broker id (or zk)"
            )
        active = self._active_node()
        if active is None:
            raise ActionError("no KRaft controller node is active right now")
        return str(active.id)

    def _node(self, node: Any) -> Any:
        if node == ACTIVE_CONTROLLER:
            return self._active_name()
        if self.kraft and node in CONTROLLER_NODES:
            return node
        if node in ("zk", "controller") and not self.kraft:
            return "zk"
        if node in ("client", "producer"):
            return CLIENT_HOST
        if node in self._clients:
            return self.sim.hosts.get(node, node)
        if isinstance(node, int) and not isinstance(node, bool) and node in self.broker_ids:
            return node
        quorum = ", ".join(CONTROLLER_NODES) if self.kraft else "zk"
        raise ActionError(
            f"node {node!r} does not exist: use a broker id ({self._broker_range()}), {quorum} "
            "or client"
        )

    def disconnect(self, a: Any, b: Any) -> None:
        """Cut the network link between two nodes (broker ids, "zk" or "client")."""
        self._link(a, b, False)

    def reconnect(self, a: Any, b: Any) -> None:
        """Restore the link between two nodes."""
        self._link(a, b, True)

    def _link(self, a: Any, b: Any, up: bool) -> None:
        hosts_a, hosts_b = self._hosts(a), self._hosts(b)
        if set(hosts_a) & set(hosts_b):
            raise ActionError(f"{a!r} and {b!r} are the same node: name two different nodes")
        self._step("reconnect" if up else "disconnect", a=a, b=b)
        for ha in hosts_a:
            for hb in hosts_b:
                self.sim.set_link(ha, hb, up)
                self.sim.record("link", "network", {"a": ha, "b": hb, "up": up})
        self._settle()

    def throttle(self, a: Any, b: Any, mb_per_s: float | None) -> None:
        """Slow the link between two nodes to ``mb_per_s`` megabytes per second (``None``: full
        speed again), as a congested or degraded network would. Records weigh RECORD_BYTES
        (100) each, so a follower behind a 0.1 MB/s link copies a thousand records a second."""
        hosts_a, hosts_b = self._hosts(a), self._hosts(b)
        if set(hosts_a) & set(hosts_b):
            raise ActionError(f"{a!r} and {b!r} are the same node: name two different nodes")
        if mb_per_s is not None and (
            isinstance(mb_per_s, bool)
            or not isinstance(mb_per_s, int | float)
            or not 0 < mb_per_s <= 10000
        ):
            raise ActionError(
                f"mb_per_s={mb_per_s!r} is not allowed: use a number of megabytes per second "
                "in (0, 10000], or None for full speed"
            )
        self._step("throttle", a=a, b=b, mb_per_s=mb_per_s)
        rate = None if mb_per_s is None else mb_per_s * 1000.0  # 1 MB/s is 1000 bytes per ms
        for ha in hosts_a:
            for hb in hosts_b:
                self.sim.set_bandwidth(ha, hb, rate)
                self.sim.record("throttle", "network", {"a": ha, "b": hb, "mb_per_s": mb_per_s})
        self._settle()

    def partition(self, groups: Iterable[Iterable[Any]]) -> None:
        """Cut every link between nodes of different groups; nodes left out keep their links."""
        hosts = [[h for n in g for h in self._hosts(n)] for g in groups]
        seen = [h for g in hosts for h in g]
        if len(set(seen)) != len(seen):
            raise ActionError(f"partition groups {groups!r} name a node twice")
        self._step("partition", groups=[list(g) for g in hosts])
        for i, ga in enumerate(hosts):
            for gb in hosts[i + 1 :]:
                for ha in ga:
                    for hb in gb:
                        self.sim.set_link(ha, hb, False)
                        self.sim.record("link", "network", {"a": ha, "b": hb, "up": False})
        self._settle()

    def heal(self) -> None:
        """Restore every network link."""
        self._step("heal")
        for pair in sorted(self.sim.cut, key=lambda p: sorted(map(str, p))):
            a, b = sorted(pair, key=str)
            self.sim.record("link", "network", {"a": a, "b": b, "up": True})
        self.sim.heal_all()
        self._settle()

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

    # ---- state -----------------------------------------------------------------------------

    @property
    def now(self) -> int:
        """Simulated time in ms."""
        return self.sim.now

    @property
    def trace(self) -> Trace:
        return self.sim.trace

    @property
    def partition_state(self) -> PartitionState:
        """The partition's leader, leader epoch and ISR as the controller committed them (in
        ZooKeeper, when the controller is an elected broker)."""
        return self.partition_states()[self.tp]

    def partition_states(self) -> dict[str, PartitionState]:
        """Every partition's committed leader, leader epoch and ISR, by partition name."""
        if self.kraft:
            return dict(self._quorum_view().partitions)
        holder = "zk" if self.config.controller_mode == "zk" else "controller"
        return dict(self.sim.actors[holder].partitions)

    def _quorum_view(self) -> Any:
        """The controller node that knows most: the active one, else the one that applied the
        most committed metadata (ties: the first)."""
        active = self._active_node()
        if active is not None:
            return active
        nodes = [self.sim.actors[n] for n in CONTROLLER_NODES if n in self.sim.actors]
        if not nodes:
            nodes = [self._stopped_nodes[n] for n in CONTROLLER_NODES]
        return max(nodes, key=lambda a: a.applied)

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
        if self.kraft:
            active = self._active_node()
            return active.id if active is not None else None
        zk = self.sim.actors["zk"]
        if self.config.controller_mode != "zk":
            return "controller"
        return zk.controller[0] if zk.controller else None

    @property
    def controller_epoch(self) -> int:
        """The controller epoch (in KRaft mode, the Raft epoch of the quorum)."""
        if self.kraft:
            return self._quorum_view().controller_epoch
        if self.config.controller_mode != "zk":
            return 1
        return self.sim.actors["zk"].controller_epoch

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
        tp = self._tp(partition)
        actor = self.sim.actors.get(broker)
        if actor is not None:
            r = actor.partitions.get(tp)
            if r is None:
                raise ActionError(f"broker {broker} holds no replica of {tp}")
            log, role, leader, epoch, isr = r.log, r.role, r.leader, r.leader_epoch, r.isr
        else:
            disk = self.disks[broker].get(tp)
            if disk is None:
                raise ActionError(f"broker {broker} holds no replica of {tp}")
            log, role, leader, epoch, isr = Log(disk), None, None, -1, ()
        return ReplicaView(
            broker=broker,
            running=actor is not None,
            role=role,
            leader=leader,
            leader_epoch=epoch,
            records=tuple((r.offset, r.value, r.leader_epoch) for r in log.records),
            leo=log.leo,
            hw=log.hw,
            hw_checkpoint=log.hw_checkpoint,
            flushed=log.flushed,
            epoch_cache=tuple(log.epochs),
            isr=tuple(isr),
            log_start_offset=log.log_start_offset,
        )

    def replicas_view(self, partition: int | str | None = None) -> dict[int, ReplicaView]:
        tp = self._tp(partition)
        return {b: self.replica(b, tp) for b in sorted(self.assignment[tp])}

    def logs(self, partition: int | str | None = None) -> dict[int, list[str]]:
        return {b: v.values for b, v in self.replicas_view(partition).items()}

    def _partition_summary(self, tp: str, st: PartitionState) -> dict[str, Any]:
        views = self.replicas_view(tp)
        return {
            "leader": st.leader,
            "leader_epoch": st.leader_epoch,
            "isr": list(st.isr),
            "elr": list(getattr(st, "elr", ())),  # Eligible Leader Replicas (KRaft, KIP-966)
            "replicas": list(st.replicas),
            "hw": {b: v.hw for b, v in views.items()},
            "leo": {b: v.leo for b, v in views.items()},
            "logs": {b: v.values for b, v in views.items()},
            "epoch_cache": {b: [list(e) for e in v.epoch_cache] for b, v in views.items()},
            "hw_checkpoint": {b: v.hw_checkpoint for b, v in views.items()},
            "log_start_offset": {b: v.log_start_offset for b, v in views.items()},
            **self._isr_in_flight(tp, st),
        }

    def _isr_in_flight(self, tp: str, st: PartitionState) -> dict[str, Any]:
        """The leader's AlterPartition still in flight (KIP-497): the ISR it proposed, or None,
        and its maximal ISR, which the HW waits for (the ISR plus any member being added)."""
        actor = self.sim.actors.get(st.leader)
        r = actor.partitions.get(tp) if actor is not None else None
        if r is None or r.role != "leader" or not r.alter_isr_pending:
            return {"pending_isr": None, "maximal_isr": list(st.isr)}
        proposed = next(
            (
                e.data["isr"]
                for e in reversed(self.trace.events)
                if e.kind == "alter_isr" and e.data["tp"] == tp and e.data["broker"] == st.leader
            ),
            None,
        )
        return {"pending_isr": proposed, "maximal_isr": list(r.maximal_isr or r.isr)}

    def producers(self) -> dict[str, dict[str, int]]:
        """The producer id and epoch of each named producer (-1 before it has one): what its
        client holds, or for a crashed one what it last learned."""
        out: dict[str, dict[str, int]] = {}
        for e in self.trace.events:
            if e.kind in ("producer_id", "producer_epoch_bump"):
                out[e.data["producer"]] = {
                    "producer_id": e.data["producer_id"],
                    "producer_epoch": e.data["producer_epoch"],
                }
        for name, (kind, _) in self._clients.items():
            actor = self.sim.actors.get(name)
            if kind != "producer":
                continue
            if actor is not None:
                out[name] = {
                    "producer_id": actor.producer_id,
                    "producer_epoch": actor.producer_epoch,
                }
            else:
                out.setdefault(name, {"producer_id": -1, "producer_epoch": -1})
        return {name: out[name] for name in sorted(out)}

    def report(self) -> Report:
        """The end-of-run report: acknowledged records lost, divergence, HW regressions, two
        leaders in one epoch, and every client error."""
        return build_report(self)

    def state(self) -> dict[str, Any]:
        """Everything an expect block can check, as plain data (broker ids as keys)."""
        views = self.replicas_view()
        report = self.report()
        states = self.partition_states()
        return {
            "time_ms": self.now,
            "controller": self.controller,
            "controller_epoch": self.controller_epoch,
            **partition_metrics(states.values()),
            "partitions": {tp: self._partition_summary(tp, st) for tp, st in states.items()},
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "isr": self.isr,
            "running": self.running(),
            "hw": {b: v.hw for b, v in views.items()},
            "leo": {b: v.leo for b, v in views.items()},
            "logs": {b: v.values for b, v in views.items()},
            "epoch_cache": {b: [list(e) for e in v.epoch_cache] for b, v in views.items()},
            "hw_checkpoint": {b: v.hw_checkpoint for b, v in views.items()},
            "log_start_offset": {b: v.log_start_offset for b, v in views.items()},
            **self._isr_in_flight(self.tp, states[self.tp]),
            "producers": self.producers(),
            "txn_states": self.txn_states(),
            "lso": self.lso(),
            **report.as_dict(),
        }

    def txn_states(self) -> dict[str, str]:
        """Each transactional id's state at its coordinator (as last written)."""
        states: dict[str, str] = {}
        for e in self.trace.events:
            if e.kind == "txn_state":
                states[e.data["transactional_id"]] = e.data["state"]
        return states

    def lso(self) -> dict[str, int]:
        """The last stable offset of each data partition, at its leader: read_committed
        consumers read below it."""
        out: dict[str, int] = {}
        for tp, st in self.partition_states().items():
            actor = self.sim.actors.get(st.leader)
            if tp.startswith("__") or actor is None:
                continue
            r = actor.partitions[tp]
            out[tp] = r.producers.last_stable_offset(r.log.hw)
        return out


TOPIC_SPEC_KEYS = ("partitions", "replicas")
_TOPIC_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _topic_specs(topics: Any, brokers: int) -> list[tuple[str, int, Any, int | None]]:
    """``topics`` as (name, partitions, placement, replication factor) per topic, in order:
    a list of names (one partition each) or a mapping of name to a number of partitions or to
    ``{partitions, replicas}``; ``replicas`` is a replication factor or an explicit placement
    (a broker list, or a mapping of partition to brokers)."""
    if isinstance(topics, str) or not isinstance(topics, Mapping | list | tuple):
        raise ConfigError(
            f"topics={topics!r} is not allowed: use a list of topic names, or a mapping of "
            "each name to its partitions (a number, or {partitions: N, replicas: R})"
        )
    if not topics:
        raise ConfigError("topics is empty: name at least one topic")
    items = list(topics.items()) if isinstance(topics, Mapping) else [(t, 1) for t in topics]
    specs: list[tuple[str, int, Any, int | None]] = []
    for name, spec in items:
        _check_topic_name(name)
        if any(name == seen for seen, *_ in specs):
            raise ConfigError(f"topic {name!r} is named twice: name each topic once")
        specs.append((name, *_topic_spec(name, spec, brokers)))
    return specs


def _check_topic_name(name: Any) -> None:
    """Kafka's Topic.validate (legal characters, at most 249 of them); a leading "__" is kept
    for the internal topics, and a name of digits alone would read as a partition number."""
    if (
        not isinstance(name, str)
        or not name
        or len(name) > 249
        or not set(name) <= _TOPIC_NAME_CHARS
        or name in (".", "..")
        or name.startswith("__")
        or name.isdigit()
    ):
        raise ConfigError(
            f"topic name {name!r} is not allowed: use letters, digits, '.', '_' and '-' (at "
            "most 249), not digits alone and not a leading '__' (internal topics)"
        )


def _topic_spec(name: str, spec: Any, brokers: int) -> tuple[int, Any, int | None]:
    if spec is None or (isinstance(spec, int) and not isinstance(spec, bool)):
        spec = {"partitions": 1 if spec is None else spec}
    if not isinstance(spec, Mapping):
        raise ConfigError(
            f"topics[{name}]={spec!r} is not allowed: give a number of partitions or "
            "{partitions: N, replicas: R}"
        )
    for key in spec:
        if key not in TOPIC_SPEC_KEYS:
            raise ConfigError(
                f"topics[{name}]: unknown key {key!r}{did_you_mean(str(key), TOPIC_SPEC_KEYS)}; "
                f"allowed: {', '.join(TOPIC_SPEC_KEYS)}"
            )
    count = spec.get("partitions", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(
            f"topics[{name}].partitions={count!r} is not allowed: use a whole number >= 1"
        )
    replicas = spec.get("replicas")
    if isinstance(replicas, bool) or not (
        replicas is None or isinstance(replicas, int | list | tuple | Mapping)
    ):
        raise ConfigError(
            f"topics[{name}].replicas={replicas!r} is not allowed: use a replication factor "
            f"1..{brokers}, a broker list (one partition) or {{partition: [brokers]}}"
        )
    if isinstance(replicas, int):
        if not 1 <= replicas <= brokers:
            raise ConfigError(
                f"topics[{name}].replicas={replicas} is not allowed: use a replication factor "
                f"1..{brokers}, a broker list (one partition) or {{partition: [brokers]}}"
            )
        return count, None, replicas
    if isinstance(replicas, list | tuple) and count != 1:
        raise ConfigError(
            f"topics[{name}].replicas={list(replicas)!r} is not allowed with {count} "
            "partitions: map each partition to its brokers, like {0: [1, 2], 1: [2, 3]}"
        )
    return count, replicas, None


def _client_settings(
    kind: str, cls: type, settings: Mapping[str, Any], aliases: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Kafka-named client settings (dots or underscores) as the fields of ``cls``; an unknown
    one is refused with the nearest name."""
    fields = {f.name for f in dataclasses.fields(cls)}
    values: dict[str, Any] = {}
    for key, value in settings.items():
        name = str((aliases or {}).get(key, key)).replace(".", "_")
        if name not in fields:
            hint = did_you_mean(str(key), [f.replace("_", ".") for f in fields])
            raise ActionError(f"unknown {kind} setting {key!r}{hint}")
        values[name] = value
    return values


STEP_METHODS = (
    "produce",
    "producer",
    "consumer",
    "begin",
    "commit",
    "abort",
    "send_offsets",
    "poll",
    "process",
    "commit_offsets",
    "stop",
    "pause",
    "resume",
    "elect_preferred",
    "fetch",
    "crash",
    "restart",
    "flush",
    "advance",
    "disconnect",
    "reconnect",
    "throttle",
    "partition",
    "heal",
)
