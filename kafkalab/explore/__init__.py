"""Exhaustive exploration: every schedule of stepped actions up to a bound, breadth first.

Given a configuration, :func:`explore` tries every sequence of actions from an alphabet
(:data:`ACTIONS`: produce the next record, a follower's fetch answered or with its answer lost,
every follower fetching until replication settles, a crash keeping the page cache or losing it,
restart, flush, the session timeout passing (at any step, or only while it lets the controller
act), and optionally network cuts) on a stepped :class:`~kafkalab.Cluster`, and checks the
named invariants (:data:`kafkalab.INVARIANTS`) after every step. Schedules are tried shortest
first, so the first one that breaks an invariant is a shortest one within the alphabet and the
bounds; it is replayed from scratch as a scenario to confirm it. When nothing breaks, the result
says how many distinct states were explored and whether the search was complete to its depth.

Two schedules that lead to the same state share one future, so each distinct state is expanded
once (:func:`state_digest`). Record values are named in the order they are produced (r1, r2,
...), which is already the canonical renaming; brokers are never renamed, because Kafka does not
treat them alike (a controller elects the first live in-sync replica in the assignment's order:
``PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection`` in Kafka's controller), so
no broker symmetry is sound.

    >>> from kafkalab.explore import explore
    >>> result = explore({"acks": "1"}, brokers=2, depth=4, actions=("produce", "crash", "expire"))
    >>> result.violation.invariant, result.violation.steps
    ('no_acked_loss', [{'produce': 'r1'}, {'crash': 1}, {'advance': 18000}])
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from kafkalab.check import INVARIANTS
from kafkalab.check.monitor import CHECK_ORDER
from kafkalab.config import Config, make_config
from kafkalab.errors import ActionError, ConfigError
from kafkalab.explore.digest import state_digest
from kafkalab.explore.scenario import counterexample
from kafkalab.protocol.rules import Rules
from kafkalab.sim import actions as step_kinds
from kafkalab.sim.cluster import CONTROLLER_NODES, Cluster

__all__ = [
    "ACTIONS",
    "CRASH_ACTIONS",
    "DEFAULT_ACTIONS",
    "EXAMPLES",
    "Bounds",
    "ExploreResult",
    "Violation",
    "enabled_steps",
    "explore",
    "state_digest",
]

# The alphabet: each kind of action, what it means.
ACTIONS: dict[str, str] = {
    "produce": "the producer sends the next record (r1, r2, ...) with the config's acks",
    "fetch": "a follower fetches from the leader and gets the answer",
    "fetch_lost": "a follower fetches; the leader handles it but the answer is lost",
    "sync": "the followers fetch until a round changes nothing (replication settles)",
    "crash": "a broker's process dies; the page cache survives",
    "power_loss": "a broker loses power: whatever it had not flushed is gone",
    "restart": "a crashed broker starts again from its disk",
    "flush": "a broker fsyncs its log (not its HW checkpoint)",
    "checkpoint": "a broker's periodic task writes its HWs to its HW checkpoint file",
    "expire": "the session timeout passes: the controller learns which brokers died",
    "elect": "the session timeout passes, only while the controller still counts a crashed "
    "broker as a partition's leader or as a member of the ISR of a led partition",
    "disconnect": "cut a broker from the controller's side (ZooKeeper or KRaft) or from a broker",
    "reconnect": "restore a cut link",
}
DEFAULT_ACTIONS = (
    "produce",
    "fetch",
    "fetch_lost",
    "crash",
    "power_loss",
    "restart",
    "flush",
    "checkpoint",
    "expire",
)
MAX_BROKERS = 5
# A depth with fewer states than this to expand runs in this process: forking the workers and
# sending them the states would cost more than it saves.
PARALLEL_MIN = 200

# Configs the course and its tests search, by name.
EXAMPLES: dict[str, dict[str, Any]] = {
    # KIP-101's setting: Kafka 0.10 without leader epochs, acks=all, one in-sync replica enough
    "kip101": {
        "preset": "0.10",
        "acks": "all",
        "min.insync.replicas": 1,
        "leader_epochs": False,
        "unclean.leader.election.enable": False,
    },
    # today's safe config
    "safe": {"acks": "all", "min.insync.replicas": 2, "unclean.leader.election.enable": False},
}
# The alphabet of crashes that keep the page cache (no flush, no lost answers).
CRASH_ACTIONS = ("produce", "fetch", "crash", "restart", "expire")

Step = dict[str, Any]  # one scenario step, as a scenario file writes it


@dataclass(frozen=True)
class Bounds:
    """How far the search goes: brokers in the cluster, actions per schedule, records produced,
    crashes (with or without power loss) per schedule, and distinct states at most."""

    brokers: int = 2
    depth: int = 8
    records: int = 2
    crashes: int = 1
    max_states: int = 200_000

    def __post_init__(self) -> None:
        for name, low, high in (
            ("brokers", 1, MAX_BROKERS),
            ("depth", 0, 40),
            ("records", 0, 20),
            ("crashes", 0, 20),
            ("max_states", 1, None),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                allowed = f"{low}..{high}" if high is not None else f">= {low}"
                raise ConfigError(f"{name}={value!r} is not allowed: use a whole number {allowed}")
            if high is not None and value > high:
                raise ConfigError(f"{name}={value!r} is not allowed: use {low}..{high}")


@dataclass(frozen=True)
class Violation:
    """The shortest schedule found that breaks ``invariant``, its message, and the report of
    its replay from scratch (the keys ``kafkalab scenario run --json`` prints)."""

    invariant: str
    message: str
    steps: list[Step]
    report: dict[str, Any]
    scenario_yaml: str


@dataclass
class ExploreResult:
    """What a search found: a violation (or None), the distinct states it explored, the depth
    it reached, its wall time, and whether it was complete (every schedule up to ``depth`` was
    covered: no state limit cut it short). ``exhausted``: no new state appeared before the
    depth bound, so deeper schedules find nothing new either."""

    violation: Violation | None
    states: int
    depth: int
    seconds: float
    complete: bool
    exhausted: bool
    bounds: Bounds
    settings: dict[str, Any]
    levels: list[int] = field(default_factory=list)  # new states found at each depth

    def as_json(self) -> dict[str, Any]:
        v = self.violation
        return {
            "violation": None
            if v is None
            else {"invariant": v.invariant, "steps": v.steps, "report": v.report},
            "states": self.states,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "complete": self.complete,
        }

    def summary(self, *, timing: bool = True) -> str:
        """What the search found, in a few lines; ``timing=False`` leaves out the seconds (a
        lesson's stored output then reads the same on any machine)."""
        b = self.bounds
        took = f" in {self.seconds:.1f} s" if timing else ""
        where = (
            f"{b.brokers} brokers, at most {_n(b.records, 'record')} and {_n(b.crashes, 'crash')}"
            f" ({', '.join(f'{k}={v}' for k, v in self.settings.items()) or 'defaults'})"
        )
        if self.violation is not None:
            v = self.violation
            lines = [
                f"{v.invariant} breaks after {len(v.steps)} steps ({where}):",
                *(f"  {i}. {_step_text(s)}" for i, s in enumerate(v.steps, 1)),
                f"  {v.message}",
                f"{self.states} states explored{took}; no shorter schedule breaks an invariant",
            ]
            return "\n".join(lines)
        reach = "complete" if self.complete else "cut short by the state limit"
        if self.exhausted:
            reach += ": no new state appears after this depth"
        return (
            f"no violation up to depth {self.depth} ({where}): {self.states} states{took}, {reach}"
        )


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "es" if noun.endswith("sh") else "s")


