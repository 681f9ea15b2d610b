"""A counterexample as a scenario file: the steps the search found and what they led to.

The file is an ordinary scenario (``kafkalab scenario run FILE`` replays it): its ``expect``
block holds the state the replay reached, so the replay exits 0 exactly when the simulator still
behaves as it did during the search.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import yaml

from kafkalab.errors import KafkalabError

__all__ = ["EXPECT", "counterexample", "scenario_text"]

# What the expect block of a counterexample records.
EXPECT = (
    "leader",
    "leader_epoch",
    "isr",
    "running",
    "hw",
    "logs",
    "acked",
    "lost_acked",
    "divergent",
)


def scenario_text(
    name: str,
    description: str,
    brokers: int,
    settings: Mapping[str, Any],
    steps: list[dict[str, Any]],
    expect: Mapping[str, Any],
    restart_replaces_session: bool = False,
) -> str:
    doc: dict[str, Any] = {"name": name, "description": description, "brokers": brokers}
    if restart_replaces_session:
        doc["restart_replaces_session"] = True
    if settings:
        doc["config"] = dict(settings)
    doc["steps"] = steps
    doc["expect"] = dict(expect)
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)


def counterexample(
    job: Any,
    steps: list[dict[str, Any]],
    invariant: str,
    message: str,
    settings: Mapping[str, Any],
    broken: Callable[[Any], tuple[str, str] | None],
) -> tuple[dict[str, Any], str]:
    """Replay ``steps`` from scratch through the scenario parser; the replay must break the
    same invariant (``broken(cluster)`` names the first that fails) and meet the expect block
    written from it. Returns the replay's report (``scenario run --json``) and the file's text."""
    from kafkalab import scenarios

    described = ", ".join(f"{k}={v}" for k, v in settings.items()) or "the default config"
    name = f"explore-{invariant.replace('_', '-')}"
    description = (
        f"The shortest schedule kafkalab explore found that breaks {invariant} with "
        f"{described} and {job.brokers} brokers: {message}."
    )
    draft = scenarios.parse(
        scenario_text(
            name, description, job.brokers, settings, steps, {}, job.restart_replaces_session
        )
    )
    cluster, _ = scenarios.replay(draft, rules=job.rules)
    again = broken(cluster)
    if again is None or again[0] != invariant:
        raise KafkalabError(
            f"the schedule that broke {invariant} did not break it when replayed from scratch "
            f"(got {again!r}): the simulator is not deterministic; steps: {steps}"
        )
    state = cluster.state()
    expect = {k: state[k] for k in EXPECT}
    text = scenario_text(
        name, description, job.brokers, settings, steps, expect, job.restart_replaces_session
    )
    result = scenarios.run(scenarios.parse(text), rules=job.rules)
    if not result.ok:
        raise KafkalabError(
            f"the counterexample does not meet its own expect block: {result.mismatches}"
        )
    return result.as_json(), text
