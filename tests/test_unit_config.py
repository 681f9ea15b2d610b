"""Unit tests of settings: keys, values, validation and the version presets."""

from __future__ import annotations

import dataclasses

import pytest

from kafkalab import Cluster, ConfigError, KafkalabError
from kafkalab.config import PRESETS, Config, make_config, normalize_key

# ---- presets -------------------------------------------------------------------------------


def test_preset_0_8_is_the_pre_0_9_replication():
    c = make_config({"preset": "0.8"})
    assert c.preset == "0.8"
    assert c.replica_lag_max_messages == 4000
    assert c.unclean_leader_election_enable is True
    assert c.leader_epochs is False
    assert c.kip279 is False and c.kip320 is False
    assert c.broker_epoch is False
    assert c.hw_freeze_under_min_isr is False
    assert c.replica_lag_time_max_ms == 10000


def test_preset_0_9_drops_the_lag_max_messages_rule():
    assert make_config({"preset": "0.9"}).replica_lag_max_messages is None


def test_preset_0_11_turns_on_leader_epochs_and_off_unclean_election():
    c = make_config({"preset": "0.11"})
    assert c.leader_epochs is True
    assert c.unclean_leader_election_enable is False
    assert c.kip279 is False


def test_preset_2_0_adds_kip279():
    c = make_config({"preset": "2.0"})
    assert (c.leader_epochs, c.kip279, c.kip320) == (True, True, False)


def test_preset_2_1_adds_kip320():
    c = make_config({"preset": "2.1"})
    assert (c.kip279, c.kip320, c.broker_epoch) == (True, True, False)


def test_preset_2_2_adds_broker_epochs():
    c = make_config({"preset": "2.2"})
    assert c.broker_epoch is True
    assert c.replica_lag_time_max_ms == 10000  # still the pre-2.5 default


def test_preset_2_5_raises_the_lag_time_and_zookeeper_timeouts():
    c = make_config({"preset": "2.5"})
    assert c.replica_lag_time_max_ms == 30000
    assert c.zookeeper_session_timeout_ms == 18000


def test_preset_3_7_freezes_the_hw_under_min_isr():
    assert make_config({"preset": "3.0"}).hw_freeze_under_min_isr is False
    assert make_config({"preset": "3.7"}).hw_freeze_under_min_isr is True


def test_presets_before_3_1_back_off_after_the_last_controlled_shutdown_attempt():
    """d30b4e51513 (3.1.0): the broker sleeps the retry back-off only if another attempt
    follows; the 0.8 to 3.0 presets keep the older sleep after every failed attempt."""
    for preset in ("0.8", "2.5", "3.0"):
        assert make_config({"preset": preset}).controlled_shutdown_backoff_after_last_attempt
    for preset in ("3.6", "3.7", "4.0"):
        c = make_config({"preset": preset})
        assert c.controlled_shutdown_backoff_after_last_attempt is False
    c = make_config({"preset": "0.8"})
    assert (c.controlled_shutdown_max_retries, c.controlled_shutdown_retry_backoff_ms) == (3, 5000)


@pytest.mark.parametrize(
    "key",
    [
        "controlled.shutdown.max.retries",
        "controlled.shutdown.retry.backoff.ms",
        "controller.quorum.election.backoff.max.ms",
    ],
)
def test_counts_and_back_offs_may_be_zero_but_not_negative(key: str):
    assert getattr(make_config({key: 0}), normalize_key(key)) == 0
    with pytest.raises(ConfigError, match=rf"{key.replace('.', '[.]')}=-1 is not allowed"):
        make_config({key: -1})


def test_the_defaults_are_the_newest_preset():
    """The defaults are the 3.7 preset, plus what changed since in KRaft mode alone (unclean
    election, KAFKA-12670, 3.9); the 4.0 preset also turns KRaft and transaction version 2 on."""
    default = Config()
    for key, value in PRESETS["3.7"].items():
        expected = True if key == "kraft_unclean_election" else value
        assert getattr(default, key) == expected, key
    assert PRESETS["4.0"]["kraft_unclean_election"] is True


