"""Exercise 3 (HW and LEO): each learner's calls and hidden scenarios for the two HW rules, and
fetches to predict."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from kafkalab.grading.checks import Case, check_rule_in_scenario
from kafkalab.grading.variants.base import QuestionVariants, register
from kafkalab.protocol.rules import DEFAULT_RULES

# ---- the two rules: calls shown to the learner, catalog scenarios replayed at grading ----------

# Catalog scenarios (and variants) in which the usual wrong versions of each rule change what
# the replicas hold; each version replays the learner's rule through one pair of them.
_FOLLOWER_SCENARIOS = (
    ("kip101-loss", None),
    ("kip101-divergence", None),
    ("follower-rejoins-isr", None),
    ("safe-leader-failover", None),
    ("np-follower-isolated", "acks-1"),
    ("isr-of-one-loss", "min-isr-2"),
    ("unclean-election-loss", "kraft"),
    ("controlled-shutdown", None),
    ("preferred-leader-rebalance", "no-auto-rebalance"),
    ("retry-duplicate", "no-idempotence"),
    ("np-leader-cut-from-followers", None),
    ("stuck-follower-leaves-isr", "lag-10s"),
)
_LEADER_SCENARIOS = (
    ("follower-rejoins-isr", None),
    ("safe-leader-failover", None),
    ("stuck-follower-leaves-isr", None),
    ("kip279-divergence", None),
    ("np-follower-cut-from-leader", "lag-10s"),
    ("isr-of-one-loss", None),
    ("controlled-shutdown", None),
    ("unclean-election-loss", None),
    ("np-leader-isolated", "acks-all"),
    ("np-follower-isolated", "kraft"),
    ("controller-failover", "before-2.3"),
    ("preferred-leader-rebalance", "kraft"),
)


def _pairs(pool: tuple[Any, ...]) -> list[tuple[Any, Any]]:
    half = len(pool) // 2
    return [(pool[i], pool[i + half]) for i in range(half)]


# (HW in the response, the follower's LEO after appending): a partial fetch, a follower ahead of
# the HW, and one level with it, in each set
_FOLLOWER_CALLS = (
    ((6, 4), (2, 5), (3, 3)),
    ((9, 2), (4, 7), (0, 0)),
    ((5, 1), (1, 3), (6, 6)),
    ((12, 8), (0, 2), (4, 4)),
)

# (hw, leader_leo, isr, remote_leos): a lagging follower outside the set, a new leader that
# knows no follower's LEO yet, and an ordinary move up, in each set
_LEADER_CALLS = (
    (
        (1, 6, (1, 2), ((2, 5), (3, 0))),
        (4, 7, (1, 2, 3), ((2, -1), (3, -1))),
        (2, 5, (1, 2, 3), ((2, 5), (3, 3))),
    ),
    (
        (0, 4, (1, 3), ((2, 1), (3, 4))),
        (5, 8, (1, 2), ((2, -1), (3, 2))),
        (1, 3, (1, 2, 3), ((2, 2), (3, 3))),
    ),
    (
        (2, 9, (1, 2, 4), ((2, 7), (3, 1), (4, 9))),
        (6, 6, (1, 2, 3, 4), ((2, -1), (3, -1), (4, -1))),
        (0, 5, (1, 2, 3, 4), ((2, 4), (3, 2), (4, 5))),
    ),
    (
        (3, 10, (1, 4), ((2, 0), (3, 2), (4, 8))),
        (7, 9, (1, 2, 3), ((2, -1), (3, 5))),
        (4, 6, (1, 2, 3), ((2, 6), (3, 5))),
    ),
)


def follower_cases(p: Mapping[str, Any]) -> list[Case]:
    """The learner's calls of follower_hw, with Kafka's answers."""
    return [
        Case(
            args,
            DEFAULT_RULES.follower_hw(*args),
            "what the follower holds, and what the leader has committed",
        )
        for args in p["calls"]
    ]


def leader_cases(p: Mapping[str, Any]) -> list[Case]:
    """The learner's calls of leader_hw (isr a set, remote LEOs a dict), with Kafka's answers."""
    cases = []
    for hw, leo, isr, remotes in p["calls"]:
        args = (hw, leo, set(isr), dict(remotes))
        cases.append(
            Case(
                args,
                DEFAULT_RULES.leader_hw(*args),
                "the smallest LEO among the leader and "
                "the replicas in isr, and never below the current HW",
            )
        )
    return cases


def check_rule_in_hidden_scenarios(name: str, fn: Any, p: Mapping[str, Any]) -> None:
    """Replay the learner's rule through the catalog scenarios of their version."""
    from kafkalab import scenarios

    for scenario, variant in p["scenarios"]:
        settings = None
        if variant is not None:
            settings = next(
                v.settings for v in scenarios.get(scenario).variants if v.name == variant
            )
        check_rule_in_scenario(name, fn, scenario, settings=settings)


