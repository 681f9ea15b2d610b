"""A canonical digest of everything in a stepped cluster that can influence its future.

:func:`state_digest` walks the cluster's whole object graph (brokers and their logs, leader epoch
caches, HW checkpoints and disks, the controller's and ZooKeeper's state, the producer, the
messages in flight and the timers due, the random streams, and the invariants' own bookkeeping,
such as which records were acknowledged) and hashes a canonical form of it: dictionaries and
sets in sorted order, pending events in the order they will run, shared objects written once.

Left out is what only records the past: the trace (its events), the sequence numbers that order
the trace and the heap (only the order of pending events counts), the step and dispatch
counters, and the run's statistics (counts of ISR changes, client errors); and the actors'
dispatch tables, which they build once from their own methods. Time stays in,
absolute: timers and lag rules compare against it. Two states with equal digests therefore
behave alike under any schedule (tests/test_explore.py checks it on random schedules).
"""

from __future__ import annotations

import hashlib
import operator
import random
import types
from collections.abc import Callable
from typing import Any

__all__ = ["state_digest"]

# Attributes that record only the past (see the module docstring), by name.
_HISTORY = frozenset(
    {
        "trace",  # Simulation.trace: the events so far
        "_seq",  # Simulation: numbers events and heap entries
        "dispatched",  # Simulation: counters of dispatched entries
        "_steps",  # Cluster: the step counter
        "stats",  # InvariantMonitor.stats: counts for the report
        # Dispatch tables an actor builds once from its own methods and construction settings
        # (Broker, RaftNode, GroupCoordinator): the same in every state of one search.
        "_handlers",
        "_timers",
    }
)
_SCALARS = (str, int, float, bool, type(None), bytes)
_SCALAR_TYPES = frozenset(_SCALARS)


def state_digest(cluster: Any) -> str:
    """SHA-256 of the canonical form of ``cluster``'s state (see the module docstring)."""
    out: list[str] = []
    _Walker(out).walk(cluster)
    return hashlib.sha256("\x1f".join(out).encode()).hexdigest()


def _key(value: Any) -> str:
    """A sort key for a dict key or set member: its canonical text when it is plain data."""
    if isinstance(value, _SCALARS):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, (tuple, frozenset, list, set)):
        items = (
            sorted(map(_key, value)) if isinstance(value, (frozenset, set)) else map(_key, value)
        )
        return f"{type(value).__name__}({','.join(items)})"
    if isinstance(value, type):
        return f"type:{value.__module__}.{value.__qualname__}"
    return f"{type(value).__qualname__}:{value!r}"


def _sorted(items: Any) -> list[Any]:
    """Dict keys or set members in canonical order (plainly sorted when all are str, or all
    int: the common case)."""
    kinds = {type(i) for i in items}
    if len(kinds) == 1 and (str in kinds or int in kinds):
        return sorted(items)
    return sorted(items, key=_key)


