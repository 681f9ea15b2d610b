"""Campaigns on Spark: generation (byte-identical to the in-process run, resumable, under
spark-submit too) and the analysis queries, each checked against the same answer computed
independently with DuckDB or pandas on the shipped small dataset. One local[2] session (the
``spark`` fixture of conftest.py, shared by the whole run)."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
duckdb = pytest.importorskip("duckdb")

from kafkalab.campaign import generate, load_spec, read_manifest  # noqa: E402
from kafkalab.cli import main  # noqa: E402
from kafkalab.spark import analysis as q  # noqa: E402
from kafkalab.spark import plots, reference  # noqa: E402
from kafkalab.spark.generate import run_campaign, spark_map_units  # noqa: E402
from kafkalab.spark.session import find_java_home  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

SMALL = ROOT / "datasets" / "small"
pytestmark = pytest.mark.spark

if find_java_home() is None:  # .ci/run installs Java; a laptop without it skips these tests
    pytest.skip(
        "Spark needs Java: apt-get install openjdk-17-jre-headless", allow_module_level=True
    )


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny campaign generated in this process, without Spark."""
    out = tmp_path_factory.mktemp("ref") / "tiny"
    generate(load_spec("tiny"), out)
    return out


def _files(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ---- generation -------------------------------------------------------------------------------


def test_spark_writes_the_same_bytes_as_the_plain_run(
    spark: Any, plain: Path, tmp_path: Path
) -> None:
    summary = run_campaign(load_spec("tiny"), tmp_path / "s", spark=spark, progress=False)
    assert (summary.units, summary.written, summary.trials) == (4, 4, 12)
    assert _files(tmp_path / "s") == _files(plain)


def test_a_stopped_spark_run_resumes(spark: Any, plain: Path, tmp_path: Path) -> None:
    out, seen = tmp_path / "stopped", []

    def stop_after_one(output: Any) -> None:
        seen.append(output.unit.index)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        generate(load_spec("tiny"), out, map_units=spark_map_units(spark), on_unit=stop_after_one)
    parts = sorted(p.name for p in (out / "trials").iterdir())
    assert parts == [f"part-{seen[0]:05d}.parquet"]
    assert not read_manifest(out)["complete"]  # type: ignore[index]
    summary = run_campaign(load_spec("tiny"), out, spark=spark, progress=False)
    assert (summary.written, summary.skipped) == (3, 1)
    assert _files(out) == _files(plain)


def test_the_command_runs_resumes_and_refuses_another_campaign(
    spark: Any, plain: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "cli")
    args = ["campaign", "run", "tiny", "--out", out, "--master", "local[2]", "--no-progress"]
    assert main(args) == 0
    assert "4 parts (4 written now, 0 already there" in capsys.readouterr().out
    assert main(args) == 0
    assert "(0 written now, 4 already there)" in capsys.readouterr().out
    assert _files(Path(out)) == _files(plain)
    other = tmp_path / "other.yaml"
    text = (ROOT / "kafkalab" / "campaign" / "specs" / "tiny.yaml").read_text()
    other.write_text(text.replace("seeds: 6", "seeds: 3"))
    assert main(["campaign", "run", str(other), "--out", out, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "holds another campaign ('tiny'" in err and "--overwrite" in err
    assert main(["campaign", "run", str(other), "--out", out, "--no-progress", "--overwrite"]) == 0
    assert read_manifest(out)["rows"]["trials"] == 6  # type: ignore[index]


def test_spark_submit_runs_the_generator(plain: Path, tmp_path: Path) -> None:
    submit = Path(sys.executable).parent / "spark-submit"
    if not submit.is_file():
        pytest.skip("no spark-submit next to this Python")
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "JAVA_HOME": str(find_java_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    out = tmp_path / "submitted"
    done = subprocess.run(
        [str(submit), "--master", "local[1]", str(ROOT / "kafkalab" / "spark" / "generate.py")]
        + ["tiny", "--out", str(out), "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "trials: 12 rows" in done.stdout
    assert _files(out) == _files(plain)


# ---- analysis, against DuckDB and pandas ------------------------------------------------------


@pytest.fixture(scope="module")
def small(spark: Any) -> q.Campaign:
    return q.read_campaign(spark, SMALL)


@pytest.fixture(scope="module")
def db() -> Any:
    return reference.connect(SMALL)


def _rows(df: Any) -> list[dict[str, Any]]:
    return [r.asDict() for r in df.collect()]


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def _assert_same(got: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert len(got) == len(expected) and got
    for row, want in zip(got, expected, strict=True):
        assert set(row) == set(want), (row, want)
        for key, value in want.items():
            assert _close(row[key], value), (key, row, want)


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return max(0.0, centre - half), min(1.0, centre + half)


def test_loss_probability_matches_duckdb_and_the_formula(small: q.Campaign, db: Any) -> None:
    got = _rows(q.loss_probability(small.trials))
    expected = reference.answer(db, "loss_probability")
    _assert_same(got, expected)
    for row in expected:
        assert _close(row["ci_low"], _wilson(row["lossy_trials"], row["trials"])[0])
        assert _close(row["ci_high"], _wilson(row["lossy_trials"], row["trials"])[1])
        assert row["ci_low"] <= row["loss_probability"] <= row["ci_high"]
    assert len(got) == 12 and any(r["lossy_trials"] for r in got)


def test_the_frontier_matches_duckdb_and_pandas(small: q.Campaign, db: Any) -> None:
    expected = reference.answer(db, "availability_frontier")
    _assert_same(_rows(q.availability_frontier(small.trials)), expected)
    df = db.execute("select * from trials").df()
    df["lossy"] = (df["lost_acked"] > 0).astype(float)
    stats = df.groupby("config_id").agg(
        loss=("lossy", "mean"), unavailable=("unavailable_ms", "mean")
    )
    points = list(zip(stats["loss"], stats["unavailable"], strict=True))
    for row, (loss, unav) in zip(expected, points, strict=True):
        beaten = any(l2 <= loss and u2 <= unav and (l2 < loss or u2 < unav) for l2, u2 in points)
        assert row["pareto"] is (not beaten)
        assert _close(row["loss_probability"], loss)
    assert 0 < sum(r["pareto"] for r in expected) < len(expected)


def test_latency_by_acks_matches_duckdb_and_pandas(small: q.Campaign, db: Any) -> None:
    got = _rows(q.latency_by_acks(small.events, small.trials))
    _assert_same(got, reference.answer(db, "latency_by_acks"))
    df = db.execute(
        "select t.acks, latency_ms from events join trials t using (trial_id)"
        " where kind = 'produce_result' and error = 'NONE'"
    ).df()
    for row in got:
        lat = df[df["acks"] == row["acks"]]["latency_ms"]
        assert row["batches"] == len(lat)
        for q_, col in ((0.5, "p50_ms"), (0.95, "p95_ms"), (0.99, "p99_ms")):
            assert _close(row[col], float(lat.quantile(q_)))
    by_acks = {r["acks"]: r for r in got}
    assert by_acks["all"]["p50_ms"] > by_acks["1"]["p50_ms"]  # acks=all waits for the ISR


def test_isr_flapping_matches_duckdb_and_the_report(small: q.Campaign, db: Any) -> None:
    got = _rows(q.isr_flapping(small.events, small.trials))
    _assert_same(got, reference.answer(db, "isr_flapping"))
    # the events tell the same ISR story as each run's own report
    total = db.execute("select sum(isr_shrinks), sum(isr_expands) from trials").fetchone()
    shrinks = sum(r["shrinks_per_trial"] * r["trials"] for r in got)
    expands = sum(r["expands_per_trial"] * r["trials"] for r in got)
    assert (round(shrinks), round(expands)) == tuple(total)


def test_leader_epoch_anomalies_match_duckdb_and_pandas(small: q.Campaign, db: Any) -> None:
    expected = reference.answer(db, "leader_epoch_anomalies")
    got = _rows(q.leader_epoch_anomalies(small.trials))
    _assert_same(got, expected)
    df = db.execute("select * from trials").df()
    flags = {
        "divergent_rate": df["divergent"],
        "lost_acked_rate": df["lost_acked"] > 0,
        "hw_regression_rate": df["hw_regressions"] > 0,
        "two_leaders_rate": df["two_leaders"] > 0,
    }
    for name, flag in flags.items():
        df[name] = flag.astype(float)
    df["any_anomaly_rate"] = df[list(flags)].max(axis=1)
    means = df.groupby(["leader_epochs", "acks"])[[*flags, "any_anomaly_rate"]].mean()
    for row in got:
        for name in (*flags, "any_anomaly_rate"):
            assert _close(row[name], float(means.loc[(row["leader_epochs"], row["acks"]), name]))
    off = [r for r in got if not r["leader_epochs"]]
    on = [r for r in got if r["leader_epochs"]]
    assert max(r["any_anomaly_rate"] for r in off) > 0
    assert sum(r["divergent_rate"] for r in on) == 0  # leader epochs keep logs identical


def test_a_config_without_known_unavailability_is_off_the_frontier(spark: Any) -> None:
    trials = spark.createDataFrame(
        [(0, "a", 0, 100), (1, "b", 1, None), (2, "c", 0, 300), (3, "d", 2, 50)],
        "config_id int, config_label string, lost_acked long, unavailable_ms long",
    ).withColumn("offline_ms", q.F.lit(0))
    got = {r["config_label"]: r["pareto"] for r in _rows(q.availability_frontier(trials))}
    assert got == {"a": True, "b": None, "c": False, "d": True}


def test_a_folder_without_a_complete_campaign_is_refused(spark: Any, tmp_path: Path) -> None:
    from kafkalab.campaign import CampaignError

    with pytest.raises(CampaignError, match="holds no complete campaign"):
        q.read_campaign(spark, tmp_path)


def test_bad_query_options_are_named() -> None:
    with pytest.raises(ValueError, match="confidence=1.5"):
        q.wilson_interval(q.F.lit(1), q.F.lit(2), 1.5)
    with pytest.raises(ValueError, match="percentile 50"):
        q._pct_name(50)
    with pytest.raises(ValueError, match="query 'nope' is not one of loss_probability"):
        reference.answer(None, "nope")


# ---- plots ------------------------------------------------------------------------------------


def test_each_plot_draws_its_result(small: q.Campaign) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loss = q.loss_probability(small.trials).toPandas()
    ax = plots.plot_loss_probability(loss)
    assert len(ax.patches) == len(loss) == 12
    frontier = q.availability_frontier(small.trials)
    ax = plots.plot_frontier(frontier)  # a Spark DataFrame works too
    # One label per group of (nearly) coinciding points, and the key naming each config.
    labels = [t.get_text() for t in ax.texts]
    assert sorted(int(i) for label in labels[:-1] for i in label.split(",")) == list(range(12))
    key = labels[-1].splitlines()
    assert len(key) == 12 and key[0].split()[0] == "0" and ax.get_legend() is not None
    from kafkalab.viz.labels import overlaps

    assert overlaps(ax.figure) == []
    latency = q.latency_by_acks(small.events, small.trials)
    ax = plots.plot_latency(latency)
    assert len(ax.patches) == 2 * 3
    flapping = q.isr_flapping(small.events, small.trials)
    ax = plots.plot_isr_flapping(flapping)
    assert len(ax.patches) == 3 * flapping.count()
    plt.close("all")
