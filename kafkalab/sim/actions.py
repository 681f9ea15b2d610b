"""The step vocabulary, declared once: every action a scenario step, the explorer, a timed fault
schedule or :meth:`Cluster.at` can ask a cluster for.

Each :class:`Action` says how a scenario file writes it (the scalar shorthand, a list, or a
mapping of its parameters), how its arguments are checked, which :class:`Cluster` method runs it,
where else it may be used (the explorer's menu, a timed fault schedule, ``Cluster.at``) and what
it does in one line. Scenario parsing, ``apply_step``, the explorer's ``ACTIONS``, the timed
``FAULT_ACTIONS``, ``Cluster.at``'s ``STEP_METHODS`` and the README's step table all read this
registry, so a new step kind is one declaration here plus its Cluster method.

``python -m kafkalab.sim.actions --markdown`` prints the README's step table.

This module imports no simulator code at load time (the cluster imports it); the few checks that
need the cluster's own tables import them when they run.
"""

from __future__ import annotations

import sys

from kafkalab.sim.action_kinds import (  # noqa: F401  (re-exported)
    REGISTRY,
    Action,
    ActionView,
    Param,
    _acks,
    _alter_partition_answers,
    _alter_partition_errors,
    _check_now,
    _client_settings,
    _expect_block,
    _groups,
    _has_value,
    _listed,
    _make_client,
    _no_argument,
    _one_of,
    _set_settings,
    _shorthand_or_mapping,
    _whole,
    apply,
    check_expect_keys,
    expect_keys,
    parse_acks,
    parse_args,
    register,
)

if __name__ == "__main__":
    # ``python -m`` runs this file a second time, after importing kafkalab has already run it as
    # kafkalab.sim.actions: print the table of that module, before this copy declares every
    # action again.
    from kafkalab.sim import actions as _imported

    raise SystemExit(_imported._main(sys.argv[1:]))

__all__ = [
    "REGISTRY",
    "Action",
    "ActionView",
    "Param",
    "apply",
    "check_expect_keys",
    "expect_keys",
    "markdown_table",
    "parse_acks",
    "parse_args",
    "register",
]


def _election_type(name: str, value: object) -> None:
    from kafkalab.sim.elections import election_type

    election_type(value)


# ---- the vocabulary -------------------------------------------------------------------------

_BROKER = Param("broker", required=True, broker=True)
_NODE_OR_BROKER = Param("broker", required=True, broker=True, node_name=True)
_PRODUCER = Param("producer", required=True)
_CONSUMER = Param("consumer", required=True)
_NODE = Param("node", required=True)
_TWO_NODES = (Param("a", required=True), Param("b", required=True))

