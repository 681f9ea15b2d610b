"""Exercise 12's versions (kafkalab.grading.variants.ex12): every loss target and confidence,
every percentile and acks setting has a well-defined answer in the shipped Parquet files, the
answers differ between versions, the hidden versions drawn for a learner differ from theirs,
and the worked solution (in Spark, one session for the module) gives the DuckDB answers."""

from __future__ import annotations

from collections import Counter
from typing import Any

import nbformat
import pandas as pd
import pytest

from kafkalab.grading.spark_checks import campaign_path
from kafkalab.grading.variants import QUESTIONS, ex12, expected, params
from kafkalab.spark import reference
from tests.conftest import ROOT
from tests.worked_solutions import run_solution

A = "12-spark-analysis"
BEST = QUESTIONS[(A, "best_config")].grid
LATENCY = QUESTIONS[(A, "latency_percentile")].grid
PREDICT = QUESTIONS[(A, "predict_configs_meeting")].grid
SOURCE = ROOT / "exercises" / "source" / f"{A}.ipynb"
IDS = [f"student-{n:03d}" for n in range(60)]


# ---- best_config ------------------------------------------------------------------------------


def test_every_target_is_clear_of_every_configs_interval() -> None:
    """No config's ci_high sits so close to a target that rounding could flip the answer."""
    for p in BEST:
        for c in ex12.census_configs():
            high = ex12.wilson_high(c["lossy_trials"], c["trials"], p["confidence"])
            assert abs(high - p["max_loss"]) > 5e-5, (p, c["config_label"], high)


def test_the_targets_answers_differ_and_the_lesson_target_is_not_one() -> None:
    answers = Counter(ex12.best_config_answer(**p) for p in BEST)
    assert None in answers and len(answers) >= 6
    assert max(answers.values()) <= len(BEST) // 3
    assert {"max_loss": 0.035, "confidence": 0.95} not in [dict(p) for p in BEST]
    # the confidence matters: some target has another answer at another confidence
    assert any(
        ex12.best_config_answer(p["max_loss"], 0.9) != ex12.best_config_answer(p["max_loss"], 0.99)
        for p in BEST
    )


def test_the_wilson_bound_and_the_frontier_match_the_course_reference() -> None:
    con = reference.connect(campaign_path("census"))
    loss = {r["config_id"]: r for r in reference.answer(con, "loss_probability")}
    frontier = {r["config_id"]: r for r in reference.answer(con, "availability_frontier")}
    for c in ex12.census_configs():
        assert ex12.wilson_high(c["lossy_trials"], c["trials"], 0.95) == pytest.approx(
            loss[c["config_id"]]["ci_high"], rel=1e-12
        )
        assert c["mean_unavailable_ms"] == pytest.approx(
            frontier[c["config_id"]]["mean_unavailable_ms"], rel=1e-12
        )


def test_the_worked_rule_in_pandas_gives_the_replay_in_every_version() -> None:
    census = pd.read_parquet(campaign_path("census") / "trials")
    per = census.groupby(["config_id", "config_label"], as_index=False).agg(
        trials=("trial_id", "size"),
        lossy=("lost_acked", lambda s: int((s > 0).sum())),
        unavailable=("unavailable_ms", "mean"),
    )
    for p in BEST:
        high = pd.Series(
            [
                ex12.wilson_high(k, n, p["confidence"])
                for k, n in zip(per["lossy"], per["trials"], strict=True)
            ],
            index=per.index,
        )
        safe = per[high <= p["max_loss"]].sort_values(["unavailable", "config_id"])
        want = None if safe.empty else safe.iloc[0]["config_label"]
        assert expected(A, "best_config", _id_for(A, "best_config", p)) == {"best_config": want}


def _id_for(assignment: str, question: str, p: Any) -> str:
    """A learner id whose version is ``p`` (searched; every version has one)."""
    for n in range(20000):
        if params(assignment, question, f"id-{n}") == dict(p):
            return f"id-{n}"
    raise AssertionError(f"no id draws {p}")


def test_the_hidden_targets_are_other_versions_with_other_answers() -> None:
    grid = [dict(p) for p in BEST]
    for p in BEST:
        hidden = ex12.best_config_hidden(p)
        mine = ex12.best_config_answer(**p)
        answers = [ex12.best_config_answer(**v) for v in hidden]
        assert len(hidden) == 3 and all(v in grid and v != dict(p) for v in hidden)
        assert len({mine, *answers}) == 4, (p, answers)
        assert None in {mine, *answers}
        assert any(ex12.confidence_matters(v) for v in hidden), p


# ---- latency_percentile -------------------------------------------------------------------------


