"""Grade one submission with otter-grader, without Docker; prints one JSON line.

    python -m kafkalab.grading.runner AUTOGRADER_ZIP SUBMISSION [--cell-timeout S]

:func:`kafkalab.grading.assignments.grade_folder` runs this in a child process per submission,
so a submission that hangs can be stopped without stopping the others. Otter executes the
notebook with nbconvert; here every cell gets a time limit after which the kernel is interrupted
(the cell fails, the notebook goes on), so an endless loop costs only the questions that need it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["grade", "main"]


def _limit_cells(timeout_s: int) -> None:
    """Make the nbconvert executor Otter uses interrupt any cell running over ``timeout_s``."""
    import nbconvert.preprocessors as preprocessors

    base = preprocessors.ExecutePreprocessor

    class TimeLimitedExecutePreprocessor(base):  # type: ignore[misc, valid-type]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.timeout = timeout_s
            self.interrupt_on_timeout = True

    preprocessors.ExecutePreprocessor = TimeLimitedExecutePreprocessor  # type: ignore[misc]


def grade(autograder: str, submission: str, *, cell_timeout_s: int) -> dict[str, Any]:
    """Points per question for one submission, or {"error": message}."""
    _limit_cells(cell_timeout_s)
    from otter.api import grade_submission

    noise = io.StringIO()
    try:
        with contextlib.redirect_stdout(noise), contextlib.redirect_stderr(noise):
            results = grade_submission(submission, autograder, quiet=True)
    except Exception as err:  # Otter's own refusal (wrong assignment, no notebook)
        return {"error": f"{type(err).__name__}: {err}".splitlines()[0]}
    scores = {name: results.get_score(name) for name in results.test_files}
    return {"scores": scores, "total": results.total, "possible": results.possible}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.grading.runner")
    parser.add_argument("autograder")
    parser.add_argument("submission")
    parser.add_argument("--cell-timeout", type=int, default=30)
    args = parser.parse_args(argv)
    result = grade(args.autograder, args.submission, cell_timeout_s=args.cell_timeout)
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
