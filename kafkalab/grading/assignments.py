"""Build and grade the course's assignments with otter-grader.

Each assignment has one source notebook, ``exercises/source/NAME.ipynb``, in Otter Assign's
format (questions, solutions, public and hidden tests with points). From it:

- :func:`build` writes the student notebook ``exercises/NAME.ipynb`` and the solution notebook
  ``solutions/NAME.ipynb`` (``make exercises``);
- :func:`out_of_sync` says whether those committed notebooks are what the source generates;
- :func:`grade_folder` grades a folder of submitted notebooks into a CSV, each submission in its
  own process with a time limit per cell and per submission, and no Docker
  (``kafkalab grade SUBMISSIONS --assignment NAME --out grades.csv``).

otter-grader is imported only by these functions (``pip install kafkalab[grading]``).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.atomic import write_atomically
from kafkalab.errors import ConfigError

__all__ = [
    "Generated",
    "GradeRow",
    "assign",
    "autograder_zip",
    "build",
    "grade_folder",
    "out_of_sync",
    "parse_size",
    "repo_root",
    "resolve_source",
    "source_notebooks",
]

CELL_TIMEOUT_S = 60  # a cell that starts Spark needs 10 to 30 s on a busy machine
TIME_LIMIT_S = 10  # per check of a learner's function (kafkalab.grading.time_limit)
SUBMISSION_TIMEOUT_S = 600
# Notebook metadata that changes from one machine or run to the next.
_VOLATILE_METADATA = ("widgets", "papermill", "execution", "language_info")


def repo_root() -> Path:
    """The course folder: the one holding ``exercises/source`` (this checkout)."""
    return Path(__file__).resolve().parents[2]


def source_notebooks(root: Path | None = None) -> dict[str, Path]:
    """Every assignment's source notebook, by name (``03-hw-leo``), in order."""
    folder = (root or repo_root()) / "exercises" / "source"
    return {p.stem: p for p in sorted(folder.glob("*.ipynb"))}


def resolve_source(assignment: str, root: Path | None = None) -> Path:
    """An assignment name (``03-hw-leo``) or the path of a source notebook."""
    path = Path(assignment)
    if path.suffix == ".ipynb" and path.is_file():
        return path.resolve()
    sources = source_notebooks(root)
    if assignment not in sources:
        names = ", ".join(sources) or "none"
        raise ConfigError(
            f"assignment {assignment!r} does not exist: use one of {names}, or the path of a "
            "source notebook"
        )
    return sources[assignment]


@dataclass(frozen=True)
class Generated:
    """What Otter Assign made from one source notebook."""

    student: Path
    solution: Path
    autograder: Path  # the autograder zip that grading uses


