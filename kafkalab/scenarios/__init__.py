"""Scenario files: the YAML format instructors and learners write, and the named catalog.

A scenario names a cluster (brokers, leader, config), a list of steps replayed in stepped mode, an
optional ``expect`` block checked at the end, ``check`` steps checked on the way, and optional
``variants``: the same steps with some settings changed (the old behaviour switched on or off)
and what to expect then.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from kafkalab.config import make_config, normalize_key
from kafkalab.errors import ActionError, ConfigError, ScenarioError, did_you_mean
from kafkalab.protocol.rules import Rules
from kafkalab.sim.cluster import (
    ALTER_PARTITION_ANSWERS,
    ALTER_PARTITION_ERRORS,
    DYNAMIC_BROKER_KEYS,
    TOPIC_KEYS,
    Cluster,
)

__all__ = [
    "EXPECT_KEYS",
    "STEP_KINDS",
    "Scenario",
    "ScenarioResult",
    "apply_step",
    "catalog",
    "check_expect",
    "get",
    "load",
    "parse",
    "replay",
    "run",
]

TOP_KEYS = (
    "name",
    "description",
    "brokers",
    "leader",
    "replicas",
    "partitions",
    "topics",
    "racks",
    "config",
    "steps",
    "expect",
    "variants",
    "seed",
    "replication",
)

# Each step kind: (the key its scalar form fills, the keys its mapping form allows).
STEP_KINDS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "produce": (
        "value",
        (
            "value",
            "values",
            "count",
            "acks",
            "producer",
            "partition",
            "to",
            "producer_id",
            "producer_epoch",
            "sequence",
            "response",
            "request",
            "delay_ms",
        ),
    ),
    "producer": (None, ()),
    "consumer": (None, ()),
    "begin": ("producer", ("producer",)),
    "commit": ("producer", ("producer",)),
    "abort": ("producer", ("producer",)),
    "send_offsets": (None, ("producer", "consumer", "group", "offsets")),
    "poll": ("consumer", ("consumer", "process")),
    "process": ("consumer", ("consumer",)),
    "commit_offsets": ("consumer", ("consumer",)),
    "fetch": ("follower", ("follower", "response", "delay_ms", "partition", "max_wait_ms")),
    "stop": ("broker", ("broker",)),
    "pause": ("node", ("node",)),
    "resume": ("node", ("node",)),
    "elect_preferred": (None, ("partition",)),
    "crash": ("broker", ("broker", "lose_unflushed")),
    "restart": ("broker", ("broker",)),
    "flush": ("broker", ("broker",)),
    "advance": ("ms", ("ms",)),
    "disconnect": (None, ()),
    "reconnect": (None, ()),
    "throttle": (None, ()),
    "partition": (None, ()),
    "heal": (None, ()),
    "set": (None, ()),
    "delete_records": ("offset", ("offset", "partition")),
    "alter_partition": ("answer", ("answer", "partition", "delay_ms", "error")),
    "check": (None, ()),
}

EXPECT_KEYS = (
    "leader",
    "leader_epoch",
    "isr",
    "running",
    "hw",
    "leo",
    "logs",
    "epoch_cache",
    "acked",
    "lost_acked",
    "divergent",
    "errors",
    "hw_regressions",
    "two_leaders",
    "isr_shrinks",
    "isr_expands",
    "unclean_elections",
    "time_ms",
    "controller",
    "controller_epoch",
    "offline_partitions",
    "under_replicated_partitions",
    "partitions",
    "duplicates",
    "reordered",
    "consumed",
    "processed",
    "aborted_reads",
    "txn_errors",
    "txn_states",
    "lso",
    "consumer_errors",
    "rejected_requests",
    "fenced_markers",
    "producers",
    "hw_checkpoint",
    "log_start_offset",
    "pending_isr",
    "maximal_isr",
)
_BROKER_MAPS = ("hw", "leo", "logs", "epoch_cache", "hw_checkpoint", "log_start_offset")
_AS_SETS = ("isr", "running", "acked", "lost_acked", "maximal_isr")
_AS_ENTRY_SETS = ("rejected_requests", "fenced_markers")


@dataclass(frozen=True)
class Step:
    index: int  # 1-based, as authors count
    kind: str
    args: dict[str, Any]
    note: str | None = None


@dataclass(frozen=True)
class Variant:
    name: str
    settings: dict[str, Any]
    expect: dict[str, Any]
    description: str = ""


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    brokers: int
    leader: int
    replicas: Any
    config: dict[str, Any]
    steps: list[Step]
    expect: dict[str, Any]
    variants: list[Variant] = field(default_factory=list)
    seed: int = 0
    source: str = ""  # the YAML text
    partitions: int = 1
    racks: dict[int, str] = field(default_factory=dict)
    replication: str = "manual"
    topics: Any = None  # several topics: a list of names or a mapping of name to partitions

    def _clients(self, key: str, kind: str) -> list[str]:
        """The transactional ids (or groups) the steps use: their internal partitions exist
        from the start."""
        found = []
        for step in self.steps:
            if step.kind == kind:
                value = step.args["settings"].get(key) or step.args["settings"].get(
                    key.replace("_", ".")
                )
                if kind == "consumer" and value is None:
                    value = step.args["settings"].get("group")
                if value:
                    found.append(str(value))
            elif step.kind == "send_offsets" and kind == "consumer" and step.args.get("group"):
                found.append(str(step.args["group"]))
        return found

    def cluster(
        self, overrides: Mapping[str, Any] | None = None, *, rules: Rules | None = None
    ) -> Cluster:
        """A fresh cluster in this scenario's initial state (no step applied); ``rules``
        replaces some of Kafka's rules (:class:`kafkalab.Rules`)."""
        settings = {**self.config, **(overrides or {})}
        several = self.partitions > 1 or self.topics is not None
        return Cluster(
            self.brokers,
            config=make_config(settings),
            leader=None if several else self.leader,
            replicas=self.replicas,
            partitions=self.partitions,
            topics=self.topics,
            racks=self.racks or None,
            seed=self.seed,
            transactional_ids=self._clients("transactional_id", "producer"),
            groups=self._clients("group_id", "consumer"),
            replication=self.replication,
            rules=rules,
        )


