"""The exhaustive search (kafkalab.explore): what it finds from bare configs, that its answers
are shortest and replay, that its state digest merges only states with one future, the command
line, and the same result on Spark."""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab import Rules, cli, make_config
from kafkalab.errors import ActionError, ConfigError
from kafkalab.explore import CRASH_ACTIONS as CRASHES
from kafkalab.explore import EXAMPLES, Replayer, explore, state_digest
from kafkalab.explore.digest import _HISTORY
from kafkalab.sim.expect import BROKER_MAPS

ACKS_1 = {"acks": "1"}
SAFE = EXAMPLES["safe"]


def _kinds(steps: list[dict[str, Any]]) -> list[str]:
    return [next(iter(s)) for s in steps]


def test_acks_1_loses_an_acknowledged_record_in_three_steps() -> None:
    result = explore(ACKS_1, brokers=2, depth=5, actions=("produce", "fetch", "crash", "expire"))
    v = result.violation
    assert v is not None and v.invariant == "no_acked_loss"
    # acknowledged by the leader alone, which dies; the follower that never had it takes over
    assert v.steps == [{"produce": "r1"}, {"crash": 1}, {"advance": 18000}]
    assert v.report["lost_acked"] == ["r1"] and v.report["leader"] == 2
    assert v.report["ok"] is True


def test_a_counterexample_is_minimal_the_search_one_step_shorter_finds_nothing() -> None:
    actions = ("produce", "fetch", "crash", "expire")
    found = explore(ACKS_1, brokers=2, depth=5, actions=actions).violation
    assert found is not None
    shorter = explore(ACKS_1, brokers=2, depth=len(found.steps) - 1, actions=actions)
    assert shorter.violation is None and shorter.complete
    assert shorter.depth == len(found.steps) - 1 and shorter.states > 1


def test_with_acks_all_the_same_search_finds_nothing() -> None:
    result = explore(
        {"acks": "all", "min.insync.replicas": 2},
        brokers=2,
        depth=5,
        actions=("produce", "fetch", "crash", "expire"),
    )
    assert result.violation is None and result.complete
    assert result.levels[0] == 1 and sum(result.levels) == result.states


def test_power_loss_is_in_the_default_alphabet() -> None:
    v = explore(ACKS_1, brokers=2, depth=3).violation
    assert v is not None
    assert v.steps == [{"produce": "r1"}, {"crash": {"broker": 1, "lose_unflushed": True}}]


def test_a_deliberately_broken_rule_is_caught() -> None:
    """A leader that moves its HW to its own LEO, without waiting for the ISR, acknowledges
    acks=all records no follower has: one crash loses them. Kafka's rule survives the same
    search."""

    def hw_is_my_leo(hw: int, leader_leo: int, isr: Any, remote_leos: Any) -> int:
        return max(hw, leader_leo)

    bounds = dict(brokers=2, depth=4, actions=("produce", "fetch", "crash", "expire"))
    broken = explore(SAFE, rules=Rules(leader_hw=hw_is_my_leo), **bounds)
    assert broken.violation is not None
    assert broken.violation.steps[0] == {"produce": "r1"}
    assert explore(SAFE, **bounds).violation is None


def test_bad_bounds_and_names_are_refused_with_the_allowed_values() -> None:
    with pytest.raises(ConfigError, match="depth=-1 is not allowed"):
        explore(ACKS_1, depth=-1)
    with pytest.raises(ConfigError, match="brokers=9 is not allowed: use 1..5"):
        explore(ACKS_1, brokers=9)
    with pytest.raises(ConfigError, match="choose from produce"):
        explore(ACKS_1, actions=("produce", "teleport"))
    with pytest.raises(ConfigError, match="'no_loss' is not one of kafkalab.INVARIANTS"):
        explore(ACKS_1, invariants=["no_loss"])
    with pytest.raises(ConfigError, match="acks"):
        explore({"acks": "most"})
    with pytest.raises(ConfigError, match="workers=0 is not allowed: use a whole number >= 1"):
        explore(ACKS_1, workers=0)


def test_only_the_named_invariants_are_checked() -> None:
    hw_only = explore(
        ACKS_1,
        brokers=2,
        depth=3,
        invariants=["hw_monotonic"],
        actions=("produce", "fetch", "crash", "expire"),
    )
    assert hw_only.violation is None


