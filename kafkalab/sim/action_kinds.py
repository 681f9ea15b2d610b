"""How a step kind is declared, checked and run: the machinery behind :mod:`kafkalab.sim.actions`.

An :class:`Action` names its parameters (:class:`Param`), how a scenario file writes it and the
:class:`Cluster` method it calls; :func:`parse_args` reads a step's argument and :func:`apply` runs
it. The vocabulary itself, every step kind, is declared in :mod:`kafkalab.sim.actions`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kafkalab.config import ACKS_ALLOWED, make_config, normalize_key
from kafkalab.errors import ActionError, ConfigError, KafkalabError, ScenarioError, did_you_mean
from kafkalab.protocol import messages as msgs
from kafkalab.sim.expect import STATE_KEYS, check_expect

# The answers and errors an alter_partition step can make the controller give.
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

# Settings a running cluster can change, cluster-wide or for one broker, and the topic-level ones.
DYNAMIC_BROKER_KEYS = (
    "unclean_leader_election_enable",
    "min_insync_replicas",
    "transaction_partition_verification_enable",
)
TOPIC_KEYS = ("unclean_leader_election_enable", "min_insync_replicas")


# ---- the pieces of a declaration ------------------------------------------------------------

Check = Callable[[str, Any], None]  # (parameter name, value); raises naming both


@dataclass(frozen=True)
class Param:
    """One argument of an action, named as the Cluster method's keyword."""

    name: str
    required: bool = False
    check: Check | None = None  # checked when a scenario is parsed
    coerce: Callable[[Any], Any] | None = None  # applied when the step runs
    broker: bool = False  # a broker id, checked against the scenario's brokers
    node_name: bool = False  # ... or the name of another node (a KRaft controller, a client)


@dataclass(frozen=True)
class Action:
    """One step kind. ``scalar`` is the parameter a scenario's shorthand fills (``fetch: 1``);
    ``listed`` steps are written as a list of their parameters in order (``disconnect: [1, zk]``);
    ``parse`` replaces the usual shorthand-or-mapping reading; ``usage`` is the hint shown when
    the argument has the wrong shape."""

    name: str
    doc: str
    example: str
    params: tuple[Param, ...] = ()
    scalar: str | None = None
    method: str | None = None  # the Cluster method; default: the action's name
    listed: bool = False
    parse: Callable[[Action, Any], dict[str, Any]] | None = None
    check: Callable[[dict[str, Any]], None] | None = None  # after the parameters' own checks
    call: Callable[[Any, dict[str, Any]], list[str] | None] | None = None  # instead of method
    usage: str = ""
    explorer: bool = False  # offered by the explorer (ExplorerModel.do)
    fault: bool = False  # usable in a timed fault schedule
    timed: bool = True  # Cluster.at can schedule it

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def method_name(self) -> str:
        return self.method or self.name


# Every action, in the order error messages and the README list them.
REGISTRY: dict[str, Action] = {}


def register(action: Action) -> Action:
    """Add ``action`` to the registry, after checking that its declaration hangs together."""
    names = action.param_names
    if action.name in REGISTRY:
        raise ValueError(f"action {action.name!r} is declared twice")
    if action.scalar is not None and action.scalar not in names:
        raise ValueError(f"{action.name}: scalar {action.scalar!r} is not one of {names}")
    if (action.timed or action.fault) and action.method_name != action.name:
        raise ValueError(f"{action.name}: Cluster.at calls a method named as its action")
    REGISTRY[action.name] = action
    return action


T = TypeVar("T")


class ActionView(Mapping[str, T], Generic[T]):
    """A live, read-only view of the registry: the actions ``pick`` accepts (after ``first``),
    each mapped to ``value(action)``. Derived tables stay current with the registry."""

    def __init__(
        self,
        pick: Callable[[Action], bool],
        value: Callable[[Action], T],
        first: Mapping[str, T] | None = None,
    ) -> None:
        self._pick, self._value, self._first = pick, value, dict(first or {})

    def __getitem__(self, name: str) -> T:
        if name in self._first:
            return self._first[name]
        action = REGISTRY.get(name)
        if action is None or not self._pick(action):
            raise KeyError(name)
        return self._value(action)

    def __iter__(self) -> Iterator[str]:
        yield from self._first
        yield from (name for name, a in REGISTRY.items() if self._pick(a))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"ActionView({dict(self)!r})"


# ---- checks ---------------------------------------------------------------------------------


def parse_acks(acks: Any) -> int:
    """acks as Kafka's wire value (0, 1 or -1) from 0, 1, all or -1 (a number or text)."""
    text = str(acks).strip().lower()
    if text not in ACKS_ALLOWED:
        raise ActionError(f"acks={acks!r} is not allowed: use 0, 1 or all (-1)")
    return -1 if text in ("all", "-1") else int(text)


def _acks(name: str, value: Any) -> None:
    parse_acks(value)


