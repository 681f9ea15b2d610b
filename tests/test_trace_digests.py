"""Every catalog scenario, each of its variants, each benchmark seed and a timed run per controller
mode give the trace they gave when ``tests/data/trace_digests.json`` was recorded, byte for byte.

A refactoring must keep them; a fidelity fix that changes a behaviour re-records them
(``python tools/trace_digests.py --write``) and names the changed ones in its commit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import trace_digests  # noqa: E402

REFERENCE = json.loads(trace_digests.REFERENCE.read_text())


@pytest.fixture(scope="module")
def now() -> dict[str, str]:
    return trace_digests.all_digests()


def test_the_same_runs_are_recorded(now: dict[str, str]) -> None:
    assert sorted(now) == sorted(REFERENCE)


@pytest.mark.parametrize("key", sorted(REFERENCE))
def test_trace_is_unchanged(now: dict[str, str], key: str) -> None:
    assert now.get(key) == REFERENCE[key], (
        f"{key}: the trace changed; replay with `python tools/trace_digests.py --diff`; "
        "if a fidelity fix meant it, re-record with --write and say why"
    )