def test_elect_passes_time_only_while_the_controller_counts_a_crashed_broker() -> None:
    """elect is the session timeout passing while it lets the controller act: a crashed leader
    or ISR member still counted. Once the controller has acted, or when a partition is left
    without a leader (its last ISR member stays in its ISR), time does not pass."""
    from kafkalab.explore import Bounds, enabled_steps

    bounds = Bounds(brokers=2, depth=9, records=2, crashes=2)
    replayer = Replayer(make_config({"preset": "0.10"}), 2, None)
    elect = [{"advance": 6000}]
    cluster = replayer.fresh()
    assert enabled_steps(cluster, ("elect",), 0, 0, bounds) == []
    replayer.apply(cluster, {"crash": 1})
    assert enabled_steps(cluster, ("elect",), 0, 1, bounds) == elect
    assert enabled_steps(cluster, ("expire", "elect"), 0, 1, bounds) == elect  # one step
    replayer.apply(cluster, {"advance": 6000})
    assert cluster.leader == 2 and enabled_steps(cluster, ("elect",), 0, 1, bounds) == []
    replayer.apply(cluster, {"crash": 2})
    replayer.apply(cluster, {"advance": 6000})
    assert cluster.leader is None and enabled_steps(cluster, ("elect",), 0, 2, bounds) == []
    replayer.apply(cluster, {"restart": 1})  # unclean election on in 0.10: broker 1 leads
    assert cluster.leader == 1 and enabled_steps(cluster, ("elect", "sync"), 0, 2, bounds) == []
    replayer.apply(cluster, {"restart": 2})
    assert enabled_steps(cluster, ("elect", "sync"), 0, 2, bounds) == [{"sync": None}]


def test_the_summary_names_the_preset_as_the_config_read_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["explore", "--set", "preset=0.10", "--depth", "1", "--actions", "produce"]
    assert cli.main(argv) == 0
    assert "(preset=0.10)" in capsys.readouterr().out


# ---- the digest ----------------------------------------------------------------------------

SMALL = ("produce", "fetch", "fetch_lost", "crash", "restart", "flush", "expire")
# What a state shows: the committed partition, every replica's log and HW (each key of
# Cluster.state() that maps brokers), and what the producer was told.
OBSERVED = ("leader", "leader_epoch", "isr", "running", *BROKER_MAPS, "acked", "lost_acked")
OBSERVED += ("divergent", "divergence")


def _schedules(settings_: dict[str, Any], depth: int) -> dict[str, list[list[dict[str, Any]]]]:
    """Every schedule of SMALL up to ``depth`` steps on two brokers, grouped by digest."""
    from kafkalab.explore import Bounds, enabled_steps

    bounds = Bounds(brokers=2, depth=depth, records=2, crashes=1)
    replayer = Replayer(make_config(settings_), 2, None)
    groups: dict[str, list[list[dict[str, Any]]]] = {}
    level: list[tuple[list[dict[str, Any]], int, int]] = [([], 0, 0)]
    for _ in range(depth):
        nxt = []
        for steps, produced, crashes in level:
            parent = replayer.build(steps)
            for step in enabled_steps(parent, SMALL, produced, crashes, bounds):
                cluster = replayer.build(steps)
                try:
                    replayer.apply(cluster, step)
                except ActionError:
                    continue
                kind = next(iter(step))
                child = (
                    [*steps, step],
                    produced + (kind == "produce"),
                    crashes + (kind == "crash"),
                )
                key = f"{state_digest(cluster)}:{child[1]}:{child[2]}"
                groups.setdefault(key, []).append(child[0])
                nxt.append(child)
        level = nxt
    return groups