def test_every_count_is_well_defined_and_the_counts_differ() -> None:
    """A count from 0 to 12 in every version (the targets sit clear of every interval, above),
    consistent with best_config's answer, and not the same count for every learner."""
    counts = Counter()
    for p in PREDICT:
        count = QUESTIONS[(A, "predict_configs_meeting")].answers(p)["configs"]
        assert isinstance(count, int) and 0 <= count <= len(ex12.census_configs()) == 12
        assert (count == 0) == (ex12.best_config_answer(**p) is None), p
        counts[count] += 1
    assert len(counts) >= 6 and max(counts.values()) <= len(PREDICT) // 4
    assert [dict(p) for p in PREDICT] == [dict(p) for p in BEST]


def test_the_worked_count_from_the_lessons_numbers_gives_the_replay_in_every_version() -> None:
    lessons = [c["lossy_trials"] for c in ex12.census_configs()]
    for p in PREDICT:
        names = run_solution(SOURCE, 'mine.params("predict_configs_meeting")', p)
        assert names["lossy"] == lessons and names["n"] == 4200
        count = sum(names["wilson_high"](k) <= p["max_loss"] for k in names["lossy"])
        assert count == QUESTIONS[(A, "predict_configs_meeting")].answers(p)["configs"], p


def test_every_percentile_is_answerable_and_not_the_lessons() -> None:
    answers = {(p["acks"], p["q"]): ex12.latency_answer(p["acks"], p["q"]) for p in LATENCY}
    assert all(isinstance(v, float) for v in answers.values())
    assert not {0.5, 0.95, 0.99} & {p["q"] for p in LATENCY}  # latency_by_acks shows those
    assert len(set(answers.values())) >= 0.8 * len(answers)
    for acks in ex12.ACKS:  # a higher percentile is never faster
        values = [answers[(acks, q)] for q in ex12.QUANTILES]
        assert values == sorted(values)


def test_the_latency_replay_matches_pandas() -> None:
    root = campaign_path("small")
    trials = pd.read_parquet(root / "trials", columns=["trial_id", "acks"])
    events = pd.read_parquet(root / "events", columns=["trial_id", "kind", "error", "latency_ms"])
    acked = events[(events["kind"] == "produce_result") & (events["error"] == "NONE")]
    acked = acked.merge(trials, on="trial_id")
    for p in LATENCY:
        lat = acked.loc[acked["acks"] == p["acks"], "latency_ms"].dropna()
        assert ex12.latency_answer(p["acks"], p["q"]) == pytest.approx(lat.quantile(p["q"]))


def test_the_hidden_percentiles_are_other_versions() -> None:
    for p in LATENCY:
        hidden = ex12.latency_hidden(p)
        assert len(hidden) == 3 and dict(p) not in hidden
        assert len({(v["acks"], v["q"]) for v in hidden}) == 3
        assert {v["acks"] for v in hidden} == set(ex12.ACKS)
        assert all(0 < v["q"] < 1 for v in hidden)


def test_each_learner_sees_their_numbers() -> None:
    for i in IDS[:5]:
        p = params(A, "best_config", i)
        text = QUESTIONS[(A, "best_config")].show(p)
        assert str(p["max_loss"]) in text and f"{p['confidence']:.0%}" in text
        q = params(A, "latency_percentile", i)
        assert f"q = {q['q']}" in QUESTIONS[(A, "latency_percentile")].show(q)


# ---- the worked solution, in Spark --------------------------------------------------------------


def _solution_functions() -> dict[str, Any]:
    """The worked solution's two functions, from the exercise's source notebook."""
    from pyspark.sql import functions as F

    from kafkalab.spark import availability_frontier, loss_probability

    nb = nbformat.read(ROOT / "exercises" / "source" / f"{A}.ipynb", as_version=4)
    space: dict[str, Any] = {
        "F": F,
        "availability_frontier": availability_frontier,
        "loss_probability": loss_probability,
    }
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("def "):
            exec(cell.source.split("\n\n\n# your own")[0], space)  # noqa: S102 (our own source)
    return space


@pytest.mark.spark  # a Spark job per sampled version (every version: against DuckDB, above)
def test_the_worked_solution_gives_the_replay(spark: Any) -> None:
    from kafkalab.spark import read_campaign

    fns = _solution_functions()
    census = read_campaign(spark, campaign_path("census")).trials
    small = read_campaign(spark, campaign_path("small"))
    # one version per answer the grid has (a Spark query takes seconds on two cores)
    picked = {ex12.best_config_answer(**p): p for p in BEST}
    for p in picked.values():
        got = fns["best_config"](census, p["max_loss"], p["confidence"])
        assert got == ex12.best_config_answer(p["max_loss"], p["confidence"]), p
    for p in LATENCY[::7]:
        got = fns["latency_percentile"](small.events, small.trials, p["acks"], p["q"])
        assert got == pytest.approx(ex12.latency_answer(p["acks"], p["q"]), rel=1e-9), p
