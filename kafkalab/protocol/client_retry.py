"""When the producer client sends a retried batch again (KafkaProducer's RecordAccumulator):
its backoff, which since 3.7 grows with each attempt, is skipped for a new leader since 3.6.1,
and, for an idempotent producer since 1.0, waits for the batches before it in sequence.

The functions take the producer client they act for (:class:`RetryProducer`)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Protocol

from kafkalab.protocol.actor import Context
from kafkalab.protocol.client_settings import ProducerSettings

__all__ = [
    "JITTER_DRAW_BOUND",
    "RetryProducer",
    "backing_off",
    "behind_in_sequence",
    "next_retry_backoff_ms",
    "retry_backoff_ms",
]

JITTER_DRAW_BOUND = 400  # a draw d gives the jitter factor (800 + d) / 1000, in [0.8, 1.2)


class RetryProducer(Protocol):
    """What these functions use of the producer client (KafkaProducer)."""

    name: str
    settings: ProducerSettings
    producer_id: int
    queue: list[Any]
    inflight: dict[int, Any]
    _timer_at: dict[str, int]
    _backoff_draws: Iterator[int] | None


def retry_backoff_ms(
    retry_backoff_ms: int, retry_backoff_max_ms: int, attempts: int, draw: int | None
) -> int:
    """ExponentialBackoff.backoff(attempts - 1) with multiplier 2 and jitter 0.2 (KIP-580, 3.7):
    the exponent stops where the backoff reaches retry.backoff.max.ms, and the jitter never
    takes it past that. ``draw`` (0 <= draw < JITTER_DRAW_BOUND) is the random part; None: no
    jitter. A ceiling below retry.backoff.ms makes the backoff the ceiling, without jitter."""
    initial = min(retry_backoff_ms, retry_backoff_max_ms)
    if retry_backoff_max_ms <= initial:
        return initial
    exp_max = math.log(retry_backoff_max_ms / max(initial, 1)) / math.log(2)
    term = initial * 2 ** min(max(attempts - 1, 0), exp_max)
    factor = 1.0 if draw is None else (800 + draw) / 1000
    return min(int(factor * term), retry_backoff_max_ms)


def next_retry_backoff_ms(p: RetryProducer, batch: Any) -> int:
    """retry.backoff.ms; since 3.7 (KIP-580) growing with the batch's attempts, its jitter the
    next draw of the client's seeded stream (a pure actor draws nothing itself)."""
    s = p.settings
    if not s.retry_backoff_exponential:
        return s.retry_backoff_ms
    draw = None if p._backoff_draws is None else next(p._backoff_draws)
    if draw is not None and not 0 <= draw < JITTER_DRAW_BOUND:
        raise ValueError(f"{p.name}: backoff draw {draw!r} is outside [0, {JITTER_DRAW_BOUND})")
    return retry_backoff_ms(s.retry_backoff_ms, s.retry_backoff_max_ms, batch.attempts, draw)


def backing_off(p: RetryProducer, ctx: Context, batch: Any, leader: int) -> bool:
    """RecordAccumulator.shouldBackoff: a retry waits its backoff, unless (since 3.6.1 and
    3.7.0, KAFKA-15415) its partition has a new leader since the last attempt. Kafka compares
    leader epochs; kafkalab's metadata names leaders only, so it compares brokers."""
    if p._timer_at.get(f"backoff:{batch.tp}", -1) <= ctx.now:
        return False
    new_leader = batch.last_leader is not None and batch.last_leader != leader
    return not (new_leader and p.settings.retry_backoff_skips_new_leader)


def behind_in_sequence(p: RetryProducer, batch: Any) -> bool:
    """Since 1.0 (KAFKA-5494) a retried batch of an idempotent producer waits until it is the
    first of its partition's batches in flight (TransactionManager.firstInFlightSequence; those
    put back for a retry count): the earlier ones complete first, and were put back before it
    (insertInSequenceOrder). RecordAccumulator.drain: "This effectively reduces our in flight
    request count to 1"."""
    if batch.attempts == 0 or batch.sequence < 0 or batch.producer_id != p.producer_id:
        return False
    sequence: int = batch.sequence
    earlier = (
        b.sequence
        for b in [*p.inflight.values(), *p.queue]
        if b.tp == batch.tp and b.attempts > 0 and b.producer_id == p.producer_id
    )
    return bool(min(earlier, default=sequence) < sequence)
