"""docs/sources.md traces every rule, setting and preset to Kafka's source. These tests hold it to
the code: every name it gives for kafkalab's code exists, every rule function and Config field
has a row, the defaults table gives each field's default, and the presets table is exactly
kafkalab.config.PRESETS. Adding a switch, changing a default or a preset, or renaming a traced
method without updating the document fails here."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from typing import Any

import pytest

import kafkalab.protocol
import kafkalab.sim
from kafkalab.config import PRESETS, Config
from kafkalab.protocol import rules

DOC = Path(__file__).resolve().parent.parent / "docs" / "sources.md"
FIELDS = {f.name: f for f in dataclasses.fields(Config)}
NOTHING = "-"  # a presets-table row for a preset that changes nothing


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _sections() -> dict[str, str]:
    parts = re.split(r"^## (.+)\n", _doc(), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _table_rows(text: str, header: str) -> list[list[str]]:
    """The rows of every table in ``text`` whose first header cell is ``header``."""
    rows: list[list[str]] = []
    in_table = False
    for line in text.splitlines():
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == header:
            in_table = True
        elif in_table and not set(cells[0]) <= {"-"}:
            rows.append(cells)
        elif in_table and cells[0] == NOTHING:  # a "-" row of the presets table
            rows.append(cells)
    return rows


def _name(cell: str) -> str:
    match = re.fullmatch(r"`([^`]+)`", cell)
    assert match, f"docs/sources.md: {cell!r} should be one backticked name"
    return match.group(1)


def _rule_rows() -> list[list[str]]:
    rows = _table_rows(_doc(), "rule")
    assert rows, "docs/sources.md has no rule tables"
    return rows


def _rule_names() -> set[str]:
    return {_name(row[0]) for row in _rule_rows()}


def _code_names() -> dict[str, Any]:
    """Every module-level name of kafkalab.protocol and kafkalab.sim."""
    names: dict[str, Any] = {}
    for package in (kafkalab.protocol, kafkalab.sim):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for name, value in vars(module).items():
                names.setdefault(name, value)
    return names


def _parse_value(field: str, text: str) -> Any:
    """A value as the table writes it, in the type of the Config field."""
    text = text.strip()
    if text.lower() in ("null", "none"):
        return None
    kind = str(FIELDS[field].type)
    if "bool" in kind:
        assert text.lower() in ("true", "false"), f"{field}: {text!r} is not true or false"
        return text.lower() == "true"
    if "int" in kind:
        return int(text)
    return text


def _preset_table() -> list[tuple[str, str, str | None, Any]]:
    """(preset, release, field or None, value) for each row of the presets table."""
    rows = []
    for cells in _table_rows(_sections()["Presets"], "preset"):
        assert len(cells) == 5, f"malformed presets row: {cells}"
        preset, release, setting, value, _evidence = cells
        if setting == NOTHING:
            rows.append((preset, release, None, None))
        else:
            field = _name(setting)
            assert field in FIELDS, f"the presets table names {field!r}, not a Config field"
            rows.append((preset, release, field, _parse_value(field, value)))
    return rows


def _preset_changes(name: str) -> dict[str, Any]:
    """What PRESETS[name] changes relative to the preset before it (all of it for the first)."""
    names = list(PRESETS)
    i = names.index(name)
    previous = PRESETS[names[i - 1]] if i else {}
    missing = object()
    return {k: v for k, v in PRESETS[name].items() if previous.get(k, missing) != v}


def test_every_rule_function_has_a_row() -> None:
    functions = [n for n in rules.__all__ if inspect.isfunction(getattr(rules, n))]
    missing = sorted(set(functions) - _rule_names())
    assert not missing, f"docs/sources.md has no rule row for these rules.py functions: {missing}"


def test_every_config_field_has_a_row() -> None:
    traced = _rule_names() | {_name(row[0]) for row in _defaults_rows()}
    missing = [name for name in FIELDS if name not in traced]
    assert not missing, f"docs/sources.md has no row for these Config fields: {missing}"


def test_every_rule_row_names_real_code() -> None:
    """A first column names a Config field, or a function, class, constant or Class.method of
    kafkalab.protocol or kafkalab.sim."""
    code = _code_names()
    unknown = []
    for name in sorted(_rule_names()):
        owner, _, attribute = name.partition(".")
        if name in FIELDS:
            continue
        if attribute:
            found = inspect.isclass(code.get(owner)) and hasattr(code[owner], attribute)
        else:
            found = name in code
        if not found:
            unknown.append(name)
    assert not unknown, f"docs/sources.md names code that does not exist: {unknown}"


def _defaults_rows() -> list[list[str]]:
    return _table_rows(_sections()["Defaults of settings"], "field")


def test_defaults_table_is_config() -> None:
    """One row per Config field, in the dataclass's order, with its default."""
    rows = _defaults_rows()
    names = [_name(row[0]) for row in rows]
    assert names == list(FIELDS), (
        "the defaults table of docs/sources.md must list the Config fields in order; "
        f"missing {sorted(set(FIELDS) - set(names))}, extra {sorted(set(names) - set(FIELDS))}"
    )
    defaults = Config()
    wrong = [
        f"{name}: table {row[1]!r}, Config {getattr(defaults, name)!r}"
        for name, row in zip(names, rows, strict=True)
        if _parse_value(name, row[1]) != getattr(defaults, name)
    ]
    assert not wrong, "the defaults table differs from Config: " + "; ".join(wrong)


