"""Unit tests of the event loop and network, and of run determinism."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest

from kafkalab.protocol import kraft_messages as km
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Connect, Connected, ConnectionClosed, Context
from kafkalab.sim.engine import Simulation, channel, draw_between
from kafkalab.sim.timed import Fault, Workload, simulate


@dataclass(frozen=True)
class Ping:
    n: int


@dataclass(frozen=True)
class Pong:
    n: int


class Recorder:
    """An actor that remembers what it received and which timers fired; it can set timers at
    start and send on command."""

    def __init__(self, timers: tuple[tuple[int, str], ...] = ()) -> None:
        self.timers = timers
        self.received: list[tuple[int, Any, Any]] = []
        self.fired: list[tuple[int, str]] = []

    def start(self, ctx: Context) -> None:
        for delay, name in self.timers:
            ctx.set_timer(delay, name)

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if src == "local":  # a command: send msg = (dst, payload)
            ctx.send(*msg)
        else:
            self.received.append((ctx.now, src, msg))

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        self.fired.append((ctx.now, name))


def two_actors(**kwargs: Any) -> tuple[Simulation, Recorder, Recorder]:
    sim = Simulation(seed=kwargs.pop("seed", 1), **kwargs)
    a, b = Recorder(), Recorder()
    sim.add("a", a, "host-a")
    sim.add("b", b, "host-b")
    return sim, a, b


def drops(sim: Simulation) -> list[tuple[Any, str]]:
    return [(e.data["msg"], e.data["reason"]) for e in sim.trace.of_kind("drop")]


# ---- the loop ------------------------------------------------------------------------------


def test_events_run_in_time_order_and_in_scheduling_order_at_equal_times():
    sim = Simulation(seed=0)
    order: list[str] = []
    for t, name in [(5, "five-a"), (1, "one"), (5, "five-b"), (3, "three"), (5, "five-c")]:
        sim.call_at(t, order.append, name)
    sim.run_until(10)
    assert order == ["one", "three", "five-a", "five-b", "five-c"]
    assert sim.now == 10


def test_run_until_stops_at_the_given_time_and_leaves_later_events():
    sim = Simulation(seed=0)
    order: list[int] = []
    for t in (1, 2, 3):
        sim.call_at(t, order.append, t)
    sim.run_until(2)
    assert order == [1, 2]
    assert sim.now == 2
    assert sim.pending() == 1
    sim.run_until(3)
    assert order == [1, 2, 3]


def test_a_call_scheduled_in_the_past_runs_now():
    sim = Simulation(seed=0)
    sim.run_until(100)
    seen: list[int] = []
    sim.call_at(5, lambda: seen.append(sim.now))
    sim.run_until(100)
    assert seen == [100]


def test_calls_and_timers_interleave_as_one_queue_in_time_then_scheduling_order():
    """Scheduled calls wait beside the heap of deliveries and timers; the loop must still run
    everything in (time, scheduling order), including a call scheduled by a running call for
    the same instant and one scheduled out of order among calls already waiting."""
    sim, a, _ = two_actors()
    order: list[str] = []
    sim.observers.append(lambda e: order.append(f"{e.kind}@{e.time_ms}"))

    def chain() -> None:
        order.append(f"chain@{sim.now}")
        sim.call_at(sim.now, lambda: order.append(f"same-instant@{sim.now}"))

    sim.call_at(10, lambda: order.append("call@10"))
    sim.call_at(30, lambda: order.append("call@30"))
    sim.call_at(20, chain)  # out of order: inserted between the two waiting calls
    sim.call_at(20, sim.command, "a", ("b", Ping(1)))  # a send at 20: its delivery too
    assert sim.pending() == 4
    sim.run_until(25)
    # the command was scheduled before the chain ran, the delivery when the command sent
    assert order == ["call@10", "chain@20", "send@20", "same-instant@20", "deliver@20"]
    assert sim.pending() == 1
    sim.run_until(40)
    assert order[-1] == "call@30" and sim.pending() == 0


def test_many_calls_keep_their_order_when_the_run_forgets_those_already_made():
    sim = Simulation(seed=0)
    seen: list[int] = []
    for t in range(10_000):
        sim.call_at(t, seen.append, t)
    sim.call_at(9_000, seen.append, -1)  # waits behind the call already at 9000
    sim.run_until(10_000)
    assert seen == [*range(9_001), -1, *range(9_001, 10_000)]
    assert sim.pending() == 0 and sim.dispatched[2] == 10_001


def test_trace_events_have_increasing_sequence_numbers_and_times():
    sim, _, _ = two_actors(latency_ms=(1, 20))
    for n in range(5):
        sim.call_at(n * 3, sim.command, "a", ("b", Ping(n)))
    sim.run_until(200)
    seqs = [e.seq for e in sim.trace]
    times = [e.time_ms for e in sim.trace]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert times == sorted(times)


def test_timers_fire_after_their_delay():
    sim = Simulation(seed=0)
    actor = Recorder(timers=((30, "late"), (10, "early")))
    sim.add("a", actor, "h")
    sim.run_until(100)
    assert actor.fired == [(10, "early"), (30, "late")]


def test_timers_of_a_stopped_incarnation_never_fire():
    sim = Simulation(seed=0)
    old = Recorder(timers=((10, "old"),))
    sim.add("a", old, "h")
    sim.run_until(5)
    sim.remove("a")
    new = Recorder(timers=((20, "new"),))
    sim.add("a", new, "h")  # same address, new incarnation, before the old timer was due
    sim.run_until(100)
    assert old.fired == []
    assert new.fired == [(25, "new")]


def test_messages_in_flight_to_a_stopped_actor_are_dropped():
    sim, _, b = two_actors(latency_ms=(10, 10))
    sim.command("a", ("b", Ping(1)))
    sim.remove("b")
    sim.add("b", b, "host-b")  # restarted before the message arrives: still lost
    sim.run_until(100)
    assert b.received == []
    assert drops(sim) == [(Ping(1), "not_running")]


# ---- the network ---------------------------------------------------------------------------


def test_a_message_on_a_cut_link_is_dropped_with_reason_link_cut():
    sim, _, b = two_actors()
    sim.set_link("host-a", "host-b", False)
    assert not sim.link_up("a", "b")
    sim.command("a", ("b", Ping(1)))
    sim.run_until(100)
    assert b.received == []
    assert drops(sim) == [(Ping(1), "link_cut")]

    sim.set_link("host-a", "host-b", True)
    sim.command("a", ("b", Ping(2)))
    sim.run_until(200)
    assert [msg for _, _, msg in b.received] == [Ping(2)]


def test_a_message_in_flight_when_the_link_is_cut_is_dropped():
    sim, _, b = two_actors(latency_ms=(10, 10))
    sim.command("a", ("b", Ping(1)))
    sim.call_at(5, sim.set_link, "host-a", "host-b", False)
    sim.run_until(100)
    assert b.received == []
    assert drops(sim) == [(Ping(1), "link_cut")]


def test_a_cut_link_between_other_hosts_does_not_matter():
    sim, _, b = two_actors()
    sim.set_link("host-a", "host-c", False)
    sim.command("a", ("b", Ping(1)))
    sim.run_until(100)
    assert [msg for _, _, msg in b.received] == [Ping(1)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_link_is_fifo_even_with_random_latency(seed: int):
    sim, _, b = two_actors(seed=seed, latency_ms=(1, 50))
    for n in range(40):
        sim.call_at(n // 4, sim.command, "a", ("b", Ping(n)))
    sim.run_until(1000)
    assert [msg.n for _, _, msg in b.received] == list(range(40))
    arrivals = [t for t, _, _ in b.received]
    assert arrivals == sorted(arrivals)
    # Latencies drawn independently would have reordered these messages.
    rng = random.Random(f"{seed}:network")
    independent = [n // 4 + rng.randint(1, 50) for n in range(40)]
    assert independent != sorted(independent)


def test_latency_is_drawn_within_its_bounds():
    sim, _, b = two_actors(latency_ms=(7, 9))
    sim.command("a", ("b", Ping(0)))
    sim.run_until(100)
    ((arrival, _, _),) = b.received
    assert 7 <= arrival <= 9


def test_same_host_messages_take_no_time():
    sim = Simulation(seed=0, latency_ms=(10, 20))
    a, b = Recorder(), Recorder()
    sim.add("a", a, "h")
    sim.add("b", b, "h")
    sim.command("a", ("b", Ping(1)))
    sim.run_until(0)
    assert b.received == [(0, "a", Ping(1))]


class Client(Recorder):
    """A Recorder that manages its connections, as Kafka's NetworkClient does: on command
    ("disconnect", peer) it closes them; the broker reads its requests one at a time."""

    manages_connections = True
    one_request_at_a_time = True

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if src == "local" and msg[0] == "disconnect":
            ctx.disconnect(msg[1])
            return
        super().handle(ctx, src, msg)


def test_a_lost_request_breaks_its_connection_until_the_client_closes_it():
    """SocketServer.Processor (3.7.0) mutes a connection from reading a request until its
    response is sent, and TCP never drops one request and delivers the next: once a request is
    lost, the ones after it on the same connection are lost too, in both directions, however
    late, until the client closes the connection (NetworkClient.handleTimedOutRequests) and
    opens a new one."""
    sim = Simulation(seed=1)
    client, broker = Client(), Recorder()
    sim.add("p", client, "client")
    sim.add(1, broker, 1)
    sim.add_rule("p", 1, (Ping,), None)
    sim.command("p", (1, Ping(1)))  # lost
    sim.command("p", (1, Ping(2)))
    sim.run_until(500)
    sim.command("p", (1, Ping(3)))  # later, still the broken connection
    sim.command(1, ("p", Pong(3)))  # the other direction too
    sim.run_until(1000)
    assert broker.received == [] and client.received == []
    sim.command("p", ("disconnect", 1))
    sim.command("p", (1, Ping(4)))
    sim.run_until(1500)
    assert [msg for _, _, msg in broker.received] == [Ping(4)]
    assert [reason for _, reason in drops(sim)] == ["lost"] + ["connection_broken"] * 3


def test_a_cut_link_breaks_the_connections_in_flight():
    """A message cut off in flight breaks its connection: what follows it is lost even after the
    link heals, until a new connection; messages sent before it still arrive."""
    sim = Simulation(seed=1, latency_ms=(10, 10))
    client, broker = Client(), Recorder()
    sim.add("p", client, "client")
    sim.add(1, broker, 1)
    sim.command("p", (1, Ping(1)))
    sim.run_until(5)
    sim.command("p", (1, Ping(2)))  # in flight when the link is cut
    sim.run_until(12)
    sim.set_link("client", 1, False)
    sim.run_until(20)
    sim.set_link("client", 1, True)
    sim.command("p", (1, Ping(3)))
    sim.run_until(100)
    assert [msg for _, _, msg in broker.received] == [Ping(1)]
    assert drops(sim) == [(Ping(2), "link_cut"), (Ping(3), "connection_broken")]


def test_actors_that_do_not_manage_connections_reconnect_on_a_later_send():
    """Between brokers (no client connection state here) what the same handler sends after a
    lost message is lost with it; a later handler run (a timer, a message, a step) opens a new
    connection: each resends on its own."""

    class Burst(Recorder):
        def handle(self, ctx: Context, src: Any, msg: Any) -> None:
            if src == "local" and msg == "burst":
                ctx.send("b", Ping(1))
                ctx.send("b", Ping(2))
                return
            super().handle(ctx, src, msg)

    sim = Simulation(seed=1)
    a, b = Burst(), Recorder()
    sim.add("a", a, "host-a")
    sim.add("b", b, "host-b")
    sim.add_rule("a", "b", (Ping,), None)
    sim.command("a", "burst")  # Ping(1) is lost, Ping(2) behind it on the same connection
    sim.command("a", ("b", Ping(3)))  # the next step: a new connection
    sim.run_until(10)
    assert [msg for _, _, msg in b.received] == [Ping(3)]
    assert drops(sim) == [(Ping(1), "lost"), (Ping(2), "connection_broken")]


def test_a_broker_reads_a_clients_next_request_once_it_has_answered_the_last():
    """SocketServer.Processor (0.8.2.2: OP_READ off after a request; 3.7.0: selector.mute on
    REQUEST_RECEIVED, unmute on RESPONSE_SENT): a request waiting for its answer (in purgatory)
    holds the next one on the same connection unread, so answers come back in order; a produce
    with acks=0 has no answer and holds nothing; another client's connection is not held."""
    sim = Simulation(seed=1)
    client, other, broker = Client(), Client(), Recorder()
    sim.add("p", client, "client")
    sim.add("q", other, "client")
    sim.add(1, broker, 1)
    first, second = m.MetadataRequest(), m.InitProducerIdRequest()
    sim.command("p", (1, first))
    sim.command("p", (1, second))
    sim.command("q", (1, m.MetadataRequest()))
    sim.run_until(10)
    assert [(src, msg) for _, src, msg in broker.received] == [("p", first), ("q", first)]
    sim.command(1, ("p", m.MetadataResponse(())))
    sim.run_until(20)
    assert [msg for _, _, msg in broker.received][2:] == [second]
    sim.command(1, ("p", m.InitProducerIdResponse(1, 0)))
    fire_and_forget = m.ProduceRequest("t-0", 1, ("v",), 0, 1)
    sim.command("p", (1, fire_and_forget))
    sim.command("p", (1, m.MetadataRequest()))
    sim.run_until(30)
    assert [msg for _, _, msg in broker.received][3:] == [fire_and_forget, first]


