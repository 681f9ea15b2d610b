"""Grading hostile hand-ins: none may earn more than its honest answers, leave a file or a
process behind, reach the network or leave the grader's temporary files around.

Each assignment's hostile folder (tests/hostile.py: score forgery, patched checks, always-equal
answers, shell escapes, daemons, reading solutions and hidden tests, memory hogs, endless loops
that swallow interrupts, a fork bomb, broken notebooks, and the solution with an attack in it) is
graded in one ``kafkalab grade`` run; the tests below read what that run did, one hand-in each.
``make test`` grades 08-idempotence's folder; ``--hostile all`` (``make test-hostile``: an hour,
Spark for 11 and 12) every assignment's, ``--hostile 03-hw-leo,12-spark-analysis`` those.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkalab.grading.assignments import source_notebooks
from tests.conftest import ROOT, starts_spark
from tests.hostile import (
    ATTACKS,
    HandIn,
    Listener,
    attack_processes,
    clean_up,
    grading_limits,
    new_token,
    question_points,
    stray_markers,
    write_hostile_folder,
)

LATE_S = 3  # how long to wait for delayed markers once grading has finished


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The assignments whose folders are graded: ``--hostile`` (08-idempotence by default)."""
    if "graded" not in metafunc.fixturenames:
        return
    chosen = hostile_assignments(metafunc.config.getoption("--hostile"), source_notebooks())
    params = [
        pytest.param(
            name,
            marks=[pytest.mark.spark] if starts_spark(ROOT / "solutions" / f"{name}.ipynb") else [],
        )
        for name in chosen
    ]
    metafunc.parametrize("graded", params, indirect=True, scope="module")


def hostile_assignments(option: str, names: list[str]) -> list[str]:
    """The assignments ``--hostile`` names: ``all``, or a comma-separated list."""
    if option == "all":
        return list(names)
    chosen = [n.strip() for n in option.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in names]
    if unknown or not chosen:
        raise pytest.UsageError(
            f"--hostile {option!r} is not allowed: use all, or some of {', '.join(names)}"
        )
    return chosen


@dataclass
class GradedFolder:
    """What one ``kafkalab grade`` run over an assignment's hostile folder did."""

    assignment: str
    token: str
    hand_ins: dict[str, HandIn]  # by attack
    rows: dict[str, dict[str, str]]  # the CSV rows, by file name
    command: str
    output: str  # the command's stdout and stderr, for failure messages
    seconds: float
    markers: list[Path]  # every marker file of the run that exists
    processes: dict[str, list[str]]  # attack processes still alive, by tag
    connections: list[str]  # what reached the listener on 127.0.0.1
    temp_left: list[str]  # what grading left in its temporary folder

    def markers_of(self, attack: str | None) -> list[str]:
        """The marker files an attack created (None: those no attack owns)."""
        return [str(p) for p in self.markers if _owner(p, self.token) == attack]

    def row(self, attack: str) -> dict[str, str]:
        file = self.hand_ins[attack].file
        assert file in self.rows, f"no CSV row for {file}\n{self.command}\n{self.output[-3000:]}"
        return self.rows[file]


@pytest.fixture(scope="module")
def graded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    assignment = request.param
    base = tmp_path_factory.mktemp(assignment)
    token = new_token()
    try:
        with Listener() as listener:
            yield _grade(assignment, base, token, listener)
    finally:
        clean_up(token)


def _grade(assignment: str, base: Path, token: str, listener: Listener) -> GradedFolder:
    folder, markers, temp = base / "hand-ins", base / "markers", base / "grader-tmp"
    hand_ins = write_hostile_folder(
        assignment, folder, markers, token=token, listen_port=listener.port
    )
    temp.mkdir()
    out = base / "grades.csv"
    timeout_s, limits = grading_limits(assignment)
    command = [
        str(Path(sys.executable).with_name("kafkalab")),
        *("grade", str(folder), "--assignment", assignment, "--out", str(out)),
        *limits,
    ]
    started = time.monotonic()
    output = _run(command, {**os.environ, "TMPDIR": str(temp)}, len(hand_ins) * timeout_s)
    seconds = time.monotonic() - started
    time.sleep(LATE_S)  # a marker written, or a process still ending, just after grading counts
    rows = {r["submission"]: r for r in csv.DictReader(out.open())} if out.exists() else {}
    return GradedFolder(
        assignment=assignment,
        token=token,
        hand_ins={h.attack: h for h in hand_ins},
        rows=rows,
        command=" ".join(command),
        output=output,
        seconds=seconds,
        markers=stray_markers(token, markers),
        processes=attack_processes(token),
        connections=list(listener.received),
        temp_left=sorted(p.name for p in temp.iterdir()),
    )