def test_presets_table_lists_every_preset_in_order() -> None:
    table = list(dict.fromkeys(preset for preset, _, _, _ in _preset_table()))
    assert table == list(PRESETS), f"presets table {table}, kafkalab.config.PRESETS {list(PRESETS)}"


def test_preset_release_is_the_last_of_its_line() -> None:
    """The convention: preset "X.Y" stands for a release of the X.Y line (its last one)."""
    for preset, release, _, _ in _preset_table():
        assert re.fullmatch(rf"{re.escape(preset)}\.(\d+|x)(\.\d+)?", release), (
            f"preset {preset}: release {release!r} is not of the {preset} line"
        )


@pytest.mark.parametrize("preset", list(PRESETS))
def test_preset_rows_are_exactly_what_it_changes(preset: str) -> None:
    """The table's rows for a preset are the settings PRESETS changes there, with the same
    values: nothing missing, nothing extra, and a "-" row when it changes nothing."""
    rows = [(field, value) for name, _, field, value in _preset_table() if name == preset]
    assert rows, f"the presets table has no row for preset {preset!r}"
    changes = _preset_changes(preset)
    if not changes:
        assert rows == [(None, None)], f"preset {preset!r} changes nothing: use one '-' row"
        return
    table = dict(rows)
    assert len(table) == len(rows) and None not in table, f"preset {preset!r}: repeated rows"
    assert table == changes, (
        f"preset {preset!r}: docs/sources.md says {table}, kafkalab.config.PRESETS changes "
        f"{changes}"
    )


def test_presets_accumulate_to_presets() -> None:
    """Applying the table's rows in order gives every preset of PRESETS exactly."""
    built: dict[str, dict[str, Any]] = {}
    acc: dict[str, Any] = {}
    for preset, _, field, value in _preset_table():
        if field is not None:
            acc = {**acc, field: value}
        built[preset] = dict(acc)
    assert built == PRESETS


def test_known_differences_section_and_no_pending_markers() -> None:
    """What kafkalab does differently is listed under "Known differences", not marked in rows."""
    assert _sections().get("Known differences", "").count("\n- ") >= 1
    text = _doc()
    cells = [line for line in text.splitlines() if line.startswith("|")]
    markers = re.findall(r"\b(pending|TODO|FIXME)\b", text, re.I)
    markers += re.findall(r"\b(differs|agrees)\b", "\n".join(cells), re.I)
    assert not markers, f"docs/sources.md still has markers: {sorted(set(markers))}"