def test_named_channels_do_not_hold_each_other_up():
    """A broker reaches the controller over separate connections for heartbeats
    (BrokerLifecycleManager) and for AlterPartition (its own channel manager): a delay on one
    holds nothing on the other, while each stays in order."""
    assert channel(km.BrokerHeartbeat(1, 1)) == "broker_lifecycle"
    assert channel(m.AlterIsr("t-0", 1, 0, 0, (1,))) == "alter_partition"
    assert channel(m.MetadataRequest()) == channel(m.ProduceRequest("t-0", 1, ("v",), -1, 1))
    sim, a, b = two_actors()
    alter = m.AlterIsr("t-0", 1, 0, 0, (1,))
    sim.add_rule("a", "b", (m.AlterIsr,), 100)
    sim.command("a", ("b", alter))
    sim.command("a", ("b", km.BrokerHeartbeat(1, 1)))
    sim.command("a", ("b", m.AlterIsr("t-0", 1, 0, 1, (1, 2))))
    sim.run_until(200)
    got = [(t, msg) for t, _, msg in b.received]
    assert got[0] == (0, km.BrokerHeartbeat(1, 1))
    assert got[1:] == [(100, alter), (100, m.AlterIsr("t-0", 1, 0, 1, (1, 2)))]


def test_a_connection_attempt_is_answered_over_a_working_link_only():
    """Connect is the TCP handshake: answered Connected over a working link, silent over a cut
    one (the client waits for socket.connection.setup.timeout.ms)."""
    sim = Simulation(seed=1)
    client, broker = Client(), Recorder()
    sim.add("p", client, "client")
    sim.add(1, broker, 1)
    sim.command("p", (1, Connect(1)))
    sim.run_until(0)
    sim.set_link("client", 1, False)
    sim.command("p", (1, Connect(1)))
    sim.run_until(10)
    assert [msg for _, _, msg in client.received] == [Connected(1)]
    assert broker.received == []


