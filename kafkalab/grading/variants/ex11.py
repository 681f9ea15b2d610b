"""Exercise 11 (failure campaigns, first Spark queries): each learner's config and fault kind,
and their own slice of the campaign to break down by fault kind.

The expected answers come from the same questions asked in DuckDB SQL over the shipped Parquet
files (:mod:`kafkalab.spark.reference`): the data's own "replay", independent of the learner's
Spark code. Hidden checks call the learner's function again on other versions of the grid, drawn
from the learner's own version.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from typing import Any

from kafkalab.grading.variants.base import QuestionVariants, register

ASSIGNMENT = "11-failure-campaigns"

# ---- lost_acked_rate: one config's rate over the trials that drew one fault kind ------------

# The small campaign's labels (datasets/small, spec "small"); configs 1, 5 and 9 behave as 0, 4
# and 8 (acks=1 ignores min.insync.replicas), and no acks=all config loses anything: a rate
# question is asked of the acks=1 configs only.
LABELS = {
    0: "preset=0.8 acks=1 min.insync.replicas=1",
    1: "preset=0.8 acks=1 min.insync.replicas=2",
    2: "preset=0.8 acks=all min.insync.replicas=1",
    3: "preset=0.8 acks=all min.insync.replicas=2",
    4: "preset=0.10 acks=1 min.insync.replicas=1",
    6: "preset=0.10 acks=all min.insync.replicas=1",
    7: "preset=0.10 acks=all min.insync.replicas=2",
    8: "preset=3.7 acks=1 min.insync.replicas=1",
}
RATE_CONFIGS = (0, 4, 8)
# "burst" is a prefix of "bursty" and "slow" of "slow_link": a substring test counts too many
FAULT_KINDS = ("burst", "crash", "disconnect", "partition", "power_loss", "slow")
PREFIX_KINDS = ("burst", "slow")
PUBLIC_EXAMPLE = {"config_label": LABELS[1], "fault_kind": "zk_isolation"}  # in no version


@functools.cache
def lost_acked_rate_answer(config_label: str, fault_kind: str) -> float | None:
    """sum(lost_acked) / sum(acked) over the config's trials that drew the fault kind."""
    from kafkalab.grading.spark_checks import campaign_path
    from kafkalab.spark import reference

    row = (
        reference.connect(campaign_path("small"))
        .execute(
            """select sum(lost_acked) / sum(acked) from trials
               where config_label = ? and list_contains(string_split(fault_kinds, ','), ?)""",
            [config_label, fault_kind],
        )
        .fetchone()
    )
    return None if row is None or row[0] is None else float(row[0])


RATE_GRID = tuple(
    {"config_label": LABELS[c], "fault_kind": k} for c in RATE_CONFIGS for k in FAULT_KINDS
)


def rate_hidden(p: Mapping[str, Any], count: int = 3) -> list[dict[str, Any]]:
    """Other versions drawn from the learner's own: another config, other fault kinds, and one
    kind whose name starts another kind's name (burst, slow) when the learner's is not one."""
    rng = random.Random(f"11/lost_acked_rate/hidden/{p['config_label']}/{p['fault_kind']}")
    others = [dict(v) for v in RATE_GRID if v["config_label"] != p["config_label"]]
    rng.shuffle(others)
    chosen: list[dict[str, Any]] = []
    if p["fault_kind"] not in PREFIX_KINDS:
        chosen.append(next(v for v in others if v["fault_kind"] in PREFIX_KINDS))
    for v in others:
        if len(chosen) >= count:
            break
        # other kinds each time; with three configs to ask about, two may share a config
        if v["fault_kind"] != p["fault_kind"] and all(
            v["fault_kind"] != c["fault_kind"] for c in chosen
        ):
            chosen.append(v)
    return chosen


def _rate_show(p: Mapping[str, Any]) -> str:
    return (
        f'Your config: config_label = "{p["config_label"]}"\n'
        f'Your fault kind: fault_kind = "{p["fault_kind"]}" (only the trials that drew it)'
    )


register(
    QuestionVariants(
        ASSIGNMENT,
        "lost_acked_rate",
        RATE_GRID,
        _rate_show,
        lambda p: {"rate": lost_acked_rate_answer(p["config_label"], p["fault_kind"])},
    )
)

# ---- loss_by_fault_kind: the learner's slice of the campaign, broken down by fault kind ------

