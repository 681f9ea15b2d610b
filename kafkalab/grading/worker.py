"""The untrusted side of grading: runs a hand-in's cells and answers the judge's requests.

    python -I -m kafkalab.grading.worker      (started by the judge, inside a sandbox)

It reads one JSON request per line on stdin and writes one JSON answer per line on the standard
output it started with; the hand-in's own prints go to a private buffer. Requests:

- ``run``: execute one cell (IPython syntax, so ``%magics`` and ``!commands`` work), under a
  time limit; the answer says whether it raised, and what.
- ``describe``: what a name holds: missing, a function, a DataFrame, or a value as plain data.
- ``call``: call a function of the hand-in with plain-data arguments, under a time limit.
- ``columns`` and ``rows``: a DataFrame's column names, and its rows for some columns.

Nothing here decides a grade: the judge computes every score from these answers, so a hand-in
that tampers with this module only changes its own answers.
"""

from __future__ import annotations

import io
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from kafkalab.grading.wire import MAX_MESSAGE_BYTES, Ref, WireError, decode, dumps, encode, loads

__all__ = ["main"]

MAX_ROWS = 200_000
OUTPUT_CHARS = 20_000  # of a hand-in's own prints, kept for nothing but memory's sake


class _Timeout(BaseException):  # noqa: N818 - a signal, not an error of the hand-in
    """A cell or call ran past its limit."""


class _Sink(io.TextIOBase):
    """Where the hand-in's prints go: the last few thousand characters are kept."""

    def __init__(self) -> None:
        self.text = ""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.text = (self.text + str(s))[-OUTPUT_CHARS:]
        return len(s)


class Worker:
    """One hand-in's namespace and the values it handed to the judge by reference."""

    def __init__(self) -> None:
        self.shell = _make_shell()
        self.namespace: dict[str, Any] = (
            self.shell.user_ns if self.shell else {"__name__": "__main__"}
        )
        self.kept: dict[str, Any] = {}

    # ---- requests -------------------------------------------------------------------------------

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        source = str(request.get("source", ""))
        error: BaseException | None = None
        with _limit(float(request.get("timeout", 30))):
            if self.shell is not None:
                result = self.shell.run_cell(source, store_history=False, silent=False)
                error = result.error_before_exec or result.error_in_exec
            else:
                try:
                    exec(compile(source, "<cell>", "exec"), self.namespace)  # noqa: S102
                except BaseException as err:  # noqa: BLE001 - the hand-in's error, reported
                    error = err
        if error is None:
            return {"ok": True}
        return {"ok": False, "error": _describe_error(error), "kind": _error_kind(error)}

    def describe(self, request: dict[str, Any]) -> dict[str, Any]:
        name = str(request.get("name", ""))
        if name not in self.namespace:
            return {"kind": "missing"}
        value = self.namespace[name]
        if _is_frame(value):
            return {"kind": "frame", "ref": self._keep(value)}
        if callable(value) and not isinstance(value, type):
            return {"kind": "function"}
        return {"kind": "value", "value": encode(value, self._keep)}

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        fn = self._lookup(str(request.get("target", "")))
        if not callable(fn):
            return {"error": f"TypeError: {type(fn).__name__!r} object is not callable"}
        args = [self._resolve(a) for a in decode(request.get("args", []))]
        try:
            with _limit(float(request.get("timeout", 10))):
                value = fn(*args)
        except _Timeout:
            return {"timeout": True}
        except BaseException as err:  # noqa: BLE001 - the hand-in's error, reported
            return {"error": _describe_error(err)}
        return {"value": encode(value, self._keep)}

    def columns(self, request: dict[str, Any]) -> dict[str, Any]:
        frame = self._lookup(str(request.get("ref", "")))
        with _limit(float(request.get("timeout", 60))):
            return {"columns": [str(c) for c in frame.columns]}

    def rows(self, request: dict[str, Any]) -> dict[str, Any]:
        frame = self._lookup(str(request.get("ref", "")))
        wanted = [str(c) for c in request.get("columns", [])]
        with _limit(float(request.get("timeout", 60))):
            picked = frame.select(*wanted) if wanted else frame
            rows = picked.limit(MAX_ROWS + 1).collect()
        if len(rows) > MAX_ROWS:
            return {"error": f"more than {MAX_ROWS} rows"}
        return {"rows": [encode(list(row)) for row in rows]}

    # ---- helpers --------------------------------------------------------------------------------

    def _keep(self, value: Any) -> str:
        key = f"#{len(self.kept) + 1}"
        self.kept[key] = value
        return key

    def _lookup(self, key: str) -> Any:
        if key in self.kept:
            return self.kept[key]
        if key in self.namespace:
            return self.namespace[key]
        raise NameError(f"name {key!r} is not defined")

    def _resolve(self, value: Any) -> Any:
        if isinstance(value, Ref):
            return self._lookup(value.key)
        return value


