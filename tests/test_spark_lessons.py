"""The Spark lessons and exercises: Spark inside Jupyter stays out of the cells, the exercises'
answers are checked against DuckDB with feedback that explains, and grading a Spark exercise
fits the grader's time limits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.spark import session

ROOT = Path(__file__).resolve().parent.parent


class _KernelStream:
    """What ipykernel puts in sys.stdout/sys.stderr: fds 1 and 2 are pipes into the cell, and
    ``_original_stdstream_copy`` is the terminal the kernel started with."""

    def __init__(self, fd: int) -> None:
        self._original_stdstream_copy = fd


def test_inside_jupyter_the_jvm_writes_to_the_terminal_not_the_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = tmp_path / "terminal"
    fd = os.open(terminal, os.O_WRONLY | os.O_CREAT)
    monkeypatch.setattr(sys, "stderr", _KernelStream(fd))
    child = [sys.executable, "-c", "import os; os.write(2, b'WARNING: from the JVM')"]
    with session._jvm_output_to_terminal():
        subprocess.run(child, check=True)
    os.close(fd)
    assert terminal.read_text() == "WARNING: from the JVM"
    cell = subprocess.run(child, check=True, stderr=subprocess.PIPE)  # fd 2 is back
    assert cell.stderr == b"WARNING: from the JVM"


def test_outside_jupyter_nothing_is_redirected(tmp_path: Path) -> None:
    before = os.fstat(2)
    with session._jvm_output_to_terminal():
        during = os.fstat(2)
    assert (before.st_ino, before.st_dev) == (during.st_ino, during.st_dev)
