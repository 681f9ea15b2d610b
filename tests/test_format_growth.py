"""The scenario format's newer steps and expect keys: dynamic settings (``set``),
``delete_records`` and the log start offset, ``alter_partition`` (an ISR change in flight or
refused), ``crash: active``, ``auto.offset.reset``, and the client-visible state (rejected
control requests, fenced markers, producer ids, HW checkpoints)."""

from __future__ import annotations

import json

import pytest

from kafkalab import Cluster, scenarios
from kafkalab.cli import main
from kafkalab.errors import ActionError, ScenarioError
from kafkalab.protocol import messages as m


def _run(text: str) -> scenarios.ScenarioResult:
    return scenarios.run(scenarios.parse(text, "test.yaml"))


def _ok(text: str) -> scenarios.ScenarioResult:
    result = _run(text)
    assert result.ok, "\n".join(result.mismatches)
    return result


# ---- auto.offset.reset ---------------------------------------------------------------------

RESET = """\
name: reset
brokers: 2
leader: 1
steps:
  - produce: {values: [a, b]}
  - fetch: 2
  - fetch: 2
  - consumer: {name: latest}
  - consumer: {name: earliest, auto.offset.reset: earliest}
  - consumer: {name: strict, auto.offset.reset: none}
  - poll: latest
  - poll: earliest
  - poll: strict
  - produce: c
  - fetch: 2
  - fetch: 2
  - poll: latest
expect:
  consumed: {latest: [c], earliest: [a, b]}
  consumer_errors: {strict: ["demo-0: NO_OFFSET_FOR_PARTITION"]}
"""


def test_latest_is_the_default_earliest_reads_from_the_start_and_none_fails() -> None:
    _ok(RESET)


def test_a_bad_auto_offset_reset_is_refused() -> None:
    c = Cluster(2)
    with pytest.raises(ActionError, match="auto.offset.reset='middle' is not allowed"):
        c.consumer("x", auto_offset_reset="middle")


def test_a_committed_offset_out_of_range_is_reset() -> None:
    c = Cluster(3, groups=["g"], replication="auto")
    c.produce(values=["a", "b", "c"])
    c.consumer("app", group="g", auto_offset_reset="earliest")
    c.poll("app")
    c.commit_offsets("app")  # position 3
    c.crash("app")
    c.delete_records(-1)  # log start offset 3 = the HW
    c.produce("d")
    c.delete_records(4)
    c.restart("app")
    c.poll("app")  # committed 3 is below the log start offset 4: reset to earliest, 4
    assert c.report().consumed["app"] == ["a", "b", "c"]
    c.produce("e")
    c.poll("app")
    assert c.report().consumed["app"] == ["a", "b", "c", "e"]


# ---- delete_records and the log start offset ------------------------------------------------

DELETE = """\
name: delete
brokers: 2
leader: 1
steps:
  - produce: {values: [a, b, c]}
  - fetch: 2
  - fetch: 2
  - delete_records: {offset: 2}
  - check: {log_start_offset: {1: 2, 2: 0}}
  - produce: d
  - fetch: 2
    note: the follower follows the leader's log start offset
  - delete_records: 9
    note: above the HW, refused with OFFSET_OUT_OF_RANGE
  - consumer: {name: r, auto.offset.reset: earliest}
  - poll: r
expect:
  log_start_offset: {1: 2, 2: 2}
  consumed: {r: [c]}
  partitions: {demo-0: {log_start_offset: {1: 2, 2: 2}}}
"""


def test_delete_records_moves_the_log_start_offset_on_leader_and_follower() -> None:
    result = _ok(DELETE)
    refused = result.cluster.trace.of_kind("delete_records")[-1].data
    assert refused["error"] == "OFFSET_OUT_OF_RANGE"


def _answers(c: Cluster) -> list[tuple[int, str, int]]:
    return [
        (e.data["offset"], e.data["error"], e.data["low_watermark"])
        for e in c.trace.of_kind("delete_records")
    ]


def _deleting_cluster() -> Cluster:
    c = Cluster(brokers=2, leader=1)
    c.produce("a")
    c.produce("b")
    c.produce("c")
    c.fetch(2)
    c.fetch(2)  # HW 3
    c.delete_records(2)
    return c


