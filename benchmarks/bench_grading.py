#!/usr/bin/env python
"""How long grading takes when the hand-ins are hostile, against grading the solution alone.

For each assignment the script builds its hostile folder (``tests/hostile.py``: forged scores,
patched checks, shell escapes, daemons, memory hogs, endless loops that swallow interrupts, a
fork bomb, broken notebooks, the solution with an attack in it; 26 hand-ins) and grades it in
one ``kafkalab grade`` run, with the limits the hostile tests use (``tests.hostile.grading_limits``:
``--cell-timeout 10 --time-limit 3 --timeout 120``; 60 s per cell and 300 s per hand-in where a
cell starts Spark). The baseline, measured just before in the same run of this
script: one ``kafkalab grade`` run over a folder holding only the assignment's solution
notebook. The figures are wall times of the whole command (Otter Assign included), so the
per-hand-in figure is the folder's time shared out over its hand-ins.

Run ``python benchmarks/bench_grading.py`` (every assignment: an hour or more, Spark for 11 and
12), ``--assignment 03-hw-leo`` for some, or ``--quick`` for 08-idempotence alone. Timings are
reported, never asserted; the scores and leftovers are counted, not judged (the tests do that).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmark the working tree, installed or not

from _table import machine, table  # noqa: E402  (benchmarks/_table.py, next to this script)

from kafkalab.grading.assignments import source_notebooks  # noqa: E402
from tests.hostile import (  # noqa: E402
    Listener,
    attack_processes,
    clean_up,
    grading_limits,
    new_token,
    stray_markers,
    write_hostile_folder,
)

QUICK = "08-idempotence"
KAFKALAB = Path(sys.executable).with_name("kafkalab")


@dataclass
class AssignmentTiming:
    assignment: str
    hand_ins: int
    wall_s: float
    baseline_s: float
    statuses: dict[str, int]  # hand-ins by the first words of their status
    over_scored: list[str]  # hand-ins that earned more than their honest answers
    markers: int  # marker files the attacks managed to create
    processes: int  # attack processes still running after grading

    @property
    def per_hand_in_s(self) -> float:
        return self.wall_s / self.hand_ins

    @property
    def ratio(self) -> float:
        return self.wall_s / self.baseline_s


def _grade(folder: Path, assignment: str, out: Path, timeout_s: float) -> float:
    """Wall seconds of one ``kafkalab grade`` run (in a session of its own, stopped at
    ``timeout_s``)."""
    command = [str(KAFKALAB), "grade", str(folder), "--assignment", assignment, "--out", str(out)]
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*command, *grading_limits(assignment)[1]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise SystemExit(f"{assignment}: grading took longer than {timeout_s:.0f} s") from None
    if not out.exists():
        raise SystemExit(f"{assignment}: kafkalab grade wrote no CSV:\n{err[-2000:]}")
    return time.perf_counter() - started


def measure(assignment: str, work: Path) -> AssignmentTiming:
    baseline = work / "baseline"
    baseline.mkdir()
    shutil.copyfile(ROOT / "solutions" / f"{assignment}.ipynb", baseline / "solution.ipynb")
    baseline_s = _grade(baseline, assignment, work / "baseline.csv", 600)

    token = new_token()
    markers = work / "markers"
    try:
        with Listener() as listener:
            hand_ins = write_hostile_folder(
                assignment, work / "hostile", markers, token=token, listen_port=listener.port
            )
            limit_s = len(hand_ins) * grading_limits(assignment)[0] + 600
            wall_s = _grade(work / "hostile", assignment, work / "hostile.csv", limit_s)
        left = len(stray_markers(token, markers))
        running = sum(len(p) for p in attack_processes(token).values())
    finally:
        clean_up(token)
    rows = {r["submission"]: r for r in csv.DictReader((work / "hostile.csv").open())}
    statuses: dict[str, int] = {}
    for row in rows.values():
        kind = row["status"].split(":")[0].split(" after ")[0]
        statuses[kind] = statuses.get(kind, 0) + 1
    over = [h.attack for h in hand_ins if float(rows[h.file]["total"]) > h.honest_total]
    return AssignmentTiming(
        assignment, len(hand_ins), wall_s, baseline_s, statuses, over, left, running
    )


def report(results: list[AssignmentTiming]) -> str:
    rows = [
        [
            r.assignment,
            str(r.hand_ins),
            f"{r.wall_s:.1f}",
            f"{r.per_hand_in_s:.1f}",
            f"{r.baseline_s:.1f}",
            f"{r.ratio:.1f}",
            f"{r.per_hand_in_s / r.baseline_s:.2f}",
            str(len(r.over_scored)),
            str(r.markers),
            str(r.processes),
        ]
        for r in results
    ]
    lines = [
        table(
            [
                "assignment",
                "hand-ins",
                "wall s",
                "s/hand-in",
                "baseline s",
                "ratio",
                "per hand-in ratio",
                "over-scored",
                "markers",
                "processes left",
            ],
            rows,
        ),
        "",
    ]
    for r in results:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(r.statuses.items()))
        over = ", ".join(r.over_scored) or "none"
        lines.append(f"{r.assignment}: statuses {kinds}; over-scored: {over}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK} alone")
    parser.add_argument("--assignment", nargs="+", metavar="NAME", help="default: every one")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    names = args.assignment or ([QUICK] if args.quick else list(source_notebooks()))
    unknown = sorted(set(names) - set(source_notebooks()))
    if unknown:
        parser.error(f"no such assignment: {', '.join(unknown)}")
    results = []
    for name in names:
        with tempfile.TemporaryDirectory(prefix="bench-grading-") as work:
            results.append(measure(name, Path(work)))
        print(f"{name}: done", file=sys.stderr, flush=True)
    print(
        f"kafkalab grading benchmark: hostile hand-ins (tests/hostile.py) graded in one "
        f"kafkalab grade run per assignment, {' '.join(grading_limits(QUICK)[1])} (60 s per cell "
        f"and 300 s per hand-in on Spark); {machine()}"
    )
    print("wall s: the whole command; s/hand-in: wall s / hand-ins; baseline s: the same command")
    print("over the solution notebook alone; ratio: wall s / baseline s; per hand-in ratio:")
    print("s/hand-in / baseline s; over-scored, markers, processes left: what got through")
    print()
    print(report(results))
    if args.json:
        payload = [
            {**asdict(r), "per_hand_in_s": r.per_hand_in_s, "ratio": r.ratio} for r in results
        ]
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
