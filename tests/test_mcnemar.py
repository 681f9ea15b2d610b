"""McNemar's exact test for paired trials (kafkalab.spark.analysis.mcnemar_exact): the census
runs every config over the same seeds, so two settings are compared seed by seed. Pure
arithmetic: no Spark session is started."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("pyspark")

from kafkalab.spark.analysis import mcnemar_exact  # noqa: E402


def test_a_one_sided_split_has_the_chance_of_all_heads_twice() -> None:
    assert mcnemar_exact(41, 0) == pytest.approx(2 / 2**41)
    assert mcnemar_exact(40, 1) == pytest.approx(2 * (1 + 40) / 2**41)


def test_the_p_value_is_the_binomial_tail_both_ways() -> None:
    n = 12
    tail = sum(math.comb(n, i) for i in range(3)) / 2**n  # 2 or fewer of 12 on one side
    assert mcnemar_exact(10, 2) == pytest.approx(2 * tail)
    assert mcnemar_exact(2, 10) == mcnemar_exact(10, 2)


def test_no_evidence_gives_one() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(1, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_a_count_that_is_not_a_whole_number_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="only_second="):
        mcnemar_exact(3, bad)  # type: ignore[arg-type]