@pytest.mark.parametrize("preset", ["0.8", "2.5", "2.7"])
def test_kraft_is_refused_with_a_preset_before_2_8(preset: str):
    with pytest.raises(ConfigError, match=rf"controller_mode='kraft' .* preset '{preset}'.*2[.]8"):
        make_config({"preset": preset, "controller_mode": "kraft"})
    assert make_config({"preset": "3.0", "controller_mode": "kraft"}).controller_mode == "kraft"


@pytest.mark.parametrize("preset", ["3.0", "3.6", "3.7"])
def test_eligible_leader_replicas_are_refused_with_a_preset_before_4_0(preset: str):
    settings = {
        "preset": preset,
        "controller_mode": "kraft",
        "eligible_leader_replicas_enable": True,
    }
    with pytest.raises(ConfigError, match=rf"eligible.leader.replicas.enable=true .* '{preset}'"):
        make_config(settings)
    assert make_config({**settings, "preset": "4.0"}).eligible_leader_replicas_enable
    assert make_config({**settings, "preset": None}).eligible_leader_replicas_enable


@pytest.mark.parametrize(
    ("preset", "unclean", "check_quorum", "balancing"),
    [
        ("3.0", False, False, False),
        ("3.3", False, False, True),
        ("3.6", False, False, True),
        ("3.7", False, True, True),
        ("4.0", True, True, True),
    ],
)
def test_the_kraft_switches_follow_the_releases(
    preset: str, unclean: bool, check_quorum: bool, balancing: bool
):
    c = make_config({"preset": preset})
    assert (c.kraft_unclean_election, c.kraft_check_quorum, c.kraft_leader_balancing) == (
        unclean,
        check_quorum,
        balancing,
    )


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_makes_a_valid_config(name: str):
    assert make_config({"preset": name}).preset == name


def test_an_unknown_preset_names_the_allowed_ones():
    with pytest.raises(ConfigError) as err:
        make_config({"preset": "0.7"})
    assert "'0.7'" in str(err.value)
    assert "0.8" in str(err.value) and "3.7" in str(err.value)


def test_settings_override_a_preset_whatever_their_order():
    c = make_config({"unclean.leader.election.enable": False, "preset": "0.8"})
    assert c.unclean_leader_election_enable is False
    assert c.replica_lag_max_messages == 4000  # the rest of the preset stays

    c = make_config({"preset": "0.8"}, leader_epochs=True, replica_lag_max_messages=None)
    assert c.leader_epochs is True
    assert c.replica_lag_max_messages is None
    assert c.kip279 is False


def test_replace_keeps_the_preset_and_changes_one_setting():
    c = make_config({"preset": "0.11"}).replace(min_insync_replicas=2)
    assert c.min_insync_replicas == 2
    assert c.leader_epochs is True and c.kip279 is False
    with pytest.raises(ConfigError):
        c.replace(min_insync_replicas=0)


# ---- keys ----------------------------------------------------------------------------------


def test_dotted_and_underscore_keys_are_the_same_setting():
    dotted = make_config({"min.insync.replicas": 2, "replica.lag.time.max.ms": 5000})
    underscore = make_config({"min_insync_replicas": 2, "replica_lag_time_max_ms": 5000})
    keyword = make_config(min_insync_replicas=2, replica_lag_time_max_ms=5000)
    assert dotted == underscore == keyword
    assert dotted.min_insync_replicas == 2
    assert normalize_key("unclean.leader.election.enable") == "unclean_leader_election_enable"
    assert normalize_key("hw-freeze-under-min-isr") == "hw_freeze_under_min_isr"


def test_an_unknown_key_is_an_error_with_a_suggestion():
    with pytest.raises(ConfigError) as err:
        make_config({"min.insync.replica": 2})
    message = str(err.value)
    assert "unknown config key 'min.insync.replica'" in message
    assert "did you mean 'min.insync.replicas'" in message


def test_an_unknown_key_far_from_any_gets_no_suggestion():
    with pytest.raises(ConfigError) as err:
        make_config({"zzz": 1})
    assert "did you mean" not in str(err.value)


def test_config_errors_are_kafkalab_errors_and_value_errors():
    with pytest.raises(KafkalabError):
        make_config({"nope": 1})
    with pytest.raises(ValueError):
        make_config({"nope": 1})


def test_a_config_is_frozen():
    c = make_config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.min_insync_replicas = 3  # type: ignore[misc]