@dataclass
class ScenarioResult:
    scenario: Scenario
    variant: Variant | None
    cluster: Cluster
    mismatches: list[str]  # empty when every expectation held

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def state(self) -> dict[str, Any]:
        return self.cluster.state()


# ---- parsing -------------------------------------------------------------------------------


def parse(text: str, origin: str = "<scenario>") -> Scenario:
    """Parse and validate a scenario's YAML text."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ScenarioError(f"{origin}: malformed YAML{where}: {problem}") from None
    if not isinstance(doc, dict):
        raise ScenarioError(f"{origin}: a scenario is a mapping with name, brokers, steps, ...")
    for key in doc:
        if key not in TOP_KEYS:
            raise ScenarioError(
                f"{origin}: unknown key {key!r}{did_you_mean(str(key), TOP_KEYS)}; "
                f"allowed: {', '.join(TOP_KEYS)}"
            )
    name = str(doc.get("name") or Path(origin).stem)
    brokers = _int(doc.get("brokers", 3), f"{origin}: brokers", 1)
    leader = _int(doc.get("leader", 1), f"{origin}: leader", 1)
    if leader > brokers:
        raise ScenarioError(f"{origin}: leader {leader} does not exist: brokers are 1..{brokers}")
    config = _config(doc.get("config") or {}, origin)
    steps_doc = doc.get("steps") or []
    if not isinstance(steps_doc, list):
        raise ScenarioError(f"{origin}: steps must be a list")
    steps = [_step(i, s, origin, brokers) for i, s in enumerate(steps_doc, start=1)]
    expect = _expect(doc.get("expect") or {}, f"{origin}: expect")
    variants = _variants(doc.get("variants") or [], origin)
    replicas = doc.get("replicas")
    seed = _int(doc.get("seed", 0), f"{origin}: seed", 0)
    partitions = _int(doc.get("partitions", 1), f"{origin}: partitions", 1)
    topics = doc.get("topics")
    if "topics" in doc:
        _check_one_topic_keys(doc, origin)
    racks = doc.get("racks") or {}
    if not isinstance(racks, dict):
        raise ScenarioError(f"{origin}: racks must map broker ids to rack names, like {{1: a}}")
    scenario = Scenario(
        name,
        str(doc.get("description") or "").strip(),
        brokers,
        leader,
        replicas,
        config,
        steps,
        expect,
        variants,
        seed,
        text,
        partitions,
        {int(b): str(r) for b, r in racks.items()},
        str(doc.get("replication", "manual")),
        topics,
    )
    try:  # build the cluster once so bad configs surface now, not halfway through a replay
        cluster = scenario.cluster()
    except (ConfigError, ActionError) as err:
        raise ScenarioError(f"{origin}: {err}") from None
    _check_partition_names(scenario, cluster, origin)
    return scenario


def _check_one_topic_keys(doc: Mapping[str, Any], origin: str) -> None:
    """``leader``, ``replicas`` and ``partitions`` describe a scenario's one topic; with
    ``topics`` each topic says its own."""
    clash = [key for key in ("leader", "replicas", "partitions") if key in doc]
    if clash:
        raise ScenarioError(
            f"{origin}: {', '.join(clash)} cannot go with topics: give each topic its "
            "partitions and replicas, like topics: {foo: {partitions: 2, replicas: [1, 2]}}"
        )


def _check_partition_names(scenario: Scenario, cluster: Cluster, origin: str) -> None:
    """Every partition a step or an expectation names exists: N (partition N of the first
    topic) or "topic-N"."""
    for step in scenario.steps:
        where = f"{origin}: step {step.index} ({step.kind})"
        named = [step.args.get("partition")]
        if step.kind == "consumer":
            named += list(step.args["settings"].get("partitions") or [])
        if step.kind == "send_offsets":
            named += list(step.args.get("offsets") or {})
        if step.kind == "check":
            named += _expected_partitions(step.args["expect"])
        _check_names(cluster, [p for p in named if p is not None], where)
    _check_names(cluster, _expected_partitions(scenario.expect), f"{origin}: expect")
    for i, variant in enumerate(scenario.variants, start=1):
        _check_names(cluster, _expected_partitions(variant.expect), f"{origin}: variant {i}")


def _expected_partitions(expect: Mapping[str, Any]) -> list[Any]:
    found: list[Any] = []
    for key in ("partitions", "lso"):
        if isinstance(expect.get(key), Mapping):
            found += list(expect[key])
    return found


def _check_names(cluster: Cluster, names: list[Any], where: str) -> None:
    for name in names:
        try:
            cluster.partition_name(name)
        except ActionError as err:
            raise ScenarioError(f"{where}: {err}") from None


def _int(value: Any, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ScenarioError(f"{what}={value!r} is not allowed: use a whole number >= {minimum}")
    return value


def _config(raw: Any, origin: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{origin}: config must be a mapping of Kafka settings")
    try:
        make_config(raw)
        return {normalize_key(k): v for k, v in raw.items()}
    except ConfigError as err:
        raise ScenarioError(f"{origin}: config: {err}") from None


def _step(index: int, raw: Any, origin: str, brokers: int) -> Step:
    where = f"{origin}: step {index}"
    note = None
    if isinstance(raw, str):
        kind, arg = raw, None
    elif isinstance(raw, dict) and raw:
        raw = dict(raw)
        note = raw.pop("note", None)
        if len(raw) != 1:
            raise ScenarioError(
                f"{where}: a step has one kind (and an optional note), got {list(raw)}"
            )
        kind, arg = next(iter(raw.items()))
    else:
        raise ScenarioError(
            f"{where}: a step is a kind such as 'heal' or a mapping like 'fetch: 1'"
        )
    if kind not in STEP_KINDS:
        raise ScenarioError(
            f"{where}: unknown step {kind!r}{did_you_mean(str(kind), STEP_KINDS)}; "
            f"allowed: {', '.join(STEP_KINDS)}"
        )
    args = _step_args(kind, arg, where)
    for key in ("follower", "broker"):
        if args.get(key) is not None:
            b = args[key]
            if kind in ("crash", "restart") and isinstance(b, str):
                continue  # a KRaft controller node or a client, checked by the cluster
            if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= brokers:
                raise ScenarioError(
                    f"{where} ({kind}): {key} {b!r} does not exist: brokers are 1..{brokers}"
                )
    return Step(index, kind, args, note)


def _step_args(kind: str, arg: Any, where: str) -> dict[str, Any]:
    scalar_key, allowed = STEP_KINDS[kind]
    if kind == "heal":
        if arg is not None:
            raise ScenarioError(f"{where} (heal): heal takes no argument")
        return {}
    if kind == "elect_preferred" and arg is None:
        return {}
    if kind == "send_offsets" and not isinstance(arg, dict):
        raise ScenarioError(
            f"{where} (send_offsets): give the producer and a consumer (or a group and "
            "offsets), like {producer: p1, consumer: c1}"
        )
    if kind in ("producer", "consumer"):
        if not isinstance(arg, dict) or "name" not in arg:
            raise ScenarioError(f"{where} ({kind}): give settings with a name, like {{name: c1}}")
        return {"settings": dict(arg)}
    if kind in ("disconnect", "reconnect"):
        if not isinstance(arg, list) or len(arg) != 2:
            raise ScenarioError(f"{where} ({kind}): give two nodes, like [1, zk]")
        return {"a": arg[0], "b": arg[1]}
    if kind == "throttle":
        if not isinstance(arg, list) or len(arg) != 3:
            raise ScenarioError(
                f"{where} (throttle): give two nodes and megabytes per second (null: full "
                "speed), like [1, 2, 1.5]"
            )
        return {"a": arg[0], "b": arg[1], "mb_per_s": arg[2]}
    if kind == "partition":
        if not isinstance(arg, list) or len(arg) < 2 or not all(isinstance(g, list) for g in arg):
            raise ScenarioError(
                f"{where} (partition): give two or more groups, like [[1], [2, zk]]"
            )
        return {"groups": arg}
    if kind == "check":
        return {"expect": _expect(arg or {}, f"{where} (check)")}
    if kind == "set":
        return _set_args(arg, where)
    if isinstance(arg, dict):
        for key in arg:
            if key not in allowed:
                raise ScenarioError(
                    f"{where} ({kind}): unknown key {key!r}{did_you_mean(str(key), allowed)}; "
                    f"allowed: {', '.join(allowed)}"
                )
        args = dict(arg)
    elif arg is None:
        raise ScenarioError(f"{where} ({kind}): missing its {scalar_key}")
    else:
        args = {scalar_key: arg}
    if kind == "produce" and "value" not in args and "values" not in args:
        raise ScenarioError(f"{where} (produce): give a value (or values)")
    if (
        kind == "produce"
        and "acks" in args
        and str(args["acks"]).lower() not in ("0", "1", "all", "-1")
    ):
        raise ScenarioError(
            f"{where} (produce): acks={args['acks']!r} is not allowed: use 0, 1 or all"
        )
    if kind == "advance":
        _int(args.get("ms"), f"{where} (advance): ms", 0)
    if kind == "delete_records":
        _int(args.get("offset"), f"{where} (delete_records): offset", -1)
    if kind == "alter_partition":
        _alter_partition_args(args, where)
    return args


def _set_args(arg: Any, where: str) -> dict[str, Any]:
    """``set: {unclean.leader.election.enable: true}``, optionally with ``broker: N`` or
    ``topic: NAME``: keys must be settings a running cluster can change."""
    if not isinstance(arg, dict) or not arg:
        raise ScenarioError(
            f"{where} (set): give settings, like {{unclean.leader.election.enable: true}} "
            "(optionally with broker: N or topic: NAME)"
        )
    settings = dict(arg)
    broker, topic = settings.pop("broker", None), settings.pop("topic", None)
    if broker is not None and topic is not None:
        raise ScenarioError(f"{where} (set): give a broker or a topic, not both")
    allowed = TOPIC_KEYS if topic is not None else DYNAMIC_BROKER_KEYS
    try:
        normalized = {normalize_key(k): v for k, v in settings.items()}
        if not normalized:
            raise ScenarioError(f"{where} (set): name at least one setting")
        for key in normalized:
            if key not in allowed:
                names = ", ".join(k.replace("_", ".") for k in allowed)
                scope = "a topic" if topic is not None else "a running cluster"
                raise ScenarioError(
                    f"{where} (set): {key.replace('_', '.')} cannot be changed for {scope}: "
                    f"use one of {names}"
                )
        make_config(normalized)
    except ConfigError as err:
        raise ScenarioError(f"{where} (set): {err}") from None
    return {"settings": normalized, "broker": broker, "topic": topic}


def _alter_partition_args(args: dict[str, Any], where: str) -> None:
    if args.get("answer") not in ALTER_PARTITION_ANSWERS:
        raise ScenarioError(
            f"{where} (alter_partition): answer={args.get('answer')!r} is not allowed: use "
            f"{', '.join(ALTER_PARTITION_ANSWERS)}"
        )
    if "error" in args and args["error"] not in ALTER_PARTITION_ERRORS:
        raise ScenarioError(
            f"{where} (alter_partition): error={args['error']!r} is not allowed: use "
            f"{', '.join(ALTER_PARTITION_ERRORS)}"
        )
    if "delay_ms" in args:
        _int(args["delay_ms"], f"{where} (alter_partition): delay_ms", 0)


def _expect(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: expect must be a mapping")
    for key in raw:
        if key not in EXPECT_KEYS:
            raise ScenarioError(
                f"{where}: unknown key {key!r}{did_you_mean(str(key), EXPECT_KEYS)}; "
                f"allowed: {', '.join(EXPECT_KEYS)}"
            )
    return dict(raw)


def _variants(raw: Any, origin: str) -> list[Variant]:
    if not isinstance(raw, list):
        raise ScenarioError(f"{origin}: variants must be a list")
    out = []
    for i, v in enumerate(raw, start=1):
        where = f"{origin}: variant {i}"
        if not isinstance(v, dict) or "set" not in v:
            raise ScenarioError(f"{where}: a variant has 'set' (settings) and 'expect'")
        settings = _config(v["set"], where)
        out.append(
            Variant(
                str(v.get("name") or f"variant-{i}"),
                settings,
                _expect(v.get("expect") or {}, f"{where}: expect"),
                str(v.get("description") or "").strip(),
            )
        )
    return out


# ---- the catalog ---------------------------------------------------------------------------


def _catalog_dir() -> Any:
    return resources.files("kafkalab.scenarios") / "catalog"


def catalog() -> dict[str, Scenario]:
    """Every named scenario that ships with kafkalab, by name."""
    out = {}
    for entry in sorted(_catalog_dir().iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".yaml"):
            s = parse(entry.read_text(encoding="utf-8"), entry.name)
            out[s.name] = s
    return out


def load(file_or_name: str) -> Scenario:
    """A scenario from a YAML file path, or from the catalog by name."""
    path = Path(file_or_name)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ScenarioError(f"no scenario file {file_or_name!r}")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ScenarioError(f"cannot read {file_or_name!r}: {err}") from None
        return parse(text, str(path))
    return get(file_or_name)


def get(name: str) -> Scenario:
    """A catalog scenario by name."""
    entries = catalog()
    if name not in entries:
        raise ScenarioError(
            f"no scenario file or catalog entry named {name!r}{did_you_mean(name, entries)}; "
            "'kafkalab scenario list' shows the catalog"
        )
    return entries[name]


# ---- replay --------------------------------------------------------------------------------


def apply_step(cluster: Cluster, step: Step) -> list[str]:
    """Apply one step to a cluster; a ``check`` step returns its mismatches."""
    a = step.args
    try:
        if step.kind == "check":
            return [f"after step {step.index}: {m}" for m in check_expect(cluster, a["expect"])]
        if step.kind == "produce":
            cluster.produce(
                a.get("value"),
                values=a.get("values"),
                count=a.get("count"),
                acks=a.get("acks"),
                producer=a.get("producer", "producer"),
                partition=a.get("partition"),
                to=a.get("to"),
                producer_id=a.get("producer_id"),
                producer_epoch=a.get("producer_epoch", 0),
                sequence=a.get("sequence"),
                response=a.get("response", "ok"),
                request=a.get("request", "ok"),
                delay_ms=a.get("delay_ms", 1000),
            )
        elif step.kind == "fetch":
            cluster.fetch(
                a["follower"],
                response=a.get("response", "ok"),
                delay_ms=a.get("delay_ms", 1000),
                partition=a.get("partition"),
                max_wait_ms=a.get("max_wait_ms"),
            )
        elif step.kind in ("producer", "consumer"):
            settings = dict(a["settings"])
            getattr(cluster, step.kind)(str(settings.pop("name")), **settings)
        elif step.kind in ("begin", "commit", "abort"):
            getattr(cluster, step.kind)(a["producer"])
        elif step.kind == "send_offsets":
            cluster.send_offsets(
                a.get("producer"),
                consumer=a.get("consumer"),
                group=a.get("group"),
                offsets=a.get("offsets"),
            )
        elif step.kind == "poll":
            cluster.poll(a["consumer"], process=bool(a.get("process", True)))
        elif step.kind in ("process", "commit_offsets"):
            getattr(cluster, step.kind)(a["consumer"])
        elif step.kind in ("pause", "resume"):
            getattr(cluster, step.kind)(a["node"])
        elif step.kind == "stop":
            cluster.stop(a["broker"])
        elif step.kind == "elect_preferred":
            cluster.elect_preferred(a.get("partition"))
        elif step.kind == "crash":
            cluster.crash(a["broker"], lose_unflushed=bool(a.get("lose_unflushed", False)))
        elif step.kind in ("restart", "flush"):
            getattr(cluster, step.kind)(a["broker"])
        elif step.kind == "advance":
            cluster.advance(a["ms"])
        elif step.kind in ("disconnect", "reconnect"):
            getattr(cluster, step.kind)(a["a"], a["b"])
        elif step.kind == "throttle":
            cluster.throttle(a["a"], a["b"], a["mb_per_s"])
        elif step.kind == "partition":
            cluster.partition(a["groups"])
        elif step.kind == "set":
            cluster.set_config(a["settings"], broker=a["broker"], topic=a["topic"])
        elif step.kind == "delete_records":
            cluster.delete_records(a["offset"], partition=a.get("partition"))
        elif step.kind == "alter_partition":
            cluster.alter_partition(
                a["answer"],
                partition=a.get("partition"),
                delay_ms=a.get("delay_ms", 1000),
                error=a.get("error", "INVALID_UPDATE_VERSION"),
            )
        else:
            cluster.heal()
    except (ActionError, ConfigError) as err:
        raise ScenarioError(f"step {step.index} ({step.kind}): {err}") from None
    return []


def replay(
    scenario: Scenario,
    overrides: Mapping[str, Any] | None = None,
    *,
    checks: bool = True,
    rules: Rules | None = None,
) -> tuple[Cluster, list[str]]:
    """Run every step; returns the cluster and the mismatches of its check steps (``check``
    steps describe the scenario as written, so a variant runs them with ``checks=False``)."""
    try:
        cluster = scenario.cluster(overrides, rules=rules)
    except ConfigError as err:
        raise ScenarioError(f"{scenario.name}: config: {err}") from None
    mismatches: list[str] = []
    for step in scenario.steps:
        if step.kind == "check" and not checks:
            continue
        try:
            mismatches += apply_step(cluster, step)
        except ScenarioError as err:
            raise ScenarioError(f"{scenario.name}: {err}") from None
    return cluster, mismatches


def _normalize_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    return {normalize_key(k): v for k, v in overrides.items()}


def find_variant(scenario: Scenario, overrides: Mapping[str, Any]) -> Variant | None:
    """The variant whose settings are exactly ``overrides`` (compared after validation)."""
    if not overrides:
        return None
    wanted = _normalize_overrides(overrides)
    base = {**scenario.config}
    try:
        wanted_config = make_config({**base, **wanted})
    except ConfigError as err:
        raise ScenarioError(f"--set: {err}") from None
    for v in scenario.variants:
        if set(v.settings) == set(wanted) and make_config({**base, **v.settings}) == wanted_config:
            return v
    return None


def run(
    scenario: Scenario,
    overrides: Mapping[str, Any] | None = None,
    variant: Variant | None = None,
    *,
    rules: Rules | None = None,
) -> ScenarioResult:
    """Replay a scenario (or one of its variants) and check its expectations; ``rules``
    replaces some of Kafka's rules (:class:`kafkalab.Rules`)."""
    if variant is None and overrides:
        variant = find_variant(scenario, overrides)
    settings = dict(variant.settings) if variant is not None else {}
    settings.update(_normalize_overrides(overrides or {}))
    cluster, mismatches = replay(scenario, settings, checks=variant is None, rules=rules)
    expect = variant.expect if variant is not None else scenario.expect
    mismatches += check_expect(cluster, expect)
    return ScenarioResult(scenario, variant, cluster, mismatches)


