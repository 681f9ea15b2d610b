"""The benchmarks stay runnable (their figures are printed, never asserted)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _quick(script: str) -> str:
    """Run a benchmark in its quick mode; returns what it printed."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_timed_benchmark_runs_and_prints_its_figures() -> None:
    stdout = _quick("bench_timed.py")
    for figure in ("events/s", "bare ev/s", "ratio", "peak memory"):
        assert figure in stdout, f"{figure!r} missing from:\n{stdout}"


def test_widget_benchmark_runs_and_prints_its_figures() -> None:
    stdout = _quick("bench_widgets.py")
    for figure in ("bare ms", "widget ms", "rewind max", "ratio", "ISR lag explorer"):
        assert figure in stdout, f"{figure!r} missing from:\n{stdout}"


@pytest.mark.spark  # four Spark sessions (scaling local[1] against local[2])
def test_campaign_benchmark_runs_and_prints_its_figures() -> None:
    # --repeats 0: each query runs once (the figures are the same columns; a repeat only
    # times the same query again, and costs a Spark job per query)
    bench = [str(ROOT / "benchmarks" / "bench_campaign.py"), "--tiny", "--repeats", "0"]
    out = subprocess.run(
        [sys.executable, *bench],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    for figure in ("trials/s", "events/s", "scaling local[2] / local[1]", "spark/duckdb"):
        assert figure in out.stdout, f"{figure!r} missing from:\n{out.stdout}"
    for query in ("loss_probability", "latency_by_acks", "isr_flapping"):
        assert query in out.stdout


def test_campaign_benchmark_prints_trials_per_core() -> None:
    bench = [str(ROOT / "benchmarks" / "bench_campaign.py"), "--per-core", "--seeds", "1"]
    out = subprocess.run(
        [sys.executable, *bench], capture_output=True, text=True, timeout=300, cwd=ROOT, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "campaign 'census', the first 1 seeds of each of its 12 configs" in out.stdout
    assert "this tree: 12 trials in" in out.stdout and "trials/s per core" in out.stdout


def test_explore_benchmark_runs_and_prints_its_figures() -> None:
    stdout = _quick("bench_explore.py")
    for figure in (
        "states/s",
        "first cex s",
        "peak bytes/state",
        "rebuild from the schedule",
        "same result",
    ):
        assert figure in stdout, f"{figure!r} missing from:\n{stdout}"
