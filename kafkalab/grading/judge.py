"""The trusted side of grading: one hand-in, its questions' public and hidden tests, its score.

    python -m kafkalab.grading.judge --tests DIR --notebook FILE --scratch DIR [options]

:func:`kafkalab.grading.assignments.grade_folder` starts one judge per hand-in and reads the one
JSON line it prints. The judge starts a worker (:mod:`kafkalab.grading.worker`) in a sandbox
(:mod:`kafkalab.grading.sandbox`), sends it the hand-in's code cells one by one, then runs every
test of the assignment *here*, in the judge: a test that needs the learner's ``follower_hw``
gets a stand-in that asks the worker to call it with plain-data arguments, under a time limit,
and gets plain data back. The tests, the simulator runs they make, and the score never leave this
process, so nothing a hand-in does can change how it is scored; it can only answer.

When a cell runs past its limit without letting go (it swallows the interrupt), uses more memory
than allowed, or ends the worker, the worker is stopped and started again with every earlier cell
replayed and that cell left out: the questions that need it score 0, the others are graded.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.grading.checks import Feedback, _show_call, time_limit
from kafkalab.grading.sandbox import Limits, Sandbox
from kafkalab.grading.variants.base import check_learner_id
from kafkalab.grading.wire import (
    MAX_MESSAGE_BYTES,
    Ref,
    WireError,
    decode,
    dumps,
    encode,
    loads,
)

__all__ = [
    "Question",
    "Session",
    "grade",
    "load_questions",
    "main",
    "notebook_cells",
    "notebook_json",
]

START_TIMEOUT_S = 60  # a worker importing IPython on a busy machine
GRACE_S = 3  # beyond a limit, before the judge stops a worker that does not answer
TEST_TIMEOUT_S = 300  # one test, judge side (scenario replays, Spark queries through the worker)
MAX_NOTEBOOK_BYTES = 20 << 20
# Cells Otter generates in every student notebook: nothing of the learner's in them.
_OTTER_CELLS = re.compile(
    r"(# Initialize Otter\s*\n)?import otter\s*\ngrader = otter\.Notebook\([^()\n]*\)"
    r"|grader\.check\(\s*[\"'][\w.-]+[\"']\s*\)"
    r"|grader\.check_all\(\)"
)


class WorkerLost(Exception):
    """The worker ended, or said something that is not an answer."""


class WorkerTimeout(Exception):
    """The worker did not answer in time."""


class SandboxError(Exception):
    """A worker could not be started: a problem of the grading machine, not of the hand-in."""


# ---- the hand-in ---------------------------------------------------------------------------------


def notebook_cells(path: Path) -> list[tuple[str, str]]:
    """The code cells of a hand-in (a notebook, or the notebook inside Otter's zip export), in
    order, without the cells Otter generates: (a label such as 'cell 7 ("while True:")', the
    source). Raises ValueError when it is not a notebook."""
    import nbformat

    nb = nbformat.reads(_notebook_bytes(path).decode("utf-8"), as_version=4)
    nbformat.validate(nb)
    out = []
    for number, cell in enumerate(nb.cells, 1):
        source = cell.source.strip()
        if cell.cell_type != "code" or not source or _OTTER_CELLS.fullmatch(source):
            continue
        first = source.splitlines()[0]
        first = first if len(first) <= 40 else first[:37] + "..."
        out.append((f"cell {number} ({first!r})", cell.source))
    return out


def notebook_json(path: Path) -> dict[str, Any]:
    """A hand-in's notebook as parsed JSON (from Otter's zip export too); ValueError when it is
    not a JSON object."""
    data = json.loads(_notebook_bytes(path).decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not a notebook: the file is JSON but not an object")
    return data


def _notebook_bytes(path: Path) -> bytes:
    if path.suffix != ".zip":
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            raise ValueError(f"larger than {MAX_NOTEBOOK_BYTES >> 20} MB")
        return path.read_bytes()
    try:
        with zipfile.ZipFile(path) as zf:
            members = [i for i in zf.infolist() if i.filename.endswith(".ipynb")]
            if not members:
                raise ValueError("the zip holds no notebook")
            if members[0].file_size > MAX_NOTEBOOK_BYTES:
                raise ValueError(f"its notebook is larger than {MAX_NOTEBOOK_BYTES >> 20} MB")
            return zf.read(members[0])
    except zipfile.BadZipFile as err:
        raise ValueError(f"not a zip file: {err}") from None


# ---- the assignment's tests ----------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One question: its test cases (public and hidden) with their points."""

    name: str
    cases: tuple[Any, ...]  # otter's TestCase: name, body (a test_case), hidden, points
    all_or_nothing: bool = False

    @property
    def possible(self) -> float:
        return float(sum(tc.points or 0 for tc in self.cases))