@pytest.fixture(scope="module")
def merged() -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Pairs of different schedules the digest says lead to the same state."""
    groups = _schedules(ACKS_1, 3)
    pairs = [(g[0], other) for g in groups.values() for other in g[1:]]
    assert len(pairs) > 20, "the digest merged too few schedules to test"
    return pairs


def _observe(cluster: Any) -> dict[str, Any]:
    state = cluster.state()
    return {k: state[k] for k in OBSERVED} | {"violation": cluster.monitor.first_violation()}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_states_with_equal_digests_have_equal_futures(
    merged: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]], data: st.DataObject
) -> None:
    first, second = data.draw(st.sampled_from(merged))
    replayer = Replayer(make_config(ACKS_1), 2, None)
    a, b = replayer.build(first), replayer.build(second)
    assert state_digest(a) == state_digest(b)
    steps = data.draw(
        st.lists(
            st.sampled_from(
                [
                    {"produce": "x1"},
                    {"produce": "x2"},
                    {"fetch": 2},
                    {"fetch": 1},
                    {"fetch": {"follower": 2, "response": "lost"}},
                    {"crash": 1},
                    {"crash": 2},
                    {"crash": {"broker": 1, "lose_unflushed": True}},
                    {"restart": 1},
                    {"restart": 2},
                    {"flush": 1},
                    {"flush": 2},
                    {"advance": 18000},
                    {"advance": 500},
                ]
            ),
            max_size=6,
        )
    )
    for step in steps:
        outcomes = []
        for cluster in (a, b):
            try:
                replayer.apply(cluster, step)
                outcomes.append("ok")
            except ActionError as err:
                outcomes.append(str(err))
        assert outcomes[0] == outcomes[1], (first, second, step)
        assert _observe(a) == _observe(b), (first, second, steps)
        assert state_digest(a) == state_digest(b)


def test_the_digest_tells_different_states_apart() -> None:
    replayer = Replayer(make_config(ACKS_1), 2, None)
    seen: dict[str, dict[str, Any]] = {}
    for steps in itertools.product(
        [{"produce": "r1"}, {"fetch": 2}, {"crash": 2}, {"advance": 18000}], repeat=3
    ):
        cluster = replayer.fresh()
        try:
            for step in steps:
                replayer.apply(cluster, step)
        except ActionError:
            continue
        digest, observed = state_digest(cluster), _observe(cluster)
        assert seen.setdefault(digest, observed) == observed, steps
    assert len(seen) > 5
    assert "trace" in _HISTORY  # the past is left out, so equal states can merge


def test_the_digest_is_the_same_in_another_process(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "from kafkalab import Cluster; from kafkalab.explore import state_digest; "
        "c = Cluster(brokers=2); c.produce('r1'); c.fetch(2); print(state_digest(c))"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(runs) == 1


# ---- the command ---------------------------------------------------------------------------


def test_the_command_writes_a_counterexample_that_scenario_run_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "found.yaml"
    code = cli.main(
        [
            "explore",
            "--set",
            "acks=1",
            "--depth",
            "4",
            "--actions",
            "produce,fetch,crash,expire",
            "--json",
            "--out",
            str(out),
        ]
    )
    assert code == 1
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) == {"violation", "states", "depth", "seconds", "complete"}
    assert printed["violation"]["invariant"] == "no_acked_loss"
    assert printed["violation"]["steps"] == [{"produce": "r1"}, {"crash": 1}, {"advance": 18000}]
    assert printed["violation"]["report"]["lost_acked"] == ["r1"]
    doc = yaml.safe_load(out.read_text())
    assert doc["expect"]["lost_acked"] == ["r1"] and doc["config"] == {"acks": 1}
    assert cli.main(["scenario", "run", str(out)]) == 0
    assert "expectations: all hold" in capsys.readouterr().out


def test_the_command_exits_0_when_nothing_breaks(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        [
            "explore",
            "--set",
            "acks=all",
            "--set",
            "min.insync.replicas=2",
            "--depth",
            "3",
            "--actions",
            "produce,fetch,crash,expire",
        ]
    )
    assert code == 0
    assert "no violation up to depth 3" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--actions", "produce,warp"], "choose from produce"),
        (["--invariant", "nothing_lost"], "not one of kafkalab.INVARIANTS"),
        (["--depth", "-2"], "depth=-2 is not allowed"),
        (["--set", "acks=sometimes"], "acks"),
        (["--out", "found.txt"], "name a .yaml file"),
        (["--out", "/no/such/folder/x.yaml"], "does not exist"),
        (["--workers", "0"], "workers=0 is not allowed"),
    ],
)
def test_the_command_refuses_bad_input_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["explore", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


# ---- workers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "bounds"),
    [
        (ACKS_1, dict(depth=4, actions=("produce", "fetch", "crash", "expire"))),  # breaks
        (EXAMPLES["safe"], dict(depth=4, actions=CRASHES)),  # does not
    ],
)
def test_forked_workers_make_the_same_search(
    settings: dict[str, Any], bounds: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import kafkalab.explore as search

    forked: list[bool] = []
    close = search._Workers.close

    def closing(self: Any) -> None:
        forked.append(self.pool is not None)
        close(self)

    monkeypatch.setattr(search, "PARALLEL_MIN", 2)  # small depths go to the workers too
    monkeypatch.setattr(search._Workers, "close", closing)
    alone = explore(settings, workers=1, **bounds)
    shared = explore(settings, workers=3, **bounds)
    assert forked == [True]  # the second search forked its workers (the first none)
    assert (shared.states, shared.levels, shared.complete) == (
        alone.states,
        alone.levels,
        alone.complete,
    )
    assert (shared.violation is None) == (alone.violation is None)
    if alone.violation is not None:
        assert shared.violation is not None
        assert shared.violation.steps == alone.violation.steps
        assert shared.violation.scenario_yaml == alone.violation.scenario_yaml
    assert search._FORKED_JOB is None  # nothing left behind for the next search


def test_a_worker_that_dies_leaves_the_search_to_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import kafkalab.explore as search

    here, expand = os.getpid(), search._Job.expand_locally

    def die_in_a_worker(self: Any, nodes: list[Any], job: Any) -> list[Any]:
        if os.getpid() != here:
            os._exit(3)  # a worker killed (out of memory, say) halfway through its share
        return expand(self, nodes, job)

    bounds = dict(depth=4, actions=("produce", "fetch", "crash", "expire"))
    alone = explore(ACKS_1, workers=1, **bounds)
    monkeypatch.setattr(search, "PARALLEL_MIN", 2)
    monkeypatch.setattr(search._Job, "expand_locally", die_in_a_worker)  # workers inherit it
    with pytest.warns(RuntimeWarning, match="a worker of the search ended unexpectedly"):
        rescued = explore(ACKS_1, workers=2, **bounds)
    assert rescued.as_json() | {"seconds": 0} == alone.as_json() | {"seconds": 0}
    assert search._FORKED_JOB is None


def test_the_environment_sets_the_default_number_of_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import kafkalab.explore as search

    started: list[int] = []
    start = search._Workers.start.__func__  # type: ignore[attr-defined]

    def recording(cls: Any, job: Any, workers: int) -> Any:
        started.append(workers)
        return start(cls, job, workers)

    monkeypatch.setattr(search._Workers, "start", classmethod(recording))
    bounds = dict(depth=2, actions=("produce", "fetch"))
    monkeypatch.setenv(search.WORKERS_VARIABLE, "3")
    explore(ACKS_1, **bounds)
    explore(ACKS_1, workers=2, **bounds)  # an explicit number wins
    monkeypatch.delenv(search.WORKERS_VARIABLE)
    explore(ACKS_1, **bounds)
    cores = len(os.sched_getaffinity(0)) if sys.platform.startswith("linux") else 1
    assert started == [3, 2, cores]


@pytest.mark.parametrize("value", ["0", "two", "-1", "1.5"])
def test_a_bad_number_of_workers_in_the_environment_is_refused(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKALAB_EXPLORE_WORKERS", value)
    with pytest.raises(ConfigError, match=f"KAFKALAB_EXPLORE_WORKERS='{value}' is not allowed"):
        explore(ACKS_1, depth=1)


# ---- Spark ---------------------------------------------------------------------------------


@pytest.mark.spark
def test_spark_finds_what_the_local_search_finds(spark: Any) -> None:
    from kafkalab.explore.spark import explore_on_spark

    for settings_, depth in ((ACKS_1, 4), (SAFE, 4)):
        bounds = dict(brokers=2, depth=depth, actions=("produce", "fetch", "crash", "expire"))
        local = explore(settings_, **bounds).as_json()
        remote = explore_on_spark(settings_, spark=spark, **bounds).as_json()
        local.pop("seconds"), remote.pop("seconds")
        assert local == remote
