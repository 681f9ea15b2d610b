"""What crosses between the grading judge and a hand-in's worker: plain data, one JSON object per
line.

Values are JSON with a few tagged forms for what JSON lacks (tuples, sets, maps with keys that
are not strings, ``...``, non-finite floats). The worker encodes what a learner's code made; the
judge decodes it with :func:`decode`, which builds only ``None``, ``bool``, ``int``, ``float``,
``str``, ``list``, ``tuple``, ``dict``, ``set``, ``frozenset``, ``Ellipsis`` and the two inert
stand-ins below. Whatever the worker sends, the judge holds nothing with a learner's method on it:
no ``__eq__`` that is always true, no ``__hash__`` that raises.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_MESSAGE_BYTES",
    "Opaque",
    "Ref",
    "WireError",
    "decode",
    "dumps",
    "encode",
    "loads",
]

MAX_MESSAGE_BYTES = 32 << 20  # one answer: a DataFrame of the small campaign fits many times
MAX_DEPTH = 64


class WireError(ValueError):
    """A message that is not plain data (or too big, or nested too deep)."""


@dataclass(frozen=True)
class Opaque:
    """A learner's value that is not plain data (an object of their own class, a module, ...):
    the judge keeps its type name and a short ``repr`` for feedback, and it equals nothing but
    another identical stand-in."""

    type_name: str
    text: str

    def __repr__(self) -> str:
        return self.text or f"<{self.type_name}>"


@dataclass(frozen=True)
class Ref:
    """A name in the worker's namespace, or a value the worker keeps (a Spark DataFrame): the
    judge passes it back as an argument and the worker looks it up."""

    key: str


# ---- the worker's side: a learner's value as plain data ----------------------------------------


def encode(value: Any, keep: Any = None, depth: int = 0) -> Any:
    """``value`` as JSON-ready data. ``keep(value) -> key`` stores what cannot cross (a
    DataFrame) and returns a key for a :class:`Ref`; without it such values become opaque."""
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} levels deep")
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is int:
        return value if abs(value) < 2**63 else {"$int": str(value)}
    if kind is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if value is Ellipsis:
        return {"$ellipsis": True}
    if kind is list:
        return [encode(v, keep, depth + 1) for v in value]
    if kind is tuple:
        return {"$tuple": [encode(v, keep, depth + 1) for v in value]}
    if kind in (set, frozenset):
        tag = "$set" if kind is set else "$frozenset"
        return {tag: [encode(v, keep, depth + 1) for v in value]}
    if kind is dict:
        if all(type(k) is str and not k.startswith("$") for k in value):
            return {k: encode(v, keep, depth + 1) for k, v in value.items()}
        pairs = [[encode(k, keep, depth + 1), encode(v, keep, depth + 1)] for k, v in value.items()]
        return {"$map": pairs}
    return _encode_foreign(value, keep, depth)


def _encode_foreign(value: Any, keep: Any, depth: int) -> Any:
    """Numbers and containers of other libraries (numpy, Decimal, Spark's Row) as their plain
    equivalent; a DataFrame kept behind a reference; anything else opaque."""
    if keep is not None and _is_frame(value):
        return {"$ref": keep(value)}
    for plain in (bool, int, float, str):
        if isinstance(value, plain):
            return encode(plain(value), keep, depth)
    item = getattr(value, "item", None)  # numpy and pandas scalars
    if callable(item) and type(value).__module__.split(".")[0] in ("numpy", "pandas"):
        try:
            return encode(item(), keep, depth)
        except Exception:  # noqa: BLE001 - anything odd becomes opaque below
            pass
    name = type(value).__name__
    if name == "Decimal" and type(value).__module__ == "decimal":
        return encode(float(value), keep, depth)
    if isinstance(value, tuple):  # Spark's Row, namedtuples
        return {"$tuple": [encode(v, keep, depth + 1) for v in value]}
    if isinstance(value, list):
        return [encode(v, keep, depth + 1) for v in value]
    if isinstance(value, Mapping):
        return encode(dict(value.items()), keep, depth)
    try:
        text = repr(value)[:200]
    except Exception:  # noqa: BLE001 - a learner's __repr__ may raise anything
        text = ""
    return {"$opaque": f"{type(value).__module__}.{name}", "repr": text}


def _is_frame(value: Any) -> bool:
    """A DataFrame (Spark's, or the judge's stand-in for one); asked of the type, so that no
    property of the value runs."""
    return all(hasattr(type(value), a) for a in ("collect", "columns", "select"))


# ---- the judge's side: plain data back into values ---------------------------------------------


def decode(data: Any, depth: int = 0) -> Any:
    """The value that ``data`` (parsed JSON) stands for, built from plain types only."""
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} levels deep")
    if data is None or type(data) in (bool, int, str):
        return data
    if type(data) is float:
        return data
    if type(data) is list:
        return [decode(v, depth + 1) for v in data]
    if type(data) is not dict:
        raise WireError(f"unexpected {type(data).__name__} in a message")
    if len(data) in (1, 2) and next(iter(data), "").startswith("$"):
        return _decode_tagged(data, depth)
    return {k: decode(v, depth + 1) for k, v in data.items()}


def _decode_tagged(data: dict[str, Any], depth: int) -> Any:
    tag, body = next(iter(data.items()))
    if tag == "$ellipsis":
        return Ellipsis
    if tag == "$int" and type(body) is str:
        try:
            return int(body)
        except ValueError:  # not digits, or more digits than Python converts
            raise WireError("a malformed int") from None
    if tag == "$float" and body in ("inf", "-inf", "nan"):
        return float(body)
    if tag in ("$tuple", "$set", "$frozenset", "$map") and type(body) is list:
        items = [decode(v, depth + 1) for v in body]
        try:
            if tag == "$tuple":
                return tuple(items)
            if tag == "$set":
                return set(items)
            if tag == "$frozenset":
                return frozenset(items)
            return {k if not isinstance(k, list) else tuple(k): v for k, v in items}
        except (TypeError, ValueError) as err:  # an unhashable member, a pair that is not one
            raise WireError(f"a malformed {tag[1:]}: {err}") from None
    if tag == "$ref" and type(body) is str:
        return Ref(body)
    if tag == "$opaque" and type(body) is str:
        text = data.get("repr", "")
        return Opaque(body[:200], text[:200] if type(text) is str else "")
    raise WireError(f"unknown form {tag!r} in a message")


def dumps(message: Mapping[str, Any]) -> bytes:
    """One message as a line of JSON."""
    return json.dumps(message, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def loads(line: bytes) -> dict[str, Any]:
    """One line of JSON as a message (a JSON object), or :class:`WireError`."""
    if len(line) > MAX_MESSAGE_BYTES:
        raise WireError(f"a message of {len(line)} bytes (at most {MAX_MESSAGE_BYTES})")
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as err:
        raise WireError(f"not JSON: {str(err)[:120]}") from None
    if type(message) is not dict:
        raise WireError("a message must be a JSON object")
    return message