def test_a_one_shot_drop_rule_loses_only_the_next_matching_message():
    """The rule is used up by Ping(1). Between actors that do not manage their connections, a
    later handler run's message, Ping(2), goes on a new connection."""
    sim, a, b = two_actors()
    sim.add_rule("a", "b", (Ping,), None)
    sim.command("a", ("b", Pong(0)))  # another type: not matched
    sim.command("b", ("a", Ping(0)))  # the other direction: not matched
    sim.command("a", ("b", Ping(1)))  # lost
    sim.command("a", ("b", Ping(2)))  # the rule is used up
    sim.run_until(100)
    assert [msg for _, _, msg in b.received] == [Pong(0), Ping(2)]
    assert [msg for _, _, msg in a.received] == [Ping(0)]
    assert drops(sim) == [(Ping(1), "lost")]


def test_a_one_shot_delay_rule_delays_one_message_and_keeps_the_link_fifo():
    sim, _, b = two_actors()
    sim.add_rule("a", "b", (Ping,), 50)
    sim.command("a", ("b", Ping(1)))
    sim.command("a", ("b", Ping(2)))
    sim.run_until(100)
    assert b.received == [(50, "a", Ping(1)), (50, "a", Ping(2))]


def test_named_streams_are_reproducible_and_independent():
    one, two = Simulation(seed=7), Simulation(seed=7)
    assert one.stream("faults").random() == two.stream("faults").random()
    assert one.stream("faults").random() != one.stream("workload").random()
    assert Simulation(seed=8).stream("faults").random() != two.stream("faults").random()