def test_delete_records_waits_for_the_low_watermark() -> None:
    # Partition.lowWatermarkIfLeader and DelayedDeleteRecords: the leader moves its log start
    # offset at once, but answers only when every live follower reports it moved its own.
    c = _deleting_cluster()
    assert c.replica(1).log_start_offset == 2 and _answers(c) == []
    c.fetch(2)  # the response carries the leader's log start offset: the follower moves its own
    assert c.replica(2).log_start_offset == 2 and _answers(c) == []  # its fetch still said 0
    c.fetch(2)  # this fetch reports 2
    assert _answers(c) == [(2, "NONE", 2)]


def test_delete_records_times_out_with_the_low_watermark_it_found() -> None:
    c = _deleting_cluster()
    c.advance(60_000)  # the admin client's default.api.timeout.ms; the follower never fetches
    assert _answers(c) == [(2, "REQUEST_TIMED_OUT", 0)]
    assert c.replica(1).log_start_offset == 2  # the deletion itself stays


def test_a_dead_follower_does_not_hold_the_low_watermark() -> None:
    c = Cluster(brokers=3, leader=1)
    c.produce("a")
    for follower in (2, 3, 2, 3):
        c.fetch(follower)
    c.crash(3)
    c.advance(20_000)  # the controller has noticed: broker 3 is out of the metadata's live brokers
    c.delete_records(1)
    assert _answers(c) == []  # broker 2 is alive and still reports 0
    # The ISR shrink raised the leader epoch; since 2.8 broker 2's next fetch names its last
    # epoch, finds no divergence, and learns the log start offset 1.
    c.fetch(2)
    assert c.replica(2).log_start_offset == 1 and _answers(c) == []
    c.fetch(2)  # reports it
    assert _answers(c) == [(1, "NONE", 1)]  # broker 3, down, is not waited for


def test_a_leader_change_fails_a_waiting_delete_records() -> None:
    c = _deleting_cluster()
    c.stop(1)  # a controlled shutdown moves the leadership to broker 2 first
    assert c.leader == 2
    assert _answers(c) == [(2, "NOT_LEADER_OR_FOLLOWER", -1)]


def test_delete_records_needs_an_offset() -> None:
    bad = DELETE.replace("delete_records: 9", "delete_records: -2")
    with pytest.raises(ScenarioError, match="delete_records.*offset=-2 is not allowed"):
        scenarios.parse(bad)


# ---- set: dynamic settings --------------------------------------------------------------------

UNCLEAN = """\
name: unclean-later
brokers: 2
leader: 1
config: {controller_mode: zk}
steps:
  - produce: first
  - fetch: 2
  - fetch: 2
  - stop: 2
  - produce: second
  - stop: 1
  - restart: 2
  - advance: 1000
  - check: {leader: null, unclean_elections: 0}
  - set: {unclean.leader.election.enable: true}
expect:
  leader: 2
  unclean_elections: 1
"""


@pytest.mark.parametrize("mode", ["zk", "kraft", "dedicated"])
def test_turning_unclean_election_on_elects_the_out_of_sync_replica(mode: str) -> None:
    text = UNCLEAN.replace("controller_mode: zk", f"controller_mode: {mode}")
    if mode == "kraft":
        # KAFKA-12670 (3.9): only the controller's periodic check, five minutes after the write
        # that left the partition leaderless, elects; the config change itself does not.
        text = text.replace(
            "  - set: {unclean.leader.election.enable: true}\n",
            "  - set: {unclean.leader.election.enable: true}\n"
            "  - check: {leader: null}\n"
            "  - advance: 300000\n",
        )
    _ok(text)


def test_a_topic_override_beats_the_broker_setting() -> None:
    text = UNCLEAN.replace(
        "  - set: {unclean.leader.election.enable: true}",
        "  - set: {topic: demo, unclean.leader.election.enable: false}\n"
        "  - set: {unclean.leader.election.enable: true}",
    )
    result = _run(text)
    assert result.cluster.leader is None
    assert result.cluster.config.unclean_leader_election_enable is False


