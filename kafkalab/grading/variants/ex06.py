"""Exercise 6 (the leader epoch): each learner's epoch caches, quick leader changes, release and
divergence."""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from typing import Any

from kafkalab.grading.checks import Case, Feedback
from kafkalab.grading.variants.base import QuestionVariants, register

ASSIGNMENT = "06-leader-epoch"
Cache = tuple[tuple[int, int], ...]

# ---- epoch caches drawn from a seed ----------------------------------------------------------


def random_cache(rng: random.Random, first_epoch: int | None = None) -> tuple[Cache, int]:
    """A leader epoch cache as Kafka keeps one (epochs rising, with gaps where a leader wrote
    nothing; start offsets strictly rising) and a LEO at or after its last start offset."""
    epoch = rng.choice((0, 0, 1, 2, 3)) if first_epoch is None else first_epoch
    start = rng.choice((0, 0, 0, 4, 10))
    entries = [(epoch, start)]
    for _ in range(rng.randint(1, 3)):
        epoch += 1 + rng.choice((0, 0, 1, 2))
        start += rng.randint(1, 4)
        entries.append((epoch, start))
    return tuple(entries), start + rng.randint(0, 3)


def asked_epochs(epochs: Cache) -> list[int]:
    """Every epoch worth asking about: from one before the first entry to one past the last."""
    return list(range(max(epochs[0][0] - 1, 0), epochs[-1][0] + 2))


def _end_offset_show(p: Mapping[str, Any]) -> str:
    return (
        f"Your leader's epoch cache: {list(p['epochs'])}, its LEO: {p['leo']}.\n"
        f"Followers ask it about epochs {asked_epochs(p['epochs'])}."
    )


def _end_offset_grid() -> tuple[dict[str, Any], ...]:
    grid: list[dict[str, Any]] = []
    seed = 0
    while len(grid) < 40:
        epochs, leo = random_cache(random.Random(f"06/end_offset_for/{seed}"))
        lessons = {((0, 0), (1, 2)), ((0, 0), (2, 4))}  # the lessons' caches
        if epochs not in lessons and all(p["epochs"] != epochs for p in grid):
            grid.append({"epochs": epochs, "leo": leo, "seed": seed})
        seed += 1
    return tuple(grid)


def end_offset_cases(p: Mapping[str, Any], *, hidden: bool) -> list[Case]:
    """Kafka's answers on the learner's cache (public) or on three more caches drawn from the
    learner's seed and the empty cache (hidden)."""
    from kafkalab.protocol.rules import end_offset_for

    if hidden:
        rng = random.Random(f"06/end_offset_for/hidden/{p['seed']}")
        # the last one starts after epoch 0: someone asks about an epoch older than all
        caches = [random_cache(rng), random_cache(rng), random_cache(rng, rng.choice((1, 2, 3)))]
    else:
        caches = [(p["epochs"], p["leo"])]
    cases = []
    for epochs, leo in caches:
        for epoch in asked_epochs(epochs):
            cache = [(int(e[0]), int(e[1])) for e in epochs]
            args = (cache, leo, epoch)
            cases.append(
                Case(args, end_offset_for(cache, leo, epoch), _end_offset_why(epochs, epoch))
            )
    if hidden:
        cases.append(Case(([], 0, 0), (-1, -1), "an empty cache knows nothing"))
    return cases


def _end_offset_why(epochs: Cache, epoch: int) -> str:
    known = [e for e, _ in epochs]
    if epoch > known[-1]:
        return "the leader knows no epoch that new"
    if epoch == known[-1]:
        return "the latest epoch is still being written: where do its records end now?"
    if epoch < known[0]:
        return "older than every entry: where must that epoch's records have ended?"
    if epoch not in known:
        return "the leader wrote nothing in that epoch: which epoch does it answer about?"
    return "an older epoch ends where the next one in the cache starts"


register(QuestionVariants(ASSIGNMENT, "end_offset_for", _end_offset_grid(), _end_offset_show))

# ---- the follower's truncation point ---------------------------------------------------------


