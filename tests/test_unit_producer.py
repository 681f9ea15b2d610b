"""The producer client: what it sends, and the outcome it records for every record."""

from __future__ import annotations

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.producer import Producer, Send
from kafkalab.sim.cluster import Cluster


def send(p: Producer, cmd: Send, now: int = 0) -> Context:
    ctx = Context(now, "producer")
    p.handle(ctx, "local", cmd)
    return ctx


def results(ctx: Context) -> list[dict]:
    return [data for kind, data in ctx.events if kind == "produce_result"]


def test_acks_all_sends_to_the_leader_and_waits_for_the_answer() -> None:
    p = Producer("producer")
    ctx = send(p, Send("t-0", ("a", "b"), -1, 2, 30000))
    ((dst, req, _),) = ctx.sends
    assert dst == 2 and isinstance(req, m.ProduceRequest)
    assert req.values == ("a", "b") and req.acks == -1 and req.timeout_ms == 30000
    assert results(ctx) == []
    assert ctx.timers == [(30001, "request_timeout", None)]
    done = Context(5, "producer")
    p.handle(done, 2, m.ProduceResponse("t-0", req.correlation_id, m.NONE, 7))
    (result,) = results(done)
    assert result["values"] == ["a", "b"] and result["error"] == "NONE"
    assert result["base_offset"] == 7


def test_acks_0_never_learns_the_outcome() -> None:
    ctx = send(Producer("producer"), Send("t-0", ("a",), 0, 1, 30000))
    assert [type(msg) for _, msg, _ in ctx.sends] == [m.ProduceRequest]
    (result,) = results(ctx)
    assert result["error"] == "UNKNOWN"
    assert ctx.timers == []


def test_no_leader_fails_at_once_without_sending() -> None:
    ctx = send(Producer("producer"), Send("t-0", ("a",), -1, None, 30000))
    assert ctx.sends == []
    assert results(ctx)[0]["error"] == m.LEADER_NOT_AVAILABLE


def test_a_request_without_an_answer_times_out_once() -> None:
    p = Producer("producer")
    req = send(p, Send("t-0", ("a",), 1, 1, 100)).sends[0][1]
    late = Context(101, "producer")
    p.on_timer(late, "request_timeout", None)
    assert results(late)[0]["error"] == m.REQUEST_TIMED_OUT
    after = Context(102, "producer")
    p.handle(after, 1, m.ProduceResponse("t-0", req.correlation_id, m.NONE, 0))
    assert results(after) == [], "a response after the timeout is ignored"


def test_a_crashed_leader_leaves_the_producer_with_a_timeout() -> None:
    c = Cluster(brokers=2, leader=1)
    c.crash(1)
    c.produce("m1")  # the controller still names broker 1 until its session expires
    c.advance(c.config.request_timeout_ms + 1)
    assert c.report().errors == {"m1": "REQUEST_TIMED_OUT"}


def test_one_timer_times_out_requests_oldest_first_and_re_arms() -> None:
    p = Producer("producer")
    first = send(p, Send("t-0", ("a",), 1, 1, 100), now=0)
    second = send(p, Send("t-0", ("b",), 1, 1, 100), now=40)
    assert first.timers == [(101, "request_timeout", None)]
    assert second.timers == [], "the armed timer covers the later request"
    at_101 = Context(101, "producer")
    p.on_timer(at_101, "request_timeout", None)
    assert [r["values"] for r in results(at_101)] == [["a"]]
    assert at_101.timers == [(40, "request_timeout", None)], "re-armed for b's deadline (141)"
    at_141 = Context(141, "producer")
    p.on_timer(at_141, "request_timeout", None)
    assert [r["values"] for r in results(at_141)] == [["b"]]
    assert at_141.timers == []