# ---- determinism of whole runs -------------------------------------------------------------


def timed_run(seed: int):
    faults = [
        Fault(2000, "crash", (1,)),
        Fault(6000, "restart", (1,)),
        Fault(4000, "disconnect", (2, "zk")),
        Fault(9000, "reconnect", (2, "zk")),
    ]
    return simulate(
        {"zookeeper.session.timeout.ms": 3000},
        seed=seed,
        duration_ms=12_000,
        settle_ms=8_000,
        workload=Workload(interval_ms=50),
        faults=faults,
        latency_ms=(1, 20),
        trace_messages=True,
        keep_cluster=True,
    )


def test_the_same_seed_gives_the_same_trace_byte_for_byte():
    first, c1 = timed_run(seed=11)
    second, c2 = timed_run(seed=11)
    assert c1.trace.of_kind("deliver")  # messages were traced
    assert c1.trace.to_jsonl() == c2.trace.to_jsonl()
    assert c1.trace.digest() == c2.trace.digest()
    assert first == second


def test_a_different_seed_gives_a_different_trace():
    _, c1 = timed_run(seed=11)
    _, c2 = timed_run(seed=12)
    assert c1.trace.to_jsonl() != c2.trace.to_jsonl()
    assert c1.trace.digest() != c2.trace.digest()


