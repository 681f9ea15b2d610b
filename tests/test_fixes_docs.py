"""docs/sources.md's switch and preset tables (and the switch cells of its defaults table) and
docs/glossary.md's switch table are generated from the declared fixes (kafkalab/fixes.py): the
committed text must be what ``python -m kafkalab.fixes_docs --write`` writes."""

from __future__ import annotations

from kafkalab import fixes_docs
from kafkalab.config import PRESETS, Config
from kafkalab.fixes import FIXES, PRESET_NAMES


def test_generated_tables_are_committed() -> None:
    stale = [str(path.relative_to(fixes_docs.ROOT)) for path in fixes_docs.stale()]
    assert not stale, f"{stale} differ from kafkalab/fixes.py: run {fixes_docs.COMMAND}"


def test_every_fix_is_a_boolean_config_field_with_its_declared_default() -> None:
    defaults = Config()
    for fix in FIXES:
        assert isinstance(getattr(defaults, fix.switch, None), bool), fix.switch
        assert getattr(defaults, fix.switch) == fix.default, (
            f"{fix.switch}: Config's default is not the declared value in preset "
            f"{PRESET_NAMES[-1]!r}"
        )


def test_every_fix_has_its_value_in_every_preset() -> None:
    for fix in FIXES:
        for preset in PRESETS:
            value = PRESETS[preset].get(fix.switch, fix.default)
            assert value == fix.value_in(preset), f"{fix.switch} in preset {preset}"


def test_presets_are_the_declared_releases() -> None:
    assert list(PRESETS) == list(PRESET_NAMES)
