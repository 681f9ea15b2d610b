"""Running an exercise source's worked solution cell outside its notebook, in any version: the
variant tests check each worked solution against the replay in every version of its question."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import nbformat


class Mine:
    """Stands in for the notebook's ``mine``: hands the worked solution one version."""

    def __init__(self, p: Mapping[str, Any]) -> None:
        self.p = dict(p)

    def params(self, question: str) -> dict[str, Any]:
        return dict(self.p)


@cache
def solution_cell(source: Path, marker: str) -> str:
    """The one code cell of ``source`` that contains ``marker``."""
    notebook = nbformat.read(source, as_version=4)
    cells = [c.source for c in notebook.cells if c.cell_type == "code" and marker in c.source]
    assert len(cells) == 1, marker
    return cells[0]


def run_solution(source: Path, marker: str, p: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run the worked solution cell holding ``marker`` in version ``p``; its names."""
    namespace: dict[str, Any] = {"mine": Mine(p or {})}
    exec(solution_cell(source, marker), namespace)  # noqa: S102
    return namespace
