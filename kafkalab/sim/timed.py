"""Timed runs: a steady workload, a fault schedule, and one picklable result.

:func:`simulate` is a plain function of (config, seed, fault schedule), so a campaign can map it
over seeds anywhere (a process pool, Spark) and get the same answer for the same inputs.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, overload

from kafkalab.config import Config, make_config
from kafkalab.errors import ConfigError
from kafkalab.protocol.rules import Rules
from kafkalab.sim.actions import ActionView
from kafkalab.sim.cluster import Cluster
from kafkalab.sim.engine import collector_paused
from kafkalab.sim.outcome import is_safe, out_of_send_order

__all__ = ["FAULT_KINDS", "Fault", "RunResult", "Workload", "random_faults", "simulate"]

# What a fault schedule can do: a burst from the workload, or a step the step vocabulary
# (kafkalab.sim.actions) marks as a fault.
FAULT_ACTIONS: ActionView[str] = ActionView(
    lambda a: a.fault,
    lambda a: a.doc,
    first={"burst": "the producer sends one large batch at once"},
)


# What random_faults can draw, each undone after a while (a burst needs no undoing).
FAULT_KINDS: dict[str, str] = {
    "crash": "a node crashes and restarts (half of them power losses if power_loss=True)",
    "disconnect": "the link between two nodes (brokers, zk, controllers) is cut, then healed",
    "pause": "a node stalls, as in a long GC pause, then runs again",
    "power_loss": "a broker loses power: what it had not flushed is gone when it restarts",
    "slow": "a broker stalls again and again for a while: a slow follower (or leader)",
    "partition": "the brokers split into two sides, ZooKeeper/the controllers on one, then heal",
    "zk_isolation": "one broker is cut from ZooKeeper (KRaft: the controller quorum), then healed",
    "burst": "the producer sends one large batch at once (see replica.lag.max.messages)",
    "bursty": "for a while the producer sends a large batch every one to three seconds: "
    "steady bursty traffic",
    "slow_link": "a broker's links to the other brokers slow to 0.1-0.5 MB/s for a while, then "
    "recover: a follower behind them copies a burst for seconds",
}


@dataclass(frozen=True)
class Fault:
    """One scheduled fault: ``action`` with ``args`` at ``time_ms`` (a ``burst`` carries its
    record count as its only argument)."""

    time_ms: int
    action: str
    args: tuple[Any, ...] = ()
    lose_unflushed: bool = False

    def __post_init__(self) -> None:
        if self.action not in FAULT_ACTIONS:
            allowed = ", ".join(FAULT_ACTIONS)
            raise ConfigError(f"fault action {self.action!r} is not allowed: use one of {allowed}")
        if self.time_ms < 0:
            raise ConfigError(f"fault time_ms={self.time_ms} is not allowed: use a time >= 0")


@dataclass(frozen=True)
class Workload:
    """A steady producer: one batch of ``batch`` records every ``interval_ms``."""

    interval_ms: int = 20
    batch: int = 1
    acks: str | None = None  # None: the config's acks
    # Producer settings for a retrying client (KafkaProducer); None: the plain producer that
    # reports every error at once.
    client: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.interval_ms < 1 or self.batch < 1:
            raise ConfigError(
                f"workload interval_ms={self.interval_ms}, batch={self.batch} are not allowed: "
                "use interval_ms >= 1 and batch >= 1"
            )


@dataclass(frozen=True)
class RunResult:
    """The outcome of one timed run (plain data, picklable)."""

    seed: int
    config: dict[str, Any]
    brokers: int
    duration_ms: int
    settle_ms: int
    schedule: tuple[Fault, ...]
    faults: int
    events: int
    produced: int
    acked: int
    lost_acked: list[str]
    divergent: bool
    hw_regressions: int
    two_leaders: int
    unclean_elections: int
    duplicates: int
    out_of_order: int
    isr_shrinks: int
    isr_expands: int
    errors: dict[str, int] = field(default_factory=dict)  # error name -> records
    leader: int | None = None
    trace_digest: str = ""

    @property
    def safe(self) -> bool:
        """True when nothing acknowledged was lost, no logs diverge, no HW moved backwards and
        no epoch had two leaders."""
        return is_safe(self)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def replay_hint(self) -> str:
        """A Python call that replays this run exactly."""
        return (
            "replay: from kafkalab.sim.timed import simulate, Fault; from kafkalab import "
            f"make_config; simulate(make_config({self.config!r}), seed={self.seed}, "
            f"brokers={self.brokers}, duration_ms={self.duration_ms}, "
            f"settle_ms={self.settle_ms}, faults={list(self.schedule)!r})"
        )


def random_faults(
    seed: int,
    brokers: int,
    duration_ms: int,
    *,
    mean_interval_ms: int = 8000,
    max_down_ms: int = 25000,
    power_loss: bool = False,
    kinds: Sequence[str] = ("crash", "disconnect"),
    controllers: Sequence[str] = (),
    burst_records: tuple[int, int] = (100, 2000),
) -> list[Fault]:
    """A random fault schedule drawn from its own stream of ``seed``, never two overlapping
    faults on one node. ``kinds`` picks from :data:`FAULT_KINDS`: broker crashes (with
    restarts), cut links (with repairs), pauses (with resumes), power losses, slow brokers,
    network partitions, brokers cut from ZooKeeper and producer bursts of ``burst_records``
    (low, high) records. ``controllers`` adds KRaft controller nodes to the targets."""
    for kind in kinds:
        if kind not in FAULT_KINDS:
            allowed = ", ".join(FAULT_KINDS)
            raise ConfigError(f"fault kind {kind!r} is not allowed: use one of {allowed}")
    rng = random.Random(f"{seed}:faults")
    nodes: list[Any] = [*range(1, brokers + 1), *controllers]
    busy_until = dict.fromkeys([*nodes, "zk"], 0)
    faults: list[Fault] = []
    t = 0
    while True:
        t += 1 + int(rng.expovariate(1.0 / mean_interval_ms))
        if t >= duration_ms:
            return sorted(faults, key=lambda f: f.time_ms)
        kind = rng.choice(list(kinds))
        down = rng.randint(500, max_down_ms)
        if kind in _MORE_KINDS:
            faults += _MORE_KINDS[kind](rng, t, down, brokers, busy_until, burst_records)
        elif kind == "pause":
            b = rng.choice(nodes)
            if busy_until[b] > t:
                continue
            faults.append(Fault(t, "pause", (b,)))
            faults.append(Fault(t + down, "resume", (b,)))
            busy_until[b] = t + down + 1
        elif kind == "crash":
            b = rng.choice(nodes)
            if busy_until[b] > t:
                continue
            faults.append(Fault(t, "crash", (b,), power_loss and rng.random() < 0.5))
            faults.append(Fault(t + down, "restart", (b,)))
            busy_until[b] = t + down + 1
        else:
            a, b = rng.sample([*nodes, "zk"], 2)
            if busy_until[a] > t or busy_until[b] > t:
                continue
            faults.append(Fault(t, "disconnect", (a, b)))
            faults.append(Fault(t + down, "reconnect", (a, b)))
            busy_until[a] = busy_until[b] = t + down + 1


# The kinds added after the first three draw only when asked for, so a schedule of crashes,
# cut links and pauses is the same as it always was for the same seed.
_Busy = dict[Any, int]


def _power_loss(
    rng: random.Random, t: int, down: int, brokers: int, busy: _Busy, _: tuple[int, int]
) -> list[Fault]:
    b = rng.randint(1, brokers)
    if busy[b] > t:
        return []
    busy[b] = t + down + 1
    return [Fault(t, "crash", (b,), True), Fault(t + down, "restart", (b,))]


def _slow(
    rng: random.Random, t: int, down: int, brokers: int, busy: _Busy, _: tuple[int, int]
) -> list[Fault]:
    """Stalls of a quarter to three quarters of a period, one per period, for ``down`` ms."""
    b = rng.randint(1, brokers)
    if busy[b] > t:
        return []
    period = rng.randint(200, 2000)
    stall = rng.randint(period // 4, period * 3 // 4)
    busy[b] = t + down + 1
    out: list[Fault] = []
    for start in range(t, t + down - stall, period):
        out += [Fault(start, "pause", (b,)), Fault(start + stall, "resume", (b,))]
    return out


def _partition(
    rng: random.Random, t: int, down: int, brokers: int, busy: _Busy, _: tuple[int, int]
) -> list[Fault]:
    """Every link crossing the cut goes down; "heal" restores every link, so a partition waits
    until no other fault holds a node."""
    if brokers < 2 or any(until > t for until in busy.values()):
        return []
    ids = list(range(1, brokers + 1))
    rng.shuffle(ids)
    cut = rng.randint(1, brokers - 1)
    groups = (tuple(sorted(ids[:cut])) + ("zk",), tuple(sorted(ids[cut:])))
    for node in busy:
        busy[node] = t + down + 1
    return [Fault(t, "partition", (groups,)), Fault(t + down, "heal")]


def _zk_isolation(
    rng: random.Random, t: int, down: int, brokers: int, busy: _Busy, _: tuple[int, int]
) -> list[Fault]:
    b = rng.randint(1, brokers)
    if busy[b] > t or busy["zk"] > t:
        return []
    busy[b] = busy["zk"] = t + down + 1
    return [Fault(t, "disconnect", (b, "zk")), Fault(t + down, "reconnect", (b, "zk"))]


def _slow_link(
    rng: random.Random, t: int, down: int, brokers: int, busy: _Busy, _: tuple[int, int]
) -> list[Fault]:
    """Every link between one broker and the others slows to 0.1, 0.2 or 0.5 MB/s for
    ``down`` ms."""
    b = rng.randint(1, brokers)
    if busy[b] > t:
        return []
    rate = rng.choice((0.1, 0.2, 0.5))
    busy[b] = t + down + 1
    others = [o for o in range(1, brokers + 1) if o != b]
    return [Fault(t, "throttle", (b, o, rate)) for o in others] + [
        Fault(t + down, "throttle", (b, o, None)) for o in others
    ]


def _burst(
    rng: random.Random, t: int, _down: int, _b: int, _busy: _Busy, records: tuple[int, int]
) -> list[Fault]:
    return [Fault(t, "burst", (rng.randint(*records),))]


def _bursty(
    rng: random.Random, t: int, down: int, _b: int, _busy: _Busy, records: tuple[int, int]
) -> list[Fault]:
    """A burst of ``records`` every 1 to 3 s (one gap for the whole spell) for ``down`` ms."""
    gap = rng.randint(1000, 3000)
    return [Fault(s, "burst", (rng.randint(*records),)) for s in range(t, t + down, gap)]


_MORE_KINDS = {
    "power_loss": _power_loss,
    "slow": _slow,
    "partition": _partition,
    "zk_isolation": _zk_isolation,
    "burst": _burst,
    "slow_link": _slow_link,
    "bursty": _bursty,
}


@overload
def simulate(
    config: Config | Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
    brokers: int = 3,
    duration_ms: int = 60000,
    settle_ms: int = 60000,
    workload: Workload | None = None,
    faults: Sequence[Fault] | None = None,
    latency_ms: tuple[int, int] = (1, 5),
    trace_messages: bool = False,
    check_invariants: bool = False,
    loss_rate: float = 0.0,
    keep_cluster: Literal[False] = False,
    digest: bool = False,
    rules: Rules | None = None,
) -> RunResult: ...


@overload
def simulate(
    config: Config | Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
    brokers: int = 3,
    duration_ms: int = 60000,
    settle_ms: int = 60000,
    workload: Workload | None = None,
    faults: Sequence[Fault] | None = None,
    latency_ms: tuple[int, int] = (1, 5),
    trace_messages: bool = False,
    check_invariants: bool = False,
    loss_rate: float = 0.0,
    keep_cluster: Literal[True],
    digest: bool = False,
    rules: Rules | None = None,
) -> tuple[RunResult, Cluster]: ...


def simulate(
    config: Config | Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
    brokers: int = 3,
    duration_ms: int = 60000,
    settle_ms: int = 60000,
    workload: Workload | None = None,
    faults: Sequence[Fault] | None = None,
    latency_ms: tuple[int, int] = (1, 5),
    trace_messages: bool = False,
    check_invariants: bool = False,
    loss_rate: float = 0.0,
    keep_cluster: bool = False,
    digest: bool = False,
    rules: Rules | None = None,
) -> RunResult | tuple[RunResult, Cluster]:
    """Run one timed simulation: produce steadily for ``duration_ms`` while ``faults`` happen,
    then heal every link, restart every broker and let it settle for ``settle_ms``.

    ``faults=None`` draws :func:`random_faults` from ``seed``; pass ``[]`` for none. ``digest``
    adds the SHA-256 of the trace to the result (it can cost a third of the run). ``rules``
    replaces some of Kafka's rules (:class:`kafkalab.Rules`)."""
    cfg = config if isinstance(config, Config) else make_config(config or {})
    workload = workload or Workload()
    if faults is None:
        faults = random_faults(seed, brokers, duration_ms)
    shape = (brokers, duration_ms, settle_ms)
    with collector_paused():  # set-up and report too: they build as many objects as the loop
        cluster = Cluster(
            brokers,
            config=cfg,
            seed=seed,
            mode="timed",
            latency_ms=latency_ms,
            trace_messages=trace_messages,
            check_invariants=check_invariants,
            loss_rate=loss_rate,
            rules=rules,
        )
        produced = _schedule_workload(cluster, workload, duration_ms)
        for i, f in enumerate(faults):
            if f.action == "burst":
                produced += _schedule_burst(cluster, workload, f, i)
            elif f.action == "crash":
                cluster.at(f.time_ms, "crash", *f.args, lose_unflushed=f.lose_unflushed)
            else:
                cluster.at(f.time_ms, f.action, *f.args)
        cluster.sim.call_at(duration_ms, _recover, cluster)
        cluster.run(until_ms=duration_ms + settle_ms)
        result = _result(cluster, cfg, seed, shape, tuple(faults), produced)
        if digest:
            result = replace(result, trace_digest=cluster.trace.digest())
        if keep_cluster:
            return result, cluster
        cluster.release()
        return result


