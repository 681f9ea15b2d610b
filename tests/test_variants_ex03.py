"""Exercise 3's versions (kafkalab.grading.variants.ex03): Kafka's rules pass every version's
calls and hidden scenarios while the usual wrong rules fail each version's hidden checks, and
the worked solution's fetch-by-fetch rule agrees with the replay of every predict_hw version."""

from __future__ import annotations

import pytest

from kafkalab.grading import Feedback
from kafkalab.grading.checks import check_function
from kafkalab.grading.variants import QUESTIONS, ex03, expected, params
from kafkalab.protocol.rules import DEFAULT_RULES

FOLLOWER = QUESTIONS[("03-hw-leo", "follower_hw")]
LEADER = QUESTIONS[("03-hw-leo", "leader_hw")]
PREDICT = QUESTIONS[("03-hw-leo", "predict_hw")]
IDS = [f"student-{n:03d}" for n in range(300)]


def _in_isr(isr, remote_leos):
    return [leo for rid, leo in remote_leos.items() if rid in isr]


WRONG_FOLLOWER = {
    "the follower's LEO": lambda hw, leo: leo,
    "the larger of the two": lambda hw, leo: max(hw, leo),
    "one less": lambda hw, leo: max(0, min(hw, leo) - 1),
}
WRONG_LEADER = {
    "may move backwards": lambda hw, leo, isr, r: min([leo, *_in_isr(isr, r)]),
    "waits for every follower": lambda hw, leo, isr, r: max(hw, min([leo, *r.values()])),
    "the leader's LEO": lambda hw, leo, isr, r: leo,
    "the largest LEO": lambda hw, leo, isr, r: max(hw, max([leo, *_in_isr(isr, r)])),
}


@pytest.mark.parametrize(
    ("q", "calls"),
    [(q, calls) for q in (FOLLOWER, LEADER) for calls in sorted({p["calls"] for p in q.grid})],
    ids=str,
)
def test_kafkas_rules_answer_every_versions_calls(q, calls) -> None:
    cases = {"follower_hw": ex03.follower_cases, "leader_hw": ex03.leader_cases}[q.question]
    check_function(getattr(DEFAULT_RULES, q.question), q.question, cases({"calls": calls}))


@pytest.mark.parametrize(
    ("q", "pair"),
    [(q, pair) for q in (FOLLOWER, LEADER) for pair in sorted({p["scenarios"] for p in q.grid})],
    ids=str,
)
def test_kafkas_rules_pass_every_versions_hidden_scenarios(q, pair) -> None:
    rule = getattr(DEFAULT_RULES, q.question)
    ex03.check_rule_in_hidden_scenarios(q.question, rule, {"scenarios": pair})


def test_every_rule_version_pairs_a_call_set_with_a_scenario_pair() -> None:
    for q in (FOLLOWER, LEADER):
        calls = {p["calls"] for p in q.grid}
        pairs = {p["scenarios"] for p in q.grid}
        assert len(q.grid) == len(calls) * len(pairs) and len(pairs) >= 6
        assert all(len(set(pair)) == 2 for pair in pairs)


@pytest.mark.parametrize("wrong", WRONG_FOLLOWER)
@pytest.mark.parametrize("pair", sorted({p["scenarios"] for p in FOLLOWER.grid}), ids=str)
def test_every_hidden_pair_catches_the_usual_wrong_follower_rules(pair, wrong) -> None:
    with pytest.raises(Feedback, match="part ways"):
        ex03.check_rule_in_hidden_scenarios(
            "follower_hw", WRONG_FOLLOWER[wrong], {"scenarios": pair}
        )


@pytest.mark.parametrize("wrong", WRONG_LEADER)
@pytest.mark.parametrize("pair", sorted({p["scenarios"] for p in LEADER.grid}), ids=str)
def test_every_hidden_pair_catches_the_usual_wrong_leader_rules(pair, wrong) -> None:
    with pytest.raises(Feedback, match="part ways"):
        ex03.check_rule_in_hidden_scenarios("leader_hw", WRONG_LEADER[wrong], {"scenarios": pair})


@pytest.mark.parametrize("calls", sorted({p["calls"] for p in FOLLOWER.grid}), ids=str)
def test_every_call_set_catches_a_follower_that_trusts_the_response(calls) -> None:
    """No scenario catches min() left out (a response never carries more than the follower
    then holds in the catalog); each learner's calls include a partial fetch that does."""
    with pytest.raises(Feedback, match="Kafka's rule gives"):
        check_function(lambda hw, leo: hw, "follower_hw", ex03.follower_cases({"calls": calls}))


@pytest.mark.parametrize("calls", sorted({p["calls"] for p in LEADER.grid}), ids=str)
def test_every_call_set_catches_the_usual_wrong_leader_rules(calls) -> None:
    for wrong in WRONG_LEADER.values():
        with pytest.raises(Feedback, match="Kafka's rule gives"):
            check_function(wrong, "leader_hw", ex03.leader_cases({"calls": calls}))


def test_the_rule_versions_show_their_calls_and_hide_their_scenarios() -> None:
    for q in (FOLLOWER, LEADER):
        for p in q.grid:
            text = q.show(p)
            assert f"{q.question}(" in text
            assert not any(name in text for name, _ in p["scenarios"])
    drawn = {params("03-hw-leo", "leader_hw", i)["scenarios"] for i in IDS}
    assert len(drawn) == len({p["scenarios"] for p in LEADER.grid})


def _rule_hw(p):
    """The worked solution: replay the fetches with the two HW rules and the purgatory."""
    leader_log = ["a", "b", "c"][: p["records"]]
    leo = {b: 0 for b in range(2, p["brokers"] + 1)}
    told = {b: -1 for b in leo}
    hw = {b: 0 for b in range(1, p["brokers"] + 1)}
    for i, f in enumerate(p["fetches"]):
        if p["late_after"] == i:
            leader_log.append("late")
        told[f] = leo[f]
        before = hw[1]
        hw[1] = max(hw[1], min([len(leader_log), *told.values()]))
        brings = leo[f] < len(leader_log)
        leo[f] = len(leader_log)
        hw[f] = min(before if brings else hw[1], leo[f])
    return {"predicted_hw": hw}


@pytest.mark.parametrize("p", PREDICT.grid, ids=str)
def test_predict_hw_rule_matches_the_replay(p) -> None:
    assert PREDICT.answers(p) == _rule_hw(p)


def test_predict_hw_versions_differ() -> None:
    answers = [PREDICT.answers(p)["predicted_hw"] for p in PREDICT.grid]
    assert len({str(a) for a in answers}) >= len(PREDICT.grid) // 3
    assert {a[1] for a in answers} == {0, 1, 2, 3}
    # some versions have a follower behind the leader's HW, some have none
    assert {all(hw == a[1] for hw in a.values()) for a in answers} == {True, False}
    for p in PREDICT.grid:  # not Lesson 3's run (a and b; fetches 2 3 2 3)
        assert (p["records"], p["fetches"], p["late_after"]) != (2, (2, 3, 2, 3), None)
    assert expected("03-hw-leo", "predict_hw", "ada") == _rule_hw(
        params("03-hw-leo", "predict_hw", "ada")
    )