def _make_shell() -> Any:
    """An IPython shell without a kernel (magics and ``!commands`` as in Jupyter), or None."""
    try:
        from IPython.core.interactiveshell import InteractiveShell
    except ImportError:
        return None
    shell = InteractiveShell.instance(colors="NoColor")
    # errors are reported to the judge, not printed
    shell.showtraceback = lambda *a, **k: None  # type: ignore[method-assign]
    return shell


def _is_frame(value: Any) -> bool:
    return all(hasattr(type(value), a) for a in ("collect", "columns", "select"))


def _describe_error(err: BaseException) -> str:
    if isinstance(err, _Timeout):
        return "the time limit passed"
    try:
        text = str(err).strip().splitlines()
    except Exception:  # noqa: BLE001 - a hand-in's exception may break str()
        text = []
    return f"{type(err).__name__}: {text[0][:300]}" if text else type(err).__name__


def _error_kind(err: BaseException) -> str:
    if isinstance(err, _Timeout):
        return "timeout"
    if isinstance(err, MemoryError):
        return "memory"
    return "error"


class _limit:  # noqa: N801 - used as a context manager
    """Interrupt the block after ``seconds`` of wall time (the judge enforces the same limit
    from outside, for a hand-in that swallows the interrupt)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = max(0.001, seconds)
        # An interrupt in the middle of a Spark call can leave py4j's connection to the JVM
        # unusable for every later call: with Spark loaded, only the judge's deadline applies.
        self.on = "pyspark" not in sys.modules

    def __enter__(self) -> None:
        if not self.on:
            return

        def expired(signum: int, frame: Any) -> None:
            raise _Timeout

        signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: Any) -> None:
        if self.on:
            signal.setitimer(signal.ITIMER_REAL, 0)


_OPS: dict[str, Callable[[Worker, dict[str, Any]], dict[str, Any]]] = {
    "run": Worker.run,
    "describe": Worker.describe,
    "call": Worker.call,
    "columns": Worker.columns,
    "rows": Worker.rows,
}


def main() -> int:
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
    requests = os.fdopen(os.dup(0), "rb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the hand-in reads nothing and its output goes nowhere near the pipe
        os.dup2(devnull, fd)
    sys.stdin = io.StringIO()
    sys.stdout = sys.stderr = _Sink()
    worker = Worker()
    answers.write(dumps({"ready": True}))
    for line in _lines(requests):
        request: Any = None
        try:
            request = loads(line)
            op = _OPS.get(str(request.get("op")))
            if op is None:
                raise WireError(f"unknown request {request.get('op')!r}")
            answer = op(worker, request)
        except _Timeout:
            answer = {"timeout": True}
        except BaseException as err:  # noqa: BLE001 - reported, never fatal
            answer = {"error": _describe_error(err)}
        answer["id"] = request.get("id") if isinstance(request, dict) else None
        try:
            message = dumps(answer)
        except (TypeError, ValueError) as err:
            message = dumps({"id": answer["id"], "error": f"cannot send the answer: {err}"})
        if len(message) > MAX_MESSAGE_BYTES:
            message = dumps({"id": answer["id"], "error": "the answer is too large"})
        answers.write(message)
    return 0


def _lines(stream: Any) -> Any:
    buffer = b""
    while True:
        chunk = stream.read(1 << 16)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line


if __name__ == "__main__":
    sys.exit(main())
