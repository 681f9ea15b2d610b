"""The checks on :class:`kafkalab.Cluster`'s arguments: each refusal names the bad value and
what is allowed."""

from __future__ import annotations

from typing import Any

from kafkalab.errors import ConfigError
from kafkalab.protocol.rules import Rules

__all__ = ["MAX_BROKERS", "MODES", "check_arguments"]

MODES = ("stepped", "timed")
MAX_BROKERS = 64


def check_arguments(
    mode: str,
    brokers: Any,
    rules: Any,
    replication: str,
    partitions: Any,
    latency_ms: tuple[int, int],
    loss_rate: float,
    restart_replaces_session: Any,
) -> tuple[int, int]:
    """Refuse a bad argument; return the message latency the mode uses (none when stepped)."""
    if mode not in MODES:
        raise ConfigError(f"mode={mode!r} is not allowed: use 'stepped' or 'timed'")
    if isinstance(brokers, bool) or not isinstance(brokers, int) or not 1 <= brokers <= MAX_BROKERS:
        raise ConfigError(f"brokers={brokers!r} is not allowed: use 1..{MAX_BROKERS}")
    if rules is not None and not isinstance(rules, Rules):
        raise ConfigError(
            f"rules={rules!r} is not allowed: use kafkalab.Rules(...) or None for Kafka's"
        )
    if replication not in ("manual", "auto"):
        raise ConfigError(
            f"replication={replication!r} is not allowed: use 'manual' (followers fetch "
            "when told, in stepped mode) or 'auto' (they fetch on their own)"
        )
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise ConfigError(f"partitions={partitions!r} is not allowed: use a whole number >= 1")
    lat = latency_ms if mode == "timed" else (0, 0)
    if lat[0] < 0 or lat[1] < lat[0]:
        raise ConfigError(
            f"latency_ms={latency_ms!r} is not allowed: use (low, high), 0 <= low <= high"
        )
    if not 0.0 <= loss_rate < 1.0:
        raise ConfigError(f"loss_rate={loss_rate!r} is not allowed: use 0 <= loss_rate < 1")
    if not isinstance(restart_replaces_session, bool):
        raise ConfigError(
            f"restart_replaces_session={restart_replaces_session!r} is not allowed: use "
            "False (Kafka: a restart inside the old session is refused) or True"
        )
    return lat