def _run(command: list[str], env: dict[str, str], timeout_s: float) -> str:
    """Run the grader in a session of its own (so all of it can be stopped); its output."""
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        return proc.communicate(timeout=timeout_s)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.communicate()[0] + f"\n(stopped after {timeout_s} s)"


def _owner(marker: Path, token: str) -> str | None:
    """The attack whose marker this is: its name opens the file name (after the run's prefix)."""
    name = marker.name.lstrip(".").removeprefix(f"hostile-{token}-")
    owners = [attack for attack in ATTACKS if name.startswith(f"{attack}-")]
    return max(owners, key=len, default=None)


def _about(graded: GradedFolder, attack: str) -> str:
    hand_in = graded.hand_ins[attack]
    return f"{graded.assignment}/{hand_in.file} ({hand_in.what})"


# ---- one hand-in at a time ----------------------------------------------------------------------


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_no_hand_in_earns_more_than_its_honest_answers(graded: GradedFolder, attack: str) -> None:
    hand_in, row = graded.hand_ins[attack], graded.row(attack)
    total = float(row["total"])
    if hand_in.exact:
        assert total == hand_in.honest_total, (
            f"{_about(graded, attack)} earned {total:g}, its answers earn {hand_in.honest_total:g} "
            f"(status {row['status']!r})"
        )
    else:
        assert total <= hand_in.honest_total, (
            f"{_about(graded, attack)} earned {total:g} of {row['possible']}, its honest answers "
            f"earn {hand_in.honest_total:g}: {row}"
        )


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_each_hand_in_gets_the_status_it_deserves(graded: GradedFolder, attack: str) -> None:
    hand_in, row = graded.hand_ins[attack], graded.row(attack)
    assert row["status"].startswith(hand_in.statuses), (
        f"{_about(graded, attack)}: status {row['status']!r}, expected one starting with "
        f"{' or '.join(repr(s) for s in hand_in.statuses)}"
    )


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_no_attack_leaves_a_file_or_reaches_the_network(graded: GradedFolder, attack: str) -> None:
    hand_in = graded.hand_ins[attack]
    left = graded.markers_of(attack)
    assert not left, f"{_about(graded, attack)} created {left}"
    reached = [c for c in graded.connections if hand_in.tag in c]
    assert not reached, f"{_about(graded, attack)} connected to the host's 127.0.0.1: {reached}"


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_no_attack_process_outlives_grading(graded: GradedFolder, attack: str) -> None:
    tag = graded.hand_ins[attack].tag
    alive = graded.processes.get(tag, [])
    assert not alive, (
        f"{_about(graded, attack)}: {len(alive)} of its processes (tag {tag}) still run "
        f"{LATE_S} s after grading ended:\n" + "\n".join(alive[:5])
    )


# ---- the whole run ------------------------------------------------------------------------------


def test_every_hand_in_gets_a_row_with_the_assignments_points(graded: GradedFolder) -> None:
    files = sorted(h.file for h in graded.hand_ins.values())
    assert sorted(graded.rows) == files, f"{graded.command}\n{graded.output[-3000:]}"
    possible = sum(question_points(graded.assignment).values())
    assert {float(r["possible"]) for r in graded.rows.values()} == {possible}


def test_grading_leaves_nothing_in_its_temporary_folder(graded: GradedFolder) -> None:
    assert not graded.temp_left, (
        f"grading {graded.assignment} ({graded.seconds:.0f} s) left {graded.temp_left} in TMPDIR"
    )


def test_nothing_is_left_that_no_hand_in_owns(graded: GradedFolder) -> None:
    tags = {h.tag for h in graded.hand_ins.values()}
    strays = {t: p for t, p in graded.processes.items() if t not in tags}
    assert not strays, f"processes of this run that no hand-in owns: {strays}"
    orphans = graded.markers_of(None)
    assert not orphans, f"marker files that no hand-in owns: {orphans}"