def assign(source: Path, out_dir: Path) -> Generated:
    """Run Otter Assign on ``source`` into ``out_dir``, then make both notebooks deterministic
    (stable cell ids). Raises :class:`ConfigError` with Otter's message when the source is
    malformed."""
    from otter.assign import main as otter_assign

    chatter = io.StringIO()
    try:
        with (
            contextlib.redirect_stdout(chatter),
            contextlib.redirect_stderr(chatter),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")  # otter's own deprecation warnings
            otter_assign(str(source), str(out_dir), no_pdfs=True, no_run_tests=True)
    except Exception as err:  # Otter reports a malformed source with assorted exceptions
        raise ConfigError(f"otter assign failed on {source.name}: {err}") from None
    student = out_dir / "student" / source.name
    solution = out_dir / "autograder" / source.name
    zips = sorted((out_dir / "autograder").glob("*.zip"))
    if not zips:
        raise ConfigError(f"{source.name}: the assignment config must say 'generate: true'")
    _hide_setup_answers(student)
    for nb_path in (student, solution):
        _normalise_file(nb_path)
    return Generated(student, solution, zips[-1])


_SETUP_ANSWER = re.compile(r"^(\s*)([A-Za-z_]\w*)\s*=.*#\s*SOLUTION\s*$", re.MULTILINE)


def _hide_setup_answers(path: Path) -> None:
    """Otter hides the answers inside questions; a line ``name = value  # SOLUTION`` in a cell
    outside them (the learner's ``learner_id``) becomes ``name = ...`` in the student notebook
    too."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = _SETUP_ANSWER.sub(r"\1\2 = ...", cell.source)
    nbformat.write(nb, path)


def _normalise_file(path: Path) -> None:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    normalise(nb)
    nbformat.write(nb, path)


def normalise(nb: Any) -> Any:
    """Give every cell an id derived from its position and content, and drop metadata that
    changes between machines: the same source then always generates the same bytes."""
    for key in _VOLATILE_METADATA:
        nb.metadata.pop(key, None)
    for index, cell in enumerate(nb.cells):
        digest = hashlib.sha256(f"{index}:{cell.cell_type}:{cell.source}".encode()).hexdigest()
        cell["id"] = digest[:12]
    return nb


def _comparable(path: Path) -> dict[str, Any]:
    """A notebook without what running it adds (outputs, execution counts, volatile metadata)."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    meta = {k: v for k, v in nb.metadata.items() if k not in _VOLATILE_METADATA}
    cells = [
        {
            "id": c.get("id"),
            "cell_type": c.cell_type,
            "source": c.source,
            "metadata": {k: v for k, v in c.metadata.items() if k not in _VOLATILE_METADATA},
        }
        for c in nb.cells
    ]
    return {"metadata": meta, "cells": cells}


def build(names: Iterable[str] | None = None, root: Path | None = None) -> list[Path]:
    """Regenerate ``exercises/NAME.ipynb`` and ``solutions/NAME.ipynb`` from their sources
    (every assignment when ``names`` is None). A solution notebook keeps its stored outputs
    when its cells did not change; run ``make notebooks`` to refresh them. Returns the files
    written."""
    root = root or repo_root()
    written: list[Path] = []
    for name in names or source_notebooks(root):
        source = resolve_source(name, root)
        with tempfile.TemporaryDirectory() as tmp:
            made = assign(source, Path(tmp) / "dist")
            targets = (
                (made.student, root / "exercises" / source.name),
                (made.solution, root / "solutions" / source.name),
            )
            for new, target in targets:
                if target.exists() and _comparable(target) == _comparable(new):
                    continue
                _replace(new, target)
                written.append(target)
    return written


def _replace(src: Path, target: Path) -> None:
    """Copy ``src`` over ``target`` atomically."""
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, src.read_bytes())


def out_of_sync(root: Path | None = None) -> list[str]:
    """One line for every committed student or solution notebook that differs from what its
    source generates (or is missing); empty when all are in sync."""
    root = root or repo_root()
    problems = []
    for name, source in source_notebooks(root).items():
        with tempfile.TemporaryDirectory() as tmp:
            made = assign(source, Path(tmp) / "dist")
            for new, target in (
                (made.student, root / "exercises" / source.name),
                (made.solution, root / "solutions" / source.name),
            ):
                rel = target.relative_to(root)
                if not target.exists():
                    problems.append(f"{rel} is missing: run make exercises")
                elif _comparable(target) != _comparable(new):
                    problems.append(
                        f"{rel} differs from exercises/source/{name}.ipynb: run make exercises"
                    )
    return problems


def autograder_zip(source: Path, out_dir: Path) -> Path:
    """The autograder zip of ``source`` (hidden tests included), written into ``out_dir``."""
    made = assign(source, out_dir / "dist")
    target = out_dir / f"{source.stem}-autograder.zip"
    shutil.copyfile(made.autograder, target)
    return target


# ---- grading a folder ------------------------------------------------------------------------


@dataclass
class GradeRow:
    """One submission's grade: points per question, total, and how grading went."""

    submission: str
    learner_id: str = ""  # what the hand-in's learner_id cell says (it chose their variants)
    scores: dict[str, float] = field(default_factory=dict)
    possible: dict[str, float] = field(default_factory=dict)
    status: str = "graded"
    feedback: dict[str, list[str]] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return round(sum(self.scores.values()), 4)

    @property
    def graded(self) -> bool:
        """Whether the hand-in was graded: an empty one is (it has no answers), and so is one
        whose cells hit a limit (those cells are left out); one that could not be read or ran
        out of time as a whole is not."""
        return self.status == NO_ANSWERS or self.status.startswith(_GRADED_PREFIXES)