def _schedule_workload(cluster: Cluster, workload: Workload, duration_ms: int) -> int:
    n = 0
    if workload.client is not None:
        cluster.producer("client", **dict(workload.client))
    else:  # the bare producer: checked once here, each batch sent without the step's checks
        send, tp, acks = cluster._client_steps.send, cluster.tp, cluster._acks(workload.acks)
    for i, t in enumerate(range(workload.interval_ms, duration_ms, workload.interval_ms)):
        values = [f"r{i}.{j}" for j in range(workload.batch)]
        if workload.client is not None:
            cluster.at(t, "produce", values=values, producer="client")
        else:
            cluster.sim.call_at(t, send, tp, values, acks)
        n += len(values)
    return n


def _schedule_burst(cluster: Cluster, workload: Workload, fault: Fault, index: int) -> int:
    """One batch of ``fault.args[0]`` records named "b<fault index>.<n>" (so the
    out-of-order count, which reads "r" records, ignores them)."""
    values = [f"b{index}.{j}" for j in range(int(fault.args[0]))]
    if workload.client is not None:
        cluster.at(fault.time_ms, "produce", values=values, producer="client")
    else:
        cluster.at(fault.time_ms, "produce", values=values, acks=workload.acks)
    return len(values)


def _recover(cluster: Cluster) -> None:
    for host in sorted(cluster.sim.paused, key=str):
        cluster.resume(host)
    cluster.heal()
    for pair in sorted(cluster.sim.bandwidth, key=lambda p: sorted(map(str, p))):
        a, b = sorted(pair, key=str)  # a fixed order, whatever the hosts' types
        cluster.throttle(a, b, None)
    nodes: list[int | str] = [*cluster.broker_ids, *sorted(cluster.control.stopped)]
    for node in nodes:
        if node not in cluster.sim.actors:
            cluster.restart(node)