MEASURES = {
    "lossy_trials": "sum((lost_acked > 0)::int)",  # trials that lost an acknowledged record
    "lost_records": "sum(lost_acked)",  # acknowledged records lost
    "lost_acked_rate": "sum(lost_acked) / sum(acked)",  # the share of acknowledged records lost
}
SLICES = (("0.8", "1"), ("0.10", "1"), ("3.7", "1"))  # the acks=all slices lose nothing
BY_KIND_GRID = tuple(
    {"preset": preset, "acks": acks, "measure": m} for preset, acks in SLICES for m in MEASURES
)


def by_kind_rows(p: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per fault kind drawn by the learner's slice's trials, in DuckDB."""
    from kafkalab.grading.spark_checks import reference_rows

    if p["measure"] not in MEASURES or (p["preset"], p["acks"]) not in SLICES:
        raise ValueError(f"no such version: {dict(p)}")
    return reference_rows(
        f"""select fault_kind, count(*) as trials, {MEASURES[p["measure"]]} as {p["measure"]}
        from (select *, unnest(string_split(fault_kinds, ',')) as fault_kind from trials)
        where preset = '{p["preset"]}' and acks = '{p["acks"]}'
        group by fault_kind order by fault_kind"""
    )


def _by_kind_show(p: Mapping[str, Any]) -> str:
    what = {
        "lossy_trials": "how many of those trials lost at least one acknowledged record "
        "(lost_acked > 0)",
        "lost_records": "how many acknowledged records those trials lost in all (lost_acked)",
        "lost_acked_rate": "the share of those trials' acknowledged records that were lost "
        "(their lost_acked summed, divided by their acked summed)",
    }[p["measure"]]
    return (
        f"Your trials: preset = '{p['preset']}' and acks = '{p['acks']}' (both "
        "min.insync.replicas settings).\n"
        f"Your columns: fault_kind, trials, and {p['measure']}: {what}."
    )


register(
    QuestionVariants(
        ASSIGNMENT,
        "loss_by_fault_kind",
        BY_KIND_GRID,
        _by_kind_show,
        lambda p: {"rows": by_kind_rows(p)},
    )
)

# ---- predict_other_acks: before computing, the learner's config against its era's other acks ---

# the config with the other acks setting, same era and min.insync.replicas
OTHER_ACKS = {0: 2, 2: 0, 4: 6, 6: 4, 8: 10, 10: 8}
PREDICT_CONFIGS = tuple(OTHER_ACKS)
FACTORS = ("under 2x", "2x to 10x", "over 10x")


def config_label(config_id: int) -> str:
    """The small campaign's label of a config: preset, acks, then min.insync.replicas."""
    preset = ("0.8", "0.10", "3.7")[config_id // 4]
    acks = ("1", "all")[config_id % 4 // 2]
    return f"preset={preset} acks={acks} min.insync.replicas={config_id % 2 + 1}"


def other_acks_answer(config_id: int, fault_kind: str) -> dict[str, Any]:
    """Whether the config's lost-acked rate under the fault kind is higher than the other acks
    setting's (same era and min ISR), and the ratio of the larger rate to the smaller."""
    mine = lost_acked_rate_answer(config_label(config_id), fault_kind) or 0.0
    other = lost_acked_rate_answer(config_label(OTHER_ACKS[config_id]), fault_kind) or 0.0
    if mine == other:
        raise ValueError(f"no such version: config {config_id}, {fault_kind}: a tie")
    ratio = max(mine, other) / min(mine, other) if min(mine, other) > 0 else float("inf")
    factor = FACTORS[0] if ratio < 2 else FACTORS[1] if ratio <= 10 else FACTORS[2]
    return {"higher": mine > other, "factor": factor}


PREDICT_GRID = tuple(
    {"config_id": c, "fault_kind": k} for c in PREDICT_CONFIGS for k in FAULT_KINDS
)


def _predict_show(p: Mapping[str, Any]) -> str:
    other = OTHER_ACKS[p["config_id"]]
    return (
        f'Your config: "{config_label(p["config_id"])}"\n'
        f'Compare with: "{config_label(other)}" (the other acks setting)\n'
        f'Both over the trials that drew fault_kind = "{p["fault_kind"]}"'
    )


register(
    QuestionVariants(
        ASSIGNMENT,
        "predict_other_acks",
        PREDICT_GRID,
        _predict_show,
        lambda p: other_acks_answer(p["config_id"], p["fault_kind"]),
    )
)
