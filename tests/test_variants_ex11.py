"""Exercise 11's versions (kafkalab.grading.variants.ex11): every config and fault kind, every
slice of the campaign has a well-defined answer in the shipped Parquet files, the answers differ
between versions, the hidden versions drawn for a learner differ from theirs, and the worked
solution (in Spark, one session for the module) gives the DuckDB answers."""

from __future__ import annotations

from collections import Counter
from typing import Any

import nbformat
import pandas as pd
import pytest

from kafkalab.grading.spark_checks import campaign_path
from kafkalab.grading.variants import QUESTIONS, ex11, params
from tests.conftest import ROOT
from tests.worked_solutions import run_solution

A = "11-failure-campaigns"
RATES = QUESTIONS[(A, "lost_acked_rate")].grid
BY_KIND = QUESTIONS[(A, "loss_by_fault_kind")].grid
PREDICT = QUESTIONS[(A, "predict_other_acks")].grid
SOURCE = ROOT / "exercises" / "source" / f"{A}.ipynb"


@pytest.fixture(scope="module")
def trials() -> pd.DataFrame:
    return pd.read_parquet(campaign_path("small") / "trials")


def _drew(trials: pd.DataFrame, kind: str) -> pd.Series:
    return trials["fault_kinds"].str.split(",").apply(lambda kinds: kind in kinds)


def test_the_labels_are_the_campaigns(trials: pd.DataFrame) -> None:
    labels = dict(zip(trials["config_id"], trials["config_label"], strict=True))
    assert all(labels[c] == label for c, label in ex11.LABELS.items())
    kinds = {k for ks in trials["fault_kinds"].str.split(",") for k in ks}
    assert set(ex11.FAULT_KINDS) <= kinds
    assert ex11.PUBLIC_EXAMPLE not in [dict(p) for p in RATES]


def test_every_rate_is_the_pandas_rate_and_the_rates_differ(trials: pd.DataFrame) -> None:
    seen = set()
    for p in RATES:
        mine = trials[
            (trials["config_label"] == p["config_label"]) & _drew(trials, p["fault_kind"])
        ]
        want = mine["lost_acked"].sum() / mine["acked"].sum()
        got = ex11.lost_acked_rate_answer(p["config_label"], p["fault_kind"])
        assert got == pytest.approx(want, rel=1e-12) and got > 0, p
        seen.add(round(got, 12))
    assert len(seen) >= 0.6 * len(RATES)


def test_a_substring_test_gives_another_rate_for_a_prefix_kind(trials: pd.DataFrame) -> None:
    """burst and slow: a learner who tests fault_kinds.contains(kind) gets it wrong."""
    for p in RATES:
        if p["fault_kind"] in ex11.PREFIX_KINDS:
            rows = trials[
                (trials["config_label"] == p["config_label"])
                & trials["fault_kinds"].str.contains(p["fault_kind"])
            ]
            wrong = rows["lost_acked"].sum() / rows["acked"].sum()
            right = ex11.lost_acked_rate_answer(p["config_label"], p["fault_kind"])
            assert abs(wrong - right) > 1e-3 * right, p


def test_the_hidden_rates_are_other_configs_and_kinds() -> None:
    grid = [dict(p) for p in RATES]
    for p in RATES:
        hidden = ex11.rate_hidden(p)
        assert len(hidden) == 3 and all(v in grid for v in hidden)
        assert all(v["config_label"] != p["config_label"] for v in hidden)
        assert len({v["fault_kind"] for v in hidden} | {p["fault_kind"]}) == 4
        kinds = {v["fault_kind"] for v in hidden} | {p["fault_kind"]}
        assert kinds & set(ex11.PREFIX_KINDS)


def test_every_slice_matches_pandas_and_the_slices_differ(trials: pd.DataFrame) -> None:
    exploded = trials.assign(fault_kind=trials["fault_kinds"].str.split(",")).explode("fault_kind")
    tables = set()
    for p in BY_KIND:
        mine = exploded[(exploded["preset"] == p["preset"]) & (exploded["acks"] == p["acks"])]
        mine = mine.assign(lossy=(mine["lost_acked"] > 0).astype(int))
        sums = mine.groupby("fault_kind").agg(
            trials=("trial_id", "size"),
            lossy_trials=("lossy", "sum"),
            lost_records=("lost_acked", "sum"),
            acked=("acked", "sum"),
        )
        want = sums.assign(lost_acked_rate=sums["lost_records"] / sums["acked"])
        rows = ex11.by_kind_rows(p)
        assert [r["fault_kind"] for r in rows] == list(want.index)
        for r in rows:
            assert r["trials"] == want.loc[r["fault_kind"], "trials"]
            assert r[p["measure"]] == pytest.approx(want.loc[r["fault_kind"], p["measure"]])
        assert any(r[p["measure"]] > 0 for r in rows), p
        tables.add(tuple(round(r[p["measure"]], 9) for r in rows))
    # under acks=1, eras 0.8 and 0.10 lose the same records in the same trials: only their
    # lost_acked_rate tables differ (out of different acked counts)
    assert len(tables) >= len(BY_KIND) - 2
    assert not any("fault_kind" in str(p) for p in BY_KIND)


