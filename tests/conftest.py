"""What the test modules share: the repository's root, running a notebook, one Spark session for
the whole run, and the markers behind the quick loop.

    pytest tests -m "not notebooks and not spark"   # make test-quick

``notebooks`` marks every test that executes a notebook in a Jupyter kernel (each nbval cell,
the papermill runs, the browser test); ``spark`` marks every test that starts a Spark JVM (a
notebook that calls ``spark_session`` is marked both). ``make test`` runs every test;
``--hostile all`` (``make test-hostile``) grades every assignment's hostile hand-ins, not only
08-idempotence's.
"""

from __future__ import annotations

import json
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
    Spark), so ``-m`` can leave them out like any other test. Then the scopes are put in the
    order ``make test`` hands them to its workers: longest first (see :func:`longest_first`)."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebooks)
            if starts_spark(item.path):
                item.add_marker(pytest.mark.spark)
    items[:] = longest_first(items, _recorded_seconds())


# ---- the order of the scopes ---------------------------------------------------------------------
# make test runs with pytest-xdist's --dist loadscope --no-loadscope-reorder: each scope (a test
# module, a notebook) goes whole to the next free worker, in the order of the collection. Handing
# out the longest scopes first (the longest-processing-time rule) keeps a long one (a lesson that
# searches for minutes) from starting last while the other worker idles. The seconds per scope are
# measured, not guessed: `make test PYTEST_ARGS=--record-scope-seconds` writes them. Only the
# run's length depends on them, never a result.

SCOPE_SECONDS = ROOT / "tests" / "scope_seconds.json"
UNMEASURED_S = 0.1  # per test of a scope the file does not list yet


def scope_of(nodeid: str) -> str:
    """The scope pytest-xdist's loadscope keeps on one worker: the node id without its last
    part (``tests/test_x.py``, ``notebooks/06b-....ipynb``)."""
    return nodeid.rsplit("::", 1)[0]


def longest_first(items: list[pytest.Item], seconds: dict[str, float]) -> list[pytest.Item]:
    """``items`` grouped by scope, the scopes in order of their seconds, longest first (ties and
    unmeasured scopes by their tests' count, then in collection order); each scope's tests keep
    their order."""
    scopes: dict[str, list[pytest.Item]] = {}
    for item in items:
        scopes.setdefault(scope_of(item.nodeid), []).append(item)

    def cost(entry: tuple[int, str]) -> tuple[float, int]:
        index, scope = entry
        return -seconds.get(scope, UNMEASURED_S * len(scopes[scope])), index

    ordered = sorted(enumerate(scopes), key=cost)
    return [item for _, scope in ordered for item in scopes[scope]]


def _recorded_seconds() -> dict[str, float]:
    try:
        data = json.loads(SCOPE_SECONDS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--hostile",
        default="08-idempotence",
        help="the assignments whose hostile hand-ins tests/test_grading_hostile.py grades: all, "
        "or names separated by commas (default 08-idempotence; all takes an hour)",
    )
    parser.addoption(
        "--record-scope-seconds",
        action="store_true",
        help=f"write each scope's seconds (setup, call, teardown) into {SCOPE_SECONDS.name}",
    )


_measured: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    scope = scope_of(report.nodeid)
    _measured[scope] = _measured.get(scope, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not config.getoption("--record-scope-seconds") or hasattr(config, "workerinput"):
        return  # only the controller (or a run without workers) writes
    seconds = {**_recorded_seconds(), **{k: round(v, 1) for k, v in _measured.items()}}
    # a scope whose file is gone (renamed, removed) is dropped
    seconds = {k: v for k, v in seconds.items() if (ROOT / k.split("::")[0]).is_file()}
    text = json.dumps(dict(sorted(seconds.items())), indent=1) + "\n"
    SCOPE_SECONDS.write_text(text, encoding="utf-8")


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
