"""The producer client's retries, one actor at a time: in-sequence retries of an idempotent
producer (KAFKA-5494, 1.0), the exponential retry backoff (KIP-580, 3.7), the retry to a new
leader without backoff (KAFKA-15415, 3.6.1/3.7.0), and the connection a request timeout closes
(NetworkClient.handleTimedOutRequests) with its setup timeout (KIP-601, 2.7)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from kafkalab import Cluster, make_config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Connect, Connected, Context
from kafkalab.protocol.client import KafkaProducer, ProduceCommand, ProducerSettings
from kafkalab.protocol.client_retry import retry_backoff_ms

TP = "t-0"


class Driver:
    """Hands one KafkaProducer its messages and timers at given times and keeps what it asks."""

    def __init__(self, draws: Iterator[int] | None = None, **settings: Any) -> None:
        self.p = KafkaProducer("p", ProducerSettings(**settings), (1, 2), backoff_draws=draws)
        self.sends: list[tuple[int, Any, Any]] = []
        self.timers: list[tuple[int, str]] = []
        self.events: list[tuple[int, str, dict[str, Any]]] = []
        self.disconnects: list[tuple[int, Any]] = []
        self._run(0, self.p.start)
        if self.p.settings.enable_idempotence:
            self.deliver(0, 1, m.InitProducerIdResponse(7, 0))
        self.deliver(0, 1, m.MetadataResponse(((TP, 1),)))

    def _run(self, now: int, fn: Any, *args: Any) -> None:
        ctx = Context(now, "p")
        fn(ctx, *args)
        self.sends += [(now, dst, msg) for dst, msg, _ in ctx.sends]
        self.timers += [(now + delay, name) for delay, name, _ in ctx.timers]
        self.events += [(now, kind, data) for kind, data in ctx.events]
        self.disconnects += [(now, peer) for peer in ctx.disconnects]

    def deliver(self, now: int, src: Any, msg: Any) -> None:
        self._run(now, self.p.handle, src, msg)

    def produce(self, now: int, value: str) -> m.ProduceRequest:
        self.deliver(now, "local", ProduceCommand(TP, (value,)))
        return self.produced()[-1]

    def fire(self, now: int) -> None:
        """Fire every timer due by ``now``, in time order."""
        while due := sorted(t for t in self.timers if t[0] <= now):
            self.timers.remove(due[0])
            self._run(due[0][0], self.p.on_timer, due[0][1], None)

    def produced(self, since: int = 0) -> list[m.ProduceRequest]:
        return [msg for t, _, msg in self.sends if isinstance(msg, m.ProduceRequest) and t >= since]

    def answer(self, now: int, req: m.ProduceRequest, error: str, offset: int = -1) -> None:
        self.deliver(now, 1, m.ProduceResponse(TP, req.correlation_id, error, offset))


# ---- KAFKA-5494 (1.0): a retried batch waits for the earlier ones ---------------------------


def test_a_retried_batch_waits_until_the_earlier_batch_is_sent_again_and_answered() -> None:
    """SenderTest.testCorrectHandlingOfOutOfOrderResponses (3.7.0), translated: B is answered
    OUT_OF_ORDER_SEQUENCE_NUMBER while A is in flight; B is not resent while A is unanswered
    (RecordAccumulator.shouldStopDrainBatchesForPartition: only the first sequence in flight may
    be retried, "This effectively reduces our in flight request count to 1"); A's retriable error
    puts it back before B (insertInSequenceOrder); A is resent alone, and B only once A is
    acknowledged."""
    d = Driver(draws=None)
    a = d.produce(0, "A")
    b = d.produce(0, "B")
    assert (a.base_sequence, b.base_sequence) == (0, 1)
    d.answer(5, b, m.OUT_OF_ORDER_SEQUENCE_NUMBER)
    d.fire(2000)
    assert d.produced(since=1) == [], "B waits: A, earlier in sequence, is still in flight"
    d.answer(2000, a, m.NOT_ENOUGH_REPLICAS)
    assert [x.values for x in d.p.queue] == [("A",), ("B",)]
    d.fire(2200)
    (a2,) = d.produced(since=2000)
    assert a2.values == ("A",) and a2.base_sequence == 0
    d.answer(2300, a2, m.NONE, 0)
    d.fire(2300)
    (b2,) = d.produced(since=2300)
    assert b2.values == ("B",) and b2.base_sequence == 1


def test_before_1_0_an_idempotent_producer_has_one_request_in_flight() -> None:
    """0.11 (KafkaProducer.configureInflightRequests): max.in.flight.requests.per.connection is 1
    with idempotence, so B is sent only once A is answered: the reordering cannot start."""
    c = Cluster(brokers=3, replication="auto", config={"preset": "0.11"})
    c.producer("p", **{"enable.idempotence": True})
    assert c.sim.actors["p"].settings.max_in_flight_requests_per_connection == 1
    d = Driver(
        draws=None, max_in_flight_requests_per_connection=1, idempotence_five_in_flight=False
    )
    a = d.produce(0, "A")
    d.produce(0, "B")
    assert d.produced() == [a]


# ---- KIP-580 (3.7): exponential retry backoff with jitter -------------------------------------


def test_the_retry_backoff_doubles_up_to_retry_backoff_max_ms() -> None:
    """ExponentialBackoff.backoff (3.7.0) with RecordAccumulator's retryBackoff: 100 ms x 2 ^
    (attempts - 1), at most retry.backoff.max.ms; the jitter multiplies by [0.8, 1.2) and never
    goes past the ceiling."""
    assert [retry_backoff_ms(100, 1000, n, None) for n in range(1, 7)] == [
        100,
        200,
        400,
        800,
        1000,
        1000,
    ]
    assert retry_backoff_ms(100, 1000, 1, 0) == 80
    assert retry_backoff_ms(100, 1000, 1, 399) == 119
    assert retry_backoff_ms(100, 1000, 6, 399) == 1000
    assert retry_backoff_ms(100, 1000, 6, 0) == 800
    assert retry_backoff_ms(500, 100, 3, 0) == 100, "a ceiling below the start is constant"


def _retry_times(**settings: Any) -> list[int]:
    """When each attempt of a batch answered NOT_ENOUGH_REPLICAS at once is sent."""
    d = Driver(**settings)
    req = d.produce(0, "A")
    times = [0]
    for _ in range(5):
        d.answer(times[-1], req, m.NOT_ENOUGH_REPLICAS)
        d.fire(times[-1] + 5000)
        req = d.produced(since=times[-1] + 1)[0]
        times.append(next(t for t, _, msg in d.sends if msg is req))
    return times


def test_since_3_7_retries_back_off_exponentially_with_jitter_from_the_draws() -> None:
    """RecordAccumulator.shouldBackoff (3.7.0, KIP-580, KAFKA-9800): each wait is drawn anew;
    the draws come from the simulation's seeded stream for this client."""
    assert _retry_times(draws=iter([200] * 10)) == [0, 100, 300, 700, 1500, 2500]
    assert _retry_times(draws=iter([0] * 10)) == [0, 80, 240, 560, 1200, 2000]


