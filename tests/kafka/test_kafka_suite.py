"""Every scenario translated from Kafka's own tests (tests/kafka/**/*.yaml) replays with the
expectations Kafka's assertions state: one case per file and per variant.

A variant named after a quorum mode (``zk`` or ``kraft``) is the same Kafka test run in the
other mode (Kafka's tests are parameterized by quorum), so it runs the file's ``check`` steps
too and expects the base expectations, updated by the variant's own. Any other variant is an
ordinary kafkalab variant: an old behaviour switched on, with its own expectations.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab import scenarios

HERE = Path(__file__).parent
QUORUM_VARIANTS = ("zk", "kraft")
FILES = sorted(HERE.rglob("*.yaml"))


def _cases() -> list[tuple[Path, str | None]]:
    cases: list[tuple[Path, str | None]] = []
    for path in FILES:
        cases.append((path, None))
        cases += [(path, v.name) for v in scenarios.load(str(path)).variants]
    return cases


CASES = _cases()


def _id(path: Path, variant: str | None) -> str:
    return f"{path.relative_to(HERE).with_suffix('')}:{variant or 'base'}"


@pytest.mark.parametrize(("path", "variant"), CASES, ids=[_id(p, v) for p, v in CASES])
def test_kafka_assertions_hold(path: Path, variant: str | None) -> None:
    s = scenarios.load(str(path))
    v = next((x for x in s.variants if x.name == variant), None)
    if v is not None and v.name in QUORUM_VARIANTS:
        cluster, mismatches = scenarios.replay(s, v.settings, checks=True)
        mismatches += scenarios.check_expect(cluster, {**s.expect, **v.expect})
    else:
        mismatches = scenarios.run(s, variant=v).mismatches
    assert not mismatches, f"{_id(path, variant)}:\n" + "\n".join(mismatches)


def test_every_translated_file_names_its_kafka_source() -> None:
    for path in FILES:
        head = path.read_text(encoding="utf-8").split("\nname:", 1)[0]
        for word in ("Kafka test:", "method:", "file:", "commit:"):
            assert word in head, f"{path.name}: its header comment has no {word!r} line"