# ---- values --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "stored", "wire"),
    [
        ("all", "all", -1),
        ("-1", "all", -1),
        (-1, "all", -1),
        ("1", "1", 1),
        (0, "0", 0),
        ("ALL", "all", -1),
    ],
)
def test_acks_values(given, stored: str, wire: int):
    c = make_config({"acks": given})
    assert (c.acks, c.acks_value) == (stored, wire)


@pytest.mark.parametrize("bad", ["2", "none", 3, "", "-2"])
def test_bad_acks_is_an_error_naming_the_allowed_values(bad):
    with pytest.raises(ConfigError) as err:
        make_config({"acks": bad})
    assert f"acks={bad!r}" in str(err.value)
    assert "0, 1 or all" in str(err.value)


@pytest.mark.parametrize(
    "key",
    [
        "request.timeout.ms",
        "replica.lag.time.max.ms",
        "replica.high.watermark.checkpoint.interval.ms",
        "zookeeper.session.timeout.ms",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    ],
)
@pytest.mark.parametrize("value", [-5, 0])
def test_times_must_be_positive(key: str, value: int):
    with pytest.raises(ConfigError) as err:
        make_config({key: value})
    assert f"{key}={value}" in str(err.value)
    assert "> 0" in str(err.value)


def test_replica_fetch_backoff_may_be_0_but_not_negative():
    """0 is the 0.8 fetcher, which had no back-off (KAFKA-1461 added it in 0.9)."""
    assert make_config({"replica.fetch.backoff.ms": 0}).replica_fetch_backoff_ms == 0
    assert make_config({"preset": "0.8"}).replica_fetch_backoff_ms == 0
    assert make_config({"preset": "0.9"}).replica_fetch_backoff_ms == 1000
    with pytest.raises(ConfigError, match=r"replica\.fetch\.backoff\.ms=-1 .*>= 0 ms"):
        make_config({"replica.fetch.backoff.ms": -1})


def test_min_insync_replicas_must_be_at_least_one():
    with pytest.raises(ConfigError, match=r"min\.insync\.replicas=0"):
        make_config({"min.insync.replicas": 0})


def test_lag_max_messages_must_be_positive_or_null():
    with pytest.raises(ConfigError, match=r"replica\.lag\.max\.messages=0"):
        make_config({"replica.lag.max.messages": 0})
    assert make_config({"replica.lag.max.messages": None}).replica_lag_max_messages is None


def test_numbers_and_booleans_may_be_given_as_text():
    c = make_config({"min.insync.replicas": "2", "kip320": "false", "kip279": "True"})
    assert c.min_insync_replicas == 2
    assert c.kip320 is False
    assert c.kip279 is True


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("leader_epochs", "yes"),
        ("leader_epochs", 1),
        ("min.insync.replicas", "two"),
        ("min.insync.replicas", 1.5),
        ("min.insync.replicas", True),
    ],
)
def test_values_of_the_wrong_kind_are_errors_naming_the_key(key: str, value):
    with pytest.raises(ConfigError) as err:
        make_config({key: value})
    assert f"{key.replace('_', '.')}={value!r}" in str(err.value)


def test_min_insync_replicas_above_the_replication_factor_is_accepted():
    # Kafka accepts the setting (tests/test_isr_history.py shows what it does before and
    # since 3.7).
    assert Cluster(brokers=2, config={"min.insync.replicas": 3}).config.min_insync_replicas == 3
    assert make_config({"replication.factor": 2, "min.insync.replicas": 3}).min_insync_replicas == 3


def test_min_insync_replicas_equal_to_the_replication_factor_is_fine():
    c = Cluster(brokers=2, config={"min.insync.replicas": 2})
    assert c.config.min_insync_replicas == 2


def test_a_replication_factor_above_the_broker_count_is_an_error():
    with pytest.raises(ConfigError, match=r"replication\.factor=4 .* with 3 brokers"):
        Cluster(brokers=3, config={"replication.factor": 4})


def test_an_unquoted_yaml_preset_reads_as_its_release() -> None:
    # "preset: 0.10" without quotes is the number 0.1 to YAML; it still means Kafka 0.10.
    assert make_config({"preset": 0.10}).preset == "0.10"
    assert make_config({"preset": 2.0}).preset == "2.0"