def _result(
    cluster: Cluster,
    cfg: Config,
    seed: int,
    shape: tuple[int, int, int],
    faults: tuple[Fault, ...],
    produced: int,
) -> RunResult:
    report = cluster.report()
    errors: dict[str, int] = {}
    for error in report.errors.values():
        errors[error] = errors.get(error, 0) + 1
    return RunResult(
        seed=seed,
        config=cfg.as_dict(),
        brokers=shape[0],
        duration_ms=shape[1],
        settle_ms=shape[2],
        schedule=faults,
        faults=len(faults),
        events=len(cluster.trace),
        produced=produced,
        acked=len(report.acked),
        lost_acked=report.lost_acked,
        divergent=report.divergent,
        hw_regressions=len(report.hw_regressions),
        two_leaders=len(report.two_leaders),
        unclean_elections=report.unclean_elections,
        duplicates=len(report.duplicates),
        out_of_order=_out_of_order(cluster),
        isr_shrinks=report.isr_shrinks,
        isr_expands=report.isr_expands,
        errors=errors,
        leader=cluster.leader,
    )


def _out_of_order(cluster: Cluster) -> int:
    """How many workload records in the leader's log follow a record that was sent after them
    (values are "r<send number>.<index>"; burst records are not counted): reordering by
    retries."""
    leader = cluster.leader
    if leader is None or leader not in cluster.sim.actors:
        return 0
    log = cluster.sim.actors[leader].partitions[cluster.tp].log  # read, not copied as a view
    sent = [
        int(value[1:].split(".")[0]) if value.startswith("r") else None
        for value in (record.value for record in log.records)
    ]
    return len(out_of_send_order(sent))
