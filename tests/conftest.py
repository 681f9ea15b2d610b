"""What the test modules share: the repository's root, running a notebook, one Spark session for
the whole run, and the markers behind the quick loop.

    pytest tests -m "not slow and not notebooks and not spark"   # make test-quick

``notebooks`` marks every test that executes a notebook in a Jupyter kernel (each nbval cell,
the papermill runs, the browser test); ``spark`` marks every test that starts a Spark JVM (a
notebook that calls ``spark_session`` is marked both). ``slow`` is for ``make test-slow``.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNEL = "python3"  # papermill and nbval start this kernel (make test prefers the venv's)


@cache
def starts_spark(notebook: Path) -> bool:
    """Whether running ``notebook`` starts a Spark session."""
    return "spark_session(" in notebook.read_text(encoding="utf-8")


def execute_notebook(path: Path, out: Path) -> Any:
    """Run ``path`` top to bottom with papermill (in its own folder, as a learner would) into
    ``out``; the executed notebook. A cell that raises fails the test with the cell's error."""
    import nbformat
    import papermill

    papermill.execute_notebook(
        str(path), str(out), kernel_name=KERNEL, cwd=str(path.parent), progress_bar=False
    )
    return nbformat.read(out, as_version=4)


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """nbval's cells carry the ``notebooks`` marker (and ``spark`` when the notebook starts
    Spark), so ``-m`` can leave them out like any other test."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebooks)
            if starts_spark(item.path):
                item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One Spark local[2] session for every test that asks for it (a start costs seconds)."""
    pytest.importorskip("pyspark")
    from kafkalab.spark.session import find_java_home, spark_session

    if find_java_home() is None:  # .ci/run installs Java; a laptop without it skips
        pytest.skip("Spark needs Java: apt-get install openjdk-17-jre-headless")
    session = spark_session("local[2]", app_name="kafkalab tests", driver_memory="2g")
    yield session
    session.stop()