# ---- expectations --------------------------------------------------------------------------


def check_expect(cluster: Cluster, expect: Mapping[str, Any]) -> list[str]:
    """Compare an expect block with the cluster's state; one readable line per mismatch."""
    state = cluster.state()
    out = []
    for key, want in expect.items():
        got = state[key]
        if key in _BROKER_MAPS:
            for b, w in (want or {}).items():
                b_int = int(b)
                g = got.get(b_int)
                if w != g:
                    out.append(f"{key}[{b_int}]: expected {w!r}, got {g!r}")
        elif key in _AS_SETS:
            if sorted(map(str, want or [])) != sorted(map(str, got)):
                out.append(f"{key}: expected {want!r}, got {got!r}")
        elif key == "errors":
            if {str(k): str(v) for k, v in (want or {}).items()} != got:
                out.append(f"errors: expected {want!r}, got {got!r}")
        elif key == "partitions":
            out += _check_partitions(_by_name(cluster, want), got)
        elif key == "lso":
            if _by_name(cluster, want) != got:
                out.append(f"lso: expected {want!r}, got {got!r}")
        elif key in _AS_ENTRY_SETS:
            out += _check_entries(key, want, got)
        elif key == "producers":
            for name, keys in (want or {}).items():
                g = got.get(str(name))
                for k, w in (keys or {}).items():
                    if g is None or g.get(k) != w:
                        out.append(
                            f"producers[{name}].{k}: expected {w!r}, got "
                            f"{None if g is None else g.get(k)!r}"
                        )
        elif key == "pending_isr":
            if (want is None) != (got is None) or sorted(want or []) != sorted(got or []):
                out.append(f"pending_isr: expected {want!r}, got {got!r}")
        elif key in ("hw_regressions", "two_leaders"):
            count = len(got)
            if (isinstance(want, bool) and want != bool(count)) or (
                not isinstance(want, bool) and want != count
            ):
                out.append(f"{key}: expected {want!r}, got {count} ({got!r})")
        elif want != got:
            out.append(f"{key}: expected {want!r}, got {got!r}")
    return out


