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
    "repo_root",
    "resolve_source",
    "source_notebooks",
]

CELL_TIMEOUT_S = 30
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
    for nb_path in (student, solution):
        _normalise_file(nb_path)
    return Generated(student, solution, zips[-1])


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
    scores: dict[str, float] = field(default_factory=dict)
    possible: dict[str, float] = field(default_factory=dict)
    status: str = "graded"

    @property
    def total(self) -> float:
        return round(sum(self.scores.values()), 4)

    @property
    def graded(self) -> bool:
        """Whether the hand-in was graded (an empty one is graded: it has no answers)."""
        return self.status in (GRADED, NO_ANSWERS)


GRADED = "graded"
NO_ANSWERS = "no answers"


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
) -> list[GradeRow]:
    """Grade every ``*.ipynb`` (or ``*.zip``) in ``submissions`` against ``assignment``'s
    public and hidden tests and write one CSV row per submission. Each submission runs in its
    own process: a check of a learner's function stops after ``time_limit_s`` (the question
    scores 0), a cell running longer than ``cell_timeout_s`` is interrupted (its questions score
    0) and a submission running longer than ``submission_timeout_s`` scores 0 with status
    "timed out". ``jobs`` submissions are graded at once (default: one per CPU, at most 4)."""
    source = resolve_source(assignment, root)
    if not submissions.is_dir():
        raise ConfigError(f"submissions folder {str(submissions)!r} does not exist")
    files = sorted(p for p in submissions.iterdir() if p.suffix in (".ipynb", ".zip"))
    if not files:
        raise ConfigError(f"{str(submissions)!r} holds no .ipynb or .zip submissions")
    with tempfile.TemporaryDirectory() as tmp:
        zip_path = autograder_zip(source, Path(tmp))
        questions = _questions(zip_path)
        limits = (cell_timeout_s, submission_timeout_s, time_limit_s)
        workers = jobs or min(4, os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:  # each job is a process
            rows = list(pool.map(lambda p: _grade_one(p, zip_path, questions, limits), files))
    _write_csv(rows, questions, out_csv)
    return rows


def _questions(zip_path: Path) -> dict[str, float]:
    """Question name -> points, from the autograder's test files."""
    import zipfile

    from otter.nbmeta_config import NBMetadataConfig
    from otter.test_files import create_test_file

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(zip_path) as zf:
        zf.extractall(tmp)
        for test in sorted(Path(tmp, "tests").glob("*.py")):
            tf = create_test_file(str(test), NBMetadataConfig())
            out[tf.name] = float(tf.possible)
    return out


def _grade_one(
    path: Path,
    zip_path: Path,
    questions: dict[str, float],
    limits: tuple[int, int, float],
) -> GradeRow:
    cell_timeout_s, submission_timeout_s, time_limit_s = limits
    row = GradeRow(path.name, dict.fromkeys(questions, 0.0), dict(questions))
    problem = _check_notebook(path)
    if problem is not None:
        row.status = problem
        return row
    command = [
        sys.executable,
        "-m",
        "kafkalab.grading.runner",
        str(zip_path),
        str(path.resolve()),
        "--cell-timeout",
        str(cell_timeout_s),
    ]
    env = {
        **os.environ,
        "JUPYTER_PREFER_ENV_PATH": "1",  # the kernel is this environment's python
        "KAFKALAB_TIME_LIMIT_S": str(time_limit_s),
    }
    try:
        proc = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=submission_timeout_s,
            check=False,
            env=env,
        )
    except subprocess.TimeoutExpired:
        row.status = f"timed out after {submission_timeout_s} s"
        return row
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        row.status = f"error: {tail}"
        return row
    if "error" in result:
        row.status = f"error: {result['error']}"
        return row
    row.scores = honest_scores(result.get("scores"), questions)
    return row


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


def _check_notebook(path: Path) -> str | None:
    """Why a hand-in cannot be graded before running it: "invalid notebook: <reason>", or
    "no answers" for a notebook with no code in it; None when it can be graded."""
    if path.suffix != ".ipynb":
        return None
    import nbformat

    try:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # not JSON, not a notebook, or not a valid one
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return f"invalid notebook: {reason[:160]}"
    if not any(c.cell_type == "code" and c.source.strip() for c in nb.cells):
        return NO_ANSWERS
    return None


def _write_csv(rows: Sequence[GradeRow], questions: dict[str, float], out_csv: Path) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    names = list(questions)
    writer.writerow(["submission", *names, "total", "possible", "status"])
    possible = round(sum(questions.values()), 4)
    for row in rows:
        writer.writerow(
            [row.submission, *(_num(row.scores[n]) for n in names), _num(row.total)]
            + [_num(possible), row.status]
        )
    out_csv = out_csv.resolve()
    if not out_csv.parent.is_dir():
        raise ConfigError(f"--out {str(out_csv)!r}: the folder does not exist")
    write_atomically(out_csv, buffer.getvalue())


def _num(value: float) -> str:
    return f"{value:g}"
