"""The Cluster: one replicated partition on a set of brokers, with ZooKeeper and a controller.

This is the facade lessons and scenarios use. In **stepped** mode nothing happens unless a step
asks for it: each step runs to quiescence (the messages it causes are delivered), followers fetch
only when told, and timers fire only when time is advanced. In **timed** mode followers fetch on
their own, messages take time, and workloads and faults are scheduled.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.check.invariants import InvariantMonitor, Report, build_report
from kafkalab.config import Config, check_min_isr, make_config
from kafkalab.errors import ActionError, ConfigError
from kafkalab.protocol import messages as msgs
from kafkalab.protocol.broker import Broker, FetchNow
from kafkalab.protocol.controller import Controller, PartitionState, ZooKeeper
from kafkalab.protocol.log import Disk, Log
from kafkalab.protocol.producer import Producer, Send
from kafkalab.sim.engine import Simulation
from kafkalab.sim.trace import Trace

__all__ = ["Cluster", "ReplicaView", "assign_replicas"]

MODES = ("stepped", "timed")
MAX_BROKERS = 64
CLIENT_HOST = "client"


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

    @property
    def values(self) -> list[str]:
        return [value for _, value, _ in self.records]


def assign_replicas(
    brokers: list[int], replication_factor: int, partition: int, rng: random.Random
) -> list[int]:
    """AdminUtils.assignReplicasToBrokers without racks: the first replica goes round-robin from
    a random start broker, further replicas follow with a random, increasing shift."""
    n = len(brokers)
    start = rng.randrange(n)
    shift = rng.randrange(n)
    if partition > 0 and partition % n == 0:
        shift += 1
    first = (partition + start) % n
    replicas = [brokers[first]]
    for j in range(replication_factor - 1):
        replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
    return replicas


class Cluster:
    """A simulated Kafka cluster holding one partition.

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
        replicas: Iterable[int] | None = None,
        seed: int = 0,
        mode: str = "stepped",
        latency_ms: tuple[int, int] = (1, 5),
        topic: str = "demo",
        trace_messages: bool = True,
        check_invariants: bool = False,
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
        self.mode = mode
        self.seed = seed
        self.broker_ids = list(range(1, brokers + 1))
        self.tp = f"{topic}-0"
        self.replicas = self._choose_replicas(leader, replicas)
        check_min_isr(self.config, len(self.replicas))
        lat = latency_ms if mode == "timed" else (0, 0)
        if lat[0] < 0 or lat[1] < lat[0]:
            raise ConfigError(
                f"latency_ms={latency_ms!r} is not allowed: use (low, high), 0 <= low <= high"
            )
        self.sim = Simulation(seed=seed, latency_ms=lat, trace_messages=trace_messages)
        self.sim.on_halt = self._on_halt
        self.disks: dict[int, dict[str, Disk]] = {}
        self.monitor = InvariantMonitor(self, raise_on_violation=check_invariants)
        self.sim.observers.append(self.monitor.observe)
        self._steps = 0
        self._start()

    # ---- construction ----------------------------------------------------------------------

    def _choose_replicas(self, leader: int | None, replicas: Iterable[int] | None) -> list[int]:
        rf = self.config.replication_factor or len(self.broker_ids)
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
            rng = random.Random(f"{self.seed}:assignment")
            chosen = assign_replicas(self.broker_ids, rf, 0, rng)
        if leader is not None and leader not in chosen:
            raise ConfigError(
                f"leader={leader} is not allowed: it must be one of the replicas {chosen}"
            )
        if leader is not None and chosen[0] != leader:
            chosen.remove(leader)
            chosen.insert(0, leader)
        return chosen

    def _start(self) -> None:
        state = PartitionState(tuple(self.replicas), self.replicas[0], 0, tuple(self.replicas))
        self.sim.add("zk", ZooKeeper(self.config), "zk")
        self.sim.add("controller", Controller(self.config, {self.tp: state}), "zk")
        self.sim.add("producer", Producer("producer"), CLIENT_HOST)
        for b in self.broker_ids:
            self._start_broker(b, {self.tp: Disk()} if b in self.replicas else {})
        self._settle()

    def _start_broker(self, b: int, disks: dict[str, Disk]) -> None:
        broker = Broker(b, self.config, disks, auto_fetch=self.mode == "timed")
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
    ) -> list[str]:
        """Send records to the partition's leader with ``acks`` (default: the config's).

        ``value`` sends one record; ``values`` a batch; ``count`` with ``value`` sends a batch of
        ``value-1 .. value-count``. Returns the values sent."""
        batch = self._batch(value, values, count)
        acks_value = self._acks(acks)
        self._step("produce", values=batch, acks=acks_value)
        self._producer(producer)
        leader = self.leader
        cmd = Send(self.tp, tuple(batch), acks_value, leader, self.config.request_timeout_ms)
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

    def _producer(self, name: str) -> None:
        if name not in self.sim.actors:
            self.sim.add(name, Producer(name), CLIENT_HOST)

    def fetch(self, follower: int, *, response: str = "ok", delay_ms: int = 1000) -> None:
        """Follower ``follower`` does its next round trip with the leader: a Fetch, or an
        OffsetsForLeaderEpoch request when it must first find its truncation point.
        ``response`` is "ok", "lost" (the leader handles the request; the answer never arrives)
        or "delayed" (it arrives ``delay_ms`` later, once time is advanced)."""
        broker = self._running_broker(follower)
        if response not in ("ok", "lost", "delayed"):
            raise ActionError(f"response={response!r} is not allowed: use ok, lost or delayed")
        r = broker.partitions.get(self.tp)
        if r is None or r.role != "follower":
            what = "the leader" if r is not None and r.role == "leader" else "not a follower"
            raise ActionError(
                f"broker {follower} is {what} of {self.tp}: only a follower fetches "
                f"(followers now: {self.followers() or 'none'})"
            )
        self._step("fetch", follower=follower, response=response)
        if response != "ok":
            self.sim.add_rule(
                r.leader,
                follower,
                (msgs.FetchResponse, msgs.OffsetsForLeaderEpochResponse),
                None if response == "lost" else int(delay_ms),
            )
        self.sim.command(follower, FetchNow(self.tp))
        self._settle()

    def crash(self, broker: int, *, lose_unflushed: bool = False) -> None:
        """Stop a broker. A process crash keeps the page cache; a power loss
        (``lose_unflushed``) keeps only what was flushed to disk."""
        self._running_broker(broker)
        self._step("crash", broker=broker, lose_unflushed=lose_unflushed)
        self._crash(broker, lose_unflushed, None)
        self._settle()

    def _crash(self, broker: int, lose_unflushed: bool, reason: str | None) -> None:
        actor = self.sim.remove(broker)
        self.disks[broker] = actor.disks(lose_unflushed)
        data: dict[str, Any] = {"lose_unflushed": lose_unflushed}
        if reason:
            data["halted"] = reason
        self.sim.record("crash", broker, data)

    def _on_halt(self, broker: Any, reason: str) -> None:
        if broker in self.sim.actors:
            self._crash(broker, False, reason)

    def restart(self, broker: int) -> None:
        """Start a stopped broker again from what its disk holds."""
        self._check_broker(broker)
        if broker in self.sim.actors:
            raise ActionError(f"broker {broker} is already running: crash it before a restart")
        self._step("restart", broker=broker)
        disks = self.disks.pop(broker)
        self._start_broker(broker, disks)
        r = self.sim.actors[broker].partitions.get(self.tp)
        self.sim.record(
            "restart", broker, {"leo": r.log.leo if r else 0, "hw": r.log.hw if r else 0}
        )
        self._settle()

    def flush(self, broker: int) -> None:
        """fsync the broker's log and write its HW checkpoint."""
        actor = self._running_broker(broker)
        self._step("flush", broker=broker)
        for r in actor.partitions.values():
            r.log.flush()
        self.sim.record("flush", broker, {})
        self._settle()

    def advance(self, ms: int) -> None:
        """Let ``ms`` simulated milliseconds pass: due timers fire (ISR expiry, session expiry,
        request timeouts, checkpoints) and what they cause is delivered."""
        if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
            raise ActionError(f"advance={ms!r} is not allowed: use a whole number of ms >= 0")
        self._step("advance", ms=ms)
        self.sim.run_until(self.sim.now + ms)

    def _node(self, node: Any) -> Any:
        if node in ("zk", "controller"):
            return "zk"
        if node in ("client", "producer"):
            return CLIENT_HOST
        if isinstance(node, int) and not isinstance(node, bool) and node in self.broker_ids:
            return node
        raise ActionError(
            f"node {node!r} does not exist: use a broker id ({self._broker_range()}), zk or client"
        )

    def disconnect(self, a: Any, b: Any) -> None:
        """Cut the network link between two nodes (broker ids, "zk" or "client")."""
        self._link(a, b, False)

    def reconnect(self, a: Any, b: Any) -> None:
        """Restore the link between two nodes."""
        self._link(a, b, True)

    def _link(self, a: Any, b: Any, up: bool) -> None:
        ha, hb = self._node(a), self._node(b)
        if ha == hb:
            raise ActionError(f"{a!r} and {b!r} are the same node: name two different nodes")
        self._step("reconnect" if up else "disconnect", a=a, b=b)
        self.sim.set_link(ha, hb, up)
        self.sim.record("link", "network", {"a": ha, "b": hb, "up": up})
        self._settle()

    def partition(self, groups: Iterable[Iterable[Any]]) -> None:
        """Cut every link between nodes of different groups; nodes left out keep their links."""
        hosts = [[self._node(n) for n in g] for g in groups]
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
        self.sim.cut.clear()
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
        """The partition's leader, leader epoch and ISR as the controller committed them."""
        return self.sim.actors["controller"].partitions[self.tp]

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

    def followers(self) -> list[int]:
        return [
            b
            for b in self.running()
            if (r := self.sim.actors[b].partitions.get(self.tp)) and r.role == "follower"
        ]

    def replica(self, broker: int) -> ReplicaView:
        """The state of one replica: its log with offsets and epochs, LEO, HW, epoch cache."""
        self._check_broker(broker)
        actor = self.sim.actors.get(broker)
        if actor is not None:
            r = actor.partitions.get(self.tp)
            if r is None:
                raise ActionError(f"broker {broker} holds no replica of {self.tp}")
            log, role, leader, epoch, isr = r.log, r.role, r.leader, r.leader_epoch, r.isr
        else:
            disk = self.disks[broker].get(self.tp)
            if disk is None:
                raise ActionError(f"broker {broker} holds no replica of {self.tp}")
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
        )

    def replicas_view(self) -> dict[int, ReplicaView]:
        return {b: self.replica(b) for b in sorted(self.replicas)}

    def logs(self) -> dict[int, list[str]]:
        return {b: v.values for b, v in self.replicas_view().items()}

    def report(self) -> Report:
        """The end-of-run report: acknowledged records lost, divergence, HW regressions, two
        leaders in one epoch, and every client error."""
        return build_report(self)

    def state(self) -> dict[str, Any]:
        """Everything an expect block can check, as plain data (broker ids as keys)."""
        views = self.replicas_view()
        report = self.report()
        return {
            "time_ms": self.now,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "isr": self.isr,
            "running": self.running(),
            "hw": {b: v.hw for b, v in views.items()},
            "leo": {b: v.leo for b, v in views.items()},
            "logs": {b: v.values for b, v in views.items()},
            "epoch_cache": {b: [list(e) for e in v.epoch_cache] for b, v in views.items()},
            **report.as_dict(),
        }


STEP_METHODS = (
    "produce",
    "fetch",
    "crash",
    "restart",
    "flush",
    "advance",
    "disconnect",
    "reconnect",
    "partition",
    "heal",
)