def test_random_fault_schedules_are_a_function_of_the_seed():
    a = simulate(seed=3, duration_ms=20_000, settle_ms=5_000)
    b = simulate(seed=3, duration_ms=20_000, settle_ms=5_000)
    assert a.faults > 0
    assert a == b


def test_every_emitted_event_kind_is_documented() -> None:
    """EVENT_KINDS is the trace's catalogue: readers (plots, graders, datasets) rely on it."""
    import pathlib
    import re

    from kafkalab.sim.trace import EVENT_KINDS

    pattern = re.compile(
        r'(?:ctx\.emit|self\._emit|self\.sim\.record|self\.record)\(\s*"([a-z_]+)"'
    )
    emitted: set[str] = set()
    for path in pathlib.Path(__file__).parents[1].joinpath("kafkalab").rglob("*.py"):
        emitted |= set(pattern.findall(path.read_text()))
    assert emitted and emitted <= set(EVENT_KINDS), sorted(emitted - set(EVENT_KINDS))


def test_latency_draws_are_the_ones_randint_gives() -> None:
    """The engine draws latencies from a stream's bits itself (draw_between); on this Python
    the values are randint's, so traces recorded with randint stay byte for byte the same."""
    bounds = random.Random(7)
    ours, theirs = random.Random("0:network"), random.Random("0:network")
    for _ in range(5000):
        lo = bounds.randrange(0, 50)
        hi = lo + bounds.choice([0, 1, 2, 3, 4, 7, 8, 15, 16, 100, 1023, 1024])
        assert draw_between(ours.getrandbits, lo, hi) == theirs.randint(lo, hi), (lo, hi)
    assert ours.getstate() == theirs.getstate()


