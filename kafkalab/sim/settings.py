"""Settings a running cluster changes (IncrementalAlterConfigs, KIP-339; dynamic broker configs,
KIP-226, 1.1): the layers a broker's settings are read from, and the ``set`` step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafkalab.config import Config, normalize_key
from kafkalab.errors import ActionError, ConfigError
from kafkalab.protocol.broker import Reconfigure
from kafkalab.sim.action_kinds import DYNAMIC_BROKER_KEYS, TOPIC_KEYS

if TYPE_CHECKING:
    from kafkalab.sim.facade import Facade

__all__ = ["DYNAMIC_BROKER_KEYS", "TOPIC_KEYS", "DynamicSettings"]


class DynamicSettings:
    """The layers of a cluster's settings: what the brokers started with, then the cluster-wide
    dynamic ones, then each broker's own, then the topic's."""

    def __init__(self, cluster: Facade) -> None:
        self.cluster = cluster
        self.static = cluster.config  # what the brokers started with
        self.dynamic: dict[str, Any] = {}  # cluster-wide dynamic settings
        self.per_broker: dict[int, dict[str, Any]] = {}  # per-broker dynamic settings
        self.topic: dict[str, Any] = {}  # topic-level settings

    def broker_config(self, broker: int | None) -> Config:
        """The settings a broker applies (``None``: the cluster-wide ones): static, then the
        cluster-wide dynamic ones, then its own, then the topic's, which win (LogConfig)."""
        own = self.per_broker.get(broker, {}) if broker is not None else {}
        layered = {**self.dynamic, **own, **self.topic}
        return self.static.replace(**layered) if layered else self.static

    def set_config(
        self, settings: Mapping[str, Any], broker: int | None, topic: str | None
    ) -> None:
        c = self.cluster
        changes = self._changes(settings, broker, topic)
        saved = (dict(self.dynamic), dict(self.topic), dict(self.per_broker))
        target = (
            self.topic
            if topic is not None
            else self.dynamic
            if broker is None
            else self.per_broker.setdefault(broker, {})
        )
        target.update(changes)
        try:
            configs = {b: self.broker_config(b) for b in c.broker_ids}
            cluster_config = self.broker_config(None)
        except ConfigError:
            self.dynamic, self.topic, self.per_broker = saved
            raise
        c.config = cluster_config
        scope = {"topic": topic} if topic is not None else {"broker": broker} if broker else {}
        c._step("set", settings=dict(changes), **scope)
        c.sim.record("config_change", "cluster", {"settings": dict(changes), **scope})
        for b in c.running():
            c.sim.command(b, Reconfigure(configs[b]))
        c.control.reconfigure(configs)
        c._settle()

    def _changes(
        self, settings: Mapping[str, Any], broker: int | None, topic: str | None
    ) -> dict[str, Any]:
        """``settings`` by their field names, once checked for the scope they are set in."""
        c = self.cluster
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
        if topic is not None and topic not in c.topics:
            raise ActionError(
                f"topic {topic!r} does not exist: topics are {', '.join(map(repr, c.topics))}"
            )
        if topic is not None and len(c.topics) > 1:
            raise ActionError(
                f"a topic-level setting needs a cluster with one topic, and this one has "
                f"{', '.join(c.topics)}: set it for every broker (leave out topic)"
            )
        if broker is not None:
            c._check_broker(broker)
        return changes
