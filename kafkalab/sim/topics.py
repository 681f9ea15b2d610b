"""Where a cluster's partitions live: the topics a cluster is made with, validated, and their
replicas placed as Kafka's AdminUtils places a new topic (racks included), each topic with its
own random start drawn from the cluster's seed."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

from kafkalab.config import Config
from kafkalab.errors import ActionError, ConfigError, did_you_mean
from kafkalab.protocol.assignment import assign_replicas
from kafkalab.protocol.offsets import offsets_partition
from kafkalab.protocol.transactions import txn_partition

__all__ = ["Placement", "broker_range", "check_broker"]

TOPIC_SPEC_KEYS = ("partitions", "replicas")
_TOPIC_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def broker_range(broker_ids: list[int]) -> str:
    """The broker ids as an error message gives them: "1..3", or "1"."""
    return f"1..{len(broker_ids)}" if len(broker_ids) > 1 else "1"


def check_broker(b: Any, broker_ids: list[int]) -> int:
    """``b`` if it is one of ``broker_ids``; else an ActionError naming the brokers."""
    if isinstance(b, bool) or not isinstance(b, int) or b not in broker_ids:
        raise ActionError(f"broker {b!r} does not exist: brokers are {broker_range(broker_ids)}")
    return b


class Placement:
    """Places the partitions of a new cluster on ``broker_ids``. After :meth:`place`, ``topic``
    is the default topic, ``topics`` every topic's name and ``assignment`` each partition's
    replicas (the preferred leader first)."""

    def __init__(
        self, broker_ids: list[int], racks: Mapping[int, str], seed: int, config: Config
    ) -> None:
        self.broker_ids = broker_ids
        self.racks = racks
        self.seed = seed
        self.config = config
        self.topic = ""
        self.topics: list[str] = []
        self.assignment: dict[str, list[int]] = {}

    def place(
        self,
        topic: str,
        topics: Mapping[str, Any] | Iterable[str] | None,
        partitions: int,
        leader: int | None,
        replicas: Any,
    ) -> dict[str, list[int]]:
        if topics is None:
            self.topic = topic
            self.topics = [topic]
            self.assignment = self._assign(topic, partitions, leader, replicas)
        else:
            self.assignment = self._assign_topics(topics, topic, partitions, leader, replicas)
        return self.assignment

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

    def add_internal_partitions(
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
        if replicas is not None:
            chosen = list(replicas)
            for b in chosen:
                check_broker(b, self.broker_ids)
            if len(set(chosen)) != len(chosen) or not chosen:
                raise ConfigError(f"replicas={chosen!r} is not allowed: list distinct broker ids")
        elif leader is not None:
            check_broker(leader, self.broker_ids)
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
