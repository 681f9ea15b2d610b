"""The declared fixes (kafkalab/fixes.py) as Config sees them: a fix switched off turns off the
fixes built on it unless they are given too, a combination Kafka never shipped is refused
naming the preset that has the behaviour, and every preset, catalog scenario (and variant) and
the explorer's example configs still build."""

from __future__ import annotations

import pytest

from kafkalab import scenarios
from kafkalab.config import PRESETS, Config, implied_switches, make_config
from kafkalab.errors import ConfigError
from kafkalab.explore import EXAMPLES
from kafkalab.fixes import FIXES
from kafkalab.widgets.explorer import ExplorerModel
from kafkalab.widgets.tradeoff import TradeoffSettings

EPOCH_FIXES = (
    "leader_epoch_on_election",
    "kip279",
    "kip320",
    "truncate_after_missed_epoch",
    "truncation_on_fetch",
    "diverging_fetch_skips_hw",
)


def test_needs_name_declared_fixes_and_no_fix_needs_itself() -> None:
    switches = {fix.switch for fix in FIXES}
    for fix in FIXES:
        assert set(fix.needs) | set(fix.excludes) <= switches - {fix.switch}, fix.switch


def test_a_fix_comes_in_a_preset_at_or_after_what_it_needs() -> None:
    """What a fix builds on is on in every preset that has the fix."""
    by_switch = {fix.switch: fix for fix in FIXES}
    for fix in FIXES:
        for preset in PRESETS:
            if fix.value_in(preset):
                for need in fix.needs:
                    assert by_switch[need].value_in(preset), f"{fix.switch} in {preset}: {need}"
                for other in fix.excludes:
                    assert not by_switch[other].value_in(preset), f"{fix.switch} in {preset}"


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_builds_and_implies_nothing(preset: str) -> None:
    assert make_config({"preset": preset}).preset == preset
    assert implied_switches({"preset": preset}) == []


def test_leader_epochs_off_on_the_defaults_is_the_0_10_truncation() -> None:
    """KIP-101's lesson on today's defaults: without leader epochs nothing of what was built on
    them (KIP-279, KIP-320, truncation through Fetch) can stay, so the follower truncates to its
    HW as 0.10 did."""
    c = make_config({"leader_epochs": False})
    old = make_config({"preset": "0.10"})
    assert [getattr(c, s) for s in EPOCH_FIXES] == [getattr(old, s) for s in EPOCH_FIXES]
    assert c.min_insync_replicas == 1 and c.acks == "all", "the other settings stay"
    (line,) = implied_switches({"leader_epochs": False})
    assert line.startswith("leader_epochs=false also turns off leader_epoch_on_election, kip279")
    assert "KIP-101, 0.11.0.0" in line


def test_kip279_off_keeps_leader_epochs_and_turns_off_what_builds_on_it() -> None:
    c = make_config({"kip279": False})
    assert c.leader_epochs and not c.kip320 and not c.truncation_on_fetch
    assert c.truncate_after_missed_epoch, "KAFKA-7164 does not need KIP-279"


def test_a_combination_given_explicitly_that_kafka_never_shipped_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        make_config({"leader_epochs": False, "truncation_on_fetch": True})
    text = str(err.value)
    assert text.startswith("leader_epochs=false with truncation_on_fetch=true")
    assert "preset '0.10'" in text and "KIP-101, 0.11.0.0" in text


def test_a_fix_turned_on_where_the_preset_lacks_what_it_needs_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"kip279=true needs leader_epochs=true .*preset '0.10'"):
        make_config({"preset": "0.10", "kip279": True})
    assert make_config({"preset": "0.10", "leader_epochs": True, "kip279": True}).kip279


def test_a_removed_behaviour_turned_on_turns_off_what_replaced_it() -> None:
    c = make_config({"reelected_leader_forgets_leos": True})
    assert not c.make_leader_resets_caught_up
    with pytest.raises(ConfigError, match="Kafka never had both"):
        make_config({"reelected_leader_forgets_leos": True, "make_leader_resets_caught_up": True})
    newer = make_config({"preset": "0.8", "make_leader_resets_caught_up": True})
    assert not newer.reelected_leader_forgets_leos


def test_replace_implies_as_make_config_does_and_config_refuses_a_bad_combination() -> None:
    assert not Config().replace(leader_epochs=False).truncation_on_fetch
    with pytest.raises(ConfigError):
        Config(leader_epochs=False)


def test_every_catalog_scenario_and_variant_builds() -> None:
    for name, s in scenarios.catalog().items():
        make_config(s.config)
        for variant in s.variants:
            assert make_config({**s.config, **variant.settings}), f"{name} {variant.name}"


def test_the_explorers_examples_build() -> None:
    for settings in EXAMPLES.values():
        make_config(settings)


def test_the_playground_shows_what_a_switch_turned_off() -> None:
    """The trade-off explorer's leader-epochs box and a custom explorer config name the fixes
    that went with the switch (the widgets print these lines under their status)."""
    assert TradeoffSettings().implied == []
    assert "kip320" in TradeoffSettings(leader_epochs=False).implied[0]
    assert ExplorerModel(config={"kip320": False}).implied[0].startswith("kip320=false")
