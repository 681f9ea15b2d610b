"""The client steps of a cluster: sends by the bare producer, named producer and consumer
clients, their transactions, polls and offset commits, and their crashes and restarts."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from kafkalab.errors import ActionError, ConfigError, did_you_mean
from kafkalab.protocol import messages as msgs
from kafkalab.protocol.broker import Broker
from kafkalab.protocol.client import (
    JITTER_DRAW_BOUND,
    KafkaProducer,
    ProduceCommand,
    ProducerSettings,
    TxnCommand,
    idempotence_fits,
)
from kafkalab.protocol.consumer import ConsumerSettings, KafkaConsumer, Poll
from kafkalab.protocol.offsets import offsets_partition
from kafkalab.protocol.producer import Producer, Send
from kafkalab.protocol.transactions import txn_partition
from kafkalab.sim.control import ACTIVE_CONTROLLER
from kafkalab.sim.engine import CLIENT_HOST, draw_between

if TYPE_CHECKING:
    from kafkalab.sim.facade import Facade

__all__ = ["CLIENT_HOST", "ClientSteps"]


class ClientSteps:
    """What the facade's client steps do. ``clients`` maps each named client to its kind and
    settings, so a crashed one restarts as it was made."""

    def __init__(self, cluster: Facade) -> None:
        self.cluster = cluster
        self.sim = cluster.sim
        self.clients: dict[str, tuple[str, Any]] = {}  # name -> (kind, settings) for restarts

    def kinds(self) -> dict[str, str]:
        return {name: kind for name, (kind, _) in self.clients.items()}

    # ---- the bare producer -----------------------------------------------------------------

    def produce(
        self,
        value: Any,
        values: Any,
        count: Any,
        acks: Any,
        producer: str,
        partition: Any,
        to: int | None,
        producer_id: int | None,
        producer_epoch: int,
        sequence: int | None,
        response: str,
        request: str,
        delay_ms: int,
    ) -> list[str]:
        c = self.cluster
        tp = c._tp(partition)
        batch = _batch(value, values, count)
        acks_value = c._acks(acks)
        if to is not None:
            c._check_broker(to)
        client = self.sim.actors.get(producer)
        named = isinstance(client, KafkaProducer)
        allowed = ("ok", "lost", "delayed") if named else ("ok", "lost")
        if response not in allowed or request not in allowed:
            bad = response if response not in allowed else request
            raise ActionError(
                f"{bad!r} is not allowed for request/response: use ok or lost (a named "
                "producer's request or response can also be delayed)"
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
        self.send(
            tp, batch, acks_value, producer, to, producer_id, producer_epoch, sequence, response
        )
        c._settle()
        return batch

    def send(
        self,
        tp: str,
        batch: list[str],
        acks: int,
        producer: str = "producer",
        to: int | None = None,
        producer_id: int | None = None,
        producer_epoch: int = 0,
        sequence: int | None = None,
        response: str = "ok",
    ) -> None:
        """The bare producer sends ``batch`` to ``tp``'s leader (or to broker ``to``): what
        :meth:`produce` does once its arguments are checked, and what a timed run's workload
        schedules directly (its arguments are checked once, before the run)."""
        c = self.cluster
        c._step("produce", values=batch, acks=acks, partition=tp)
        if producer not in self.sim.actors:
            self.sim.add(producer, Producer(producer), CLIENT_HOST)
        leader = self.metadata_leader(tp, producer) if to is None else to
        idempotent = producer_id is not None and c.config.enable_idempotence
        pid = int(producer_id) if idempotent else -1  # type: ignore[arg-type]
        cmd = Send(
            tp,
            tuple(batch),
            acks,
            leader,
            c.config.request_timeout_ms,
            pid,
            producer_epoch if pid >= 0 else -1,
            sequence if pid >= 0 and sequence is not None else -1,
        )
        if response == "lost" and leader is not None:
            self.sim.add_rule(leader, producer, (msgs.ProduceResponse,), None)
        self.sim.command(producer, cmd)

    def metadata_leader(self, tp: str, client: str) -> int | None:
        """The leader of ``tp`` as a client learns it: from a Metadata request to a broker it
        can reach (the first running, unpaused broker in id order linked to its host whose
        metadata cache knows ``tp``), answered as the broker answers a named producer's
        request (:meth:`Broker.metadata_leaders`). The controller's own state is not
        consulted: in ZooKeeper mode a cache changes only through the controller's
        UpdateMetadata (KafkaApis.handleUpdateMetadataRequest). None: nobody names a leader."""
        for b in self.cluster.broker_ids:
            actor = self.sim.actors.get(b)
            if not isinstance(actor, Broker) or self.sim.hosts.get(b, b) in self.sim.paused:
                continue
            if self.sim.link_up(client, b) and tp in actor.metadata_cache:
                return dict(actor.metadata_leaders()).get(tp)
        return None

    def _client_produce(
        self,
        client: KafkaProducer,
        tp: str,
        batch: list[str],
        request: str,
        response: str,
        delay_ms: int,
    ) -> list[str]:
        self.cluster._step("produce", values=batch, producer=client.name, partition=tp)
        leader = client.leaders.get(tp, self.metadata_leader(tp, client.name))
        if leader is not None and request != "ok":
            delay = None if request == "lost" else delay_ms
            self.sim.add_rule(client.name, leader, (msgs.ProduceRequest,), delay)
        if leader is not None and response != "ok":
            delay = None if response == "lost" else delay_ms
            self.sim.add_rule(leader, client.name, (msgs.ProduceResponse,), delay)
        self.sim.command(client.name, ProduceCommand(tp, tuple(batch)))
        self._settle(client.name)
        return batch

    # ---- named clients ---------------------------------------------------------------------

    def producer(self, name: str, settings: Mapping[str, Any]) -> None:
        c = self.cluster
        self._check_new_name("producer", name)
        values = _client_settings("producer", ProducerSettings, settings)
        txn_id = values.get("transactional_id")
        self._producer_defaults(values)
        values.setdefault("request_timeout_ms", c.config.request_timeout_ms)
        self._release_settings(name, values)
        if txn_id:
            self._check_internal(txn_partition(str(txn_id)), "transactional_ids", txn_id)
            values["transaction_version"] = c.config.transaction_version
        try:
            # the client follows the release, as the brokers do (KIP-360, KIP-588)
            release = {
                "kip360": c.config.kip360,
                "invalid_producer_epoch_abortable": c.config.invalid_producer_epoch_abortable,
                "idempotence_five_in_flight": c.config.idempotence_five_in_flight,
                "retry_backoff_exponential": c.config.retry_backoff_exponential,
                "retry_backoff_skips_new_leader": c.config.retry_backoff_skips_new_leader,
            }
            settings_obj = ProducerSettings(**{**values, **release})
        except (ConfigError, TypeError) as err:
            raise ActionError(f"producer {name!r}: {err}") from None
        c._step("producer", name=name, settings=values)
        self.clients[name] = ("producer", settings_obj)
        self._start(name)

    def _release_settings(self, name: str, values: dict[str, Any]) -> None:
        """retry.backoff.max.ms came with KIP-580 (3.7) and is refused before; the connection
        setup timeout follows the release (the operating system's before KIP-601, 2.7)."""
        config = self.cluster.config
        if "retry_backoff_max_ms" in values and not config.retry_backoff_exponential:
            raise ActionError(
                f"producer {name!r}: retry.backoff.max.ms is not allowed with preset "
                f"{config.preset or 'custom'} (retry_backoff_exponential off): the setting came "
                "with KIP-580 in Kafka 3.7; use preset 3.7 or later"
            )
        values.setdefault(
            "socket_connection_setup_timeout_ms", config.socket_connection_setup_timeout_ms
        )

    def _producer_defaults(self, values: dict[str, Any]) -> None:
        """The settings a producer leaves unset, as KafkaProducer fills them in for the
        release. A transactional.id turns idempotence on (configureTransactionState, since
        0.11); otherwise idempotence follows the release's default, and is off where the other
        settings forbid it (KAFKA-13673). With idempotence on, acks is all (configureAcks), and
        before 1.0 (KAFKA-5494) max.in.flight.requests.per.connection is 1
        (configureInflightRequests)."""
        config = self.cluster.config
        if "enable_idempotence" not in values:
            acks = self.cluster._acks(values.get("acks", config.acks))
            values["enable_idempotence"] = bool(values.get("transactional_id")) or (
                config.enable_idempotence
                and idempotence_fits(
                    acks,
                    values.get("retries", 1),
                    values.get("max_in_flight_requests_per_connection", 5),
                )
            )
        idempotent = values["enable_idempotence"] is True
        # The producer's own default follows the release: acks=1 before 3.0, all since (KIP-679),
        # and all whenever idempotence is on.
        values["acks"] = self.cluster._acks(
            values.get("acks", "all" if idempotent else config.acks)
        )
        if idempotent and not config.idempotence_five_in_flight:
            values.setdefault("max_in_flight_requests_per_connection", 1)

    def consumer(self, name: str, partitions: Any, settings: Mapping[str, Any]) -> None:
        c = self.cluster
        self._check_new_name("consumer", name)
        aliases = {"group": "group.id"}
        values = _client_settings("consumer", ConsumerSettings, settings, aliases)
        if values.get("group_id"):
            self._check_internal(
                offsets_partition(str(values["group_id"])), "groups", values["group_id"]
            )
        auto_commit = values.get("enable_auto_commit")
        if auto_commit is not None and not isinstance(auto_commit, bool):
            raise ActionError(
                f"consumer {name!r}: enable.auto.commit={auto_commit!r} is not allowed: use true "
                "or false (unset: true with a group.id)"
            )
        data = [tp for tp in c.assignment if not tp.startswith("__")]
        tps = tuple(c._tp(p) for p in partitions) if partitions is not None else tuple(data)
        try:
            # the client follows the release, as the brokers do (KIP-447)
            release = {"offset_fetch_require_stable": c.config.offset_fetch_require_stable}
            settings_obj = ConsumerSettings(**{**values, **release})
        except (ConfigError, TypeError) as err:
            raise ActionError(f"consumer {name!r}: {err}") from None
        c._step("consumer", name=name, settings=values, partitions=list(tps))
        self.clients[name] = ("consumer", (settings_obj, tps))
        self._start(name)

    def _check_new_name(self, kind: str, name: Any) -> None:
        """A client's name must be new and must not be a controller node's (a KRaft controller
        that crashed keeps its name: its restart would find a client there)."""
        nodes = self.cluster.control.node_names
        reserved = (*nodes, ACTIVE_CONTROLLER) if nodes else ()
        if isinstance(name, str) and name in reserved:
            raise ActionError(
                f"{kind} name {name!r} is not allowed: {', '.join(nodes)} name the KRaft "
                f"controller nodes and {ACTIVE_CONTROLLER!r} the active one; use a new, "
                f"non-empty name other than {', '.join(reserved)}"
            )
        if not isinstance(name, str) or not name or name in self.sim.actors or name in self.clients:
            raise ActionError(f"{kind} name {name!r} is not allowed: use a new, non-empty name")

    def _check_internal(self, tp: str, argument: str, value: Any) -> None:
        if tp not in self.cluster.assignment:
            raise ActionError(
                f"{value!r} has no coordinator partition ({tp}) in this cluster: list it when "
                f"the cluster is made, Cluster(..., {argument}=[{value!r}]) or, in a scenario, "
                f"the top-level {argument} key"
            )

    def _start(self, name: str) -> None:
        kind, settings = self.clients[name]
        brokers = tuple(self.cluster.broker_ids)
        if kind == "producer":
            draws = _draws(self.sim.stream(f"retry-backoff:{name}"), JITTER_DRAW_BOUND)
            client: Any = KafkaProducer(name, settings, brokers, backoff_draws=draws)
            host = name if settings.transactional_id else CLIENT_HOST
        else:
            settings, tps = settings
            client = KafkaConsumer(name, settings, brokers, tps)
            host = name
        self.sim.add(name, client, host)
        self._settle(name)

    def _settle(self, name: str) -> None:
        """Deliver what the step caused. With replication "auto" in stepped mode, a client
        step then runs until the client has its answers, at most request.timeout.ms of simulated
        time: a lesson about transactions steps through calls, not fetches."""
        c = self.cluster
        c._settle()
        if c.mode != "stepped" or c.replication != "auto":
            return
        client = self.sim.actors.get(name)
        if client is None or self.sim.hosts.get(name, name) in self.sim.paused:
            return
        if not client.idle:
            self.sim.run_until(self.sim.now + c.config.request_timeout_ms, lambda: client.idle)
            c._settle()

    def client(self, name: Any, kind: str) -> Any:
        """The running client ``name`` of ``kind``; else an ActionError naming those there are."""
        actor = self.sim.actors.get(name)
        known = self.clients.get(name)
        if known is None or known[0] != kind:
            names = [n for n, (k, _) in self.clients.items() if k == kind] or ["none yet"]
            raise ActionError(f"{kind} {name!r} does not exist: {kind}s are {', '.join(names)}")
        if actor is None:
            raise ActionError(f"{kind} {name!r} has crashed: restart it first")
        return actor

    # ---- transactions and consumer calls ---------------------------------------------------

    def txn(self, producer: str, op: str, **args: Any) -> None:
        client = self.client(producer, "producer")
        if not client.transactional:
            raise ActionError(f"producer {producer!r} has no transactional.id: it cannot {op}")
        self.cluster._step(op, producer=producer, **args)
        self.sim.command(producer, TxnCommand(op, **args))
        self._settle(producer)

    def send_offsets(
        self, producer: str, consumer: str | None, group: str | None, offsets: Any
    ) -> None:
        if consumer is not None:
            c = self.client(consumer, "consumer")
            group = c.settings.group_id
            pairs = tuple(sorted(c.positions.items()))
        else:
            tp_name = self.cluster._tp
            pairs = tuple(sorted((tp_name(tp), int(o)) for tp, o in (offsets or {}).items()))
        if not group:
            raise ActionError("send_offsets needs a consumer with a group.id, or a group")
        self._check_internal(offsets_partition(group), "groups", group)
        self.txn(producer, "send_offsets", group=group, offsets=pairs)

    def consumer_call(self, consumer: str, step: str, command: Poll, **args: Any) -> None:
        """A consumer's poll, process or commitSync, recorded as the step ``step``."""
        self.client(consumer, "consumer")
        self.cluster._step(step, consumer=consumer, **args)
        self.sim.command(consumer, command)
        self._settle(consumer)

    # ---- crashes ---------------------------------------------------------------------------

    def crash(self, name: str) -> None:
        if name not in self.sim.actors:
            raise ActionError(f"client {name!r} is not running: restart it first")
        self.cluster._step("crash", broker=name)
        self.sim.remove(name)
        self.sim.record("crash", name, {"client": True})
        self.cluster._settle()

    def restart(self, name: str) -> None:
        if name in self.sim.actors:
            raise ActionError(f"client {name!r} is already running: crash it first")
        self.cluster._step("restart", broker=name)
        self.sim.record("restart", name, {"client": True})
        self._start(name)


def _batch(value: Any, values: Any, count: Any) -> list[str]:
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


def _draws(rng: random.Random, below: int) -> Iterator[int]:
    """An endless stream of draws below ``below`` from one client's own stream of the seed."""
    while True:
        yield draw_between(rng.getrandbits, 0, below - 1)