def load_questions(tests: Path) -> list[Question]:
    """The questions of an autograder's ``tests`` folder (Otter's exception-based test files)."""
    from otter.test_files.exception_test import ExceptionTestFile

    out = []
    for path in sorted(tests.glob("*.py")):
        tf = ExceptionTestFile.from_file(str(path))
        out.append(Question(tf.name, tuple(tf.test_cases), bool(tf.all_or_nothing)))
    return out


# ---- one worker ----------------------------------------------------------------------------------


class Channel:
    """One running worker: its process, the pipe to it, and a watch on its memory."""

    def __init__(self, sandbox: Sandbox, scratch: Path, slot: int, env: dict[str, str]) -> None:
        self.sandbox = sandbox
        self.memory_exceeded = False
        self._ids = 0
        self._buffer = b""
        scratch.mkdir(parents=True, exist_ok=True)
        errors = scratch / "worker-stderr"
        # an id no other worker on this machine runs as meanwhile (bubblewrap as root)
        self.lease = sandbox.lease_id(slot)
        try:
            self.proc = subprocess.Popen(  # noqa: S603 - our own command line
                sandbox.command(scratch, env, uid=None if self.lease is None else self.lease.uid),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors.open("wb"),
                cwd=scratch,
                env=sandbox.environment(scratch, env),
                start_new_session=True,
                preexec_fn=_child_setup(sandbox),  # noqa: PLW1509 - rlimits need it
            )
        except BaseException:
            if self.lease is not None:
                self.lease.release()
            raise
        self._watch = threading.Thread(target=self._watch_memory, daemon=True)
        self._watch.start()
        try:
            first = self._read(time.monotonic() + START_TIMEOUT_S)
        except (WorkerLost, WorkerTimeout):
            first = {}
        if first.get("ready") is not True:
            self.kill()
            said = errors.read_bytes()[-2000:].decode(errors="replace").strip().splitlines()
            raise SandboxError(
                f"the {sandbox.kind} sandbox could not start a worker: "
                + (said[-1] if said else "it said nothing")
            )

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        self._ids += 1
        message = {**message, "id": self._ids}
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(dumps(message))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerLost("the worker ended") from None
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._ids:
                return answer
            # an answer to nothing asked (the hand-in wrote on the pipe): ignore it

    def _read(self, deadline: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerTimeout
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except (OSError, ValueError):  # stopped meanwhile (over its memory)
                chunk = b""
            if not chunk:
                raise WorkerLost("the worker ended")
            self._buffer += chunk
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                raise WorkerLost("the worker sent more than a message's worth of bytes")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return loads(line)
        except WireError as err:
            raise WorkerLost(f"the worker broke the protocol: {err}") from None

    def _watch_memory(self) -> None:
        """Stop the worker once its processes together hold more memory than allowed."""
        try:
            import psutil
        except ImportError:
            return
        limit = self.sandbox.limits.memory_bytes
        try:
            root = psutil.Process(self.proc.pid)
        except psutil.Error:
            return
        while self.proc.poll() is None:
            try:
                used = sum(_memory(p) for p in [root, *root.children(recursive=True)])
            except psutil.Error:
                return
            if used > limit:
                self.memory_exceeded = True
                self._signal()
                return
            time.sleep(0.1)

    def _signal(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    def kill(self) -> None:
        """Stop the worker and everything it started (in bubblewrap, the whole process
        namespace ends with it), and wait until they are gone."""
        try:
            import psutil

            procs = psutil.Process(self.proc.pid).children(recursive=True)
        except Exception:  # noqa: BLE001 - psutil missing, or the worker already gone
            procs = []
        self._signal()
        for proc in procs:
            with contextlib.suppress(Exception):
                proc.kill()
        if procs:
            psutil.wait_procs(procs, timeout=5)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        if self.lease is not None and self.proc.poll() is not None:
            self.lease.release()  # (a worker that would not end keeps its id from others)


def _memory(proc: Any) -> int:
    """A process's proportional share of memory (pages shared by forked processes counted
    once in all), or its resident size where the kernel does not say."""
    try:
        with open(f"/proc/{proc.pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:
        return int(proc.memory_info().rss)
    except Exception:  # noqa: BLE001 - the process is gone
        return 0


def _child_setup(sandbox: Sandbox) -> Any:
    limits = sandbox.preexec()

    def setup() -> None:
        limits()
        with contextlib.suppress(OSError, AttributeError):  # die with the judge (Linux)
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    return setup


# ---- one hand-in's session: its cells, replayed when a worker has to be replaced ---------------


@dataclass
class Session:
    """The hand-in's cells run in a worker, and the requests of its tests."""

    cells: list[tuple[str, str]]  # (label, source)
    sandbox: Sandbox
    scratch: Path
    slot: int
    cell_timeout_s: float
    time_limit_s: float
    env: dict[str, str] = field(default_factory=dict)
    skipped: dict[int, str] = field(default_factory=dict)  # cell -> what happened to it
    errors: dict[int, str] = field(default_factory=dict)  # cell -> the exception it raised
    _channel: Channel | None = None
    _starts: int = 0

    def channel(self) -> Channel:
        """A worker in which every cell has run (but those left out), starting one if needed."""
        while self._channel is None:
            self._starts += 1
            channel = Channel(self.sandbox, self.scratch / f"w{self._starts}", self.slot, self.env)
            if self._replay(channel):
                self._channel = channel
        return self._channel

    def _replay(self, channel: Channel) -> bool:
        for index, (_, source) in enumerate(self.cells):
            if index in self.skipped:
                continue
            message = {"op": "run", "source": source, "timeout": self.cell_timeout_s}
            try:
                answer = channel.request(message, self.cell_timeout_s + GRACE_S)
            except (WorkerTimeout, WorkerLost) as err:
                channel.kill()
                self.skipped[index] = self._why(channel, err)
                return False
            if not answer.get("ok"):
                self.errors[index] = str(answer.get("error", "an error"))[:300]
                if answer.get("kind") == "memory":
                    self.skipped[index] = "memory"
                elif answer.get("kind") == "timeout":
                    self.skipped[index] = "timeout"
        return True

    @staticmethod
    def _why(channel: Channel, err: Exception) -> str:
        if channel.memory_exceeded:
            return "memory"
        if isinstance(err, WorkerTimeout):
            return "timeout"
        return "ended"

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Ask the worker; a worker that does not answer in time, or dies, is replaced before
        the next request (WorkerTimeout or WorkerLost is raised for this one)."""
        channel = self.channel()
        try:
            return channel.request(message, timeout)
        except BaseException:  # no answer (or the judge's own limit): this worker is spent
            channel.kill()
            self._channel = None
            raise

    def close(self) -> None:
        if self._channel is not None:
            self._channel.kill()
            self._channel = None

    # ---- what the tests see -----------------------------------------------------------------

    def value(self, name: str) -> Any:
        """The hand-in's ``name`` as the judge's tests see it: plain data, a stand-in for a
        function or a DataFrame, or None when the name is not defined."""
        answer = self.request({"op": "describe", "name": name}, self.time_limit_s + GRACE_S)
        kind = answer.get("kind")
        if kind == "function":
            return RemoteFunction(self, name)
        if kind == "frame":
            return RemoteFrame(self, str(answer.get("ref")))
        if kind == "value":
            return self._plain(answer.get("value"))
        return None

    def _plain(self, data: Any) -> Any:
        value = decode(data)
        return RemoteFrame(self, value.key) if isinstance(value, Ref) else value


class Environment(dict[str, Any]):
    """The names a test asks for (``test_x(follower_hw)``), looked up in the worker once."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    def get(self, name: str, default: Any = None) -> Any:
        if name not in self:
            try:
                self[name] = self.session.value(name)
            except (WorkerTimeout, WorkerLost, WireError):
                self[name] = None
        return self[name]


class RemoteFunction:
    """A learner's function, called in the worker with plain-data arguments."""

    def __init__(self, session: Session, name: str) -> None:
        self.session, self.name = session, name
        self.looped = False

    def __call__(self, *args: Any) -> Any:
        shown = _show_call(self.name, args)
        if self.looped:
            raise Feedback(
                f"{shown}: {self.name} did not finish in an earlier check: look for a loop that "
                "never ends"
            )
        limit = self.session.time_limit_s
        if any(isinstance(a, RemoteFrame) for a in args):  # a Spark query: a cell's time
            limit = max(limit, self.session.cell_timeout_s)
        message = {
            "op": "call",
            "target": self.name,
            "args": encode(list(args), _as_ref),
            "timeout": limit,
        }
        try:
            answer = self.session.request(message, limit + GRACE_S)
        except WorkerTimeout:
            answer = {"timeout": True}
        except WorkerLost:
            raise Feedback(f"{shown} stopped the worker running your code") from None
        if answer.get("timeout"):
            self.looped = True
            raise Feedback(
                f"{shown} did not finish within {limit:g} s: look for a loop that never ends"
            )
        if "error" in answer:
            raise Feedback(f"{shown} raised {str(answer['error'])[:300]}")
        try:
            return self.session._plain(answer.get("value"))
        except WireError as err:
            raise Feedback(f"{shown} returned something that is not plain data ({err})") from None

    def __repr__(self) -> str:
        return f"<function {self.name}>"


def _as_ref(value: Any) -> str:
    if isinstance(value, RemoteFrame):
        return value.key
    raise WireError(f"cannot send a {type(value).__name__} to the worker")


class RemoteFrame:
    """A learner's Spark DataFrame, kept in the worker: its columns and rows come as data."""

    def __init__(self, session: Session, key: str, picked: Sequence[str] = ()) -> None:
        self.session, self.key, self.picked = session, key, tuple(picked)

    @property
    def columns(self) -> list[str]:
        if self.picked:
            return list(self.picked)
        answer = self._ask({"op": "columns", "ref": self.key})
        return [str(c) for c in answer.get("columns", [])]

    def select(self, *columns: str) -> RemoteFrame:
        return RemoteFrame(self.session, self.key, columns)

    def collect(self) -> list[Row]:
        answer = self._ask({"op": "rows", "ref": self.key, "columns": list(self.picked)})
        names = self.columns
        rows = decode(answer.get("rows", []))
        return [Row(zip(names, row, strict=False)) for row in rows if isinstance(row, list)]

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        limit = self.session.cell_timeout_s
        try:
            answer = self.session.request({**message, "timeout": limit}, limit + GRACE_S)
        except (WorkerTimeout, WorkerLost):
            raise Feedback("reading your DataFrame did not finish") from None
        if "error" in answer or answer.get("timeout"):
            raise Feedback(f"reading your DataFrame failed: {answer.get('error', 'timed out')}")
        return answer

    def __repr__(self) -> str:
        return "DataFrame"


class Row(dict[str, Any]):
    """One row of a learner's DataFrame, as Spark's ``Row.asDict`` gives it."""

    def asDict(self) -> dict[str, Any]:  # noqa: N802 - Spark's name
        return dict(self)


# ---- grading -------------------------------------------------------------------------------------


def grade(
    notebook: Path,
    tests: Path,
    *,
    sandbox: Sandbox,
    scratch: Path,
    slot: int = 0,
    cell_timeout_s: float = 30,
    time_limit_s: float = 10,
) -> dict[str, Any]:
    """Grade one hand-in: points per question, what each failing test said, and what happened
    to cells that had to be left out."""
    questions = load_questions(tests)
    try:
        cells = notebook_cells(notebook)
    except Exception as err:  # noqa: BLE001 - any reason it is not a notebook
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return {"status": f"invalid notebook: {reason[:160]}"}
    session = Session(cells, sandbox, scratch, slot, cell_timeout_s, time_limit_s)
    env = {"KAFKALAB_TIME_LIMIT_S": f"{time_limit_s:g}"}
    session.env.update(env)
    scores: dict[str, float] = {}
    feedback: dict[str, list[str]] = {}
    try:
        session.channel()
        environment = Environment(session)
        for question in questions:
            scores[question.name], feedback[question.name] = _run_question(question, environment)
        learner = _learner_label(environment.get("learner_id"))
    except SandboxError as err:
        return {"status": f"error: {err}"}
    finally:
        session.close()
    labels = [label for label, _ in cells]
    return {
        "learner_id": learner,
        "scores": scores,
        "feedback": feedback,
        "skipped": [[labels[i], why] for i, why in sorted(session.skipped.items())],
        "errors": [[labels[i], text] for i, text in sorted(session.errors.items())],
    }


def _learner_label(value: Any) -> str:
    """The hand-in's ``learner_id`` for the grade sheet: its text when it is a valid id (what
    chose the learner's variants), else empty."""
    try:
        return check_learner_id(value)
    except Feedback:
        return ""


def _run_question(question: Question, environment: Environment) -> tuple[float, list[str]]:
    passed_points = 0.0
    messages = []
    failed = False
    for tc in question.cases:
        try:
            with time_limit(TEST_TIMEOUT_S, f"the test {tc.name}"):
                tc.body.call_func(environment)
        except SandboxError:
            raise
        except Exception as err:  # noqa: BLE001 - a failed test, whatever it raised
            failed = True
            text = str(err).strip() or type(err).__name__
            messages.append(f"{tc.name}: {text[:2000]}")
            continue
        passed_points += float(tc.points or 0)
    if question.all_or_nothing and failed:
        passed_points = 0.0
    return passed_points, messages


@contextlib.contextmanager
def _stop_on_term() -> Iterator[None]:
    """SIGTERM (the folder grader's timeout) ends the judge through its ``finally`` blocks, so
    the worker is stopped with it."""

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(3)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _adopt_orphans() -> None:
    """Become the reaper of the worker's orphans (Linux), so none outlives grading."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER


def _kill_descendants() -> None:
    try:
        import psutil
    except ImportError:
        return
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            child.kill()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.grading.judge")
    parser.add_argument("--tests", required=True, type=Path)
    parser.add_argument("--notebook", required=True, type=Path)
    parser.add_argument("--scratch", required=True, type=Path)
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--slot", type=int, default=0)
    parser.add_argument("--cell-timeout", type=float, default=30)
    parser.add_argument("--time-limit", type=float, default=10)
    parser.add_argument("--memory", type=int, default=Limits().memory_bytes)
    parser.add_argument("--cpu", type=int, default=Limits().cpu_seconds)
    parser.add_argument("--image", default="kafkalab-grader")
    args = parser.parse_args(argv)
    _adopt_orphans()
    sandbox = Sandbox(
        args.sandbox, Limits(memory_bytes=args.memory, cpu_seconds=args.cpu), args.image
    )
    try:
        with _stop_on_term():
            result = grade(
                args.notebook,
                args.tests,
                sandbox=sandbox,
                scratch=args.scratch,
                slot=args.slot,
                cell_timeout_s=args.cell_timeout,
                time_limit_s=args.time_limit,
            )
    finally:
        _kill_descendants()
    sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