def test_release_empties_a_finished_run_so_reference_counting_frees_it() -> None:
    import gc

    from kafkalab.sim.timed import simulate

    result, cluster = simulate(seed=3, duration_ms=2000, settle_ms=1000, keep_cluster=True)
    assert len(cluster.trace) > 0 and result.acked > 0
    cluster.release()
    assert len(cluster.trace) == 0 and cluster.sim.pending() == 0
    assert all(log == [] for log in cluster.logs().values())
    # What a released run leaves to the cyclic collector is its skeleton, not its records:
    # a fraction of what the same run leaves unreleased.
    left = {}
    gc.collect()
    gc.disable()
    try:
        for release in (False, True):
            _, again = simulate(seed=3, duration_ms=2000, settle_ms=1000, keep_cluster=True)
            if release:
                again.release()
            del again
            left[release] = gc.collect()
    finally:
        gc.enable()
    assert left[True] * 3 < left[False], left


# ---- a process that dies resets its connections -------------------------------------------------


class Waiter(Recorder):
    """A Recorder that awaits an answer from "b"."""

    def awaits_answer_from(self, peer: Any) -> bool:
        return peer == "b"


def _waiter_and_b(**kwargs: Any) -> tuple[Simulation, Waiter]:
    sim = Simulation(seed=1, latency_ms=(3, 3), **kwargs)
    a = Waiter()
    sim.add("a", a, "host-a")
    sim.add("b", Recorder(), "host-b")
    return sim, a


def _closed(a: Recorder) -> list[tuple[int, Any]]:
    return [(t, msg.at_ms) for t, _, msg in a.received if isinstance(msg, ConnectionClosed)]


def test_a_crashed_process_resets_the_connections_of_those_awaiting_it() -> None:
    """The host stays up: the waiter hears at once (one latency later), and a request it sends
    afterwards is refused the same way; a power loss tells nobody anything."""
    sim, a = _waiter_and_b()
    sim.run_until(10)
    sim.remove("b", host_up=True)
    sim.run_until(20)
    assert _closed(a) == [(13, 10)]
    sim.command("a", ("b", Ping(1)))
    sim.run_until(40)
    assert _closed(a)[1:] == [(26, 23)]
    assert ("Ping(n=1)", "refused") in [(repr(m), r) for m, r in drops(sim)]
    sim, a = _waiter_and_b()
    sim.remove("b")
    sim.command("a", ("b", Ping(1)))
    sim.run_until(40)
    assert _closed(a) == []


def test_a_reset_does_not_cross_a_cut_link() -> None:
    sim, a = _waiter_and_b()
    sim.set_link("host-a", "host-b", False)
    sim.remove("b", host_up=True)
    sim.run_until(40)
    assert _closed(a) == []


def test_a_refused_connection_is_told_apart_from_a_reset() -> None:
    """A request in flight when the process died was sent; one that reaches the dead process
    later tried a new connection, which was refused, so it never left."""
    sim, a = _waiter_and_b()
    sim.run_until(10)
    sim.remove("b", host_up=True)
    sim.command("a", ("b", Ping(1)))
    sim.run_until(40)
    closed = [msg for _, _, msg in a.received if isinstance(msg, ConnectionClosed)]
    assert [msg.refused for msg in closed] == [False, True]