GRADED = "graded"
NO_ANSWERS = "no answers"
_GRADED_PREFIXES = (GRADED, "memory limit:", "timed out: cell")


def grade_folder(
    submissions: Path,
    assignment: str,
    out_csv: Path,
    *,
    cell_timeout_s: int = CELL_TIMEOUT_S,
    submission_timeout_s: int = SUBMISSION_TIMEOUT_S,
    time_limit_s: float = TIME_LIMIT_S,
    jobs: int | None = None,
    root: Path | None = None,
    sandbox: str | None = None,
    memory_bytes: int | None = None,
    docker_image: str | None = None,
    feedback_dir: Path | None = None,
) -> list[GradeRow]:
    """Grade every ``*.ipynb`` (or Otter ``*.zip`` export) in ``submissions`` against
    ``assignment``'s public and hidden tests and write one CSV row per submission.

    Each hand-in gets a judge process (:mod:`kafkalab.grading.judge`) that runs the tests and
    computes the score, and a worker in a sandbox (:mod:`kafkalab.grading.sandbox`, bubblewrap
    unless ``sandbox`` says otherwise) that runs the hand-in's cells. A call of a learner's
    function stops after ``time_limit_s`` (the check fails), a cell running longer than
    ``cell_timeout_s`` or using more than ``memory_bytes`` is left out (the questions that need
    it score 0), and a hand-in still grading after ``submission_timeout_s`` scores 0 with status
    "timed out". ``jobs`` hand-ins are graded at once (default: one per CPU, at most 4).
    ``feedback_dir`` receives one text file per hand-in with what each failing test said."""
    from kafkalab.grading.sandbox import Limits, choose

    source = resolve_source(assignment, root)
    if not submissions.is_dir():
        raise ConfigError(f"submissions folder {str(submissions)!r} does not exist")
    files = sorted(p for p in submissions.iterdir() if p.suffix in (".ipynb", ".zip"))
    if not files:
        raise ConfigError(f"{str(submissions)!r} holds no .ipynb or .zip submissions")
    if not out_csv.resolve().parent.is_dir():
        raise ConfigError(f"--out {str(out_csv)!r}: the folder does not exist")
    if feedback_dir is not None and feedback_dir.exists() and not feedback_dir.is_dir():
        raise ConfigError(f"--feedback {str(feedback_dir)!r} is a file, not a folder")
    limits = Limits(
        memory_bytes=memory_bytes or Limits().memory_bytes,
        cpu_seconds=max(1, int(submission_timeout_s)),
    )
    box = choose(sandbox, limits, docker_image or "kafkalab-grader")
    workers = max(1, jobs or min(4, os.cpu_count() or 1))
    slots: queue.SimpleQueue[int] = queue.SimpleQueue()
    for slot in range(workers):
        slots.put(slot)
    run_dir = Path(tempfile.mkdtemp(prefix="kafkalab-grade-"))
    try:
        made = assign(source, run_dir / "assign")
        tests = _extract_tests(made.autograder, run_dir / "autograder")
        questions = _questions_of(tests)
        settings = _JudgeSettings(
            source.stem, tests, box, cell_timeout_s, submission_timeout_s, time_limit_s, run_dir
        )

        def one(index_and_path: tuple[int, Path]) -> GradeRow:
            slot = slots.get()
            try:
                return _grade_one(index_and_path, questions, settings, slot)
            finally:
                slots.put(slot)

        with ThreadPoolExecutor(max_workers=workers) as pool:  # each job is a process
            try:
                rows = list(pool.map(one, enumerate(files)))
            except BaseException:  # Ctrl-C or SIGTERM: stop every judge still running
                pool.shutdown(wait=False, cancel_futures=True)
                for proc in list(_JUDGES):
                    _stop(proc)
                raise
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    _write_csv(rows, questions, out_csv)
    if feedback_dir is not None:
        _write_feedback(rows, feedback_dir)
    return rows


_JUDGES: set[subprocess.Popen[str]] = set()  # the judges running now


