"""Hypothesis strategies for fault schedules, shared by the property tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from kafkalab.config import Config
from kafkalab.sim.cluster import Cluster
from kafkalab.sim.timed import Fault, RunResult, simulate

UNDO = {"crash": "restart", "pause": "resume", "disconnect": "reconnect"}


@st.composite
def fault_schedules(
    draw: st.DrawFn,
    *,
    duration_ms: int,
    kinds: Sequence[str] = ("crash", "disconnect"),
    brokers: int = 3,
    max_faults: int = 6,
) -> list[Fault]:
    """Up to ``max_faults`` faults of ``kinds``, each undone after a while (a crashed broker
    restarts, a paused one resumes, a cut link heals)."""
    faults: list[Fault] = []
    for _ in range(draw(st.integers(0, max_faults))):
        start = draw(st.integers(0, duration_ms - 1))
        length = draw(st.integers(1, 25000))
        kind = draw(st.sampled_from(list(kinds)))
        if kind == "disconnect":
            nodes = st.sampled_from([*range(1, brokers + 1), "zk"])
            args = tuple(draw(st.lists(nodes, min_size=2, max_size=2, unique=True)))
        else:
            args = (draw(st.integers(1, brokers)),)
        faults += [Fault(start, kind, args), Fault(start + length, UNDO[kind], args)]
    return sorted(faults, key=lambda f: f.time_ms)


def checked_run(
    config: Config, seed: int, faults: list[Fault], *, duration_ms: int, settle_ms: int
) -> tuple[RunResult, Cluster]:
    """A timed run with every invariant checked after every state change."""
    out: Any = simulate(
        config,
        seed=seed,
        duration_ms=duration_ms,
        settle_ms=settle_ms,
        faults=faults,
        check_invariants=True,
        keep_cluster=True,
    )
    return out
