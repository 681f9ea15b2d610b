"""docs/sources.md traces every rule, setting and preset to Kafka's source; these tests keep it
complete and keep its presets table equal to kafkalab.config.PRESETS."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from kafkalab.config import PRESETS, Config, make_config
from kafkalab.protocol import rules

DOC = Path(__file__).resolve().parent.parent / "docs" / "sources.md"

# Presets whose Kafka values (the table) differ from config.py today. Each fails until config.py
# follows the table; the entry names the finding in the audit that explains it. Remove an entry
# once its preset agrees (and write "agrees" in the table's last column).
CONFIG_FIX_PENDING = {
    "0.8": "controlled_shutdown_enable, auto_leader_rebalance_enable, acks, request_timeout_ms,"
    " hw_read_before_fetch_update",
    "0.9": "acks=1 (the Java producer's default until 3.0)",
    "0.10": "hw_includes_caught_up_followers, isr_check_half_lag: 0.10.2.0 (KAFKA-4485)",
    "0.10.2": "missing preset: KAFKA-4485 shipped in 0.10.2.0",
    "0.11": "acks=1 (the Java producer's default until 3.0)",
    "1.0": "acks=1 (the Java producer's default until 3.0)",
    "2.0": "acks=1 (the Java producer's default until 3.0)",
    "2.1": "acks=1 (the Java producer's default until 3.0)",
    "2.2": "acks=1 (the Java producer's default until 3.0)",
    "2.4": "acks=1 (the Java producer's default until 3.0)",
    "2.5": "acks=1 (the Java producer's default until 3.0)",
    "3.0": "enable_idempotence: 3.0.0 applied the new default only when set explicitly",
    "3.2": "missing preset: KAFKA-13598 made idempotence the applied default (3.2.0)",
}


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _backticked(text: str) -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", text))


def _rule_functions() -> list[str]:
    return [name for name in rules.__all__ if inspect.isfunction(getattr(rules, name))]


def _section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"docs/sources.md has no '## {title}' section"
    return match.group(1)


def _parse_value(text: str) -> Any:
    text = text.strip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "none"):
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def _preset_rows() -> list[tuple[str, str, Any, str]]:
    """(preset, field, Kafka's value, config.py column) for each row of the presets table."""
    rows = []
    for line in _section(_doc(), "Presets").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("preset", "---") or set(cells[0]) <= {"-"}:
            continue
        preset, field, value, _evidence, status = cells
        rows.append((preset, field.strip("`"), _parse_value(value), status))
    return rows


def _expected_presets() -> dict[str, dict[str, Any]]:
    """Every preset of the table: its changes on top of the presets before it, in order."""
    expected: dict[str, dict[str, Any]] = {}
    acc: dict[str, Any] = {}
    for preset, field, value, _status in _preset_rows():
        if preset not in expected:
            expected[preset] = dict(acc)
        expected[preset][field] = value
        acc = dict(expected[preset])
    return expected


def _as_config_value(field: str, value: Any) -> Any:
    if field == "acks":
        return str(value)
    return value


def test_every_rule_function_is_traced() -> None:
    missing = [name for name in _rule_functions() if name not in _backticked(_doc())]
    assert not missing, f"docs/sources.md does not trace these rules.py functions: {missing}"


def test_every_config_field_is_traced() -> None:
    names = [f.name for f in dataclasses.fields(Config)]
    missing = [name for name in names if name not in _backticked(_doc())]
    assert not missing, f"docs/sources.md does not trace these Config fields: {missing}"


def test_presets_table_names_real_fields() -> None:
    fields = {f.name for f in dataclasses.fields(Config)}
    unknown = sorted({field for _, field, _, _ in _preset_rows() if field not in fields})
    assert _preset_rows(), "the presets table of docs/sources.md has no rows"
    assert not unknown, f"the presets table names fields Config does not have: {unknown}"


def test_presets_table_covers_every_preset() -> None:
    """A preset of config.py that the table does not list must change nothing: it inherits the
    preset before it (in config.py's order) unchanged."""
    expected = _expected_presets()
    names = list(PRESETS)
    for i, name in enumerate(names):
        if name in expected or i == 0:
            continue
        previous = PRESETS[names[i - 1]]
        changed = sorted(set(PRESETS[name].items()) - set(previous.items()))
        note = CONFIG_FIX_PENDING.get(name, "")
        hint = f" (known: {note})" if note else ""
        assert PRESETS[name] == previous, (
            f"preset {name!r} changes {changed} but docs/sources.md's presets table has no row "
            f"for it{hint}"
        )


def _preset_params() -> list[Any]:
    names = list(dict.fromkeys([*_expected_presets(), *PRESETS]))
    params = []
    for name in names:
        pending = CONFIG_FIX_PENDING.get(name)
        test_id = f"{name}[config-fix-pending]" if pending else name
        params.append(pytest.param(name, id=test_id))
    return params


@pytest.mark.parametrize("preset", _preset_params())
def test_preset_matches_kafka(preset: str) -> None:
    """make_config(preset=...) gives Kafka's value for every setting the table lists up to that
    preset, and the Config default for every other one. Presets in CONFIG_FIX_PENDING fail until
    config.py follows the table."""
    expected_all = _expected_presets()
    # A preset missing from the table inherits the table's last preset before it.
    known = [p for p in PRESETS if p in expected_all]
    if preset in expected_all:
        expected = expected_all[preset]
    else:
        before = [p for p in known if list(PRESETS).index(p) < list(PRESETS).index(preset)]
        expected = expected_all[before[-1]] if before else {}
    note = CONFIG_FIX_PENDING.get(preset, "")
    hint = f" (known: {note}; see the audit findings)" if note else ""
    assert preset in PRESETS, f"config.py has no preset {preset!r}{hint}"
    config = make_config(preset=preset)
    defaults = Config()
    wrong = []
    for f in dataclasses.fields(Config):
        if f.name == "preset":
            continue
        want = (
            _as_config_value(f.name, expected[f.name])
            if f.name in expected
            else getattr(defaults, f.name)
        )
        got = getattr(config, f.name)
        if got != want:
            wrong.append(f"{f.name}: config.py {got!r}, Kafka {want!r}")
    assert not wrong, f"preset {preset!r} differs from Kafka{hint}: " + "; ".join(wrong)