@dataclass(frozen=True)
class _JudgeSettings:
    assignment: str
    tests: Path
    sandbox: Any
    cell_timeout_s: float
    submission_timeout_s: float
    time_limit_s: float
    run_dir: Path


def _extract_tests(autograder: Path, into: Path) -> Path:
    """The ``tests`` folder of an autograder zip (the hidden tests: only the judge reads it)."""
    import zipfile

    into.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(autograder) as zf:
        for member in zf.namelist():
            if member.startswith("tests/") and member.endswith(".py") and ".." not in member:
                target = into / member
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(member))
    return into / "tests"


def _questions_of(tests: Path) -> dict[str, float]:
    """Question name -> points, from the autograder's test files."""
    from kafkalab.grading.judge import load_questions

    return {q.name: q.possible for q in load_questions(tests)}


def _grade_one(
    index_and_path: tuple[int, Path],
    questions: dict[str, float],
    settings: _JudgeSettings,
    slot: int,
) -> GradeRow:
    index, path = index_and_path
    row = GradeRow(path.name, scores=dict.fromkeys(questions, 0.0), possible=dict(questions))
    problem = _check_notebook(path, settings.assignment)
    if problem is not None:
        row.status = problem
        return row
    box = settings.sandbox
    command = [
        sys.executable,
        "-m",
        "kafkalab.grading.judge",
        "--tests",
        str(settings.tests),
        "--notebook",
        str(path.resolve()),
        "--scratch",
        str(settings.run_dir / f"handin-{index}"),
        "--sandbox",
        box.kind,
        "--slot",
        str(slot),
        "--cell-timeout",
        f"{settings.cell_timeout_s:g}",
        "--time-limit",
        f"{settings.time_limit_s:g}",
        "--memory",
        str(box.limits.memory_bytes),
        "--cpu",
        str(box.limits.cpu_seconds),
        "--image",
        box.image,
    ]
    proc = subprocess.Popen(  # noqa: S603 - our own command line
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_end_with_parent,  # noqa: PLW1509 - Ctrl-C on kafkalab grade ends judges too
    )
    _JUDGES.add(proc)
    try:
        out, err = proc.communicate(timeout=settings.submission_timeout_s)
    except subprocess.TimeoutExpired:
        _stop(proc)
        row.status = f"timed out after {settings.submission_timeout_s:g} s"
        return row
    finally:
        _JUDGES.discard(proc)
    try:
        result = json.loads(out.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (err.strip().splitlines() or ["no output"])[-1]
        row.status = f"error: {tail}"
        return row
    if "status" in result:
        row.status = str(result["status"])
        return row
    row.learner_id = _sheet_text(result.get("learner_id"))
    row.scores = honest_scores(result.get("scores"), questions)
    row.feedback = result.get("feedback") or {}
    row.status = _status(result, settings)
    return row


def _end_with_parent() -> None:
    """In the judge before it starts: SIGTERM when ``kafkalab grade`` ends (Linux), so an
    interrupted grading run leaves no judge, worker or temporary file behind."""
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stop(proc: subprocess.Popen[str]) -> None:
    """End a judge that ran out of time: SIGTERM lets it stop its worker, SIGKILL follows."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=10)  # not communicate: another thread may be reading its pipes
            return
        except subprocess.TimeoutExpired:
            continue


def _status(result: dict[str, Any], settings: _JudgeSettings) -> str:
    """ "graded", or what had to be left out: "memory limit: cell 4 (...) used more than
    2 GiB", "timed out: cell 6 (...) ran past 30 s", "graded: cell 3 (...) ended its own
    process", each followed by what it costs."""
    memory = settings.sandbox.limits.memory_bytes
    parts = []
    for label, why in result.get("skipped") or []:
        if why == "memory":
            parts.append(f"memory limit: {label} used more than {_size(memory)}")
        elif why == "timeout":
            parts.append(f"timed out: {label} ran past {settings.cell_timeout_s:g} s")
        else:
            parts.append(f"graded: {label} ended its own process")
    if not parts:
        return GRADED
    return "; ".join(parts) + " (left out: the questions that need it score 0)"


def parse_size(text: str, option: str = "--memory") -> int:
    """``2G``, ``1500M``, ``512K`` or a number of bytes, as bytes; ConfigError otherwise."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    body = str(text).strip().upper().removesuffix("B").removesuffix("I")
    unit = body[-1:] if body[-1:] in units else ""
    number = body[: len(body) - len(unit)]
    try:
        value = float(number) * units[unit]
    except ValueError:
        value = 0
    if not value >= 64 << 20:
        raise ConfigError(
            f"{option} {text!r} is not allowed: use a size of at least 64M, such as 2G or 1500M"
        )
    return int(value)


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def _write_feedback(rows: Sequence[GradeRow], folder: Path) -> None:
    """One text file per hand-in: its points per question and what each failing test said."""
    folder.mkdir(parents=True, exist_ok=True)
    for row in rows:
        lines = [f"{row.submission}: {_num(row.total)} of {_num(sum(row.possible.values()))}"]
        lines.append(f"status: {row.status}")
        for question, points in row.scores.items():
            lines.append(f"\n{question}: {_num(points)} of {_num(row.possible[question])}")
            lines += [f"  {m}" for m in row.feedback.get(question, [])]
        write_atomically(folder / f"{Path(row.submission).stem}.txt", "\n".join(lines) + "\n")


def honest_scores(reported: Any, questions: dict[str, float]) -> dict[str, float]:
    """The points a grading run reported, kept within each question's: a question never scores
    more than its points or less than 0, and anything that is not a finite number, or names no
    question, counts for nothing."""
    scores = dict.fromkeys(questions, 0.0)
    if not isinstance(reported, dict):
        return scores
    for name, possible in questions.items():
        value = reported.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if value == value and abs(value) != float("inf"):  # not NaN, not infinite
            scores[name] = min(max(float(value), 0.0), possible)
    return scores


def _check_notebook(path: Path, assignment: str) -> str | None:
    """Why a hand-in cannot be graded before running it: "invalid notebook: <reason>", "wrong
    assignment: ..." for another assignment's notebook, or "no answers" for a notebook with no
    code of the learner's in it; None when it can be graded."""
    from kafkalab.grading.judge import notebook_cells

    try:
        cells = notebook_cells(path)
        name = _assignment_of(path)
    except Exception as err:  # noqa: BLE001 - not JSON, not a notebook, or not a valid one
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return f"invalid notebook: {reason[:160]}"
    if name is not None and name != assignment:
        return f"wrong assignment: a notebook of {name!r}, not {assignment!r}"
    if not cells:
        return NO_ANSWERS
    return None


def _assignment_of(path: Path) -> str | None:
    """The assignment a student notebook was generated for (Otter's metadata), if it says."""
    from kafkalab.grading.judge import notebook_json

    meta = notebook_json(path).get("metadata", {})
    otter = meta.get("otter") if isinstance(meta, dict) else None
    name = otter.get("assignment_name") if isinstance(otter, dict) else None
    return name if isinstance(name, str) else None


def _write_csv(rows: Sequence[GradeRow], questions: dict[str, float], out_csv: Path) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    names = list(questions)
    writer.writerow(["submission", "learner_id", *names, "total", "possible", "status"])
    possible = round(sum(questions.values()), 4)
    for row in rows:
        writer.writerow(
            [row.submission, row.learner_id]
            + [*(_num(row.scores[n]) for n in names), _num(row.total)]
            + [_num(possible), row.status]
        )
    out_csv = out_csv.resolve()
    if not out_csv.parent.is_dir():
        raise ConfigError(f"--out {str(out_csv)!r}: the folder does not exist")
    write_atomically(out_csv, buffer.getvalue())


def _sheet_text(value: Any) -> str:
    """A hand-in's text for a cell of the grade sheet: printable, at most 80 characters, and
    never read as a formula by a spreadsheet (a leading =, +, - or @ is quoted)."""
    if not isinstance(value, str):
        return ""
    text = "".join(ch for ch in value if ch.isprintable())[:80]
    return f"'{text}" if text[:1] in ("=", "+", "-", "@") else text


def _num(value: float) -> str:
    return f"{value:g}"
