"""What a producer client (:mod:`kafkalab.protocol.client`) is configured with, and the
commands the simulation gives it."""

from __future__ import annotations

from dataclasses import dataclass

from kafkalab.errors import ConfigError

__all__ = ["ProduceCommand", "ProducerSettings", "TxnCommand", "idempotence_fits"]


@dataclass(frozen=True)
class ProducerSettings:
    """The producer settings that shape delivery (Kafka's names, underscores for dots)."""

    acks: int = -1
    enable_idempotence: bool = True
    max_in_flight_requests_per_connection: int = 5
    retries: int = 2147483647
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000  # KIP-580 (3.7): the ceiling of the growing backoff
    reconnect_backoff_ms: int = 50  # the wait before connecting to a broker again
    socket_connection_setup_timeout_ms: int = 10000  # KIP-601 (2.7); the OS's before
    request_timeout_ms: int = 30000
    delivery_timeout_ms: int = 120000
    transactional_id: str = ""
    transaction_timeout_ms: int = 60000
    transaction_version: int = 1  # what the cluster supports (KIP-890 part 2 is version 2)
    # The release's client side of KIP-360 (2.5): after a real sequence gap an idempotent
    # producer bumps its epoch; before, it fails the batch and gets a new producer id.
    kip360: bool = True
    # The release's KIP-588 (2.7): a produce's INVALID_PRODUCER_EPOCH makes the transaction
    # abortable; before, it was fatal (ProducerFencedException).
    invalid_producer_epoch_abortable: bool = True
    # The release's KAFKA-5494 (1.0): idempotence with up to 5 requests in flight, and
    # OUT_OF_ORDER_SEQUENCE_NUMBER retried while an earlier batch is unanswered; before (0.11),
    # idempotence needed exactly 1 request in flight, and that error was never retried.
    idempotence_five_in_flight: bool = True
    # The release's KIP-580 (3.7): retry backoffs grow exponentially with jitter; before, every
    # retry waited retry.backoff.ms.
    retry_backoff_exponential: bool = True
    # The release's KAFKA-15415 (3.6.1, 3.7.0): a retry to a new leader skips the backoff.
    retry_backoff_skips_new_leader: bool = True

    def __post_init__(self) -> None:
        if self.transactional_id and not self.enable_idempotence:
            raise ConfigError(
                f"transactional.id={self.transactional_id!r} needs enable.idempotence=true"
            )
        if self.max_in_flight_requests_per_connection < 1 or self.retries < 0:
            raise ConfigError(
                "max.in.flight.requests.per.connection must be >= 1 and retries >= 0, got "
                f"{self.max_in_flight_requests_per_connection} and {self.retries}"
            )
        for name in ("retry_backoff_ms", "retry_backoff_max_ms", "reconnect_backoff_ms"):
            value = getattr(self, name)
            if value < 0:
                raise ConfigError(f"{name.replace('_', '.')} must be >= 0, got {value}")
        if self.socket_connection_setup_timeout_ms < 1:
            raise ConfigError(
                "socket.connection.setup.timeout.ms must be >= 1, got "
                f"{self.socket_connection_setup_timeout_ms}"
            )
        if self.enable_idempotence and not idempotence_fits(
            self.acks, self.retries, self.max_in_flight_requests_per_connection
        ):
            raise ConfigError(
                "enable.idempotence=true needs acks=all, retries > 0 and "
                "max.in.flight.requests.per.connection <= 5 (got acks="
                f"{'all' if self.acks == -1 else self.acks}, retries={self.retries}, "
                f"max.in.flight={self.max_in_flight_requests_per_connection})"
            )
        if (
            self.enable_idempotence
            and not self.idempotence_five_in_flight
            and self.max_in_flight_requests_per_connection != 1
        ):
            # KafkaProducer.configureInflightRequests, 0.11.0.0 to 0.11.0.3
            raise ConfigError(
                "max.in.flight.requests.per.connection="
                f"{self.max_in_flight_requests_per_connection} is not allowed with "
                "enable.idempotence=true before Kafka 1.0 (the 0.11 preset, "
                "idempotence_five_in_flight off): use 1, the default there (up to 5 from 1.0, "
                "KAFKA-5494)"
            )


def idempotence_fits(acks: int, retries: int, max_in_flight: int) -> bool:
    """ProducerConfig: idempotence needs acks=all, retries > 0 and at most 5 requests in
    flight. Asked for against them it is an error; left unset, it is off
    (postProcessAndValidateIdempotenceConfigs, KAFKA-13673, 3.0.1/3.1.1/3.2.0)."""
    return acks == -1 and retries != 0 and max_in_flight <= 5


@dataclass(frozen=True, slots=True)
class ProduceCommand:
    tp: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TxnCommand:
    """A transactional producer's call: begin, commit, abort, or send_offsets (``group`` and
    ``offsets``, as sendOffsetsToTransaction)."""

    op: str
    group: str = ""
    offsets: tuple[tuple[str, int], ...] = ()