def _whole(minimum: int) -> Check:
    def check(name: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ScenarioError(f"{name}={value!r} is not allowed: use a whole number >= {minimum}")

    return check


def _one_of(allowed: Callable[[], tuple[str, ...]]) -> Check:
    def check(name: str, value: Any) -> None:
        if value not in allowed():
            raise ScenarioError(f"{name}={value!r} is not allowed: use {', '.join(allowed())}")

    return check


def _alter_partition_answers() -> tuple[str, ...]:
    return ALTER_PARTITION_ANSWERS


def _alter_partition_errors() -> tuple[str, ...]:
    return ALTER_PARTITION_ERRORS


def _has_value(args: dict[str, Any]) -> None:
    if "value" not in args and "values" not in args:
        raise ScenarioError("give a value (or values)")


def _groups(args: dict[str, Any]) -> None:
    groups = args["groups"]
    if not isinstance(groups, list) or len(groups) < 2:
        raise ScenarioError("give two or more groups, like [[1], [2, zk]]")
    if not all(isinstance(g, list) for g in groups):
        raise ScenarioError("give two or more groups, like [[1], [2, zk]]")


def expect_keys() -> tuple[str, ...]:
    """What an expect block (or a ``check`` step) can name: every key of ``Cluster.state()``
    but the divergence details, which ``divergent`` sums up."""
    return tuple(key for key in STATE_KEYS if key != "divergence")


def check_expect_keys(raw: Any) -> dict[str, Any]:
    """An expect block as a dict, once every key is one :func:`expect_keys` allows."""
    if not isinstance(raw, dict):
        raise ScenarioError("expect must be a mapping")
    allowed = expect_keys()
    for key in raw:
        if key not in allowed:
            raise ScenarioError(
                f"unknown key {key!r}{did_you_mean(str(key), allowed)}; "
                f"allowed: {', '.join(allowed)}"
            )
    return dict(raw)


# ---- reading a step's argument --------------------------------------------------------------


def _shorthand_or_mapping(action: Action, arg: Any) -> dict[str, Any]:
    allowed = action.param_names
    if isinstance(arg, dict):
        for key in arg:
            if key not in allowed:
                raise ScenarioError(
                    f"unknown key {key!r}{did_you_mean(str(key), allowed)}; "
                    f"allowed: {', '.join(allowed)}"
                )
        return dict(arg)
    if action.scalar is None:
        raise ScenarioError(action.usage)
    return {} if arg is None else {action.scalar: arg}


def _listed(action: Action, arg: Any) -> dict[str, Any]:
    if not isinstance(arg, list) or len(arg) != len(action.params):
        raise ScenarioError(action.usage)
    return dict(zip(action.param_names, arg, strict=True))


def _no_argument(action: Action, arg: Any) -> dict[str, Any]:
    if arg is not None:
        raise ScenarioError(f"{action.name} takes no argument")
    return {}


def _client_settings(action: Action, arg: Any) -> dict[str, Any]:
    if not isinstance(arg, dict) or "name" not in arg:
        raise ScenarioError("give settings with a name, like {name: app1}")
    return {"settings": dict(arg)}


def _set_settings(action: Action, arg: Any) -> dict[str, Any]:
    """``{unclean.leader.election.enable: true}``, optionally with ``broker: N`` or ``topic:
    NAME``: keys must be settings a running cluster can change."""
    if not isinstance(arg, dict) or not arg:
        raise ScenarioError(action.usage)
    settings = dict(arg)
    broker, topic = settings.pop("broker", None), settings.pop("topic", None)
    if broker is not None and topic is not None:
        raise ScenarioError("give a broker or a topic, not both")
    allowed = TOPIC_KEYS if topic is not None else DYNAMIC_BROKER_KEYS
    try:
        normalized = {normalize_key(k): v for k, v in settings.items()}
        if not normalized:
            raise ScenarioError("name at least one setting")
        for key in normalized:
            if key not in allowed:
                names = ", ".join(k.replace("_", ".") for k in allowed)
                scope = "a topic" if topic is not None else "a running cluster"
                raise ScenarioError(
                    f"{key.replace('_', '.')} cannot be changed for {scope}: use one of {names}"
                )
        make_config(normalized)
    except ConfigError as err:
        raise ScenarioError(str(err)) from None
    return {"settings": normalized, "broker": broker, "topic": topic}


def _expect_block(action: Action, arg: Any) -> dict[str, Any]:
    return {"expect": check_expect_keys(arg or {})}


def parse_args(kind: str, arg: Any, brokers: int | None = None) -> dict[str, Any]:
    """The arguments of a ``kind`` step as a scenario file writes ``arg``, checked; with
    ``brokers``, a broker a step names must exist. Raises :class:`ScenarioError` naming the bad
    value (the caller says which step)."""
    action = REGISTRY[kind]
    args = (action.parse or (_listed if action.listed else _shorthand_or_mapping))(action, arg)
    missing = [p.name for p in action.params if p.required and p.name not in args]
    if missing:
        raise ScenarioError(f"missing its {missing[0]}")
    if action.check is not None:
        action.check(args)
    for p in action.params:
        if p.name not in args:
            continue
        try:
            if p.check is not None:
                p.check(p.name, args[p.name])
        except KafkalabError as err:
            raise ScenarioError(str(err)) from None
        if p.broker and brokers is not None:
            _check_broker(p, args[p.name], brokers)
    return args


def _check_broker(param: Param, b: Any, brokers: int) -> None:
    if b is None or (param.node_name and isinstance(b, str)):
        return  # a KRaft controller node or a client: the cluster checks it
    if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= brokers:
        raise ScenarioError(f"{param.name} {b!r} does not exist: brokers are 1..{brokers}")


# ---- running a step -------------------------------------------------------------------------


def apply(cluster: Any, kind: str, args: Mapping[str, Any]) -> list[str]:
    """Run a ``kind`` step with its arguments on ``cluster``; a check returns its mismatches."""
    action = REGISTRY[kind]
    if action.call is not None:
        return action.call(cluster, dict(args)) or []
    kwargs = {
        p.name: p.coerce(args[p.name]) if p.coerce else args[p.name]
        for p in action.params
        if p.name in args
    }
    getattr(cluster, action.method_name)(**kwargs)
    return []


def _make_client(cluster: Any, args: dict[str, Any], kind: str) -> None:
    settings = dict(args["settings"])
    getattr(cluster, kind)(str(settings.pop("name")), **settings)


def _check_now(cluster: Any, args: dict[str, Any]) -> list[str]:
    return check_expect(cluster, args["expect"])