def _by_name(cluster: Cluster, want: Any) -> dict[str, Any]:
    """An expectation keyed by partition, with N written out as the first topic's "topic-N"
    (a name that does not exist is kept, and reported as missing)."""
    out: dict[str, Any] = {}
    for tp, value in (want or {}).items():
        try:
            out[cluster.partition_name(tp)] = value
        except ActionError:
            out[str(tp)] = value
    return out


def _check_entries(key: str, want: Any, got: list[dict[str, Any]]) -> list[str]:
    """A list of entries in any order (each given key must match), or how many there are."""
    if isinstance(want, int) and not isinstance(want, bool):
        return [] if want == len(got) else [f"{key}: expected {want} entries, got {got!r}"]
    wanted = [dict(w) for w in (want or [])]
    left = list(got)
    for w in wanted:
        match = next((g for g in left if all(str(g.get(k)) == str(v) for k, v in w.items())), None)
        if match is None:
            return [f"{key}: expected {want!r}, got {got!r}"]
        left.remove(match)
    return [f"{key}: expected {want!r}, got {got!r}"] if left else []


def _check_partitions(want: Mapping[str, Any], got: Mapping[str, Any]) -> list[str]:
    """``partitions: {demo-1: {leader: 2, isr: [2, 3]}}``: only the keys given are checked."""
    out = []
    for tp, keys in want.items():
        actual = got.get(str(tp))
        if actual is None:
            out.append(f"partitions: no partition {tp!r} (partitions are {', '.join(got)})")
            continue
        for key, w in (keys or {}).items():
            g = actual.get(key)
            if key in _BROKER_MAPS:
                for b, wb in (w or {}).items():
                    if g.get(int(b)) != wb:
                        out.append(
                            f"partitions[{tp}].{key}[{b}]: expected {wb!r}, got {g.get(int(b))!r}"
                        )
            elif key in ("isr", "maximal_isr", "pending_isr"):
                if (w is None) != (g is None) or sorted(w or []) != sorted(g or []):
                    out.append(f"partitions[{tp}].{key}: expected {w!r}, got {g!r}")
            elif w != g:
                out.append(f"partitions[{tp}].{key}: expected {w!r}, got {g!r}")
    return out
