"""The glossary (docs/glossary.md) has every term in English and Chinese: the settings, the
error codes, the transaction states, the words of SEMANTICS.md and of the exercises."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import nbformat
import pytest

from kafkalab.config import Config
from kafkalab.protocol import messages
from kafkalab.protocol.txn_states import TXN_STATES

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.md"
CJK = re.compile(r"[\u4e00-\u9fff]")

# The words the rule book (SEMANTICS.md, sections 1-9) and the lessons build on.
CORE_TERMS = (
    "LEO",
    "HW",
    "remote LEO",
    "ISR",
    "purgatory",
    "read_committed",
    "LSO",
    "caught up",
    "ISR shrink",
    "ISR expand",
    "ISR flapping",
    "under-replicated partition",
    "offline partition",
    "acks",
    "min.insync.replicas",
    "unclean leader election",
    "controller",
    "controller epoch",
    "zombie controller",
    "ZooKeeper",
    "ephemeral znode",
    "preferred leader",
    "replica assignment",
    "network partition",
    "KRaft",
    "Raft",
    "ELR",
    "fenced broker",
    "leader epoch",
    "leader epoch cache",
    "endOffsetFor",
    "OffsetsForLeaderEpoch",
    "truncation",
    "divergence",
    "KIP-101",
    "KIP-279",
    "KIP-320",
    "KIP-380",
    "KIP-966",
    "idempotent producer",
    "producer id",
    "producer epoch",
    "sequence number",
    "transaction",
    "transactional.id",
    "transaction coordinator",
    "control marker",
    "aborted transaction index",
    "hanging transaction",
    "KIP-98",
    "KIP-447",
    "KIP-890",
    "consumer group",
    "__consumer_offsets",
    "at-most-once",
    "at-least-once",
    "exactly-once",
    "preset",
    "scenario",
    "trace",
    "invariant",
)


def _rows() -> list[list[str]]:
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|") or line.startswith("|---") or line.startswith("| Term "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows.append(cells)
    return rows


ROWS = _rows()
TERMS = [r[0] for r in ROWS]
ALL_TEXT = "\n".join(" | ".join(r) for r in ROWS)


def _covered(word: str) -> bool:
    """The word names a glossary entry (its term, a backticked name in it, or a name in
    parentheses)."""
    for term in TERMS:
        names = {term, *re.findall(r"`([^`]+)`", term), *re.findall(r"\(([^)]+)\)", term)}
        names |= {n.split(" (")[0] for n in names}
        if word in names or word.lower() in {n.lower() for n in names}:
            return True
    return False


def test_every_row_has_a_term_a_chinese_name_and_a_meaning() -> None:
    assert len(ROWS) > 150
    for row in ROWS:
        assert len(row) == 3 and all(row), f"malformed row: {row}"
        assert CJK.search(row[1]), f"{row[0]}: the Chinese column has no Chinese"
        assert row[2][-1] in ".?", f"{row[0]}: the meaning is one sentence"


def test_terms_are_unique() -> None:
    duplicates = {t for t in TERMS if TERMS.count(t) > 1}
    assert not duplicates


@pytest.mark.parametrize("term", CORE_TERMS)
def test_core_term_is_defined(term: str) -> None:
    assert _covered(term), f"{term!r} is missing from docs/glossary.md"


def test_every_setting_is_defined() -> None:
    for f in dataclasses.fields(Config):
        dotted = f.name.replace("_", ".")
        assert f"`{f.name}`" in ALL_TEXT or f"`{dotted}`" in ALL_TEXT, f.name


def test_every_error_code_is_defined() -> None:
    codes = [v for k, v in vars(messages).items() if k.isupper() and v == k and k != "NONE"]
    assert len(codes) > 10
    for code in codes:
        assert _covered(code), code


def test_every_transaction_state_is_defined() -> None:
    for state in TXN_STATES:
        assert _covered(state), state


def _course_notebooks() -> list[Path]:
    return sorted([*ROOT.glob("exercises/source/*.ipynb"), *ROOT.glob("notebooks/*.ipynb")])


def test_every_setting_the_course_mentions_is_defined() -> None:
    for path in _course_notebooks():
        nb = nbformat.read(path, as_version=4)
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        for name in re.findall(r"`([a-z]+(?:\.[a-z]+){2,})`", text):
            assert f"`{name}`" in ALL_TEXT, f"{path.name} uses `{name}`, not in the glossary"


@pytest.mark.parametrize(
    "path", sorted(ROOT.glob("exercises/source/*.ipynb")), ids=lambda p: p.name
)
def test_every_exercise_links_the_glossary(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    assert any("../docs/glossary.md" in c.source for c in nb.cells if c.cell_type == "markdown")