# ---- the actions a state allows --------------------------------------------------------------


def enabled_steps(
    cluster: Cluster, actions: Sequence[str], produced: int, crashes: int, bounds: Bounds
) -> list[Step]:
    """The steps of the alphabet worth trying from ``cluster``'s state, in a fixed order (so
    the search, and the schedule it returns, are deterministic)."""
    running = set(cluster.running())
    leader = cluster.leader
    brokers = cluster.broker_ids
    steps: list[Step] = []
    for kind in actions:
        if kind == "produce" and produced < bounds.records and leader is not None:
            steps.append({"produce": f"r{produced + 1}"})
        elif kind in ("fetch", "fetch_lost"):
            for b in cluster.replicas:
                if b != leader and b in running and leader is not None:
                    lost = {"follower": b, "response": "lost"}
                    steps.append({"fetch": b} if kind == "fetch" else {"fetch": lost})
        elif kind == "sync":
            if leader is not None and cluster.followers():
                steps.append({"sync": None})
        elif kind in ("crash", "power_loss") and crashes < bounds.crashes:
            for b in brokers:
                if b in running:
                    power = {"broker": b, "lose_unflushed": True}
                    steps.append({"crash": b} if kind == "crash" else {"crash": power})
        elif kind == "restart":
            steps.extend({"restart": b} for b in brokers if b not in running)
        elif kind in ("flush", "checkpoint"):
            steps.extend({kind: b} for b in brokers if b in running)
        elif kind == "expire" or (kind == "elect" and _counted_alive(cluster, running)):
            step = {"advance": session_timeout_ms(cluster.config)}
            if step not in steps:  # both in one alphabet: one step
                steps.append(step)
        elif kind in ("disconnect", "reconnect"):
            for a, b in _links(cluster):
                up = cluster.sim.link_up(a, b)
                if (kind == "disconnect") == up:
                    steps.append({kind: [a, b]})
    return steps