def _calls_text(name: str, cases: list[Case]) -> str:
    return "\n".join(f"  {name}{case.args!r}" for case in cases)


def _rule_show(name: str, cases: Any) -> Any:
    def show(p: Mapping[str, Any]) -> str:
        return "\n".join(
            [
                f"The public check calls your {name} with these arguments (work out Kafka's",
                "answer to each first):",
                _calls_text(name, cases(p)),
                "and replays it in happy-path-hw-lag. The hidden checks replay it in two more",
                "catalog scenarios drawn for you.",
            ]
        )

    return show


register(
    QuestionVariants(
        "03-hw-leo",
        "follower_hw",
        tuple(
            {"calls": calls, "scenarios": pair}
            for calls, pair in itertools.product(_FOLLOWER_CALLS, _pairs(_FOLLOWER_SCENARIOS))
        ),
        _rule_show("follower_hw", follower_cases),
    )
)
register(
    QuestionVariants(
        "03-hw-leo",
        "leader_hw",
        tuple(
            {"calls": calls, "scenarios": pair}
            for calls, pair in itertools.product(_LEADER_CALLS, _pairs(_LEADER_SCENARIOS))
        ),
        _rule_show("leader_hw", leader_cases),
    )
)


# ---- predict_hw: the learner's records and fetches ----------------------------------------------

_HW_FETCHES = {
    3: ((3, 2, 3), (2, 3, 3, 2), (3, 2, 2, 3, 2), (2, 2, 3, 3, 2), (3, 3, 2, 3, 2, 2)),
    4: ((2, 4, 3, 2, 4), (2, 3, 4, 2, 3, 4), (4, 2, 3, 3, 2, 4, 4), (2, 3, 4, 4, 3, 2, 2)),
}
_VALUES = ("a", "b", "c")


def _hw_steps(p: Mapping[str, Any]) -> list[str]:
    lines = [f"c = Cluster(brokers={p['brokers']})   # broker 1 leads; acks=all"]
    lines += [f'c.produce("{v}")' for v in _VALUES[: p["records"]]]
    for i, follower in enumerate(p["fetches"]):
        if p["late_after"] == i:
            lines.append('c.produce("late")')
        lines.append(f"c.fetch({follower})")
    return lines


def _hw_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    from kafkalab import Cluster

    c = Cluster(brokers=p["brokers"])
    for v in _VALUES[: p["records"]]:
        c.produce(v)
    for i, follower in enumerate(p["fetches"]):
        if p["late_after"] == i:
            c.produce("late")
        c.fetch(follower)
    return {"predicted_hw": {b: c.replica(b).hw for b in range(1, p["brokers"] + 1)}}


register(
    QuestionVariants(
        "03-hw-leo",
        "predict_hw",
        tuple(
            {"brokers": n, "records": records, "fetches": fetches, "late_after": late}
            for n, runs in _HW_FETCHES.items()
            for fetches in runs
            for records, late in itertools.product(
                (1, 2), dict.fromkeys((None, 1, len(fetches) - 2))
            )
        ),
        lambda p: "\n".join(_hw_steps(p)),
        _hw_answers,
    )
)
