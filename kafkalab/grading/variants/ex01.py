"""Exercise 1 (start here): each learner's fetches to predict and scenario to write."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkalab.grading.checks import Feedback
from kafkalab.grading.variants.base import QuestionVariants, register

# ---- predict_fetches: a few produces and fetches on 3 or 4 brokers ------------------------------

# (brokers, the followers' fetches in order, how many fetches come before m2 is produced; the
# code also runs m1 alone, m2_after None, which no version uses: Lesson 1 shows that run)
_FETCHES = {
    3: (
        (2, 3, 2),
        (3, 2, 3),
        (2, 2, 3, 3),
        (3, 3, 2, 2, 3),
        (3, 2, 2, 3, 2),
        (2, 3, 3, 2, 3, 2),
        (2, 3, 2, 3, 3, 2),
    ),
    4: (
        (2, 3, 4, 2, 3),
        (4, 3, 2, 4, 3, 2),
        (4, 4, 3, 2, 3, 2),
        (2, 2, 3, 4, 4, 3, 2),
        (3, 4, 2, 2, 3, 4, 4),
    ),
}


def _fetch_steps(p: Mapping[str, Any]) -> list[str]:
    """The run as the lines of a cell (the same calls :func:`_fetch_cluster` makes)."""
    lines = [f"c = Cluster(brokers={p['brokers']})   # broker 1 leads; acks=all", 'c.produce("m1")']
    for i, follower in enumerate(p["fetches"]):
        if p["m2_after"] == i:
            lines.append('c.produce("m2")')
        lines.append(f"c.fetch({follower})")
    if p["m2_after"] == len(p["fetches"]):
        lines.append('c.produce("m2")')
    return lines


def _fetch_cluster(p: Mapping[str, Any]) -> Any:
    from kafkalab import Cluster

    c = Cluster(brokers=p["brokers"])
    c.produce("m1")
    for i, follower in enumerate(p["fetches"]):
        if p["m2_after"] == i:
            c.produce("m2")
        c.fetch(follower)
    if p["m2_after"] == len(p["fetches"]):
        c.produce("m2")
    return c


def _predict_fetches_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    c = _fetch_cluster(p)
    return {"acked_after": list(c.report().acked), "leo_after": dict(c.state()["leo"])}


register(
    QuestionVariants(
        "01-start-here",
        "predict_fetches",
        tuple(
            {"brokers": n, "fetches": fetches, "m2_after": m2_after}
            for n, runs in _FETCHES.items()
            for fetches in runs
            for m2_after in dict.fromkeys((1, 3, len(fetches) - 1))
        ),
        lambda p: "\n".join(_fetch_steps(p)),
        _predict_fetches_answers,
    )
)


# ---- first_scenario: the learner's cluster size, record and lagging follower -------------------


def _first_scenario_show(p: Mapping[str, Any]) -> str:
    n, value, lagging = p["brokers"], p["value"], p["lagging"]
    lines = [
        f"Your cluster: {n} brokers, broker 1 leads (leader: 1). The producer writes one",
        f"record, {value!r}, with acks=all. At the end the producer has seen {value!r}",
        "acknowledged, and every replica holds it.",
    ]
    if lagging is None:
        lines.append(f"Every replica knows {value!r} is committed: it holds it below its own HW.")
    else:
        others = [b for b in range(1, n + 1) if b != lagging]
        lines += [
            f"Brokers {others} know {value!r} is committed (it is below their own HW);",
            f"follower {lagging} holds it but does not know yet (its HW is not above its offset).",
        ]
    return "\n".join(lines)


def _knows(view: Any, value: str) -> bool:
    return value in view.values and view.values.index(value) < view.hw


def check_first_scenario(text: Any, p: Mapping[str, Any]) -> Any:
    """Run the learner's scenario YAML and check it reaches the situation ``p`` asks for;
    returns the parsed scenario and the finished cluster, or raises :class:`Feedback`."""
    from kafkalab.grading.scenario_checks import run_scenario_text

    s, c = run_scenario_text(text)
    n, value, lagging = p["brokers"], p["value"], p["lagging"]
    views = c.replicas_view()
    produced = c.trace.of_kind("produce")
    wants = [
        (f"the cluster has {n} brokers", len(c.broker_ids) == n),
        ("broker 1 leads", c.leader == 1),
        (
            f"the producer writes {value!r} alone, with acks=all",
            bool(produced)
            and all(e.data.get("acks") == -1 for e in produced)
            and set(c.report().acked) | set(c.report().errors) <= {value},
        ),
        (f"the producer saw {value!r} acknowledged", value in c.report().acked),
        (f"every replica holds {value!r}", all(value in v.values for v in views.values())),
    ]
    for b, v in sorted(views.items()):
        if b == lagging:
            wants.append(
                (
                    f"follower {b} does not know yet that {value!r} is committed",
                    not _knows(v, value),
                )
            )
        else:
            wants.append((f"broker {b} knows {value!r} is committed", _knows(v, value)))
    if not all(ok for _, ok in wants):
        lines = [f"Your scenario ran {len(s.steps)} step(s). What was asked:"]
        lines += [f"  [{'x' if ok else ' '}] {what}" for what, ok in wants]
        lines.append("What happened:")
        lines.append(f"  leader {c.leader}, ISR {sorted(c.isr)}, acknowledged {c.report().acked}")
        lines += [f"  broker {b} log: {v.values}, LEO {v.leo}, HW {v.hw}" for b, v in views.items()]
        raise Feedback("\n".join(lines))
    return s, c


register(
    QuestionVariants(
        "01-start-here",
        "first_scenario",
        tuple(
            {"brokers": n, "value": value, "lagging": lagging}
            for n in (3, 4, 5)
            for lagging in (None, *range(2, n + 1))
            for value in ("m1", "order-7", "hello")
        ),
        _first_scenario_show,
    )
)