def _counted_alive(cluster: Cluster, running: set[int]) -> bool:
    """Whether the controller still counts a crashed broker as a leader, or as an ISR member of
    a partition that has a leader (it removes such a broker once it learns of the crash; the
    last ISR member of a partition left without a leader stays in its ISR)."""
    for st in cluster.partition_states().values():
        if st.leader is not None and (
            st.leader not in running or any(b not in running for b in st.isr)
        ):
            return True
    return False


def session_timeout_ms(config: Config) -> int:
    """How long the controller's side takes to notice a dead broker: ZooKeeper's session
    timeout, or the KRaft controller's broker session timeout."""
    if config.controller_mode == "kraft":
        return config.broker_session_timeout_ms
    return config.zookeeper_session_timeout_ms


def _links(cluster: Cluster) -> list[tuple[Any, Any]]:
    """The links the network actions cut: each broker to the controller's side, and each pair
    of brokers."""
    side = "zk" if cluster.config.controller_mode != "kraft" else CONTROLLER_NODES[0]
    ids = cluster.broker_ids
    links: list[tuple[Any, Any]] = [(b, side) for b in ids]
    links += [(a, b) for i, a in enumerate(ids) for b in ids[i + 1 :]]
    return links


def _counts(step: Step) -> tuple[int, int]:
    """(records produced, crashes) one step adds."""
    kind = next(iter(step))
    return int(kind == "produce"), int(kind == "crash")


def _step_text(step: Step) -> str:
    kind, arg = next(iter(step.items()))
    if arg is None:
        return kind
    if isinstance(arg, dict):
        return f"{kind} " + ", ".join(f"{k}={v}" for k, v in arg.items())
    if isinstance(arg, list):
        return f"{kind} {arg[0]}-{arg[1]}"
    return f"{kind} {arg}"


# ---- building a state ------------------------------------------------------------------------


