"""The order make test hands its scopes to the workers (tests/conftest.py): longest first."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import conftest
from tests.conftest import ROOT, longest_first, scope_of


@dataclass
class _Item:
    nodeid: str


def _ids(items: list[_Item]) -> list[str]:
    return [i.nodeid for i in items]


def test_scopes_go_longest_first_and_keep_their_tests_in_order() -> None:
    items = [
        _Item("tests/test_a.py::test_1"),
        _Item("notebooks/06b.ipynb::Cell 0"),
        _Item("tests/test_a.py::test_2[x]"),
        _Item("tests/test_b.py::Suite::test_3"),
        _Item("notebooks/06b.ipynb::Cell 1"),
        _Item("tests/test_c.py::test_4"),
    ]
    seconds = {"notebooks/06b.ipynb": 250.0, "tests/test_a.py": 3.0, "tests/test_c.py": 3.0}
    ordered = _ids(longest_first(items, seconds))  # type: ignore[arg-type]
    assert ordered == [
        "notebooks/06b.ipynb::Cell 0",
        "notebooks/06b.ipynb::Cell 1",
        "tests/test_a.py::test_1",  # a tie: collection order
        "tests/test_a.py::test_2[x]",
        "tests/test_c.py::test_4",
        "tests/test_b.py::Suite::test_3",  # not measured: 0.1 s per test
    ]
    assert sorted(ordered) == sorted(_ids(items))  # nothing lost, nothing repeated


def test_a_scope_is_what_xdist_keeps_on_one_worker() -> None:
    assert scope_of("tests/test_a.py::test_2[x]") == "tests/test_a.py"
    assert scope_of("tests/test_b.py::Suite::test_3") == "tests/test_b.py::Suite"
    assert scope_of("notebooks/06b.ipynb::Cell 11") == "notebooks/06b.ipynb"


def test_a_missing_or_broken_seconds_file_only_changes_the_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for content in (None, "not json", "[1, 2]"):
        path = tmp_path / "seconds.json"
        if content is not None:
            path.write_text(content)
        monkeypatch.setattr(conftest, "SCOPE_SECONDS", path)
        assert conftest._recorded_seconds() == {}


def test_the_stored_seconds_are_measured_figures() -> None:
    seconds = json.loads(conftest.SCOPE_SECONDS.read_text())
    assert seconds["notebooks/06b-epoch-gaps-and-search.ipynb"] > 60  # the searches
    assert all(isinstance(v, (int, float)) and v >= 0 for v in seconds.values())
    assert any((ROOT / scope).is_file() for scope in seconds)
