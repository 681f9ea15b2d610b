"""Every preset holds exactly the settings it held before the presets were derived from the
declared fixes (kafkalab.fixes): tests/data/presets.json is the record, key for key."""

from __future__ import annotations

import json
from pathlib import Path

from kafkalab.config import PRESETS

RECORD = Path(__file__).resolve().parent / "data" / "presets.json"


def test_presets_are_the_recorded_ones() -> None:
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))
    assert list(PRESETS) == list(recorded)
    for name, settings in recorded.items():
        assert PRESETS[name] == settings, f"preset {name!r} changed"