class Replayer:
    """Builds the cluster a schedule leads to, from scratch: the simulator is deterministic, so
    a schedule is a complete description of its state. (``copy.deepcopy`` of a cluster fails on
    the compiled core, and on the sources its copy keeps callbacks bound to the original:
    benchmarks/bench_explore.py times both.)"""

    def __init__(
        self,
        config: Config,
        brokers: int,
        rules: Rules | None,
        *,
        restart_replaces_session: bool = False,
    ) -> None:
        self.config, self.brokers, self.rules = config, brokers, rules
        self.restart_replaces_session = restart_replaces_session

    def fresh(self) -> Cluster:
        return Cluster(
            brokers=self.brokers,
            config=self.config,
            rules=self.rules,
            restart_replaces_session=self.restart_replaces_session,
        )

    def apply(self, cluster: Cluster, step: Step) -> None:
        """Run one step; ActionError when the state does not allow it."""
        kind, raw = next(iter(step.items()))
        args = step_kinds.parse_args(kind, raw, self.brokers)
        step_kinds.apply(cluster, kind, args)

    def build(self, steps: Iterable[Step]) -> Cluster:
        cluster = self.fresh()
        for step in steps:
            self.apply(cluster, step)
        return cluster


# ---- the search ------------------------------------------------------------------------------


@dataclass
class _Node:
    """A schedule, what it has used of the bounds, and its choices (each step's position among
    the options of its state), which order the search."""

    steps: list[Step]
    produced: int
    crashes: int
    path: tuple[int, ...] = ()
    key: str = ""  # the state's digest (with what it used of the bounds)


def explore(
    settings: Mapping[str, Any] | None = None,
    *,
    brokers: int = 2,
    depth: int = 8,
    records: int = 2,
    crashes: int = 1,
    actions: Sequence[str] = DEFAULT_ACTIONS,
    invariants: Sequence[str] | None = None,
    rules: Rules | None = None,
    max_states: int = 200_000,
    progress: Callable[[int, int, int], None] | None = None,
    expand: Callable[[list[_Node], Any], list[tuple[_Node, Any]]] | None = None,
    workers: int | None = None,
    restart_replaces_session: bool = False,
) -> ExploreResult:
    """Search every schedule of ``actions`` up to ``depth`` steps, breadth first, on a stepped
    cluster of ``brokers`` with ``settings``; stop at the first schedule that breaks one of
    ``invariants`` (default: all of :data:`kafkalab.INVARIANTS`). ``progress(depth, states,
    frontier)`` is called after each depth; ``expand`` replaces the in-process expansion of a
    depth (:mod:`kafkalab.explore.spark` passes one that runs on Spark). ``workers``: processes
    that expand a large depth's states side by side (default: ``KAFKALAB_EXPLORE_WORKERS`` when
    set, else one per core this process may use on Linux and 1 elsewhere; 1: all in this
    process); the result is the same whatever the number. ``restart_replaces_session``: a
    restarted broker registers at once beside the dedicated controller, as KIP-101's own
    scenarios tell it; Kafka refuses that registration while the old session lives (see
    :class:`kafkalab.Cluster`)."""
    if not isinstance(restart_replaces_session, bool):
        raise ConfigError(
            f"restart_replaces_session={restart_replaces_session!r} is not allowed: use True or "
            "False"
        )
    settings = dict(settings or {})
    config = make_config(settings)
    if "preset" in settings:  # as the config read it: an unquoted 0.10 arrives as 0.1
        settings["preset"] = config.preset
    bounds = Bounds(brokers, depth, records, crashes, max_states)
    actions = _check_actions(actions)
    names = _check_invariants(invariants)
    job = _Job(config, brokers, rules, actions, names, bounds, restart_replaces_session)
    count = _check_workers(workers)
    pool = None if expand is not None else _Workers.start(job, count)
    try:
        chosen = expand or (pool.expand if pool is not None else job.expand_locally)
        return _search(job, settings, bounds, chosen, progress)
    finally:
        if pool is not None:
            pool.close()