def random_pair(rng: random.Random) -> dict[str, Any]:
    """A leader's and a follower's epoch caches with a common past, and the follower's LEO and
    HW; the leader answers the follower's latest epoch (with KIP-279: epoch and offset)."""
    from kafkalab.protocol.rules import end_offset_for

    common, _ = random_cache(rng, first_epoch=0)
    keep = rng.randint(1, len(common))
    shared = common[:keep]
    tails = []
    for _ in range(2):
        epoch, start = shared[-1]
        tail = []
        for _ in range(rng.randint(0, 2)):
            epoch += 1 + rng.choice((0, 1, 2))
            start += rng.randint(1, 3)
            tail.append((epoch, start))
        tails.append(tuple(tail))
    follower = shared + tails[1]
    # the current leader leads the newest epoch, after everything the follower saw
    newest = max(tails[0][-1][0] if tails[0] else 0, follower[-1][0]) + 1
    leader_tail = (*tails[0], (newest, (tails[0] or shared)[-1][1] + rng.randint(0, 2)))
    if leader_tail[-1][1] == (tails[0] or shared)[-1][1]:  # no records yet in the newest epoch
        leader_tail = leader_tail[:-1] + ((newest, leader_tail[-1][1] + 1),)
    leader = shared + leader_tail
    leader_leo = leader[-1][1] + rng.randint(0, 3)
    leo = follower[-1][1] + rng.randint(0, 3)
    hw = rng.randint(shared[0][1], min(leo, leader_leo))
    asked = follower[-1][0]
    answer = end_offset_for(list(leader), leader_leo, asked)
    if rng.random() < 0.25:  # a leader before KIP-279 answers the offset only
        answer = (-1, answer[1])
    return {
        "leader_epoch": answer[0],
        "leader_end_offset": answer[1],
        "epochs": follower,
        "leo": leo,
        "hw": hw,
    }


def _truncation_grid() -> tuple[dict[str, Any], ...]:
    grid: list[dict[str, Any]] = []
    seed = 0
    while len(grid) < 40:
        p = random_pair(random.Random(f"06/truncation_offset/{seed}"))
        seed += 1
        if p["leader_end_offset"] == -1 or p in grid:
            continue
        grid.append({**p, "seed": seed})
    return tuple(grid)


def _truncation_show(p: Mapping[str, Any]) -> str:
    return (
        f"Your follower: epoch cache {list(p['epochs'])}, LEO {p['leo']}, HW {p['hw']}.\n"
        f"It asked where its latest epoch ends; the leader answered "
        f"(leader_epoch={p['leader_epoch']}, leader_end_offset={p['leader_end_offset']})."
    )


def truncation_cases(p: Mapping[str, Any], *, hidden: bool) -> list[Case]:
    """Kafka's truncation point in the learner's situation (public), or in eight more drawn
    from the learner's seed (hidden)."""
    from kafkalab.protocol.rules import truncation_offset

    if hidden:
        rng = random.Random(f"06/truncation_offset/hidden/{p['seed']}")
        situations: list[Mapping[str, Any]] = []
        while len(situations) < 8 or not any(_repeats(s) for s in situations):
            s = random_pair(rng)
            if len(situations) < 8 or _repeats(s):
                situations.append(s)
        situations.append({**situations[0], "leader_end_offset": -1, "leader_epoch": -1})
    else:
        situations = [p]
    cases = []
    for situation in situations:
        args = (
            situation["leader_epoch"],
            situation["leader_end_offset"],
            list(situation["epochs"]),
            situation["leo"],
            situation["hw"],
        )
        cases.append(Case(args, truncation_offset(*args), _truncation_why(situation)))
    return cases


def _repeats(s: Mapping[str, Any]) -> bool:
    """The follower never had the epoch the leader names (KIP-279's repeated question)."""
    return s["leader_epoch"] != -1 and s["leader_epoch"] not in [e for e, _ in s["epochs"]]


def _truncation_why(s: Mapping[str, Any]) -> str:
    if s["leader_end_offset"] == -1:
        return "the leader knows nothing of that epoch: what is left to trust?"
    if s["leader_epoch"] == -1:
        return "an answer without an epoch (before KIP-279) can only be trusted as it is"
    if _repeats(s):
        return "this follower never had the epoch the leader names: is it done after one cut?"
    return "both know the named epoch: its records end at the earlier of the two ends"


register(QuestionVariants(ASSIGNMENT, "truncation_offset", _truncation_grid(), _truncation_show))

# ---- quick leader changes: predicted, replayed -----------------------------------------------

RELEASES = {"0.11": "Kafka 0.11 to 1.1 (leader epochs, KIP-101)", "2.0": "Kafka 2.0 (KIP-279)"}


def _values(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(1, n + 1)]


def _quick_steps(p: Mapping[str, Any]) -> list[str]:
    return [
        f'c = Cluster(brokers=2, leader=1, config={{"preset": "{p["release"]}", '
        '"unclean.leader.election.enable": True, "acks": 1})',
        f"# {RELEASES[p['release']]}",
        'c.produce("a"); c.fetch(2); c.fetch(2)  # both hold a',
        f"for v in {_values('x', p['x'])}:",
        "    c.produce(v)  # only broker 1 gets these",
        "c.crash(1); c.advance(6000)  # broker 2 leads epoch 1",
        f"for v in {_values('y', p['y'])}:",
        "    c.produce(v)",
        "c.restart(1); c.crash(2); c.advance(6000)  # broker 1 leads epoch 2 (unclean)",
        f"for v in {_values('z', p['z'])}:",
        "    c.produce(v)",
        "c.restart(2)",
        "for _ in range(3):",
        "    c.fetch(2)",
    ]