class _Walker:
    """Writes an object graph's canonical form as tokens. Scalars are written as their
    ``repr`` (which already tells ``1``, ``1.0``, ``True`` and ``'1'`` apart); an object seen
    before is written as a reference to its first visit. How each class is written is worked
    out once per class (:func:`_kind`): a search digests many thousand states of the same
    classes."""

    def __init__(self, out: list[str]) -> None:
        self.out = out
        self.seen: dict[int, int] = {}  # id -> order of first visit
        self.keep: list[Any] = []  # keeps walked objects alive, so ids stay unique

    def walk(self, obj: Any) -> None:
        cls = type(obj)
        if cls in _SCALAR_TYPES:
            self.out.append(repr(obj))
            return
        kind = _KINDS.get(cls)
        if kind is None:
            kind = _kind(cls)
        if kind == _SCALAR_SUBCLASS:  # an enum of ints, say
            self.out.append(f"{cls.__qualname__}:{obj!r}")
            return
        if kind == _TYPE:
            self.out.append(f"type:{obj.__module__}.{obj.__qualname__}")
            return
        seen = self.seen
        ref = seen.get(id(obj))
        if ref is not None:
            self.out.append(f"@{ref}")
            return
        seen[id(obj)] = len(seen)
        self.keep.append(obj)
        if kind == _SEQUENCE:
            self._sequence(obj)
        elif kind == _DICT:
            self._dict(obj)
        elif kind == _SET:
            self._set(obj)
        elif kind == _OBJECT:
            self._object(obj)
        else:
            self._other(obj)

    def _sequence(self, obj: Any) -> None:
        out, walk = self.out, self.walk
        out.append(f"{type(obj).__name__}[{len(obj)}")
        for item in obj:
            if type(item) in _SCALAR_TYPES:
                out.append(repr(item))
            else:
                walk(item)
        out.append("]")

    def _dict(self, obj: Any) -> None:
        out, walk = self.out, self.walk
        out.append(f"dict[{len(obj)}")
        for k in _sorted(obj):
            if type(k) in _SCALAR_TYPES:
                out.append(repr(k))
            else:
                walk(k)
            value = obj[k]
            if type(value) in _SCALAR_TYPES:
                out.append(repr(value))
            else:
                walk(value)
        out.append("]")

    def _set(self, obj: Any) -> None:
        self.out.append(f"set[{len(obj)}")
        for item in _sorted(obj):
            self.walk(item)
        self.out.append("]")

    def _other(self, obj: Any) -> None:
        """A random stream, a function or method, or a module (:data:`_SPECIAL`)."""
        out = self.out
        if isinstance(obj, random.Random):
            version, words, gauss = obj.getstate()
            out.append(f"random:{version}:{hash(words)}:{gauss!r}")  # ints hash alike everywhere
        elif isinstance(obj, types.MethodType):
            out.append(f"method:{obj.__func__.__qualname__}")
            self.walk(obj.__self__)
        elif isinstance(obj, types.FunctionType):
            out.append(f"function:{obj.__module__}.{obj.__qualname__}")
            for cell in obj.__closure__ or ():
                self.walk(cell.cell_contents)
        elif isinstance(obj, types.BuiltinMethodType):
            out.append(f"builtin:{obj.__qualname__}")
            owner = getattr(obj, "__self__", None)
            if owner is not None and not isinstance(owner, types.ModuleType):
                self.walk(owner)
        else:  # a module: _kind sends nothing else here
            out.append(f"module:{obj.__name__}")

    def _object(self, obj: Any) -> None:
        cls = type(obj)
        out, walk = self.out, self.walk
        out.append(_class_token(cls))
        if cls.__name__ == "Event" and cls.__module__ == "kafkalab.sim.trace":
            return  # a trace event: the past
        if cls.__name__ == "Simulation":
            self._simulation(obj)
            return
        tokens, read = _attributes(cls, obj)
        try:
            values = read(obj)
        except AttributeError:  # a slot never set: read them one by one
            self._one_by_one(obj, tokens)
            return
        for token, value in zip(tokens, values, strict=True):
            out.append(token)
            if type(value) in _SCALAR_TYPES:
                out.append(repr(value))
            else:
                walk(value)

    def _one_by_one(self, obj: Any, tokens: tuple[str, ...]) -> None:
        for token in tokens:
            try:
                value = getattr(obj, token[1:])
            except AttributeError:  # a slot never set
                continue
            self.out.append(token)
            self.walk(value)

    def _simulation(self, sim: Any) -> None:
        """The pending entries (the heap and the scheduled calls) in the order they will run,
        without their sequence numbers."""
        tokens, _ = _attributes(type(sim), sim)
        for token in tokens:
            name = token[1:]
            if name in ("_calls", "_next_call"):
                continue  # walked with the heap, as one queue
            value = getattr(sim, name)
            self.out.append(token)
            if name == "_heap":
                self.walk([(e[0], *e[2:]) for e in sim.pending_entries()])
            else:
                self.walk(value)


# How the walker writes an instance of a class (its kind), found once per class.
_SCALAR_SUBCLASS, _TYPE, _SEQUENCE, _DICT, _SET, _OBJECT, _OTHER = range(7)
_KINDS: dict[type, int] = {}
_SPECIAL = (random.Random, types.MethodType, types.FunctionType, types.BuiltinMethodType)


def _kind(cls: type) -> int:
    if issubclass(cls, _SCALARS):
        kind = _SCALAR_SUBCLASS
    elif issubclass(cls, type):
        kind = _TYPE
    elif issubclass(cls, (list, tuple)):
        kind = _SEQUENCE
    elif issubclass(cls, dict):
        kind = _DICT
    elif issubclass(cls, (set, frozenset)):
        kind = _SET
    elif issubclass(cls, (*_SPECIAL, types.ModuleType)):
        kind = _OTHER
    else:
        kind = _OBJECT
    _KINDS[cls] = kind
    return kind


_CLASS_TOKENS: dict[type, str] = {}


def _class_token(cls: type) -> str:
    token = _CLASS_TOKENS.get(cls)
    if token is None:
        token = _CLASS_TOKENS[cls] = f"obj:{cls.__module__}.{cls.__qualname__}"
    return token


_ATTRS: dict[type, tuple[str, ...]] = {}
_PLANS: dict[tuple[str, ...], tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]] = {}


def _attributes(cls: type, obj: Any) -> tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]:
    """An object's attributes that count (not :data:`_HISTORY`): their tokens (``.name``,
    sorted by name) and a function that reads their values in that order. The names are a
    compiled class's declared ones, its slots along the MRO, and its ``__dict__``."""
    names = _ATTRS.get(cls)
    if names is None:
        declared: list[str] = list(getattr(cls, "__mypyc_attrs__", ()))
        for base in cls.__mro__:
            slots = base.__dict__.get("__slots__", ())
            declared += [slots] if isinstance(slots, str) else list(slots)
        names = _ATTRS[cls] = tuple(
            dict.fromkeys(n for n in declared if n not in ("__dict__", "__weakref__"))
        )
    extra = getattr(obj, "__dict__", None)
    key = tuple(sorted({*names, *extra})) if extra else names
    plan = _PLANS.get(key)
    if plan is None:
        kept = [n for n in sorted(key) if n not in _HISTORY]
        if len(kept) == 1:
            one = operator.attrgetter(kept[0])
            read: Callable[[Any], tuple[Any, ...]] = lambda o: (one(o),)  # noqa: E731
        elif kept:
            read = operator.attrgetter(*kept)
        else:
            read = _nothing
        plan = _PLANS[key] = (tuple(f".{n}" for n in kept), read)
    return plan


def _nothing(obj: Any) -> tuple[Any, ...]:
    return ()
