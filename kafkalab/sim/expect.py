"""Comparing an expect block (or a ``check`` step) with a cluster's state, one readable line per
mismatch. Scenario files, the explorer and the graders' scenario checks all compare this way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, Protocol

from kafkalab.errors import ActionError
from kafkalab.sim.outcome import Report
from kafkalab.sim.views import PER_REPLICA, STATE_READERS

__all__ = ["BROKER_MAPS", "STATE_KEYS", "StateSource", "check_expect"]


class StateSource(Protocol):
    """What a comparison reads from a cluster."""

    def state(self) -> dict[str, Any]: ...

    def partition_name(self, partition: int | str | None) -> str: ...


# The keys of Cluster.state(), in its order: what an expect block can name (but "divergence",
# the details that "divergent" sums up). Declared once, by the readers of kafkalab.sim.views and
# the fields of the run's Report; tests/test_actions.py checks them against Cluster.state() in
# every controller mode.
STATE_KEYS = (*STATE_READERS, *(f.name for f in fields(Report)))
# Keys whose value maps each broker to something (`hw: {1: 3}`).
BROKER_MAPS = tuple(PER_REPLICA)
_AS_SETS = ("isr", "metadata_isr", "running", "acked", "lost_acked", "maximal_isr")
_AS_ENTRY_SETS = ("rejected_requests", "fenced_markers")


# ---- expectations --------------------------------------------------------------------------


def check_expect(cluster: StateSource, expect: Mapping[str, Any]) -> list[str]:
    """Compare an expect block with the cluster's state; one readable line per mismatch."""
    state = cluster.state()
    out = []
    for key, want in expect.items():
        got = state[key]
        if key in BROKER_MAPS:
            for b, w in (want or {}).items():
                b_int = int(b)
                g = got.get(b_int)
                if w != g:
                    out.append(f"{key}[{b_int}]: expected {w!r}, got {g!r}")
        elif key in _AS_SETS:
            if sorted(map(str, want or [])) != sorted(map(str, got)):
                out.append(f"{key}: expected {want!r}, got {got!r}")
        elif key == "errors":
            if {str(k): str(v) for k, v in (want or {}).items()} != got:
                out.append(f"errors: expected {want!r}, got {got!r}")
        elif key == "partitions":
            out += _check_partitions(_by_name(cluster, want), got)
        elif key == "lso":
            if _by_name(cluster, want) != got:
                out.append(f"lso: expected {want!r}, got {got!r}")
        elif key in _AS_ENTRY_SETS:
            out += _check_entries(key, want, got)
        elif key == "producers":
            for name, keys in (want or {}).items():
                g = got.get(str(name))
                for k, w in (keys or {}).items():
                    if g is None or g.get(k) != w:
                        out.append(
                            f"producers[{name}].{k}: expected {w!r}, got "
                            f"{None if g is None else g.get(k)!r}"
                        )
        elif key == "pending_isr":
            if (want is None) != (got is None) or sorted(want or []) != sorted(got or []):
                out.append(f"pending_isr: expected {want!r}, got {got!r}")
        elif key in ("hw_regressions", "two_leaders"):
            count = len(got)
            if (isinstance(want, bool) and want != bool(count)) or (
                not isinstance(want, bool) and want != count
            ):
                out.append(f"{key}: expected {want!r}, got {count} ({got!r})")
        elif want != got:
            out.append(f"{key}: expected {want!r}, got {got!r}")
    return out


def _by_name(cluster: StateSource, want: Any) -> dict[str, Any]:
    """An expectation keyed by partition, with N written out as the first topic's "topic-N"
    (a name that does not exist is kept, and reported as missing)."""
    out: dict[str, Any] = {}
    for tp, value in (want or {}).items():
        try:
            out[cluster.partition_name(tp)] = value
        except ActionError:
            out[str(tp)] = value
    return out


def _check_entries(key: str, want: Any, got: list[dict[str, Any]]) -> list[str]:
    """A list of entries in any order (each given key must match), or how many there are."""
    if isinstance(want, int) and not isinstance(want, bool):
        return [] if want == len(got) else [f"{key}: expected {want} entries, got {got!r}"]
    wanted = [dict(w) for w in (want or [])]
    left = list(got)
    for w in wanted:
        match = next((g for g in left if all(str(g.get(k)) == str(v) for k, v in w.items())), None)
        if match is None:
            return [f"{key}: expected {want!r}, got {got!r}"]
        left.remove(match)
    return [f"{key}: expected {want!r}, got {got!r}"] if left else []


def _check_partitions(want: Mapping[str, Any], got: Mapping[str, Any]) -> list[str]:
    """``partitions: {demo-1: {leader: 2, isr: [2, 3]}}``: only the keys given are checked."""
    out = []
    for tp, keys in want.items():
        actual = got.get(str(tp))
        if actual is None:
            out.append(f"partitions: no partition {tp!r} (partitions are {', '.join(got)})")
            continue
        for key, w in (keys or {}).items():
            g = actual.get(key)
            if key in BROKER_MAPS:
                for b, wb in (w or {}).items():
                    if g.get(int(b)) != wb:
                        out.append(
                            f"partitions[{tp}].{key}[{b}]: expected {wb!r}, got {g.get(int(b))!r}"
                        )
            elif key in ("isr", "maximal_isr", "pending_isr"):
                if (w is None) != (g is None) or sorted(w or []) != sorted(g or []):
                    out.append(f"partitions[{tp}].{key}: expected {w!r}, got {g!r}")
            elif w != g:
                out.append(f"partitions[{tp}].{key}: expected {w!r}, got {g!r}")
    return out