def _search(
    job: _Job,
    settings: dict[str, Any],
    bounds: Bounds,
    expand: Callable[[list[_Node], Any], list[tuple[_Node, Any]]],
    progress: Callable[[int, int, int], None] | None,
) -> ExploreResult:
    depth, max_states, names = bounds.depth, bounds.max_states, job.names
    started = time.perf_counter()
    root = job.replayer.fresh()
    broken = root.monitor.first_violation(names)
    seen = {job.key(root, 0, 0)}
    frontier = [_Node([], 0, 0, (), next(iter(seen)))]
    levels = [1]
    found: tuple[_Node, tuple[str, str]] | None = None
    reached, complete = 0, True
    if broken is not None:
        found = (frontier[0], broken)
    while found is None and frontier and reached < depth:
        reached += 1
        children = expand(frontier, job)
        frontier = []
        for child, outcome in sorted(children, key=lambda c: _order(c[0])):
            if isinstance(outcome, tuple):
                found = (child, outcome)
                break
            if outcome in seen:
                continue
            if len(seen) >= max_states:
                complete = False
                break
            seen.add(outcome)
            child.key = outcome
            frontier.append(child)
        levels.append(len(frontier))
        if progress is not None:
            progress(reached, len(seen), len(frontier))
        if not complete:
            break
    seconds = time.perf_counter() - started
    violation = None if found is None else job.confirm(found[0].steps, *found[1], settings)
    return ExploreResult(
        violation=violation,
        states=len(seen),
        depth=reached,
        seconds=seconds,
        complete=complete,
        exhausted=found is None and not frontier and complete,
        bounds=bounds,
        settings=settings,
        levels=levels,
    )


# Sets the default number of workers, for a machine whose cores are busy already (the test run's
# own workers use them all: forking the search there only adds competing processes).
WORKERS_VARIABLE = "KAFKALAB_EXPLORE_WORKERS"


def _check_workers(workers: int | None) -> int:
    if workers is None:
        chosen = os.environ.get(WORKERS_VARIABLE, "").strip()
        if chosen:
            if not chosen.isdigit() or int(chosen) < 1:
                raise ConfigError(
                    f"{WORKERS_VARIABLE}={chosen!r} is not allowed: use a whole number >= 1, "
                    "or leave it unset for one worker per core"
                )
            return int(chosen)
        # Forking is safe by default on Linux only (macOS: not with every library).
        if not sys.platform.startswith("linux"):
            return 1
        return len(os.sched_getaffinity(0))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers={workers!r} is not allowed: use a whole number >= 1")
    return workers


# The job the forked workers expand states of: each inherits it from the process that forks it.
_FORKED_JOB: _Job | None = None


def _expand_forked(nodes: list[_Node]) -> list[tuple[_Node, str | tuple[str, str]]]:
    assert _FORKED_JOB is not None
    return _FORKED_JOB.expand_locally(nodes, _FORKED_JOB)