def test_before_3_7_every_retry_waits_retry_backoff_ms() -> None:
    """RecordAccumulator.ready (3.6.0): a batch backs off while waitedTimeMs < retryBackoffMs."""
    times = _retry_times(draws=iter([0] * 10), retry_backoff_exponential=False)
    assert times == [0, 100, 200, 300, 400, 500]


def test_the_jitter_is_a_pure_function_of_the_seed() -> None:
    """Two runs with the same seed draw the same backoffs; the draws are the client's own
    stream ("retry-backoff:<name>"), not the network's."""

    def backoffs(seed: int) -> list[int]:
        c = Cluster(brokers=3, replication="auto", seed=seed)
        c.producer("p")
        p = c.sim.actors["p"]
        return [next(p._backoff_draws) for _ in range(5)]

    assert backoffs(3) == backoffs(3) and backoffs(3) != backoffs(4)


# ---- KAFKA-15415 (3.6.1, 3.7.0): no backoff for a retry to a new leader -------------------------


def _resend_time(skip: bool) -> int:
    d = Driver(draws=None, retry_backoff_ms=1000, retry_backoff_skips_new_leader=skip)
    req = d.produce(0, "A")
    d.answer(10, req, m.NOT_LEADER_OR_FOLLOWER)
    d.deliver(20, 2, m.MetadataResponse(((TP, 2),)))  # broker 2 leads now
    d.fire(5000)
    resend = d.produced(since=1)[0]
    assert [dst for _, dst, msg in d.sends if msg is resend] == [2]
    return next(t for t, _, msg in d.sends if msg is resend)


def resend_time_to_a_new_leader(settings: Mapping[str, Any]) -> int:
    """The resend time above, for the producer a cluster with these settings would make."""
    return _resend_time(make_config(settings).retry_backoff_skips_new_leader)


