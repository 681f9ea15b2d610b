"""Checks the exercises' tests call: each one passes quietly or raises :class:`Feedback` with an
explanation of *why* an answer is wrong (the step of a scenario where a rule goes astray, what a
scenario file did compared with what was asked), never just "wrong".

Every call into a learner's code runs under :func:`time_limit`, so an endless loop becomes a
failed check instead of a hung notebook.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kafkalab.errors import KafkalabError
from kafkalab.protocol.rules import DEFAULT_RULES, Rules
from kafkalab.sim.cluster import Cluster

__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "Case",
    "Feedback",
    "check_answer",
    "check_function",
    "check_rule_in_scenario",
    "default_time_limit_s",
    "time_limit",
]

DEFAULT_TIME_LIMIT_S = 10.0
ELLIPSIS_HINT = "replace the ... with your answer"


class Feedback(AssertionError):
    """A check failed; the message explains what went wrong and why."""


def default_time_limit_s() -> float:
    """Seconds a learner's code may run in one check: ``KAFKALAB_TIME_LIMIT_S`` or 10."""
    try:
        return float(os.environ.get("KAFKALAB_TIME_LIMIT_S", DEFAULT_TIME_LIMIT_S))
    except ValueError:
        return DEFAULT_TIME_LIMIT_S


# Learners' functions that ran out of time once: they fail at once afterwards, so a question
# with many checks costs one time limit, not one per check.
_LOOPED: weakref.WeakSet[Any] = weakref.WeakSet()
_active = threading.local()


def _fail_if_looped(fn: Any, what: str) -> None:
    try:
        looped = fn in _LOOPED
    except TypeError:  # not weak-referenceable (a builtin): it cannot be ours to loop
        looped = False
    if looped:
        raise Feedback(
            f"{what} did not finish in an earlier check: look for a loop that never ends, "
            "then run its cell again"
        )


@contextmanager
def time_limit(
    seconds: float | None = None, what: str = "your code", *, culprit: Any = None
) -> Iterator[None]:
    """Stop the block with :class:`Feedback` once ``seconds`` (default
    :func:`default_time_limit_s`) of wall time have passed: an endless loop. ``culprit``, the
    learner's function, then fails at once in later checks. Only the main thread can be
    interrupted; elsewhere, or inside another time limit, the block runs under the outer one."""
    limit = default_time_limit_s() if seconds is None else seconds
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or getattr(_active, "on", False):
        yield
        return
    expired_flag = []

    def expired(signum: int, frame: Any) -> None:
        expired_flag.append(True)
        raise Feedback(f"{what} did not finish within {limit:g} s: look for a loop that never ends")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, limit)
    _active.on = True
    try:
        yield
    except Feedback:
        if expired_flag and culprit is not None:
            with contextlib.suppress(TypeError):
                _LOOPED.add(culprit)
        raise
    finally:
        _active.on = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _call(fn: Callable[..., Any], args: Sequence[Any], name: str, seconds: float | None) -> Any:
    """Call a learner's function; its exceptions and endless loops become :class:`Feedback`."""
    if not callable(fn):
        raise Feedback(f"{name} is {fn!r}, not a function: run the cell that defines it")
    shown = _show_call(name, args)
    _fail_if_looped(fn, shown)
    with time_limit(seconds, shown, culprit=fn):
        try:
            return fn(*args)
        except Feedback:
            raise
        except Exception as err:  # a learner's bug: report it, do not crash the grader
            raise Feedback(f"{shown} raised {type(err).__name__}: {err}") from None


def _show_call(name: str, args: Sequence[Any]) -> str:
    return f"{name}({', '.join(_show(a) for a in args)})"


def _show(value: Any) -> str:
    """A value as a learner would type it, with sets and maps sorted (stable across runs)."""
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(_show(v) for v in sorted(value, key=repr)) + "}"
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda kv: repr(kv[0]))
        return "{" + ", ".join(f"{_show(k)}: {_show(v)}" for k, v in items) + "}"
    return repr(value)


@dataclass(frozen=True)
class Case:
    """One call of a learner's function, what Kafka's rule returns, and why."""

    args: tuple[Any, ...]
    expected: Any
    why: str


def check_function(
    fn: Callable[..., Any],
    name: str,
    cases: Sequence[Case],
    *,
    seconds: float | None = None,
) -> None:
    """Call ``fn`` on every case; the first wrong answer raises :class:`Feedback` naming the
    call, the answer, Kafka's answer and the reason."""
    for case in cases:
        got = _call(fn, case.args, name, seconds)
        if got is None or got is Ellipsis:
            raise Feedback(f"{_show_call(name, case.args)} returned {got!r}: {ELLIPSIS_HINT}")
        if got != case.expected:
            raise Feedback(
                f"{_show_call(name, case.args)} returned {_show(got)}, Kafka's rule gives "
                f"{_show(case.expected)}: {case.why}"
            )


def check_answer(answer: Any, expected: Any, *, question: str, why: str) -> None:
    """A prediction: ``answer`` must equal ``expected``; otherwise explain with ``why``
    (which should teach the rule, not give the value away)."""
    if answer is Ellipsis or answer is None:
        raise Feedback(f"{question}: {ELLIPSIS_HINT}")
    if _normalise(answer) != _normalise(expected):
        raise Feedback(f"{question}: {_show(answer)} is not what happens. {why}")


def _normalise(value: Any) -> Any:
    if isinstance(value, (list, tuple, set, frozenset)):
        return sorted(_normalise(v) for v in value)
    if isinstance(value, Mapping):
        return {int(k) if str(k).isdigit() else k: _normalise(v) for k, v in value.items()}
    return value


