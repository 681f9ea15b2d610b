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
from kafkalab.sim import actions
from kafkalab.sim.actions import ActionView
from kafkalab.sim.cluster import Cluster
from kafkalab.sim.expect import check_expect

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
    "restart_replaces_session",
)

# Each step kind: (the key its scalar form fills, the keys it takes), from the step vocabulary
# (kafkalab.sim.actions).
STEP_KINDS: ActionView[tuple[str | None, tuple[str, ...]]] = ActionView(
    lambda a: True, lambda a: (a.scalar, a.param_names)
)


def __getattr__(name: str) -> Any:
    # EXPECT_KEYS are Cluster.state()'s keys: learning them builds a small cluster, so only
    # when asked.
    if name == "EXPECT_KEYS":
        return actions.expect_keys()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    # Beside the dedicated controller, a restarted broker's new ZooKeeper session replaces its
    # previous run's live one (Cluster's restart_replaces_session); Kafka refuses the restart.
    restart_replaces_session: bool = False

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
            restart_replaces_session=self.restart_replaces_session,
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

    def as_json(self) -> dict[str, Any]:
        """What ``kafkalab scenario run --json`` prints: every expect key (broker ids as
        string keys), the divergence details and the verdict."""
        from kafkalab.sim.expect import BROKER_MAPS

        state = self.cluster.state()
        out = {k: state[k] for k in (*actions.expect_keys(), "divergence")}
        for key in BROKER_MAPS:
            out[key] = {str(b): v for b, v in state[key].items()}
        out["scenario"] = self.scenario.name
        out["variant"] = self.variant.name if self.variant else None
        out["ok"] = self.ok
        out["mismatches"] = self.mismatches
        return out


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
        _flag(doc.get("restart_replaces_session", False), f"{origin}: restart_replaces_session"),
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


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise ScenarioError(f"{what}={value!r} is not allowed: use true or false")
    return value


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
    if kind not in actions.REGISTRY:
        raise ScenarioError(
            f"{where}: unknown step {kind!r}{did_you_mean(str(kind), actions.REGISTRY)}; "
            f"allowed: {', '.join(actions.REGISTRY)}"
        )
    try:
        args = actions.parse_args(kind, arg, brokers)
    except ScenarioError as err:
        raise ScenarioError(f"{where} ({kind}): {err}") from None
    return Step(index, kind, args, note)


def _expect(raw: Any, where: str) -> dict[str, Any]:
    try:
        return actions.check_expect_keys(raw)
    except ScenarioError as err:
        raise ScenarioError(f"{where}: {err}") from None


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
    """A catalog scenario by name (each is the catalog file of that name)."""
    files = {entry.name.removesuffix(".yaml"): entry for entry in _catalog_dir().iterdir()}
    names = sorted(n for n, entry in files.items() if entry.name.endswith(".yaml"))
    if name not in names:
        raise ScenarioError(
            f"no scenario file or catalog entry named {name!r}{did_you_mean(name, names)}; "
            "'kafkalab scenario list' shows the catalog"
        )
    entry = files[name]
    return parse(entry.read_text(encoding="utf-8"), entry.name)


# ---- replay --------------------------------------------------------------------------------


def apply_step(cluster: Cluster, step: Step) -> list[str]:
    """Apply one step to a cluster; a ``check`` step returns its mismatches."""
    try:
        mismatches = actions.apply(cluster, step.kind, step.args)
    except (ActionError, ConfigError) as err:
        raise ScenarioError(f"step {step.index} ({step.kind}): {err}") from None
    return [f"after step {step.index}: {m}" for m in mismatches]


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
