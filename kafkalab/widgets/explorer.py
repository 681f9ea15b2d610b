"""The cluster explorer's logic: a cluster you can step, rewind to any earlier step, and fork.

A run is a pure function of its config, seed and steps, so rewinding to step k rebuilds the
cluster by replaying the first k steps; stepping forward again (or forking a new branch from
step k) continues from there. Everything here is plain Python: the widget in
:mod:`kafkalab.widgets.ui` only shows what this model computes, and tests drive it without a
browser.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab import scenarios
from kafkalab.check.invariants import Report
from kafkalab.config import implied_switches
from kafkalab.errors import KafkalabError
from kafkalab.scenarios import Scenario, Step
from kafkalab.sim import actions
from kafkalab.sim.actions import ActionView
from kafkalab.sim.cluster import Cluster, ReplicaView
from kafkalab.sim.trace import Event

__all__ = ["ACTIONS", "ExplorerModel", "StepOutcome"]

# The step kinds the explorer offers, with the arguments each takes (as in scenario files): the
# step vocabulary's (kafkalab.sim.actions) marked for the explorer.
ACTIONS: ActionView[tuple[str, ...]] = ActionView(lambda a: a.explorer, lambda a: a.param_names)


@dataclass(frozen=True)
class StepOutcome:
    """What one request to the model did: ``ok`` is False when a step was refused (the
    cluster is unchanged and ``message`` says why); a check step that fails is not refused, its
    message says what differs."""

    ok: bool
    message: str


class ExplorerModel:
    """Step through a cluster, rewind and fork.

    >>> m = ExplorerModel("kip101-loss")
    >>> m.forward(10).ok            # replay the scenario's first ten steps
    True
    >>> m.cluster.logs()            # A restarted and truncated to its HW: m2 is gone from A
    {1: ['m1'], 2: ['m1', 'm2']}
    >>> m.go_to(9).ok and m.cluster.logs()   # rewind one step: A still has m2
    {1: ['m1', 'm2'], 2: ['m1', 'm2']}
    """

    def __init__(
        self,
        scenario: str | Scenario | None = None,
        *,
        variant: str | None = None,
        brokers: int = 3,
        config: Mapping[str, Any] | None = None,
        leader: int | None = None,
    ) -> None:
        self.scenario: Scenario | None = None
        self.variant: str | None = None
        self.overrides: dict[str, Any] = {}
        self._custom: tuple[int, dict[str, Any], int | None] = (brokers, dict(config or {}), leader)
        self.steps: list[Step] = []  # the current branch: applied steps, then steps to redo
        self.position = 0  # how many of ``steps`` the cluster has applied
        self.forks = 0  # how many times a new branch was started from an earlier step
        self.last = StepOutcome(True, "")
        if scenario is not None:
            self.load(scenario, variant=variant)
        else:
            self._reset([])

    # ---- loading --------------------------------------------------------------------------

    def load(self, scenario: str | Scenario, *, variant: str | None = None) -> None:
        """Load a catalog scenario (by name) or a parsed one, and its steps as the script to
        step through; ``variant`` replays the same steps with the variant's settings."""
        s = scenarios.get(scenario) if isinstance(scenario, str) else scenario
        overrides: dict[str, Any] = {}
        if variant is not None:
            chosen = next((v for v in s.variants if v.name == variant), None)
            if chosen is None:
                names = ", ".join(v.name for v in s.variants) or "none"
                raise KafkalabError(
                    f"scenario {s.name!r} has no variant {variant!r}: its variants are {names}"
                )
            overrides = dict(chosen.settings)
        self.scenario, self.variant, self.overrides = s, variant, overrides
        # A variant's expectations differ from the base scenario's, and check steps describe
        # the base scenario: a variant is stepped through without them (as scenarios.run does).
        script = [st for st in s.steps if variant is None or st.kind != "check"]
        self._reset(script)

    @property
    def implied(self) -> list[str]:
        """The fixes the settings turn off because a switch they need is off (or a removed
        behaviour is on), one line each for the learner."""
        if self.scenario is not None:
            return implied_switches({**self.scenario.config, **self.overrides})
        return implied_switches(self._custom[1])

    def _fresh_cluster(self) -> Cluster:
        if self.scenario is not None:
            return self.scenario.cluster(self.overrides)
        brokers, config, leader = self._custom
        return Cluster(brokers, config=config, leader=leader)

    def _reset(self, script: list[Step]) -> None:
        self.steps = list(script)
        self.position = 0
        self.forks = 0
        self.cluster = self._fresh_cluster()
        self._marks = [len(self.cluster.trace)]  # trace length after each applied step
        self._snapshots = [self._snapshot()]
        self.last = StepOutcome(True, "loaded" if self.scenario else "a fresh cluster")

    def _snapshot(self) -> dict[int, ReplicaView]:
        return self.cluster.replicas_view()

    # ---- moving along the timeline ----------------------------------------------------------

    def forward(self, count: int = 1) -> StepOutcome:
        """Apply the next ``count`` steps of the current branch (the scenario's script, or
        steps undone by a rewind)."""
        return self.go_to(min(self.position + count, len(self.steps)))

    def back(self, count: int = 1) -> StepOutcome:
        """Rewind ``count`` steps."""
        return self.go_to(max(self.position - count, 0))

    def go_to(self, position: int) -> StepOutcome:
        """Show the cluster as it was after ``position`` steps of the current branch
        (0: before the first). Later steps are kept, so you can step forward again."""
        if isinstance(position, bool) or not isinstance(position, int):
            raise KafkalabError(f"position={position!r} is not allowed: use a step number")
        if not 0 <= position <= len(self.steps):
            raise KafkalabError(
                f"position={position} is not allowed: use 0..{len(self.steps)} (the steps of "
                "this branch)"
            )
        if position < self.position:
            self._replay_to(position)
        detail = ""
        while self.position < position:
            outcome = self._apply(self.steps[self.position])
            if not outcome.ok:
                self.last = outcome
                return outcome
            detail = outcome.message
        self.last = StepOutcome(True, self._with(detail))
        return self.last

    def _with(self, detail: str) -> str:
        return f"{self.step_text()} — {detail}" if detail else self.step_text()

    def _replay_to(self, position: int) -> None:
        # Snapshots and trace marks of this branch stay valid: the replay gives the same run.
        self.cluster = self._fresh_cluster()
        self.position = 0
        for step in self.steps[:position]:
            outcome = self._apply(step)
            if not outcome.ok:  # a step that once applied applies again: runs are pure
                raise KafkalabError(f"replay diverged at step {step.index}: {outcome.message}")

    def _apply(self, step: Step) -> StepOutcome:
        before = len(self.cluster.trace)
        try:
            problems = scenarios.apply_step(self.cluster, step)
        except KafkalabError as err:
            if len(self.cluster.trace) != before:  # never leave a half-applied step behind
                self._replay_to(self.position)
            return StepOutcome(False, str(err))
        self.position += 1
        mark, snapshot = len(self.cluster.trace), self._snapshot()
        if self.position < len(self._marks):  # a replay: the same as before, by purity
            self._marks[self.position], self._snapshots[self.position] = mark, snapshot
        else:
            self._marks.append(mark)
            self._snapshots.append(snapshot)
        if step.kind == "check":
            verdict = "the check fails: " + "; ".join(problems) if problems else "the check holds"
            return StepOutcome(True, verdict)
        return StepOutcome(True, "")

    # ---- new steps (forking) -----------------------------------------------------------------

    def do(self, kind: str, note: str | None = None, **args: Any) -> StepOutcome:
        """Apply a new step of ``kind`` (a key of :data:`ACTIONS`) with scenario-file
        arguments. If you rewound, the steps after this point are dropped: a new branch starts
        here. A refused step changes nothing and says why."""
        if kind not in ACTIONS:
            raise KafkalabError(f"unknown step {kind!r}: use one of {', '.join(ACTIONS)}")
        given = {k: v for k, v in args.items() if v is not None}
        allowed = ", ".join(ACTIONS[kind]) or "no arguments"
        unknown = set(args) - set(ACTIONS[kind])
        if unknown:
            raise KafkalabError(f"{kind} does not take {sorted(unknown)}: it takes {allowed}")
        missing = [
            p.name for p in actions.REGISTRY[kind].params if p.required and p.name not in given
        ]
        if missing:
            raise KafkalabError(f"{kind} needs {', '.join(missing)}: it takes {allowed}")
        start = self.position
        step = Step(start + 1, kind, given, note)
        outcome = self._apply(step)
        if outcome.ok:
            if len(self.steps) > start:  # steps undone by a rewind: this starts a new branch
                self.forks += 1
                del self._marks[start + 2 :], self._snapshots[start + 2 :]
            self.steps = [*self.steps[:start], step]
            outcome = StepOutcome(True, self._with(outcome.message))
        self.last = outcome
        return outcome

    def produce(self, value: str, *, acks: Any = None, count: int | None = None) -> StepOutcome:
        return self.do("produce", value=value, acks=acks, count=count)

    def fetch(self, follower: int, *, response: str = "ok") -> StepOutcome:
        return self.do("fetch", follower=follower, response=response)

    def sync(self) -> StepOutcome:
        return self.do("sync")

    def crash(self, broker: int, *, lose_unflushed: bool = False) -> StepOutcome:
        return self.do("crash", broker=broker, lose_unflushed=lose_unflushed)

    def restart(self, broker: int) -> StepOutcome:
        return self.do("restart", broker=broker)

    def flush(self, broker: int) -> StepOutcome:
        return self.do("flush", broker=broker)

    def disconnect(self, a: Any, b: Any) -> StepOutcome:
        return self.do("disconnect", a=a, b=b)

    def reconnect(self, a: Any, b: Any) -> StepOutcome:
        return self.do("reconnect", a=a, b=b)

    def heal(self) -> StepOutcome:
        return self.do("heal")

    def advance(self, ms: int) -> StepOutcome:
        return self.do("advance", ms=ms)

    # ---- what to show -----------------------------------------------------------------------

    @property
    def brokers(self) -> list[int]:
        return list(self.cluster.broker_ids)

    def snapshot(self, position: int | None = None) -> dict[int, ReplicaView]:
        """The replicas after ``position`` steps of this branch (default: now); any position
        the explorer has been at since the branch began."""
        k = self.position if position is None else position
        if not 0 <= k < len(self._snapshots):
            raise KafkalabError(
                f"position={k} has not been reached on this branch yet: use "
                f"0..{len(self._snapshots) - 1}, or step forward first"
            )
        return self._snapshots[k]

    def previous_snapshot(self) -> dict[int, ReplicaView]:
        """The replicas one step earlier (for the ghosts of removed records)."""
        return self._snapshots[max(self.position - 1, 0)]

    def step_events(self, position: int | None = None) -> list[Event]:
        """The trace events of one applied step (default: the latest; 0: the start-up)."""
        k = self.position if position is None else position
        start = self._marks[k - 1] if k > 0 else 0
        return self.cluster.trace.events[start : self._marks[k]]

    def step_text(self, position: int | None = None) -> str:
        """ "step 3 of 15: fetch 1 (note)" for the step that led to ``position``."""
        k = self.position if position is None else position
        if k == 0:
            return f"before the first step ({len(self.steps)} steps in this branch)"
        step = self.steps[k - 1]
        note = f" — {step.note}" if step.note else ""
        return f"step {k} of {len(self.steps)}: {describe_step(step)}{note}"

    def report(self) -> Report:
        return self.cluster.report()

    def alerts(self) -> list[str]:
        """What the invariant report flags right now: acknowledged records lost, divergent
        logs, HW regressions, two leaders in one epoch. Empty while all is well."""
        r = self.report()
        out = []
        if r.lost_acked:
            out.append(f"acknowledged but lost: {', '.join(r.lost_acked)}")
        for d in r.divergence:
            held = ", ".join(f"broker {b} has {v}" for b, v in d["records"].items())
            out.append(f"logs diverge at offset {d['offset']}: {held}")
        for h in r.hw_regressions:
            out.append(
                f"HW moved backwards on broker {h['broker']}: {h['old_hw']} -> {h['to']} "
                f"(removed {', '.join(h['removed']) or 'nothing'})"
            )
        for t in r.two_leaders:
            out.append(f"two leaders in one epoch: {t}")
        return out


def describe_step(step: Step) -> str:
    """A step as a scenario file writes it: "fetch 1", "crash 2 lose_unflushed"."""
    if step.kind == "check":
        return f"check {step.args.get('expect', {})}"
    words = [step.kind]
    for key, value in step.args.items():
        if value in (None, False, "ok"):
            continue
        words.append(key if value is True else str(value) if key in _PRIMARY else f"{key}={value}")
    return " ".join(words)


_PRIMARY = ("value", "follower", "broker", "ms", "node", "a", "b")