def test_set_for_one_broker_reaches_only_that_broker() -> None:
    c = Cluster(3)
    c.set_config({"min.insync.replicas": 2}, broker=2)
    configs = {b: c.sim.actors[b].config.min_insync_replicas for b in (1, 2, 3)}
    assert configs == {1: 1, 2: 2, 3: 1}


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("set: {replica.lag.time.max.ms: 5}", "replica.lag.time.max.ms cannot be changed"),
        ("set: {min.insync.replicas: 0}", "min.insync.replicas=0 is not allowed"),
        ("set: {unclean.leader.election.enable: maybe}", "use true or false"),
        ("set: {min.insync.replica: 2}", "did you mean 'min.insync.replicas'"),
        ("set: {broker: 1, topic: demo, min.insync.replicas: 2}", "not both"),
        ("set: {broker: 7, min.insync.replicas: 2}", "broker 7 does not exist"),
    ],
)
def test_a_bad_set_step_is_refused_with_one_line(step: str, message: str) -> None:
    text = f"name: bad\nbrokers: 2\nsteps:\n  - {step}\n"
    with pytest.raises(ScenarioError, match=message):
        scenarios.parse(text)


def test_set_above_the_replication_factor_is_accepted_during_the_replay(tmp_path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nbrokers: 2\nsteps:\n  - set: {min.insync.replicas: 3}\n")
    assert main(["scenario", "run", str(path)]) == 0


# ---- alter_partition: an ISR change in flight or refused -----------------------------------

ALTER = """\
name: alter
brokers: 2
leader: 1
config: {replica.lag.time.max.ms: 10000}
steps:
  - crash: 2
  - alter_partition: {answer: ANSWER}
  - advance: 15000
    note: the ISR check drops 2
expect: {}
"""


def test_a_delayed_alter_partition_stays_in_flight_until_time_passes() -> None:
    r = _ok(
        ALTER.replace("ANSWER", "delayed, delay_ms: 20000").replace(
            "expect: {}", "expect: {pending_isr: [1], maximal_isr: [1, 2], isr: [1, 2]}"
        )
    )
    r.cluster.advance(20000)
    state = r.cluster.state()
    assert (state["pending_isr"], state["isr"]) == (None, [1])


def test_a_refused_alter_partition_keeps_the_committed_isr() -> None:
    _ok(
        ALTER.replace("ANSWER", "refused").replace(
            "expect: {}", "expect: {pending_isr: [1], isr: [1, 2], isr_shrinks: 0}"
        )
    )


def test_not_controller_sends_the_same_proposal_again() -> None:
    # BrokerToControllerRequestThread.handleResponse: NOT_CONTROLLER puts the request back at the
    # head of the queue for the controller it finds next; the proposal is then committed.
    text = ALTER.replace("ANSWER", "refused, error: NOT_CONTROLLER").replace(
        "expect: {}", "expect: {pending_isr: null, isr: [1]}"
    )
    result = _ok(text)
    assert [e.data["error"] for e in result.cluster.trace.of_kind("alter_isr_failed")] == [
        "NOT_CONTROLLER"
    ]


def test_a_lost_alter_partition_is_sent_again_after_the_request_timeout() -> None:
    # AlterPartitionManager never gives a proposal up: a request without an answer times out
    # (request.timeout.ms, 30 s) and goes again; the maximal ISR counts all along.
    text = ALTER.replace("ANSWER", "lost").replace(
        "expect: {}", "expect: {pending_isr: [1], maximal_isr: [1, 2], isr: [1, 2]}"
    )
    # a session long enough that the controller does not notice broker 2's death meanwhile
    r = _ok(text.replace("10000}", "10000, zookeeper.session.timeout.ms: 120000}"))
    r.cluster.advance(29_000)
    assert r.cluster.state()["pending_isr"] == [1]
    r.cluster.advance(1_000)
    state = r.cluster.state()
    assert (state["pending_isr"], state["isr"]) == (None, [1])


def test_alter_partition_validates_its_answer() -> None:
    with pytest.raises(ScenarioError, match="answer='late' is not allowed"):
        scenarios.parse(ALTER.replace("ANSWER", "late"))
    with pytest.raises(ScenarioError, match="error='OOPS' is not allowed"):
        scenarios.parse(ALTER.replace("ANSWER", "refused, error: OOPS"))


# ---- crash: active ------------------------------------------------------------------------------


def test_crash_active_stops_the_active_kraft_controller_and_restart_names_it() -> None:
    c = Cluster(3, config={"controller_mode": "kraft"})
    old = c.controller
    c.crash("active")
    assert old not in c.sim.actors
    c.advance(5000)
    assert c.controller not in (None, old)
    with pytest.raises(ActionError, match="restart names the node"):
        c.restart("active")
    c.restart(old)
    assert old in c.sim.actors


def test_pause_active_stalls_the_active_controller() -> None:
    c = Cluster(3, config={"controller_mode": "kraft"})
    old = c.controller
    c.pause("active")
    assert old in c.sim.paused


def test_active_outside_kraft_is_a_clear_error() -> None:
    text = "name: a\nbrokers: 2\nsteps:\n  - crash: active\n"
    with pytest.raises(ScenarioError, match="names the active KRaft controller node"):
        scenarios.run(scenarios.parse(text))


# ---- client-visible state -----------------------------------------------------------------------


def test_a_stale_controller_request_is_listed() -> None:
    c = Cluster(2, config={"controller_mode": "zk"})
    c.sim.send("zk", 2, m.UpdateMetadata(0, (1, 2)))
    c.advance(0)
    expect = {
        "rejected_requests": [
            {"broker": 2, "request": "UpdateMetadata", "error": "STALE_CONTROLLER_EPOCH"}
        ]
    }
    assert scenarios.check_expect(c, expect) == []
    assert scenarios.check_expect(c, {"rejected_requests": 1}) == []
    assert scenarios.check_expect(c, {"rejected_requests": []}) != []


def test_a_request_for_an_earlier_incarnation_is_listed() -> None:
    c = Cluster(2, config={"controller_mode": "zk"})
    c.sim.send("zk", 2, m.UpdateMetadata(5, (1, 2), broker_epoch=0))
    c.advance(0)
    assert c.state()["rejected_requests"] == [
        {"broker": 2, "request": "UpdateMetadata", "error": "STALE_BROKER_EPOCH"}
    ]


def test_fenced_markers_and_producer_ids_are_visible() -> None:
    result = scenarios.run(scenarios.get("txn-zombie-fencing"))
    c = result.cluster
    producers = c.state()["producers"]
    pid = producers["p2"]["producer_id"]
    assert producers["p2"]["producer_epoch"] > producers["p1"]["producer_epoch"]
    leader = c.partition_states()["demo-0"].leader
    stale = m.WriteTxnMarkersRequest("demo-0", pid, 0, "COMMIT", 0, "tx")
    c.sim.send("producer", leader, stale)
    c.advance(0)
    want = [{"broker": leader, "partition": "demo-0", "control": "COMMIT"}]
    assert scenarios.check_expect(c, {"fenced_markers": want}) == []
    assert scenarios.check_expect(c, {"producers": {"p2": {"producer_id": pid}}}) == []


def test_the_hw_checkpoint_is_what_was_last_written() -> None:
    c = Cluster(2, leader=1)
    c.produce("a")
    c.fetch(2)
    c.fetch(2)
    assert c.state()["hw_checkpoint"] == {1: 0, 2: 0}
    c.advance(5000)  # replica.high.watermark.checkpoint.interval.ms
    assert c.state()["hw_checkpoint"] == {1: 1, 2: 1}


def test_json_output_carries_the_new_keys(tmp_path, capsys) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(DELETE)
    assert main(["scenario", "run", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in (
        "rejected_requests",
        "fenced_markers",
        "producers",
        "hw_checkpoint",
        "log_start_offset",
        "pending_isr",
        "maximal_isr",
        "consumer_errors",
    ):
        assert key in out
    assert out["log_start_offset"] == {"1": 2, "2": 2}


def test_every_new_step_and_expect_key_is_documented() -> None:
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Scenario files", 1)[1].split("\n## ", 1)[0]
    for word in ("`set`", "`delete_records`", "`alter_partition`", "`crash: active`"):
        assert word in section, word
    for key in scenarios.EXPECT_KEYS:
        assert f"`{key}`" in readme, key


# ---- several topics ------------------------------------------------------------------------

TOPICS = """\
name: topics
brokers: 3
topics:
  foo: {partitions: 2, replicas: {0: [1, 2, 3], 1: [2, 3, 1]}}
  bar: {replicas: [1, 3, 2]}
steps:
  - produce: {value: f0, acks: 1}
  - produce: {value: f1, partition: foo-1, acks: 1}
  - produce: {value: b0, partition: bar-0, acks: 1}
  - fetch: {follower: 2, partition: bar-0}
  - check:
      partitions:
        0: {leader: 1, logs: {1: [f0], 2: [], 3: []}}
        foo-1: {leader: 2, logs: {2: [f1]}}
        bar-0: {leader: 1, replicas: [1, 3, 2], logs: {1: [b0], 2: [b0], 3: []}}
expect:
  logs: {1: [f0]}
  partitions:
    bar-0: {hw: {1: 0}, leo: {1: 1, 2: 1, 3: 0}, isr: [1, 2, 3]}
"""


def test_two_topics_each_take_their_own_records() -> None:
    r = _ok(TOPICS)
    c = r.cluster
    assert c.topics == ["foo", "bar"] and c.topic == "foo"
    assert c.partitions() == ["foo-0", "foo-1", "bar-0"]
    assert c.logs("bar-0") == {1: ["b0"], 3: [], 2: ["b0"]}


@pytest.mark.parametrize("mode", ["dedicated", "zk", "kraft"])
def test_a_leader_failure_moves_the_leaders_of_both_topics(mode: str) -> None:
    c = Cluster(3, topics=["foo", "bar"], config={"controller_mode": mode})
    assert c.assignment == {"foo-0": [1, 2, 3], "bar-0": [1, 2, 3]}
    c.produce("a")
    c.produce("b", partition="bar-0")
    for follower in (2, 3):
        for tp in ("foo-0", "bar-0"):
            c.fetch(follower, partition=tp)
            c.fetch(follower, partition=tp)
    assert c.report().acked == ["a", "b"]
    c.crash(1)
    c.advance(20000)
    states = c.partition_states()
    for tp in ("foo-0", "bar-0"):
        assert states[tp].leader in (2, 3) and 1 not in states[tp].isr, (tp, states[tp])
    assert c.report().lost_acked == []
    c.produce("b2", partition="bar-0", acks=1)
    assert c.logs("bar-0")[states["bar-0"].leader] == ["b", "b2"]
    assert c.logs("foo-0")[states["foo-0"].leader] == ["a"]


def test_each_topic_is_placed_with_its_own_random_start() -> None:
    from random import Random

    from kafkalab.protocol.assignment import assign_replicas

    c = Cluster(4, topics={"foo": 4, "bar": {"partitions": 4, "replicas": 2}}, seed=5)
    foo = assign_replicas([1, 2, 3, 4], 4, 4, Random("5:assignment"))
    bar = assign_replicas([1, 2, 3, 4], 4, 2, Random("5:assignment:bar"))
    assert [c.assignment[f"foo-{p}"] for p in range(4)] == [foo[p] for p in range(4)]
    assert [c.assignment[f"bar-{p}"] for p in range(4)] == [bar[p] for p in range(4)]
    # the first topic draws as a one-topic cluster does: existing placements do not move
    assert (
        Cluster(4, topics={"demo": 4}, seed=5).assignment
        == Cluster(4, partitions=4, seed=5).assignment
    )


def test_a_number_still_names_a_partition_of_the_first_topic() -> None:
    c = Cluster(3, topics={"foo": 2, "bar": 1})
    assert [c.partition_name(p) for p in (None, 1, "1", "bar-0")] == [
        "foo-0",
        "foo-1",
        "foo-1",
        "bar-0",
    ]
    c.produce("x", partition=1, acks=1)
    leader = c.partition_states()["foo-1"].leader
    assert scenarios.check_expect(c, {"partitions": {"1": {"logs": {leader: ["x"]}}}}) == []
    assert scenarios.check_expect(c, {"lso": {0: 0, 1: 0, "bar-0": 0}}) == []


def test_per_partition_mismatches_name_the_partition_and_key() -> None:
    text = TOPICS.replace("isr: [1, 2, 3]}", "isr: [1, 2, 3], maximal_isr: [1]}")
    text = text.replace("leo: {1: 1, 2: 1, 3: 0}", "leo: {1: 1, 2: 1, 3: 5}")
    assert _run(text).mismatches == [
        "partitions[bar-0].leo[3]: expected 5, got 0",
        "partitions[bar-0].maximal_isr: expected [1], got [1, 3, 2]",
    ]


def test_consumers_and_delete_records_take_topic_partitions() -> None:
    text = """\
name: t
brokers: 2
topics: [foo, bar]
replication: auto
steps:
  - produce: {values: [a, b], partition: bar-0}
  - delete_records: {partition: bar-0, offset: 1}
  - consumer: {name: c, partitions: [bar-0], auto.offset.reset: earliest}
  - poll: c
expect:
  consumed: {c: [b]}
  partitions: {bar-0: {log_start_offset: {1: 1}}, foo-0: {leo: {1: 0}}}
"""
    _ok(text)


BAD_TOPICS = [
    ("topics: 5", "topics=5 is not allowed: use a list of topic names"),
    ("topics: []", "topics is empty"),
    ("topics: [foo, foo]", "topic 'foo' is named twice"),
    ("topics: [__internal]", "topic name '__internal' is not allowed"),
    ("topics: ['1']", "topic name '1' is not allowed: use letters, digits"),
    ("topics: [a/b]", "topic name 'a/b' is not allowed"),
    ("topics: {foo: 0}", r"topics\[foo\].partitions=0 is not allowed: use a whole number >= 1"),
    ("topics: {foo: x}", r"topics\[foo\]='x' is not allowed: give a number of partitions"),
    ("topics: {foo: {partition: 2}}", "unknown key 'partition'.*did you mean 'partitions'"),
    ("topics: {foo: {replicas: 4}}", r"topics\[foo\].replicas=4 is not allowed: use a repl"),
    ("topics: {foo: {partitions: 2, replicas: [1, 2]}}", "map each partition to its brokers"),
    ("topics: {foo: {replicas: [1, 7]}}", "topic 'foo': broker 7 does not exist"),
    ("topics: {foo: {partitions: 2, replicas: {0: [1]}}}", "map every partition 0..1"),
    ("topics: [foo]\npartitions: 2", "partitions cannot go with topics"),
    ("topics: [foo]\nleader: 2", "leader cannot go with topics"),
    ("topics: [foo]\nsteps: [{produce: {value: a, partition: bar-0}}]", "step 1 .produce.: "),
    ("topics: [foo]\nsteps: [{fetch: {follower: 2, partition: 3}}]", "partition 3 does not"),
    ("topics: [foo]\nsteps: [{consumer: {name: c, partitions: [foo-9]}}]", "'foo-9' does not"),
    ("topics: [foo]\nexpect: {partitions: {bar-0: {leader: 1}}}", "expect: partition 'bar-0'"),
    ("topics: [foo]\nexpect: {lso: {demo-0: 0}}", "partitions are foo-0;"),
]


@pytest.mark.parametrize(("lines", "message"), BAD_TOPICS)
def test_bad_topics_are_refused_with_one_clear_line(lines: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as err:
        scenarios.parse(f"name: bad\nbrokers: 3\n{lines}\n")
    assert "\n" not in str(err.value)


def test_bad_topics_exit_with_code_2_and_one_line(tmp_path, capsys) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nbrokers: 2\ntopics: {foo: 1, bar: {partitions: -1}}\n")
    assert main(["scenario", "run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "topics[bar].partitions=-1 is not allowed" in err and len(err.splitlines()) == 1


def test_cluster_checks_topics_eagerly() -> None:
    from kafkalab.errors import ConfigError

    with pytest.raises(ConfigError, match="topic='bar' is not allowed with topics"):
        Cluster(3, topics=["foo"], topic="bar")
    with pytest.raises(ConfigError, match="partitions, replicas and leader describe the one"):
        Cluster(3, topics=["foo"], partitions=2)
    c = Cluster(3, topics=["foo", "bar"])
    with pytest.raises(ActionError, match="a topic-level setting needs a cluster with one topic"):
        c.set_config({"min.insync.replicas": 2}, topic="bar")
    with pytest.raises(ActionError, match="topic 'baz' does not exist: topics are 'foo', 'bar'"):
        c.set_config({"min.insync.replicas": 2}, topic="baz")
    with pytest.raises(ActionError, match="partition 'baz-0' does not exist"):
        c.produce("x", partition="baz-0")


def test_topics_are_documented() -> None:
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Scenario files", 1)[1].split("\n## ", 1)[0]
    for word in ("`topics`", '"topic-N"'):
        assert word in section, word
    example = section.split("```yaml\ntopics:", 1)[1].split("```", 1)[0]
    _ok("name: readme\nbrokers: 3\ntopics:" + example)