def test_since_3_6_1_a_retry_to_a_new_leader_skips_the_backoff() -> None:
    """RecordAccumulator.shouldBackoff (3.7.0; 69a5f14b523 in 3.6.1): a batch whose leader
    changed since its last attempt is sent as soon as the metadata names the new leader."""
    assert _resend_time(True) == 20


def test_before_3_6_1_a_retry_to_a_new_leader_waits_its_backoff() -> None:
    """RecordAccumulator.ready (3.6.0): every retry backs off, new leader or not."""
    assert _resend_time(False) == 1010


def test_the_presets_switch_at_the_releases() -> None:
    from kafkalab import make_config

    assert not make_config(preset="3.3").retry_backoff_skips_new_leader
    assert make_config(preset="3.6").retry_backoff_skips_new_leader
    assert not make_config(preset="3.6").retry_backoff_exponential
    assert make_config(preset="3.7").retry_backoff_exponential
    assert make_config(preset="2.6").socket_connection_setup_timeout_ms == 127000
    assert make_config(preset="2.7").socket_connection_setup_timeout_ms == 10000


# ---- a request timeout closes the connection; KIP-601 (2.7) -------------------------------------


def test_a_request_timeout_closes_the_connection_and_fails_everything_in_flight_on_it() -> None:
    """NetworkClient.handleTimedOutRequests (3.7.0): "Disconnecting from node ... due to request
    timeout"; every request in flight to that node fails (Sender.handleProduceResponse: a timed
    out response is REQUEST_TIMED_OUT), and the next send needs a new connection."""
    d = Driver(draws=None, request_timeout_ms=1000)
    d.produce(0, "A")
    d.produce(500, "B")
    d.fire(1001)
    retries = [data["values"] for _, kind, data in d.events if kind == "produce_retry"]
    assert retries == [["A"], ["B"]]
    assert d.disconnects == [(1001, 1)]
    d.deliver(1001, 2, m.MetadataResponse(((TP, 1),)))  # the update the disconnection asked for
    d.fire(1101)
    assert d.produced(since=1001) == [], "not before a new connection"
    connects = [(t, dst) for t, dst, msg in d.sends if isinstance(msg, Connect)]
    assert connects == [(1101, 1)]
    d.deliver(1102, 1, Connected(1))
    (a2,) = d.produced(since=1102)
    assert a2.values == ("A",), "B, later in sequence, waits for A (KAFKA-5494)"
    d.answer(1103, a2, m.NONE, 0)
    assert [r.values for r in d.produced(since=1103)] == [("B",)]


@pytest.mark.parametrize(("preset", "setup_ms"), [("2.6", 127000), ("2.7", 10000)])
def test_a_connection_over_a_cut_link_waits_for_its_setup_timeout(preset: str, setup_ms: int):
    """KIP-601 (KAFKA-9893, 2.7.0): a connection not set up within
    socket.connection.setup.timeout.ms (10 s) is given up (handleTimedOutConnections); before,
    only the operating system's connect timeout ended it (kafkalab: 127 s). Meanwhile the batch
    is not sent again; it fails at its delivery.timeout.ms."""
    c = Cluster(brokers=3, replication="auto", config={"preset": preset, "controller_mode": "zk"})
    c.producer("p", **{"request.timeout.ms": 1000, "delivery.timeout.ms": 200000})
    c.disconnect("client", 1)
    c.produce("x", producer="p")
    c.advance(setup_ms + 5000)
    (sent,) = [e.time_ms for e in c.trace.of_kind("produce")]
    gave_up = [e.time_ms - sent for e in c.trace.of_kind("client_disconnect")]
    assert gave_up[0] == 1001, "the request timeout closes the connection"
    # the retry backoff (100 ms) passes before the batch asks for its node; then the setup timeout
    assert gave_up[1] == 1001 + 100 + setup_ms


def test_retry_backoff_max_ms_is_refused_before_3_7() -> None:
    """ProducerConfig gained retry.backoff.max.ms with KIP-580 (3.7.0): an older preset refuses
    it, naming the release that brought it."""
    from kafkalab import ActionError

    c = Cluster(brokers=1, config={"preset": "3.6"})
    with pytest.raises(ActionError, match=r"retry.backoff.max.ms is not allowed with preset 3.6"):
        c.producer("p", **{"retry.backoff.max.ms": 500})
    newer = Cluster(brokers=1, config={"preset": "3.7"})
    newer.producer("p", **{"retry.backoff.max.ms": 500})
    assert newer.sim.actors["p"].settings.retry_backoff_max_ms == 500
