"""Every lesson notebook runs top to bottom, and is stored with outputs nbval can compare.

``make test`` runs ``pytest --nbval notebooks``, which runs each notebook once and compares every
cell's output with the output stored in the file (a cell that raises fails it). A notebook that
nbval runs in this session is not run again with papermill here: ``pytest tests`` alone still
runs every notebook. After a change to kafkalab that changes what a lesson prints, refresh the
stored outputs with ``make notebooks`` and review the diff.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client import KernelManager

from tests.conftest import KERNEL, ROOT, execute_notebook, starts_spark

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# What makes an output differ between runs or machines, so nbval could never match it.
UNSTABLE = {
    "a memory address": re.compile(r"\bat 0x[0-9a-f]+"),
    "an absolute path": re.compile(r"(?<![\w.])/(?:home|root|tmp|work|Users|usr)/"),
    "a date or time": re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}"),
}


def _ids(path: Path) -> str:
    return path.name


def _code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


def _output_text(output: nbformat.NotebookNode) -> str:
    if output.output_type == "stream":
        return output.text
    return "".join(str(v) for v in output.get("data", {}).values())


def test_the_course_has_notebooks() -> None:
    assert NOTEBOOKS, "no notebooks/*.ipynb found"


def test_python3_kernel_is_this_python() -> None:
    """papermill and nbval start the "python3" kernel; it must be the environment under test."""
    command = KernelManager(kernel_name=KERNEL).format_kernel_cmd()
    assert Path(command[0]).resolve() == Path(sys.executable).resolve(), (
        f"the {KERNEL!r} kernel runs {command[0]}, not {sys.executable}: "
        "run the tests with the venv's python (make test)"
    )


def _run_by_nbval(session: pytest.Session, path: Path) -> bool:
    """Whether this session also runs ``path`` under nbval (``pytest --nbval notebooks``)."""
    return any(i.path.resolve() == path for i in session.items if i.path.suffix == ".ipynb")


@pytest.mark.notebooks
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=[pytest.mark.spark] if starts_spark(p) else []) for p in NOTEBOOKS],
    ids=_ids,
)
def test_notebook_runs_without_error(
    path: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if _run_by_nbval(request.session, path):
        pytest.skip("nbval runs this notebook in this session (and fails on any error)")
    executed = execute_notebook(path, tmp_path / path.name)
    errors = [o for c in _code_cells(executed) for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{path.name}: {errors[0].ename}: {errors[0].evalue}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_notebook_is_stored_with_stable_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.get("kernelspec", {}).get("name") == KERNEL
    for index, cell in enumerate(_code_cells(nb), start=1):
        where = f"{path.name}, code cell {index}"
        assert cell.execution_count is not None, (
            f"{where} was never run: store the notebook with its outputs (make notebooks)"
        )
        for output in cell.outputs:
            assert output.output_type != "error", f"{where} stores an error output"
            text = _output_text(output)
            for what, pattern in UNSTABLE.items():
                found = pattern.search(text)
                assert found is None, f"{where} prints {what} ({found.group(0)!r})"
