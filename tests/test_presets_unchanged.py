"""Every preset holds exactly the settings it held before the presets were derived from the
declared fixes (kafkalab.fixes): tests/data/presets.json is the record, key for key. A switch
added since may add its own key to the presets; it may not change a recorded one."""

from __future__ import annotations

import json
from pathlib import Path

from kafkalab.config import PRESETS

RECORD = Path(__file__).resolve().parent / "data" / "presets.json"


def test_presets_are_the_recorded_ones() -> None:
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))
    known = {key for settings in recorded.values() for key in settings}
    assert list(PRESETS) == list(recorded)
    for name, settings in recorded.items():
        kept = {k: v for k, v in PRESETS[name].items() if k in known}
        assert kept == settings, f"preset {name!r} changed"
