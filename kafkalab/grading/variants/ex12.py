"""Exercise 12 (Spark analysis): each learner's loss target and confidence, percentile and acks.

The expected answers come from the same questions asked in DuckDB SQL over the shipped Parquet
files (:mod:`kafkalab.spark.reference`): the data's own "replay", independent of the learner's
Spark code. Hidden checks call the learner's function again on other versions of the grid, drawn
from the learner's own version.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

from kafkalab.grading.variants.base import QuestionVariants, register

ASSIGNMENT = "12-spark-analysis"

# ---- best_config: the most available config whose loss meets a target, on the census -------

CONFIDENCES = (0.9, 0.95, 0.99)
# Census ci_high (90% / 95% / 99%), lossy trials of 4,200 per config_id:
#   3.7 acks=all: 117 and 118 lossy, 0.0324-0.0354 (the two differ by one trial);
#   older eras acks=all, min.insync.replicas=2: 349 and 352, 0.0904-0.0955;
#   older eras acks=all, min.insync.replicas=1: 388 and 392, 0.1000-0.1056;
#   3.7 acks=1: 793, 0.199-0.205; older eras acks=1: 1666 and 1672, 0.409-0.418.
# Each target below sits between two of those (or inside one config's span across confidences,
# so that the confidence changes the answer) and at least 5e-5 from every ci_high.
MAX_LOSSES = (
    0.01,  # no config: far under 3.7 acks=all's 2.8%
    0.03,  # no config: above 3.7 acks=all's point estimate (2.8%), below its ci_high (3.2%+)
    0.0325,  # at 90% only 3.7 acks=all min.insync.replicas=2 (117 lossy); none at 95% or 99%
    0.0334,  # both 3.7 acks=all at 90%; only the 117-lossy one at 95%; none at 99%
    0.0353,  # both 3.7 acks=all at 90% and 95%; only the 117-lossy one at 99%
    0.05,  # both 3.7 acks=all at every confidence, no older era
    0.092,  # older eras' acks=all min.insync.replicas=2: both at 90%, 349 lossy only at 95%
    0.095,  # older eras' acks=all min.insync.replicas=2: both at 90% and 95%, one at 99%
    0.102,  # older eras' acks=all min.insync.replicas=1: both at 90%, 388 lossy only at 95%
    0.105,  # every acks=all at 90% and 95%; at 99% the 392-lossy one stays out
    0.16,  # every acks=all, no acks=1
    0.25,  # every acks=all and 3.7's acks=1 (19%), not the older eras' acks=1 (40%)
    0.41,  # at 90% the 0.8 acks=1 configs (1666 lossy) too; at 95% and 99% not
    0.5,  # every config
)


@functools.cache
def census_configs() -> tuple[dict[str, Any], ...]:
    """Per config of the census: its label, trials, lossy trials and mean refused time."""
    from kafkalab.grading.spark_checks import campaign_path
    from kafkalab.spark import reference

    con = reference.connect(campaign_path("census"))
    cursor = con.execute(
        """select config_id, config_label, count(*) as trials,
                  sum((lost_acked > 0)::int) as lossy_trials,
                  avg(unavailable_ms) as mean_unavailable_ms
           from trials group by all order by config_id"""
    )
    names = [d[0] for d in cursor.description]
    return tuple(dict(zip(names, row, strict=True)) for row in cursor.fetchall())


def wilson_high(k: int, n: int, confidence: float) -> float:
    """The upper end of the Wilson score interval of k/n."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = k / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5 / denom
    return min(1.0, center + half)


def best_config_answer(max_loss: float, confidence: float) -> str | None:
    """The census's most available config whose ci_high is at most max_loss (None if none)."""
    safe = [
        c
        for c in census_configs()
        if wilson_high(c["lossy_trials"], c["trials"], confidence) <= max_loss
    ]
    if not safe:
        return None
    return min(safe, key=lambda c: (c["mean_unavailable_ms"], c["config_id"]))["config_label"]


def _best_show(p: Mapping[str, Any]) -> str:
    return (
        f"Your target: the upper end of the two-sided {p['confidence']:.0%} Wilson interval "
        f"(confidence = {p['confidence']}), ci_high, must be <= max_loss = {p['max_loss']}:\n"
        f"P(losing acknowledged records) at most {p['max_loss']} with one-sided confidence "
        f"{(1 + p['confidence']) / 2:.1%}."
    )


BEST_CONFIG_GRID = tuple(
    {"max_loss": m, "confidence": c}
    for c in CONFIDENCES
    for m in MAX_LOSSES
    # the target the lesson's reading suggests: 3.7 acks=all at 2.8%, ci_high 3.33-3.35% at 95%
    if (m, c) != (0.035, 0.95)
)