def test_every_prediction_is_well_defined_clear_and_the_answers_differ() -> None:
    """Each version compares two configs of one era and min ISR with the other acks setting;
    the rates differ, sit clear of the ranges' bounds, and the versions' answers differ."""
    answers = Counter()
    for p in PREDICT:
        mine, other = p["config_id"], ex11.OTHER_ACKS[p["config_id"]]
        assert mine // 4 == other // 4 and mine % 2 == other % 2 and mine % 4 // 2 != other % 4 // 2
        rates = sorted(
            ex11.lost_acked_rate_answer(ex11.config_label(c), p["fault_kind"]) or 0.0
            for c in (mine, other)
        )
        assert rates[1] > 0 and rates[0] != rates[1], p
        if rates[0] > 0:
            assert all(abs(rates[1] / rates[0] - bound) > 0.2 * bound for bound in (2, 10)), p
        answer = expected_for(p)
        assert answer["factor"] in ex11.FACTORS and isinstance(answer["higher"], bool)
        answers[(answer["higher"], answer["factor"])] += 1
    # acks=all loses nothing in the small campaign: every version's factor is "over 10x", and
    # which side is higher depends on the version's own acks setting, half and half
    assert set(answers) == {(True, "over 10x"), (False, "over 10x")}
    assert max(answers.values()) <= len(PREDICT) // 2
    assert {ex11.config_label(c) for c in range(12)} == {
        *ex11.LABELS.values(),
        *(ex11.config_label(c) for c in (1, 5, 9, 10, 11)),
    }


def expected_for(p: Any) -> dict[str, Any]:
    return QUESTIONS[(A, "predict_other_acks")].answers(p)


def test_the_config_labels_are_the_campaigns(trials: pd.DataFrame) -> None:
    labels = dict(zip(trials["config_id"], trials["config_label"], strict=True))
    assert all(ex11.config_label(c) == label for c, label in labels.items())


def test_the_worked_prediction_rule_gives_the_replay_in_every_version() -> None:
    for p in PREDICT:
        names = run_solution(SOURCE, 'mine.params("predict_other_acks")', p)
        want = expected_for(p)
        assert names["acks_1"] == want["higher"], p
        assert names["far"] == want["factor"], p


def test_each_learner_sees_their_numbers() -> None:
    for i in ("ada", "bob", "chen"):
        p = params(A, "lost_acked_rate", i)
        text = QUESTIONS[(A, "lost_acked_rate")].show(p)
        assert p["config_label"] in text and p["fault_kind"] in text
        q = params(A, "loss_by_fault_kind", i)
        text = QUESTIONS[(A, "loss_by_fault_kind")].show(q)
        assert q["preset"] in text and q["measure"] in text
        r = params(A, "predict_other_acks", i)
        text = QUESTIONS[(A, "predict_other_acks")].show(r)
        assert ex11.config_label(r["config_id"]) in text and r["fault_kind"] in text


# ---- the worked solution, in Spark --------------------------------------------------------------


def _solution() -> tuple[str, str]:
    """The worked solution's function and its Spark SQL, from the exercise's source notebook."""
    nb = nbformat.read(ROOT / "exercises" / "source" / f"{A}.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    function = next(s for s in code if s.startswith("def lost_acked_rate"))
    query = next(s for s in code if "loss_by_fault_kind = spark.sql" in s)
    return function.split("\n\n\nexample")[0], query.split('""" # BEGIN PROMPT')[0]


@pytest.mark.spark  # a Spark job per sampled version (every version: against DuckDB, above)
def test_the_worked_solution_gives_the_replay(spark: Any) -> None:
    from pyspark.sql import functions as F

    from kafkalab.grading.spark_checks import check_dataframe
    from kafkalab.spark import read_campaign

    function, query = _solution()
    small = read_campaign(spark, campaign_path("small"))
    small.trials.createOrReplaceTempView("trials")
    space: dict[str, Any] = {"F": F, "spark": spark}
    exec(function, space)  # noqa: S102 (our own source)
    for p in [*RATES[::9], ex11.PUBLIC_EXAMPLE]:
        got = space["lost_acked_rate"](small.trials, p["config_label"], p["fault_kind"])
        assert got == pytest.approx(
            ex11.lost_acked_rate_answer(p["config_label"], p["fault_kind"]), rel=1e-9
        )
    for p in BY_KIND[::3]:

        class Mine:
            def params(self, question: str, p: Any = p) -> dict[str, Any]:
                return dict(p)

        space["mine"] = Mine()
        exec(query, space)  # noqa: S102 (our own source)
        check_dataframe(
            space["loss_by_fault_kind"], ex11.by_kind_rows(p), key="fault_kind", question=str(p)
        )
