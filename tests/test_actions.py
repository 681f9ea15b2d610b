"""The step vocabulary (kafkalab.sim.actions) is declared once and every table derives from it."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import yaml

from kafkalab import scenarios
from kafkalab.errors import ActionError, KafkalabError, ScenarioError
from kafkalab.sim import actions, timed
from kafkalab.sim.actions import REGISTRY, Action, Param
from kafkalab.sim.cluster import STEP_METHODS, Cluster
from kafkalab.widgets import explorer
from kafkalab.widgets.explorer import ExplorerModel

README = Path(__file__).parents[1] / "README.md"


def scenario(*steps: str, brokers: int = 2) -> str:
    lines = "\n".join(f"  - {s}" for s in steps)
    return f"name: t\nbrokers: {brokers}\nleader: 1\nsteps:\n{lines}\n"


# ---- the derived tables ---------------------------------------------------------------------


def test_the_readme_step_table_is_the_registry() -> None:
    table = actions.markdown_table()
    readme = README.read_text(encoding="utf-8")
    between = readme.split("<!-- step table: python -m kafkalab.sim.actions --markdown -->\n")[1]
    assert between.split("<!-- end of step table -->")[0] == table
    for name in REGISTRY:
        assert f"| `{name}` |" in table


def test_the_markdown_option_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert actions._main(["--markdown"]) == 0
    assert capsys.readouterr().out == actions.markdown_table()
    assert actions._main([]) == 2


def test_every_table_derives_from_the_registry() -> None:
    assert list(scenarios.STEP_KINDS) == list(REGISTRY)
    assert scenarios.STEP_KINDS["fetch"] == (
        "follower",
        ("follower", "response", "delay_ms", "partition", "max_wait_ms"),
    )
    assert list(timed.FAULT_ACTIONS) == ["burst", *(n for n, a in REGISTRY.items() if a.fault)]
    assert set(STEP_METHODS) == {n for n, a in REGISTRY.items() if a.timed}
    assert {"set", "delete_records", "alter_partition", "check"}.isdisjoint(STEP_METHODS)
    assert set(explorer.ACTIONS) == {n for n, a in REGISTRY.items() if a.explorer}
    assert explorer.ACTIONS["crash"] == ("broker", "lose_unflushed")
    assert "meteor" not in timed.FAULT_ACTIONS and "check" not in explorer.ACTIONS


def test_every_action_calls_a_cluster_method_that_takes_its_parameters() -> None:
    for a in REGISTRY.values():
        if a.call is not None:
            continue
        method = getattr(Cluster, a.method_name)
        inspect.signature(method).bind(None, **dict.fromkeys(a.param_names))


def test_expect_keys_are_the_cluster_states_keys() -> None:
    state = Cluster(1).state()
    assert set(scenarios.EXPECT_KEYS) == set(state) - {"divergence"}
    from kafkalab.scenarios import EXPECT_KEYS

    assert EXPECT_KEYS == scenarios.EXPECT_KEYS


def test_a_declaration_that_does_not_hang_together_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(actions, "REGISTRY", dict(REGISTRY))
    with pytest.raises(ValueError, match="declared twice"):
        actions.register(Action("heal", "again", "`heal`"))
    with pytest.raises(ValueError, match="scalar 'x' is not one of"):
        actions.register(Action("nap", "sleep", "`nap: 1`", (Param("ms"),), scalar="x"))
    with pytest.raises(ValueError, match="Cluster.at calls a method named as its action"):
        actions.register(Action("nap", "sleep", "`nap: 1`", method="advance"))


# ---- a new step kind is one declaration plus its Cluster method ------------------------------


def test_a_new_step_kind_reaches_parsing_replay_the_explorer_and_the_readme(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def nap(self: Cluster, ms: int) -> None:
        self.advance(ms)

    saved = dict(REGISTRY)  # the registry is shared by every module that reads it: restore it
    try:
        with monkeypatch.context() as mp:
            mp.setattr(Cluster, "nap", nap, raising=False)
            actions.register(
                Action(
                    "nap",
                    "the cluster sleeps for `ms`",
                    "`nap: 500`",
                    (Param("ms", required=True, check=actions._whole(0)),),
                    scalar="ms",
                    explorer=True,
                )
            )
            s = scenarios.parse(scenario("nap: 500", "check: {time_ms: 500}"))
            assert [st.args for st in s.steps] == [{"ms": 500}, {"expect": {"time_ms": 500}}]
            assert scenarios.run(s).ok
            with pytest.raises(ScenarioError, match=r"step 1 \(nap\): ms=-1 is not allowed"):
                scenarios.parse(scenario("nap: -1"))
            assert "nap" in scenarios.STEP_KINDS and "nap" in STEP_METHODS
            assert explorer.ACTIONS["nap"] == ("ms",)
            m = ExplorerModel()
            assert m.do("nap", ms=250).ok and m.cluster.now == 250
            assert "| `nap` | `nap: 500` | `ms` |  | the cluster sleeps for `ms` |" in (
                actions.markdown_table()
            )
    finally:
        REGISTRY.clear()
        REGISTRY.update(saved)
    assert "nap" not in actions.REGISTRY and "nap" not in explorer.ACTIONS
    with pytest.raises(ScenarioError, match="unknown step 'nap'"):
        scenarios.parse(scenario("nap: 500"))


# ---- errors still name the bad value and what is allowed ------------------------------------


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("fetsh: 1", "step 1: unknown step 'fetsh' (did you mean 'fetch'?); allowed: produce,"),
        ("fetch: 3", "step 1 (fetch): follower 3 does not exist: brokers are 1..2"),
        ("fetch: {response: lost}", "step 1 (fetch): missing its follower"),
        ("fetch: {folower: 1}", "unknown key 'folower' (did you mean 'follower'?)"),
        ("produce: {value: a, acks: 2}", "acks=2 is not allowed: use 0, 1 or all"),
        ("produce: {acks: 1}", "step 1 (produce): give a value (or values)"),
        ("heal: 1", "step 1 (heal): heal takes no argument"),
        ("disconnect: 1", "step 1 (disconnect): give two nodes, like [1, zk]"),
        ("throttle: [1, 2]", "give two nodes and megabytes per second"),
        ("partition: [[1]]", "step 1 (partition): give two or more groups"),
        ("send_offsets: p1", "give the producer and a consumer (or a group and offsets)"),
        ("producer: {acks: 1}", "give settings with a name, like {name: app1}"),
        ("advance: -5", "step 1 (advance): ms=-5 is not allowed: use a whole number >= 0"),
        ("delete_records: x", "offset='x' is not allowed: use a whole number >= -1"),
        ("alter_partition: maybe", "answer='maybe' is not allowed: use delayed, lost, refused"),
        ("alter_partition: {answer: lost, error: X}", "error='X' is not allowed: use"),
        ("set: {broker: 1, topic: t, min.insync.replicas: 1}", "a broker or a topic, not both"),
        ("set: {acks: 1}", "(set): acks cannot be changed for a running cluster: use one"),
        ("set: {broker: 7, min.insync.replicas: 1}", "(set): broker 7 does not exist"),
        ("check: {leeder: 1}", "(check): unknown key 'leeder' (did you mean 'leader'?)"),
    ],
)
def test_a_bad_step_is_refused_with_what_is_allowed(step: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=re.escape(message)):
        scenarios.parse(scenario(step), "bad.yaml")


def test_a_kraft_controller_node_may_be_named_by_crash_and_restart() -> None:
    args = actions.parse_args("crash", "active", brokers=3)
    assert args == {"broker": "active"}
    with pytest.raises(ScenarioError, match="flush 'x'|broker 'x' does not exist"):
        actions.parse_args("flush", "x", brokers=3)


def test_acks_are_read_in_one_place() -> None:
    assert [actions.parse_acks(a) for a in (0, 1, "all", -1, " ALL ", "-1")] == [
        0,
        1,
        -1,
        -1,
        -1,
        -1,
    ]
    with pytest.raises(ActionError, match="acks='2x' is not allowed: use 0, 1 or all"):
        actions.parse_acks("2x")
    c = Cluster(2, leader=1)
    with pytest.raises(ActionError, match="acks=5 is not allowed"):
        c.produce("m1", acks=5)


def test_the_explorer_names_a_missing_or_unknown_argument() -> None:
    m = ExplorerModel()
    with pytest.raises(KafkalabError, match="crash needs broker: it takes broker, lose_unflushed"):
        m.do("crash", lose_unflushed=True)
    with pytest.raises(KafkalabError, match="heal does not take"):
        m.do("heal", broker=1)


def test_cluster_at_refuses_an_action_it_cannot_schedule() -> None:
    c = Cluster(2, leader=1, mode="timed")
    with pytest.raises(ActionError, match="unknown action 'set': use one of produce, producer"):
        c.at(10, "set", {"min_insync_replicas": 1})


# ---- the catalog ----------------------------------------------------------------------------


def test_get_reads_only_the_named_file(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    parse = scenarios.parse
    monkeypatch.setattr(
        scenarios, "parse", lambda text, origin: parsed.append(origin) or parse(text, origin)
    )
    assert scenarios.get("kip101-loss").name == "kip101-loss"
    assert parsed == ["kip101-loss.yaml"]


def test_an_unknown_catalog_name_suggests_the_nearest() -> None:
    with pytest.raises(ScenarioError) as err:
        scenarios.get("kip101-los")
    assert str(err.value) == (
        "no scenario file or catalog entry named 'kip101-los' (did you mean 'kip101-loss'?); "
        "'kafkalab scenario list' shows the catalog"
    )
    with pytest.raises(ScenarioError, match="named '../README'; 'kafkalab"):
        scenarios.get("../README")


def test_every_catalog_scenario_is_named_as_its_file() -> None:
    # get() finds a scenario by its file name: the two must agree.
    for path in Path(scenarios.__file__).parent.glob("catalog/*.yaml"):
        assert yaml.safe_load(path.read_text(encoding="utf-8"))["name"] == path.stem, path


@pytest.mark.parametrize("mode", ["dedicated", "zk", "kraft"])
def test_state_keys_are_the_keys_of_cluster_state(mode: str) -> None:
    from kafkalab.sim.expect import STATE_KEYS

    assert tuple(Cluster(1, config={"controller_mode": mode}).state()) == STATE_KEYS


# ---- sync ------------------------------------------------------------------------------------


def test_sync_fetches_until_replication_settles() -> None:
    """Followers copy the records and learn the HW; a follower told of a new leader epoch first
    finds its truncation point; a sync with nothing to do changes no state, not even the time."""
    c = Cluster(brokers=3)
    c.produce("m1")
    c.produce("m2")
    c.sync()
    state = c.state()
    assert state["logs"] == {1: ["m1", "m2"], 2: ["m1", "m2"], 3: ["m1", "m2"]}
    assert state["hw"] == {1: 2, 2: 2, 3: 2} and state["time_ms"] == 0
    c.crash(1)
    c.advance(18000)
    c.produce("m3")
    c.restart(1)
    c.sync()
    assert c.logs() == {1: ["m1", "m2", "m3"], 2: ["m1", "m2", "m3"], 3: ["m1", "m2", "m3"]}
    before = c.state()
    c.sync()  # one round of fetches that find nothing new
    assert c.state() == before


def test_sync_is_a_scenario_step() -> None:
    s = scenarios.parse(scenario("produce: a", "sync", "crash: 1", "sync: 0"))
    result = scenarios.run(s)
    assert result.cluster.logs() == {1: ["a"], 2: ["a"]}
    with pytest.raises(ScenarioError, match="unknown key 'followers'"):
        scenarios.parse(scenario("sync: {followers: 2}"))


def test_python_m_prints_the_table_the_readme_names() -> None:
    """`python -m kafkalab.sim.actions --markdown` (the README's command) runs the module a
    second time after the package imported it; it must print the table, not declare every
    action twice."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "kafkalab.sim.actions", "--markdown"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == actions.markdown_table()