def confidence_matters(v: Mapping[str, Any]) -> bool:
    """Whether the version's answer differs from the answer at 95% (loss_probability's
    default confidence): a function that drops ``confidence`` gets it wrong."""
    return best_config_answer(v["max_loss"], v["confidence"]) != best_config_answer(
        v["max_loss"], 0.95
    )


def best_config_hidden(p: Mapping[str, Any], count: int = 3) -> list[dict[str, Any]]:
    """Other versions, drawn from the learner's own, each with an answer unlike the learner's
    and unlike each other's: one whose answer at 95% would be another (so the confidence must
    be used), and one with no config meeting the target when the learner's has one."""
    rng = random.Random(f"12/best_config/hidden/{p['max_loss']}/{p['confidence']}")
    mine = best_config_answer(p["max_loss"], p["confidence"])
    others = [dict(v) for v in BEST_CONFIG_GRID if dict(v) != dict(p)]
    rng.shuffle(others)
    chosen: list[dict[str, Any]] = []
    seen = {mine}
    wanted = [confidence_matters, lambda v: best_config_answer(**v) is None, lambda v: True]
    for want in wanted:
        for v in others:
            answer = best_config_answer(**v)
            if len(chosen) < count and answer not in seen and want(v):
                chosen.append(v)
                seen.add(answer)
                break
    for v in others:
        answer = best_config_answer(**v)
        if len(chosen) < count and answer not in seen:
            chosen.append(v)
            seen.add(answer)
    return chosen


register(
    QuestionVariants(
        ASSIGNMENT,
        "best_config",
        BEST_CONFIG_GRID,
        _best_show,
        lambda p: {"best_config": best_config_answer(p["max_loss"], p["confidence"])},
    )
)

# ---- latency_percentile: one percentile of acknowledged batches' latency ---------------------

ACKS = ("1", "all")
QUANTILES = (0.25, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.97, 0.98, 0.995, 0.999)


@functools.cache
def latency_answer(acks: str, q: float) -> float:
    """The q-quantile (linear interpolation) of the acknowledged batches' latency of the small
    campaign's trials with that acks setting, in DuckDB."""
    from kafkalab.grading.spark_checks import reference_value

    if acks not in ACKS or not 0 <= q <= 1:
        raise ValueError(f"no such version: acks={acks!r}, q={q!r}")
    return float(
        reference_value(
            f"""select quantile_cont(latency_ms, {float(q)}) from events join trials
            using (trial_id) where kind = 'produce_result' and error = 'NONE'
            and acks = '{acks}'"""
        )
    )


LATENCY_GRID = tuple({"acks": a, "q": q} for a in ACKS for q in QUANTILES)


def latency_hidden(p: Mapping[str, Any], count: int = 3) -> list[dict[str, Any]]:
    """Other versions drawn from the learner's own: both acks settings, other percentiles."""
    rng = random.Random(f"12/latency_percentile/hidden/{p['acks']}/{p['q']}")
    other_acks = "1" if p["acks"] == "all" else "all"
    qs = [q for q in QUANTILES if q != p["q"]]
    picked = rng.sample(qs, count)
    return [{"acks": other_acks, "q": p["q"]}] + [
        {"acks": ACKS[i % 2], "q": q} for i, q in enumerate(picked[: count - 1])
    ]


def _latency_show(p: Mapping[str, Any]) -> str:
    return (
        f"Your percentile: q = {p['q']} (the {p['q'] * 100:g}th percentile) of the acknowledged "
        f'batches\' latency, for the trials with acks = "{p["acks"]}".'
    )


register(
    QuestionVariants(
        ASSIGNMENT,
        "latency_percentile",
        LATENCY_GRID,
        _latency_show,
        lambda p: {"latency_ms": latency_answer(p["acks"], p["q"])},
    )
)

# ---- predict_configs_meeting: before computing, how many census configs meet the target ------


def configs_meeting_answer(max_loss: float, confidence: float) -> int:
    """How many of the census's configs have ci_high at most max_loss at that confidence."""
    return sum(
        wilson_high(c["lossy_trials"], c["trials"], confidence) <= max_loss
        for c in census_configs()
    )


def _meeting_show(p: Mapping[str, Any]) -> str:
    return (
        f"Your target: ci_high <= max_loss = {p['max_loss']}, at {p['confidence']:.0%} "
        f"confidence (confidence = {p['confidence']})."
    )


register(
    QuestionVariants(
        ASSIGNMENT,
        "predict_configs_meeting",
        BEST_CONFIG_GRID,
        _meeting_show,
        lambda p: {"configs": configs_meeting_answer(p["max_loss"], p["confidence"])},
    )
)