class _Workers:
    """Forked processes that expand the states of a large depth, a share each; the children come
    back in the frontier's order, so the search is the one a single process makes. The workers
    start at the first depth of at least :data:`PARALLEL_MIN` states (none for a small search).
    Should one die (killed, out of memory), the search warns and goes on in this process, with
    the same result."""

    def __init__(self, job: _Job, workers: int) -> None:
        self.job, self.workers = job, workers
        self.pool: ProcessPoolExecutor | None = None
        self.broken = False

    @classmethod
    def start(cls, job: _Job, workers: int) -> _Workers | None:
        """Workers, or None where only one is wanted or processes cannot be forked."""
        if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
            return None
        return cls(job, workers)

    def expand(self, frontier: list[_Node], job: Any) -> list[tuple[_Node, str | tuple[str, str]]]:
        if len(frontier) < PARALLEL_MIN or self.broken:
            return self.job.expand_locally(frontier, job)
        if self.pool is None:
            global _FORKED_JOB
            _FORKED_JOB = self.job
            self.pool = ProcessPoolExecutor(self.workers, multiprocessing.get_context("fork"))
        size = -(-len(frontier) // (4 * self.workers))  # four shares a worker: an even finish
        shares = [frontier[i : i + size] for i in range(0, len(frontier), size)]
        try:
            return [child for part in self.pool.map(_expand_forked, shares) for child in part]
        except BrokenProcessPool:
            self.broken = True
            self.close()
            warnings.warn(
                "a worker of the search ended unexpectedly; the search goes on in this process "
                "(same result, more time; workers=1 asks for that from the start)",
                RuntimeWarning,
                stacklevel=2,
            )
            return self.job.expand_locally(frontier, job)

    def close(self) -> None:
        global _FORKED_JOB
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
        _FORKED_JOB = None


def _order(node: _Node) -> tuple[int, ...]:
    """Children in the order of their choices: the same search whatever runs the expansion
    (in this process or on Spark)."""
    return node.path


class _Job:
    """What expanding a state needs: picklable plain data, so Spark tasks can run it too."""

    def __init__(
        self,
        config: Config,
        brokers: int,
        rules: Rules | None,
        actions: tuple[str, ...],
        names: tuple[str, ...],
        bounds: Bounds,
        restart_replaces_session: bool = False,
    ) -> None:
        self.config, self.brokers, self.rules = config, brokers, rules
        self.actions, self.names, self.bounds = actions, names, bounds
        self.restart_replaces_session = restart_replaces_session

    @property
    def replayer(self) -> Replayer:
        return Replayer(
            self.config,
            self.brokers,
            self.rules,
            restart_replaces_session=self.restart_replaces_session,
        )

    def key(self, cluster: Cluster, produced: int, crashes: int) -> str:
        return f"{state_digest(cluster)}:{produced}:{crashes}"

    def expand(self, node: _Node) -> list[tuple[_Node, str | tuple[str, str]]]:
        """Every child of one state: (child, its key) or (child, (invariant, message))."""
        replayer = self.replayer
        parent = replayer.build(node.steps)
        options = enabled_steps(parent, self.actions, node.produced, node.crashes, self.bounds)
        out: list[tuple[_Node, str | tuple[str, str]]] = []
        for i, step in enumerate(options):
            # the last option reuses the parent's cluster; the others rebuild it
            cluster = parent if i == len(options) - 1 else replayer.build(node.steps)
            try:
                replayer.apply(cluster, step)
            except ActionError:
                continue
            produced, crashed = _counts(step)
            child = _Node(
                [*node.steps, step],
                node.produced + produced,
                node.crashes + crashed,
                (*node.path, i),
            )
            broken = cluster.monitor.first_violation(self.names)
            if broken is not None:
                out.append((child, broken))
            else:
                out.append((child, self.key(cluster, child.produced, child.crashes)))
        return out

    def expand_locally(
        self, frontier: list[_Node], job: Any
    ) -> list[tuple[_Node, str | tuple[str, str]]]:
        out: list[tuple[_Node, str | tuple[str, str]]] = []
        for node in frontier:
            out.extend(self.expand(node))
        return out

    def confirm(
        self, steps: list[Step], invariant: str, message: str, settings: Mapping[str, Any]
    ) -> Violation:
        """Replay the schedule from scratch as a scenario file whose expect block holds what
        happened; it must break the same invariant and meet its own expectations."""
        report, text = counterexample(
            self,
            steps,
            invariant,
            message,
            settings,
            lambda c: c.monitor.first_violation(self.names),
        )
        return Violation(invariant, message, steps, report, text)


def _check_actions(actions: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(actions, str):
        actions = [a.strip() for a in actions.split(",") if a.strip()]
    bad = [a for a in actions if a not in ACTIONS]
    if bad or not actions:
        raise ConfigError(
            f"actions={list(actions)!r} is not allowed: choose from {', '.join(ACTIONS)}"
        )
    return tuple(dict.fromkeys(actions))


def _check_invariants(names: Sequence[str] | None) -> tuple[str, ...]:
    if names is None or not list(names):
        return CHECK_ORDER
    bad = [n for n in names if n not in INVARIANTS]
    if bad:
        raise ConfigError(
            f"invariant {bad[0]!r} is not one of kafkalab.INVARIANTS: {', '.join(INVARIANTS)}"
        )
    return tuple(n for n in CHECK_ORDER if n in names)
