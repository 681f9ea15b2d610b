"""Checks for the Spark exercises: a learner's answer, computed with Spark, against the same
question answered independently in DuckDB SQL over the same Parquet files.

    campaign = read_campaign(spark, campaign_path("small"))
    check_dataframe(answer_df, reference_rows(SQL), key="fault_kind", question="...")
    check_value(answer, reference_value(SQL), question="...", why="...")

The learner's Spark calls run without :func:`kafkalab.grading.time_limit`: interrupting a
running Spark job from a signal handler can leave py4j's connection to the JVM unusable, and
the grader's own time limit per cell already stops a cell that never ends.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafkalab.campaign import CampaignError, read_manifest
from kafkalab.grading.checks import ELLIPSIS_HINT, Feedback

__all__ = [
    "campaign_path",
    "check_dataframe",
    "check_value",
    "reference_rows",
    "reference_value",
]

REL_TOL = 1e-6  # Spark and DuckDB sum doubles in different orders


def campaign_path(name: str = "small") -> Path:
    """The course's campaign folder ``datasets/NAME``, wherever the notebook runs (a grader
    runs submissions in a temporary folder, so a relative path would not do)."""
    from kafkalab.grading.assignments import repo_root

    path = repo_root() / "datasets" / name
    manifest = read_manifest(path)
    if manifest is None or not manifest.get("complete"):
        raise CampaignError(
            f"datasets/{name} holds no complete campaign: `make datasets-small` rebuilds the "
            "shipped one, `make datasets` builds the large one"
        )
    return path


def reference_rows(sql: str, *, dataset: str = "small") -> list[dict[str, Any]]:
    """The rows of ``sql`` in DuckDB, over the views ``trials`` and ``events``."""
    from kafkalab.spark.reference import connect

    cursor = connect(campaign_path(dataset)).execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def reference_value(sql: str, *, dataset: str = "small") -> Any:
    """The single value ``sql`` returns in DuckDB (None for no row)."""
    rows = reference_rows(sql, dataset=dataset)
    return next(iter(rows[0].values())) if rows else None


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return got == want
    if isinstance(want, (int, float)):
        try:
            return math.isclose(float(got), float(want), rel_tol=REL_TOL, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return got == want


def check_value(answer: Any, expected: Any, *, question: str, why: str) -> None:
    """One number or label: ``answer`` must equal ``expected`` (numbers to a relative 1e-6);
    otherwise explain with ``why``, which should point at the query, not give the value."""
    if answer is Ellipsis:
        raise Feedback(f"{question}: {ELLIPSIS_HINT}")
    if hasattr(answer, "collect"):
        raise Feedback(
            f"{question}: this is a Spark DataFrame, not a value: take it out with "
            "`.first()[0]` or `.collect()`"
        )
    if not _same(answer, expected):
        raise Feedback(f"{question}: {answer!r} is not the answer. {why}")


def check_dataframe(
    df: Any,
    expected: Sequence[Mapping[str, Any]],
    *,
    key: str,
    question: str,
    only: Sequence[Any] | None = None,
) -> None:
    """A Spark DataFrame answer: it has the expected rows' columns (others may follow), one row
    per ``key`` value, and the same values as ``expected``; ``only`` limits the comparison to
    some keys (a public test that gives feedback without checking everything)."""
    if df is Ellipsis or df is None:
        raise Feedback(f"{question}: {ELLIPSIS_HINT}")
    if not hasattr(df, "collect") or not hasattr(df, "columns"):
        raise Feedback(
            f"{question}: answer with a Spark DataFrame (spark.sql(...) or the DataFrame API), "
            f"not a {type(df).__name__}"
        )
    columns = list(expected[0]) if expected else [key]
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise Feedback(
            f"{question}: the DataFrame has no column {', '.join(map(repr, missing))} "
            f"(it has {', '.join(df.columns)}); name them with .alias(...) or `as`"
        )
    got: dict[Any, dict[str, Any]] = {}
    for row in df.select(*columns).collect():
        values = row.asDict()
        if values[key] in got:
            raise Feedback(f"{question}: two rows for {key}={values[key]!r}: group by {key}")
        got[values[key]] = values
    want = {r[key]: r for r in expected if only is None or r[key] in only}
    for k, row in want.items():
        if k not in got:
            raise Feedback(f"{question}: no row for {key}={k!r}")
        for column in columns:
            if not _same(got[k][column], row[column]):
                raise Feedback(
                    f"{question}: for {key}={k!r}, {column} is {got[k][column]!r}, which is not "
                    "what the campaign says: check the rows you keep and how you count them"
                )
    extra = sorted(set(got) - {r[key] for r in expected}, key=str)
    if only is None and extra:
        raise Feedback(f"{question}: rows that should not be there: {key} in {extra}")
