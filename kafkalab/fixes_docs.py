"""docs/sources.md's switch and preset tables, the switch history cells of its defaults table,
and docs/glossary.md's switch table, generated from the declared fixes (kafkalab.fixes), between
marker comments. ``python -m kafkalab.fixes_docs --write`` rewrites them; without ``--write`` it
names the files that differ (tests/test_fixes_docs.py fails then)."""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

from kafkalab.config import Config
from kafkalab.fixes import FIXES, PRESET_NAMES, PRESET_RELEASES, SETTING_STEPS, Fix, preset_steps

_BY_SWITCH = {fix.switch: fix for fix in FIXES}
COMMAND = "python -m kafkalab.fixes_docs --write"


ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "docs" / "sources.md"
GLOSSARY = ROOT / "docs" / "glossary.md"


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _evidence(fix: Fix, preset: str, value: bool) -> str:
    if preset in fix.evidence:
        return fix.evidence[preset]
    if preset == fix.off:
        return _change(fix.removed_ticket, fix.removed_commit, fix.removed_release)
    if preset == PRESET_NAMES[0] and value != fix.value_in(fix.on):
        return f"{_label(fix)} from {fix.release}"
    return _change(fix.ticket, fix.commit, fix.release)


def _label(fix: Fix) -> str:
    """The fix's JIRA, or its commit when it has none."""
    return fix.commit if fix.ticket == "-" else fix.ticket


def _change(ticket: str | None, commit: str | None, release: str | None) -> str:
    named = "" if ticket in (None, "-") else f"{ticket} "
    return f"{named}{commit} ({release})"


def presets_table() -> str:
    """docs/sources.md's presets table: one row per setting a preset changes."""
    releases = dict(PRESET_RELEASES)
    settings = {(p, s): e for p, s, _, e in SETTING_STEPS}
    lines = ["| preset | release | setting | value | evidence |", "|---|---|---|---|---|"]
    for preset, step in preset_steps():
        if not step:
            lines.append(f"| {preset} | {releases[preset]} | - | - | - |")
        for name, value in step.items():
            fix = _BY_SWITCH.get(name)
            evidence = settings[(preset, name)] if fix is None else _evidence(fix, preset, value)
            lines.append(
                f"| {preset} | {releases[preset]} | `{name}` | {_cell(value)} | {evidence} |"
            )
    return "\n".join(lines)


def _history(fix: Fix) -> str:
    if fix.history:
        return fix.history
    if fix.off:
        return (
            f"kafkalab: {fix.kip or fix.ticket} {fix.release}; removed by {fix.removed_ticket} "
            f"in {fix.removed_release}"
        )
    return f"kafkalab: {fix.kip or _label(fix)}, {fix.release}"


def switches_table() -> str:
    """docs/sources.md's switches table: every fix, its default, where it came from and what
    it needs."""
    lines = [
        "| switch | default | Kafka release | JIRA/KIP | commit | presets with it | needs "
        "| excludes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fix in FIXES:
        tickets = [t for t in (fix.kip, fix.ticket) if t and t != "-"]
        release, commit = fix.release, fix.commit
        last = PRESET_NAMES[PRESET_NAMES.index(fix.off) - 1] if fix.off else None
        presets = f"{fix.on} on" if last is None else f"{fix.on} to {last}"
        presets = f"{fix.on} only" if last == fix.on else presets
        if fix.off:
            release += f"; removed in {fix.removed_release}"
            if fix.removed_ticket not in (None, "-"):
                tickets.append(f"removed by {fix.removed_ticket}")
            commit += f"; {fix.removed_commit}"
        ticket = ", ".join(tickets) or "-"
        needs = ", ".join(f"`{n}`" for n in fix.needs) or "-"
        excludes = ", ".join(f"`{n}`" for n in fix.excludes) or "-"
        lines.append(
            f"| `{fix.switch}` | {fix.default} | {release} | {ticket} | {commit} | {presets} "
            f"| {needs} | {excludes} |"
        )
    return "\n".join(lines)


def defaults_rows() -> dict[str, str]:
    """The defaults table's history cell of each switch."""
    return {fix.switch: _history(fix) for fix in FIXES}


def glossary_table() -> str:
    """docs/glossary.md's switch table."""
    lines = ["| Term | 中文 | Meaning |", "|---|---|---|"]
    lines += [f"| `{fix.switch}` | {fix.zh} | {fix.meaning} |" for fix in FIXES]
    return "\n".join(lines)


def _markers(name: str) -> tuple[str, str]:
    return (
        f"<!-- generated: {name} ({COMMAND}) -->",
        f"<!-- end generated: {name} -->",
    )


def _replace(text: str, name: str, body: str) -> str:
    begin, end = _markers(name)
    pattern = re.compile(re.escape(begin) + r"\n(?:.*?\n)?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ValueError(f"the markers of {name!r} are missing")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text, count=1)


def _defaults(text: str) -> str:
    """The defaults table in Config's field order, each switch's row generated (a new switch
    gets its row where its field is), the other settings' rows as written."""
    head, sep, rest = text.partition("## Defaults of settings")
    table, sep2, tail = rest.partition("## Presets")
    row = re.compile(r"^\| `(\w+)` \| [^|]+? \| .* \|$", re.M)
    written = {m.group(1): m.group(0) for m in row.finditer(table)}
    if not written:
        return text
    histories = defaults_rows()
    defaults = Config()
    lines = []
    for name in (f.name for f in fields(Config)):
        if name in histories:
            lines.append(f"| `{name}` | {getattr(defaults, name)} | {histories[name]} |")
        elif name in written:
            lines.append(written[name])
    first, last = row.search(table), list(row.finditer(table))[-1]
    assert first is not None
    table = table[: first.start()] + "\n".join(lines) + table[last.end() :]
    return head + sep + table + sep2 + tail


def generated() -> dict[Path, str]:
    """Each generated file's text as it should be."""
    sources = SOURCES.read_text(encoding="utf-8")
    sources = _replace(sources, "switches", switches_table())
    sources = _replace(sources, "presets", presets_table())
    sources = _defaults(sources)
    glossary = _replace(GLOSSARY.read_text(encoding="utf-8"), "switches", glossary_table())
    return {SOURCES: sources, GLOSSARY: glossary}


def stale() -> list[Path]:
    """The generated files whose committed text differs from the declaration."""
    return [path for path, text in generated().items() if path.read_text("utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafkalab.fixes_docs",
        description="Write (or check) the switch and preset tables of docs/sources.md and "
        "docs/glossary.md from kafkalab.fixes.",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the tables in place")
    args = parser.parse_args(argv)
    if args.write:
        for path, text in generated().items():
            path.write_text(text, encoding="utf-8")
        return 0
    old = stale()
    for path in old:
        print(f"{path.relative_to(ROOT)} differs: run {COMMAND}")
    return 1 if old else 0


if __name__ == "__main__":
    sys.exit(main())
