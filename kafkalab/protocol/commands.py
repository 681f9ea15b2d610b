"""Local commands the simulation gives a broker: they arrive like messages but come from no
other actor."""

from __future__ import annotations

from dataclasses import dataclass

from kafkalab.config import Config

__all__ = ["FetchNow", "Reconfigure", "Stop"]


@dataclass(frozen=True, slots=True)
class Stop:
    """A local command: stop cleanly (controlled shutdown)."""


@dataclass(frozen=True, slots=True)
class Reconfigure:
    """A local command: a dynamic config change reached this broker (DynamicBrokerConfig, or a
    topic config change, KIP-226, 1.1); from now on it applies ``config``."""

    config: Config


@dataclass(frozen=True, slots=True)
class FetchNow:
    """A local command in stepped mode: follower, do your next round trip with the leader.
    ``max_wait_ms`` overrides replica.fetch.wait.max.ms for this one fetch (0: the leader
    answers at once, even when it has nothing new)."""

    tp: str
    max_wait_ms: int | None = None