for _action in (
    Action(
        "produce",
        "send records to the partition's leader; `to` sends to one broker whatever the metadata "
        "says (stale metadata), `request`/`response: lost` lose one message",
        "`produce: m1`",
        (
            Param("value"),
            Param("values"),
            Param("count"),
            Param("acks", check=_acks),
            Param("producer"),
            Param("partition"),
            Param("to"),
            Param("producer_id"),
            Param("producer_epoch"),
            Param("sequence"),
            Param("response"),
            Param("request"),
            Param("delay_ms"),
        ),
        scalar="value",
        check=_has_value,
        explorer=True,
    ),
    Action(
        "producer",
        "create a named producer client with Kafka's producer settings",
        "`producer: {name: p1, transactional.id: t1}`",
        (Param("settings", required=True),),
        parse=_client_settings,
        call=lambda cluster, args: _make_client(cluster, args, "producer"),
    ),
    Action(
        "consumer",
        "create a named consumer with Kafka's consumer settings (`group.id`, "
        "`isolation.level`, ...) and optionally its `partitions`",
        "`consumer: {name: c1, group.id: g1}`",
        (Param("settings", required=True),),
        parse=_client_settings,
        call=lambda cluster, args: _make_client(cluster, args, "consumer"),
    ),
    Action("begin", "beginTransaction", "`begin: p1`", (_PRODUCER,), scalar="producer"),
    Action("commit", "commitTransaction", "`commit: p1`", (_PRODUCER,), scalar="producer"),
    Action("abort", "abortTransaction", "`abort: p1`", (_PRODUCER,), scalar="producer"),
    Action(
        "send_offsets",
        "sendOffsetsToTransaction: a consumer's position (or `offsets` for `group`) is "
        "committed with the producer's transaction",
        "`send_offsets: {producer: p1, consumer: c1}`",
        (_PRODUCER, Param("consumer"), Param("group"), Param("offsets")),
        usage="give the producer and a consumer (or a group and offsets), like "
        "{producer: p1, consumer: c1}",
    ),
    Action(
        "poll",
        "the consumer fetches and hands the records to the application (processed at once "
        "unless `process: false`)",
        "`poll: c1`",
        (_CONSUMER, Param("process", coerce=bool)),
        scalar="consumer",
    ),
    Action(
        "process",
        "the application processes what earlier polls returned",
        "`process: c1`",
        (_CONSUMER,),
        scalar="consumer",
    ),
    Action(
        "commit_offsets",
        "commitSync: the consumer's position goes to its group coordinator",
        "`commit_offsets: c1`",
        (_CONSUMER,),
        scalar="consumer",
    ),
    Action(
        "fetch",
        "a follower fetches from the leader (`response: lost` or `delayed`); a fetch that "
        "finds nothing new waits in purgatory up to `max_wait_ms`",
        "`fetch: 1`",
        (
            Param("follower", required=True, broker=True),
            Param("response"),
            Param("delay_ms"),
            Param("partition"),
            Param("max_wait_ms"),
        ),
        scalar="follower",
        explorer=True,
    ),
    Action(
        "sync",
        "the followers fetch, round after round, until a round changes no replica: "
        "replication with no new records and a healthy network",
        "`sync`",
        (Param("partition"),),
        scalar="partition",
        explorer=True,
    ),
    Action(
        "stop",
        "a clean, controlled shutdown of a broker",
        "`stop: 2`",
        (_BROKER,),
        scalar="broker",
        explorer=True,
        fault=True,
    ),
    Action(
        "pause",
        "a node stalls, as in a long GC pause",
        "`pause: 2`",
        (_NODE,),
        scalar="node",
        explorer=True,
        fault=True,
    ),
    Action(
        "resume",
        "a paused node runs again, and runs what waited",
        "`resume: 2`",
        (_NODE,),
        scalar="node",
        explorer=True,
        fault=True,
    ),
    Action(
        "elect_preferred",
        "the controller moves leadership back to the preferred replicas (of one `partition`, "
        "or of all)",
        "`elect_preferred`",
        (Param("partition"),),
        scalar="partition",
        explorer=True,
    ),
    Action(
        "elect_leaders",
        "an operator's ElectLeaders request (`election_type` preferred or unclean; of one "
        "`partition`, or of all): the controller's answer is the trace's elect_leaders_result",
        "`elect_leaders: unclean`",
        (Param("election_type", required=True, check=_election_type), Param("partition")),
        scalar="election_type",
        fault=True,
    ),
    Action(
        "crash",
        "a broker (or a KRaft controller node) crashes; `lose_unflushed` loses what it had "
        "not flushed",
        "`crash: 1`",
        (_NODE_OR_BROKER, Param("lose_unflushed", coerce=bool)),
        scalar="broker",
        explorer=True,
        fault=True,
    ),
    Action(
        "restart",
        "a crashed broker (or node) starts again from its disk",
        "`restart: 1`",
        (_NODE_OR_BROKER,),
        scalar="broker",
        explorer=True,
        fault=True,
    ),
    Action(
        "flush",
        "a broker writes its log to disk (not its HW checkpoint)",
        "`flush: 1`",
        (_BROKER,),
        scalar="broker",
        explorer=True,
    ),
    Action(
        "checkpoint",
        "a broker's periodic task writes every HW to its HW checkpoint file now",
        "`checkpoint: 1`",
        (_BROKER,),
        scalar="broker",
        explorer=True,
        call=lambda cluster, args: cluster._brokers.checkpoint(args["broker"]),
    ),
    Action(
        "advance",
        "let `ms` of simulated time pass: due timers fire",
        "`advance: 6000`",
        (Param("ms", required=True, check=_whole(0)),),
        scalar="ms",
        explorer=True,
    ),
    Action(
        "disconnect",
        "cut the link between two nodes (broker ids, `zk`, `client`)",
        "`disconnect: [1, zk]`",
        _TWO_NODES,
        listed=True,
        usage="give two nodes, like [1, zk]",
        explorer=True,
        fault=True,
    ),
    Action(
        "reconnect",
        "restore the link between two nodes",
        "`reconnect: [1, zk]`",
        _TWO_NODES,
        listed=True,
        usage="give two nodes, like [1, zk]",
        explorer=True,
        fault=True,
    ),
    Action(
        "throttle",
        "slow the link between two nodes to megabytes per second (null: full speed)",
        "`throttle: [1, 2, 1.5]`",
        (*_TWO_NODES, Param("mb_per_s", required=True)),
        listed=True,
        usage="give two nodes and megabytes per second (null: full speed), like [1, 2, 1.5]",
        fault=True,
    ),
    Action(
        "partition",
        "split the nodes into groups that cannot reach each other",
        "`partition: [[1], [2, 3, zk]]`",
        (Param("groups", required=True),),
        scalar="groups",
        check=_groups,
        usage="give two or more groups, like [[1], [2, zk]]",
        fault=True,
    ),
    Action(
        "heal",
        "restore every network link",
        "`heal`",
        parse=_no_argument,
        explorer=True,
        fault=True,
    ),
    Action(
        "set",
        "change settings while the cluster runs (IncrementalAlterConfigs): for every broker, "
        "one `broker` or one `topic`",
        "`set: {min.insync.replicas: 2}`",
        (Param("settings", required=True), Param("broker", broker=True), Param("topic")),
        method="set_config",
        parse=_set_settings,
        usage="give settings, like {unclean.leader.election.enable: true} "
        "(optionally with broker: N or topic: NAME)",
        timed=False,
    ),
    Action(
        "delete_records",
        "DeleteRecords: the leader moves its log start offset to `offset` (-1: the HW)",
        "`delete_records: 2`",
        (Param("offset", required=True, check=_whole(-1)), Param("partition")),
        scalar="offset",
        timed=False,
    ),
    Action(
        "alter_partition",
        "what becomes of the leader's next ISR change: `delayed`, `lost` or `refused` with `error`",
        "`alter_partition: lost`",
        (
            Param("answer", required=True, check=_one_of(_alter_partition_answers)),
            Param("partition"),
            Param("delay_ms", check=_whole(0)),
            Param("error", check=_one_of(_alter_partition_errors)),
        ),
        scalar="answer",
        timed=False,
    ),
    Action(
        "check",
        "test expect keys on the way",
        "`check: {leader: 2}`",
        (Param("expect"),),
        parse=_expect_block,
        call=_check_now,
        timed=False,
    ),
):
    register(_action)


# ---- the README's step table ----------------------------------------------------------------


def markdown_table() -> str:
    """The step table of the README, from the registry."""
    rows = [
        "| Step | Written as | Keys | Fault schedule | What it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    for a in REGISTRY.values():
        # A list or a custom form shows its shape in the example, not as keys.
        shown = a.parse is None and not a.listed
        keys = ", ".join(f"`{n}`" for n in a.param_names) if shown else ""
        cells = [f"`{a.name}`", a.example, keys, "yes" if a.fault else "", a.doc]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def _main(argv: list[str]) -> int:
    if argv != ["--markdown"]:
        print("usage: python -m kafkalab.sim.actions --markdown", file=sys.stderr)
        return 2
    sys.stdout.write(markdown_table())
    return 0