def _quick_cluster(p: Mapping[str, Any]) -> Any:
    from kafkalab import Cluster

    c = Cluster(
        brokers=2,
        leader=1,
        config={"preset": p["release"], "unclean.leader.election.enable": True, "acks": 1},
    )
    c.produce("a")
    c.fetch(2)
    c.fetch(2)
    for v in _values("x", p["x"]):
        c.produce(v)
    c.crash(1)
    c.advance(6000)
    for v in _values("y", p["y"]):
        c.produce(v)
    c.restart(1)
    c.crash(2)
    c.advance(6000)
    for v in _values("z", p["z"]):
        c.produce(v)
    c.restart(2)
    for _ in range(3):
        c.fetch(2)
    return c


def _quick_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    c = _quick_cluster(p)
    return {"follower_log": c.logs()[2], "divergent": c.report().divergent}


register(
    QuestionVariants(
        ASSIGNMENT,
        "predict_truncation",
        tuple(
            {"release": release, "x": x, "y": y, "z": z}
            for release, x, y, z in itertools.product(("0.11", "2.0"), (1, 2, 3), (1, 2, 3), (1, 2))
            if (x, y, z) != (1, 1, 1)  # kip279-divergence and its variant
        ),
        lambda p: "\n".join(_quick_steps(p)),
        _quick_answers,
    )
)

# ---- a divergence scenario with the learner's release, broker and loss ------------------------

DIVERGENCE_RELEASES = {
    "0.10": 'Kafka 0.10 (config {preset: "0.10", leader_epochs: false}), with no unclean '
    "leader election",
    "0.11": 'Kafka 0.11 to 1.1 (config {preset: "0.11"}: leader epochs without KIP-279)',
}
FIXES = {"0.10": {"leader_epochs": True}, "0.11": {"kip279": True}}
# the catalog's kip101-divergence and kip279-divergence: (release, diverged broker, lost)
_CATALOG_CASES = {("0.10", 1, 1), ("0.11", 2, 1)}


def _divergence_show(p: Mapping[str, Any]) -> str:
    return (
        f"Release: {DIVERGENCE_RELEASES[p['release']]}.\n"
        f"At the end broker {p['diverged']} is a follower whose log differs from its leader's at "
        "an offset both hold.\n"
        f"Exactly {p['lost']} acknowledged record(s) are missing from the leader's log at the end."
    )


def _differs_from_leader(c: Any, broker: int) -> bool:
    if c.leader is None or c.leader == broker:
        return False
    logs = c.logs()
    mine, theirs = logs.get(broker, []), logs.get(c.leader, [])
    return any(a != b for a, b in zip(mine, theirs, strict=False))


def _release_want(release: str) -> Any:
    from kafkalab.grading.scenario_checks import Want

    if release == "0.10":
        return Want(
            "leader epochs are off (leader_epochs: false)", lambda c: not c.config.leader_epochs
        )
    return Want(
        'leader epochs are on without KIP-279 (preset "0.11")',
        lambda c: c.config.leader_epochs and not c.config.kip279,
    )


def divergence_wants(p: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the learner's divergence scenario must make happen."""
    from kafkalab.grading.scenario_checks import Want

    wants = [_release_want(p["release"])]
    if p["release"] == "0.10":
        wants.append(
            Want("no unclean leader election happens", lambda c: c.report().unclean_elections == 0)
        )
    wants += [
        Want(
            f"at the end broker {p['diverged']} is a follower whose log differs from the "
            "leader's at an offset both hold",
            lambda c: _differs_from_leader(c, p["diverged"]),
        ),
        Want(
            f"exactly {p['lost']} acknowledged record(s) are missing from the leader's log",
            lambda c: len(c.report().lost_acked) == p["lost"],
        ),
    ]
    return tuple(wants)


def check_divergence(text: Any, p: Mapping[str, Any]) -> Any:
    """Run a learner's divergence scenario and check it against their version; returns the
    finished cluster, raises :class:`Feedback`."""
    from kafkalab.grading.scenario_checks import check_scenario_wants

    return check_scenario_wants(text, divergence_wants(p), checks=False)


def check_divergence_fixed(text: Any, p: Mapping[str, Any]) -> None:
    """The same steps with the release's fix switched on must leave the logs in agreement."""
    from kafkalab.grading.scenario_checks import run_scenario_text

    fix = FIXES[p["release"]]
    _, cluster = run_scenario_text(text, overrides=fix, checks=False)
    if cluster.report().divergent:
        raise Feedback(f"with {fix} your steps still diverge: {cluster.logs()}")


register(
    QuestionVariants(
        ASSIGNMENT,
        "divergence_scenario",
        tuple(
            {"release": release, "diverged": diverged, "lost": lost}
            for release, diverged, lost in itertools.product(("0.10", "0.11"), (1, 2), (1, 2, 3))
            if (release, diverged, lost) not in _CATALOG_CASES
        ),
        _divergence_show,
    )
)