# ---- a rule inside a scenario ------------------------------------------------------------------


class _Recorder:
    """Wraps a learner's rule and remembers each call, so feedback can show the first call
    whose answer differs from Kafka's."""

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        self.name, self.fn = name, fn
        self.calls: list[tuple[tuple[Any, ...], Any]] = []

    def __call__(self, *args: Any) -> Any:
        try:
            result = self.fn(*args)
        except Feedback:
            raise
        except Exception as err:
            raise Feedback(
                f"{_show_call(self.name, args)} raised {type(err).__name__}: {err}"
            ) from None
        if result is None or result is Ellipsis:
            raise Feedback(f"{_show_call(self.name, args)} returned {result!r}: {ELLIPSIS_HINT}")
        self.calls.append((args, result))
        return result


def _snapshot(cluster: Cluster) -> dict[str, Any]:
    """What a learner can see of a cluster between steps."""
    views = cluster.replicas_view()
    report = cluster.report()
    return {
        "leader": cluster.leader,
        "leader epoch": cluster.leader_epoch,
        "ISR": sorted(cluster.isr),
        **{f"broker {b} log": v.values for b, v in views.items()},
        **{f"broker {b} LEO": v.leo for b, v in views.items()},
        **{f"broker {b} HW": v.hw for b, v in views.items()},
        **{f"broker {b} epoch cache": [list(e) for e in v.epoch_cache] for b, v in views.items()},
        "acknowledged": report.acked,
        "acknowledged but lost": report.lost_acked,
        "client errors": report.errors,
    }


def check_rule_in_scenario(
    name: str,
    fn: Callable[..., Any],
    scenario: str,
    *,
    settings: Mapping[str, Any] | None = None,
    seconds: float | None = None,
) -> None:
    """Replay the catalog ``scenario`` twice, with Kafka's rule and with ``fn`` in its place
    (``name`` is a field of :class:`kafkalab.Rules`), and compare what every replica holds after
    each step. The first difference raises :class:`Feedback` showing the step, the replicas that
    differ, and the call of ``fn`` that answered differently from Kafka's rule."""
    from kafkalab import scenarios

    if not callable(fn):
        raise Feedback(f"{name} is {fn!r}, not a function: run the cell that defines it")
    _fail_if_looped(fn, f"your {name}")
    s = scenarios.get(scenario)
    recorder = _Recorder(name, fn)
    replay = _replay_hint(scenario, name, settings)
    with time_limit(seconds, f"your {name} in {scenario}", culprit=fn):
        try:
            kafka = s.cluster(settings)
            mine = s.cluster(settings, rules=Rules(**{name: recorder}))
        except KafkalabError as err:
            raise Feedback(f"{scenario}: {err}") from None
        except Feedback as err:
            raise Feedback(f"{scenario}, as the cluster starts: {err}\n{replay}") from None
        where = f"{scenario}, as the cluster starts"
        for step in (None, *(st for st in s.steps if st.kind != "check")):
            before = 0 if step is None else len(recorder.calls)
            if step is not None:
                where = _where(scenario, step)
                scenarios.apply_step(kafka, step)
                try:
                    scenarios.apply_step(mine, step)
                except (Feedback, KafkalabError) as err:  # a wrong answer the broker refuses
                    raise Feedback(f"{where}: {err}\n{replay}") from None
            want, got = _snapshot(kafka), _snapshot(mine)
            if want != got:
                lines = _explain(where, want, got, name, recorder.calls, before)
                raise Feedback("\n".join([*lines, replay]))


def _where(scenario: str, step: Any) -> str:
    note = f' ("{step.note}")' if step.note else ""
    return f"{scenario}, step {step.index} ({step.kind} {_show_args(step.args)}){note}"


def _show_args(args: Mapping[str, Any]) -> str:
    if len(args) == 1:
        return _show(next(iter(args.values())))
    return _show(dict(args))


def _explain(
    where: str,
    want: Mapping[str, Any],
    got: Mapping[str, Any],
    name: str,
    calls: Sequence[tuple[tuple[Any, ...], Any]],
    first_of_step: int,
) -> list[str]:
    """The replicas that differ, and the first call of the learner's rule in this step (or,
    failing that, in the run so far) that answered differently from Kafka's."""
    lines = [f"Your {name} and Kafka's part ways at {where}."]
    width = max(len(k) for k in want)
    lines.append(f"  {'':<{width}}  {'with Kafka rule':<22} with yours")
    lines += [
        f"  {key:<{width}}  {_show(want[key]):<22} {_show(got[key])}"
        for key in want
        if want[key] != got[key]
    ]
    reference = getattr(DEFAULT_RULES, name)
    wrong = [(i, a, r) for i, (a, r) in enumerate(calls) if r != reference(*a)]
    in_step = [w for w in wrong if w[0] >= first_of_step]
    for i, args, result in (in_step or wrong)[:1]:
        when = "In this step" if i >= first_of_step else "Earlier"
        lines.append(
            f"{when} {_show_call(name, args)} returned {_show(result)}; Kafka's rule returns "
            f"{_show(reference(*args))}."
        )
    return lines


def _replay_hint(scenario: str, name: str, settings: Mapping[str, Any] | None) -> str:
    overrides = f"{dict(settings)!r}, " if settings else ""
    return (
        f"Replay it: scenarios.run(scenarios.get({scenario!r}), {overrides}"
        f"rules=Rules({name}={name}))"
    )
