"""The event loop and the network.

A heap ordered by (time_ms, sequence) holds message deliveries and timers; scheduled calls (the
workload's and the fault schedule's steps, nearly all known before the run starts) wait in a
sorted list beside it, and the loop takes whichever of the two comes first. Both share one
sequence, so the order is the one a single heap would give, while the heap stays small.
Actors are hosted at addresses; addresses live on hosts; links join hosts and can be cut.

Two actors talk over connections, one per named channel (:func:`channel`): a client has one
connection to each broker, and a broker reaches the controller over one connection for its
heartbeats and another for AlterPartition, as Kafka's BrokerLifecycleManager and its
alter-partition channel manager each have their own NetworkClient. Messages on one connection
arrive in the order they were sent (TCP), and a broker handles a client's requests on one
connection one after another: Kafka's SocketServer processor mutes a connection from reading a
request until its response is sent (since 0.8, whatever max.in.flight.requests.per.connection
lets the client send), so a request waiting in purgatory holds the next one unread, and the
answers come back in order. A delay on one channel holds nothing on another. TCP never loses one
message and delivers the next: a message that is lost (a cut link, random loss, a test's rule)
breaks its connection, and everything sent on it after that is lost too, in both directions,
until the connection is set up again. A client (an actor with ``manages_connections``) does that
itself: it closes the connection (:meth:`Context.disconnect`, on its request timeout) and opens
a new one (:class:`Connect`). Between actors that do not manage connections (brokers,
controllers, consumers) a message sent by a later handler (a timer, another message, a step)
opens a new connection: each of them sends again on its own, as Kafka's would after its request
timeout; what the same handler sent after the lost message is lost with it. Messages sent
``hold`` (the controller's channel retries) and ZooKeeper's sessions never break.

When a process dies on a host that stays up, the host resets its connections: the actors that
await its answers are told. One seed drives every random draw, split into named streams so that
adding a fault type does not change the network's draws.
"""

from __future__ import annotations

import bisect
import gc
import heapq
import math
import random
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from kafkalab.protocol import kraft_messages as km
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Connect, Connected, ConnectionClosed, Context
from kafkalab.sim.trace import Event, Trace

__all__ = ["Simulation", "channel", "collector_paused", "draw_between"]

_DELIVER, _TIMER, _CALL = 0, 1, 2
# A delivery's last field: True (sent with hold), False, or one of these marks
_DOOMED = "doomed"  # sent on a connection that broke before it arrived
_PASS = "pass"  # the request a muted connection reads next
CLIENT_HOST = "client"  # the host every client (producer, consumer) runs on

# The named channels between two actors; every other message goes on "requests" (a client's
# one connection to a broker). Kafka's broker keeps a NetworkClient per purpose: the replica
# fetcher threads, the BrokerLifecycleManager (registration, heartbeats), the alter-partition
# channel manager, the ZooKeeper-mode controller's ControllerChannelManager and the controlled
# shutdown's own client.
_CHANNELS: dict[type, str] = {
    m.FetchRequest: "replica_fetcher",
    m.FetchResponse: "replica_fetcher",
    m.OffsetsForLeaderEpochRequest: "replica_fetcher",
    m.OffsetsForLeaderEpochResponse: "replica_fetcher",
    km.BrokerRegistration: "broker_lifecycle",
    km.BrokerRegistrationResponse: "broker_lifecycle",
    km.BrokerHeartbeat: "broker_lifecycle",
    km.BrokerHeartbeatResponse: "broker_lifecycle",
    m.AlterIsr: "alter_partition",
    m.AlterIsrResponse: "alter_partition",
    m.LeaderAndIsr: "controller_channel",
    m.UpdateMetadata: "controller_channel",
    m.ControlledShutdownRequest: "controlled_shutdown",
    m.ControlledShutdownResponse: "controlled_shutdown",
}
REQUESTS_CHANNEL = "requests"


def channel(msg: Any) -> str:
    """The named channel ``msg`` travels on between its two actors."""
    return _CHANNELS.get(type(msg), REQUESTS_CHANNEL)


def _conn_key(a: Any, b: Any, msg: Any) -> tuple[Any, ...]:
    """One connection's key, the same in both directions."""
    return (a, b, channel(msg)) if str(a) <= str(b) else (b, a, channel(msg))


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a run, and let it run again after.

    A run allocates many short-lived objects that reference counting frees at once; the cyclic
    collector, triggered by their number, would only walk the growing trace, again and again
    (10-25% of a run's time). What a run leaves behind in cycles (its actors and their
    simulation) is collected by the first collection after it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def draw_between(getrandbits: Callable[[int], int], lo: int, hi: int) -> int:
    """A whole number from ``lo`` to ``hi`` (both included) drawn from a stream's
    ``getrandbits``: the value ``random.Random.randint(lo, hi)`` gives on CPython 3.11 (draw
    ``hi - lo + 1``'s bit length of bits, again while too large), written out so that the draws
    depend on the stream alone, not on how a Python release implements ``randint``."""
    n = hi - lo + 1
    k = n.bit_length()
    r = getrandbits(k)
    while r >= n:
        r = getrandbits(k)
    return lo + r


class Simulation:
    """Hosts actors, carries their messages and fires their timers, recording a trace."""

    def __init__(
        self,
        *,
        seed: int,
        latency_ms: tuple[int, int] = (0, 0),
        trace_messages: bool = True,
        loss_rate: float = 0.0,
    ) -> None:
        self.seed = seed
        self.now = 0
        self._seq = 0
        self._heap: list[tuple[Any, ...]] = []
        # scheduled calls, sorted by (time_ms, sequence); those before _next_call have run
        self._calls: list[tuple[Any, ...]] = []
        self._next_call = 0
        self.dispatched = [0, 0, 0]  # heap entries dispatched so far: deliveries, timers, calls
        self.actors: dict[Any, Any] = {}
        self.incarnation: dict[Any, int] = {}
        self.hosts: dict[Any, Any] = {}
        self.cut: set[frozenset[Any]] = set()
        self.trace = Trace()
        self.latency_ms = latency_ms
        self.trace_messages = trace_messages
        self._net_rng = self.stream("network")
        self._net_bits = self._net_rng.getrandbits
        self.loss_rate = loss_rate  # the chance that a message between two hosts is lost
        self._loss_rng = self.stream("loss")
        self._last_arrival: dict[tuple[Any, Any, str], int] = {}  # per connection
        self.bandwidth: dict[frozenset[Any], float] = {}  # bytes per ms of a throttled link
        self._link_free: dict[tuple[Any, Any], int] = {}  # when a link has sent what it holds
        self._rules: list[list[Any]] = []  # one-shot network rules: [src, dst, types, delay|None]
        self.observers: list[Callable[[Event], None]] = []
        self.on_halt: Callable[[Any, str, bool], None] | None = None
        self.paused: set[Any] = set()  # hosts whose processes are stalled
        # retried sends waiting for a cut link; what reached a paused host, in order
        self._held: dict[frozenset[Any], list[tuple[Any, ...]]] = {}
        self._deferred: dict[Any, list[tuple[Any, ...]]] = {}
        # addresses whose process died on a host that is still up: it resets their connections
        self.refusing: set[Any] = set()
        # broken connections, and those that broke during the handler running now
        self._broken: set[tuple[Any, ...]] = set()
        self._broken_now: set[tuple[Any, ...]] = set()
        # a client's connections whose request the broker is handling: what arrives meanwhile
        # waits, in order: (src, dst, channel) -> deliveries (without time and sequence)
        self._muted: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}

    def stream(self, name: str) -> random.Random:
        """A named random stream derived from the seed (string seeds hash deterministically)."""
        return random.Random(f"{self.seed}:{name}")

    # ---- trace ----------------------------------------------------------------------------

    def record(self, kind: str, node: Any, data: dict[str, Any]) -> Event:
        self._seq += 1
        event = Event(self._seq, self.now, kind, str(node), data)
        self.trace.events.append(event)
        for observe in self.observers:
            observe(event)
        return event

    # ---- actors ----------------------------------------------------------------------------

    def add(self, address: Any, actor: Any, host: Any) -> None:
        """Start ``actor`` at ``address`` on ``host`` (a new incarnation)."""
        self.actors[address] = actor
        self.hosts[address] = host
        self.incarnation[address] = self.incarnation.get(address, 0) + 1
        self.refusing.discard(address)
        if self._muted:  # a new process reads its new connections
            for key in [k for k in self._muted if k[1] == address]:
                self._release(key, "not_running")
        self._run_handler(address, actor.start)

    def remove(self, address: Any, *, host_up: bool = False) -> Any:
        """Stop the actor at ``address``: its timers and the messages in flight to it are lost.

        ``host_up``: only the process died (a crash, a halt, a stop), so its host resets the
        connections: every actor that awaits an answer from it is told over the network
        (:class:`ConnectionClosed`), and so is one whose request reaches it later (a refused
        connection). Otherwise (a power loss) the host is silent, and its peers learn nothing
        until their own timeouts. An actor takes part by defining ``awaits_answer_from(peer)``
        and handling ConnectionClosed; the others are never told."""
        self.incarnation[address] = self.incarnation.get(address, 0) + 1
        actor = self.actors.pop(address)
        if host_up:
            self.refusing.add(address)
            for peer in list(self.actors):
                if self._awaits(peer, address):
                    self._connection_closed(address, peer)
        return actor

    def _awaits(self, address: Any, peer: Any) -> bool:
        """Whether the actor at ``address`` awaits an answer from ``peer``."""
        awaits = getattr(self.actors.get(address), "awaits_answer_from", None)
        return awaits is not None and bool(awaits(peer))

    def _connection_closed(self, dead: Any, peer: Any, refused: bool = False) -> None:
        """The dead process's host resets its connection with ``peer`` (or refuses a new one)."""
        self.send(dead, peer, ConnectionClosed(dead, self.now, refused))

    def command(self, address: Any, msg: Any) -> None:
        """Hand ``msg`` to a local actor directly (an operator's or a client's call)."""
        self._run_handler(address, self.actors[address].handle, "local", msg)

    def _run_handler(self, address: Any, handler: Callable[..., None], *args: Any) -> None:
        if self._broken_now:
            self._broken_now.clear()
        ctx = Context(self.now, address)
        handler(ctx, *args)
        self._apply(address, ctx)

    def _apply(self, address: Any, ctx: Context) -> None:
        """Carry out what a handler asked for: its trace events, sends, timers and halt."""
        if ctx.events:
            for kind, data in ctx.events:
                self.record(kind, address, data)
        if ctx.disconnects:
            for peer in ctx.disconnects:
                self._reconnect(address, peer)
        if ctx.sends:
            for dst, msg, hold in ctx.sends:
                self.send(address, dst, msg, hold)
        if ctx.timers:
            inc = self.incarnation[address]
            heap, now = self._heap, self.now
            for delay, name, timer_data in ctx.timers:
                self._seq += 1
                heapq.heappush(
                    heap, (now + delay, self._seq, _TIMER, address, inc, name, timer_data)
                )
        if ctx.halt is not None and self.on_halt is not None:
            self.on_halt(address, ctx.halt, ctx.clean_stop)

    # ---- network ---------------------------------------------------------------------------

    def link_up(self, a: Any, b: Any) -> bool:
        if not self.cut:
            return True
        ha, hb = self.hosts.get(a, a), self.hosts.get(b, b)
        return ha == hb or frozenset((ha, hb)) not in self.cut

    def set_link(self, host_a: Any, host_b: Any, up: bool) -> None:
        key = frozenset((host_a, host_b))
        if up:
            self.cut.discard(key)
            for src, dst, msg, inc in self._held.pop(key, []):
                self._deliver_later(src, dst, msg, inc, True)
        else:
            self.cut.add(key)

    def set_bandwidth(self, host_a: Any, host_b: Any, bytes_per_ms: float | None) -> None:
        """Limit the link between two hosts (None: no limit). A message carrying records
        (``wire_bytes``) then takes its size over the bandwidth to cross, after whatever the
        link is still sending in that direction: one TCP connection, one message at a time."""
        key = frozenset((host_a, host_b))
        if bytes_per_ms is None:
            self.bandwidth.pop(key, None)
        else:
            self.bandwidth[key] = bytes_per_ms

    def heal_all(self) -> None:
        for key in sorted(self.cut, key=lambda k: sorted(map(str, k))):
            host_a, host_b = sorted(key, key=str)
            self.set_link(host_a, host_b, True)

    def _lossy(self, src: Any, dst: Any) -> bool:
        """Random loss hits messages between hosts, except ZooKeeper's: its client sessions
        resend what a broken connection lost, and watches are never dropped."""
        ha, hb = self.hosts.get(src, src), self.hosts.get(dst, dst)
        if ha == hb or "zk" in (ha, hb):
            return False
        return self._loss_rng.random() < self.loss_rate

    def _hold(self, src: Any, dst: Any, msg: Any, inc: int) -> None:
        key = frozenset((self.hosts.get(src, src), self.hosts.get(dst, dst)))
        self._held.setdefault(key, []).append((src, dst, msg, inc))
        self.record("hold", src, {"dst": dst, "msg": msg})

    # ---- connections -------------------------------------------------------------------------

    def _breaks(self, src: Any, dst: Any, msg: Any, hold: Any) -> bool:
        """Whether losing ``msg`` breaks its connection (not the controller's retried channel,
        not ZooKeeper's sessions, not a connection attempt)."""
        if hold is True or isinstance(msg, Connect | Connected | ConnectionClosed):
            return False
        return "zk" not in (self.hosts.get(src, src), self.hosts.get(dst, dst))

    def _break(self, src: Any, dst: Any, msg: Any, after_seq: int | None = None) -> None:
        """A message of the connection was lost: it is broken until it is set up again. With
        ``after_seq`` (lost in flight), what was sent on it after the lost message is lost too."""
        key = _conn_key(src, dst, msg)
        self._broken.add(key)
        self._broken_now.add(key)
        if after_seq is None:
            return
        for entries in (self._heap, *self._deferred.values()):
            for i, e in enumerate(entries):
                if e[2] == _DELIVER and e[1] > after_seq and _conn_key(e[3], e[4], e[5]) == key:
                    entries[i] = (*e[:7], _DOOMED)  # same time and sequence: the heap holds

    def _on_broken(self, src: Any, dst: Any, msg: Any) -> bool:
        """Whether ``msg``, being sent, goes on a broken connection. Between two actors that do
        not manage their connections, a later handler run sets it up again."""
        key = _conn_key(src, dst, msg)
        if key not in self._broken or isinstance(msg, Connect | Connected | ConnectionClosed):
            return False
        if key in self._broken_now or self._manages(src) or self._manages(dst):
            return True
        self._broken.discard(key)
        return False

    def _manages(self, address: Any) -> bool:
        return bool(getattr(self.actors.get(address), "manages_connections", False))

    def _reconnect(self, address: Any, peer: Any) -> None:
        """``address`` closed its connections to ``peer``: the next message opens a new one, and
        what the broker had not read from the old one is lost."""
        for key in [k for k in self._broken if {k[0], k[1]} == {address, peer}]:
            self._broken.discard(key)
        for key in [k for k in self._muted if k[0] == address and k[1] == peer]:
            self._release(key, "connection_closed")

    def _mutes(self, src: Any, msg: Any) -> bool:
        """Whether delivering ``msg`` mutes its connection: a request that is answered (a produce
        with acks=0 is not) from a client that declares ``one_request_at_a_time``."""
        if not type(msg).__name__.endswith("Request") or getattr(msg, "acks", None) == 0:
            return False
        return bool(getattr(self.actors.get(src), "one_request_at_a_time", False))

    def _unmute(self, src: Any, dst: Any, msg: Any) -> None:
        """``src`` answers ``dst`` on a muted connection: the next waiting request is read (it
        passes, and mutes the connection again), the others keep waiting behind it."""
        key = (dst, src, channel(msg))
        waiting = self._muted.get(key)
        if waiting is None or not type(msg).__name__.endswith("Response"):
            return
        if not waiting:
            del self._muted[key]
            return
        self._seq += 1
        heapq.heappush(self._heap, (self.now, self._seq, *waiting.pop(0)[:5], _PASS))

    def _wait_unread(self, entry: tuple[Any, ...]) -> bool:
        """Whether the delivery ``entry`` waits on its muted connection (it does unless it was
        just released from there)."""
        if entry[7] == _PASS:
            return False
        waiting = self._muted.get((entry[3], entry[4], channel(entry[5])))
        if waiting is None:
            return False
        waiting.append(entry[2:])
        return True

    def _release(self, key: tuple[Any, ...], reason: str) -> None:
        """Unmute ``key`` and drop what waited on it."""
        for entry in self._muted.pop(key, []):
            self.record("drop", entry[1], {"dst": entry[2], "msg": entry[3], "reason": reason})

    def add_rule(
        self,
        src: Any,
        dst: Any,
        types: Iterable[type],
        delay_ms: int | None,
        *,
        match: Callable[[Any], bool] | None = None,
        reply: Callable[[Any], Any] | None = None,
    ) -> None:
        """The next message of one of ``types`` from src to dst (for which ``match`` holds) is
        lost (delay None) or delayed. With ``reply`` it does not arrive either: dst answers at
        once with ``reply(message)`` instead (a refusal the test decides)."""
        self._rules.append([src, dst, tuple(types), delay_ms, match, reply])

    def send(self, src: Any, dst: Any, msg: Any, hold: bool = False) -> None:
        if self._muted:
            self._unmute(src, dst, msg)
        if self._broken and self._on_broken(src, dst, msg):
            self.record("drop", src, {"dst": dst, "msg": msg, "reason": "connection_broken"})
            return
        if self.cut and not self.link_up(src, dst):
            if hold:
                self._hold(src, dst, msg, self.incarnation.get(dst, 0))
            else:
                self._lose(src, dst, msg, "link_cut")
            return
        extra = 0
        if self.loss_rate and not hold and self._lossy(src, dst):
            self._lose(src, dst, msg, "random_loss")
            return
        if self._rules:
            for rule in self._rules:
                if (
                    rule[0] == src
                    and rule[1] == dst
                    and isinstance(msg, rule[2])
                    and (rule[4] is None or rule[4](msg))
                ):
                    self._rules.remove(rule)
                    if rule[5] is not None:
                        self.record("drop", src, {"dst": dst, "msg": msg, "reason": "refused"})
                        self.send(dst, src, rule[5](msg))
                        return
                    if rule[3] is None:
                        self._lose(src, dst, msg, "lost")
                        return
                    extra = rule[3]
                    break
        if self.trace_messages:
            self.record("send", src, {"dst": dst, "msg": msg})
        self._deliver_later(src, dst, msg, self.incarnation.get(dst, 0), hold, extra)

    def _lose(self, src: Any, dst: Any, msg: Any, reason: str) -> None:
        """``msg`` is lost as it is sent: its connection breaks from here on."""
        self.record("drop", src, {"dst": dst, "msg": msg, "reason": reason})
        if self._breaks(src, dst, msg, False):
            self._break(src, dst, msg)

    def _deliver_later(
        self, src: Any, dst: Any, msg: Any, inc: int, hold: bool, extra: int = 0
    ) -> None:
        lo, hi = self.latency_ms
        hosts = self.hosts
        if hi == 0 or hosts.get(src, src) == hosts.get(dst, dst):
            arrival = self.now + extra
        else:
            arrival = self.now + draw_between(self._net_bits, lo, hi) + extra
        key = (src, dst, channel(msg))
        if self.bandwidth:
            arrival += self._transfer_ms(src, dst, msg)
        last = self._last_arrival.get(key, 0)
        if last > arrival:  # TCP: nothing overtakes an earlier message on the same connection
            arrival = last
        self._last_arrival[key] = arrival
        self._seq += 1
        heapq.heappush(
            self._heap,
            (arrival, self._seq, _DELIVER, src, dst, msg, inc, hold),
        )

    def _transfer_ms(self, src: Any, dst: Any, msg: Any) -> int:
        """How long ``msg`` waits for, then takes over, a throttled link (0 if unlimited)."""
        hosts = self.hosts
        ha, hb = hosts.get(src, src), hosts.get(dst, dst)
        rate = self.bandwidth.get(frozenset((ha, hb)))
        size = getattr(msg, "wire_bytes", 0)
        if rate is None or not size:
            return 0
        start = max(self.now, self._link_free.get((ha, hb), 0))
        done = start + math.ceil(size / rate)
        self._link_free[(ha, hb)] = done
        return done - self.now

    # ---- loop ------------------------------------------------------------------------------

    def call_at(self, time_ms: int, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` at simulated ``time_ms`` (a workload or fault action)."""
        self._seq += 1
        entry = (max(time_ms, self.now), self._seq, _CALL, fn, args)
        calls = self._calls
        if not calls or calls[-1] < entry:  # sequence numbers only grow: (time, seq) decides
            calls.append(entry)
        else:
            bisect.insort(calls, entry, lo=self._next_call)

    def run_until(self, time_ms: int, stop: Callable[[], bool] | None = None) -> None:
        """Process every event due at or before ``time_ms``; the clock then reads ``time_ms``
        (or the time of the event after which ``stop()`` became true)."""
        heap, calls, pop, dispatch = self._heap, self._calls, heapq.heappop, self._dispatch
        while True:
            i = self._next_call
            if i < len(calls) and (not heap or calls[i] < heap[0]):
                entry = calls[i]
                if entry[0] > time_ms:
                    break
                self._next_call = i + 1  # before the call: it may schedule another
                self.now = entry[0]
                self.dispatched[_CALL] += 1
                entry[3](*entry[4])
                if i > 4096 and 2 * i > len(calls):  # forget what has run, now and then
                    del calls[: i + 1]
                    self._next_call -= i + 1
            elif heap and heap[0][0] <= time_ms:
                entry = pop(heap)
                self.now = entry[0]
                dispatch(entry)
            else:
                break
            if stop is not None and stop():
                return
        if self.now < time_ms:
            self.now = time_ms

    def pause(self, host: Any) -> None:
        """Stall every actor on ``host`` (a GC pause): what reaches it waits, its timers wait."""
        self.paused.add(host)

    def resume(self, host: Any) -> None:
        """Run what waited for ``host``, in its original order, starting now."""
        self.paused.discard(host)
        for entry in self._deferred.pop(host, []):
            self._seq += 1
            heapq.heappush(self._heap, (self.now, self._seq, *entry[2:]))

    def _dispatch(self, entry: tuple[Any, ...]) -> None:
        kind = entry[2]
        self.dispatched[kind] += 1
        if self.paused:
            host = self.hosts.get(entry[4] if kind == _DELIVER else entry[3])
            if host in self.paused:
                self._deferred.setdefault(host, []).append(entry)
                return
        if kind == _DELIVER:
            _, seq, _, src, dst, msg, inc, mark = entry
            hold = mark is True
            actor = self.actors.get(dst)
            if actor is None and dst in self.refusing and self._refused(src, dst):
                self.record("drop", src, {"dst": dst, "msg": msg, "reason": "refused"})
                self._connection_closed(dst, src, True)
            elif actor is None or self.incarnation[dst] != inc:
                self.record("drop", src, {"dst": dst, "msg": msg, "reason": "not_running"})
            elif mark == _DOOMED:
                self.record("drop", src, {"dst": dst, "msg": msg, "reason": "connection_broken"})
            elif self.cut and not self.link_up(src, dst):
                if hold:
                    self._hold(src, dst, msg, inc)
                else:
                    self.record("drop", src, {"dst": dst, "msg": msg, "reason": "link_cut"})
                    if self._breaks(src, dst, msg, hold):
                        self._break(src, dst, msg, seq)
            elif isinstance(msg, Connect):
                self.send(dst, src, Connected(dst))  # the handshake got through
            elif self._muted and self._wait_unread(entry):
                return
            else:
                if self._mutes(src, msg):
                    self._muted.setdefault((src, dst, channel(msg)), [])
                if self.trace_messages:
                    self.record("deliver", dst, {"src": src, "msg": msg})
                if self._broken_now:
                    self._broken_now.clear()
                ctx = Context(self.now, dst)  # _run_handler, without its argument tuples
                actor.handle(ctx, src, msg)
                self._apply(dst, ctx)
        elif kind == _TIMER:
            _, _, _, address, inc, name, data = entry
            actor = self.actors.get(address)
            if actor is not None and self.incarnation[address] == inc:
                if self._broken_now:
                    self._broken_now.clear()
                ctx = Context(self.now, address)
                actor.on_timer(ctx, name, data)
                self._apply(address, ctx)

    def _refused(self, src: Any, dst: Any) -> bool:
        """Whether ``src``, which sent to the dead ``dst``, learns that the connection was
        refused: it awaits an answer, and the link carries the reset."""
        return self._awaits(src, dst) and (not self.cut or self.link_up(src, dst))

    def pending_clear(self) -> None:
        """Forget every pending event (see ``Cluster.release``)."""
        self._heap.clear()
        self._calls.clear()
        self._next_call = 0
        self._held.clear()
        self._deferred.clear()

    def pending(self) -> int:
        """How many deliveries, timers and calls wait to run."""
        return len(self._heap) + len(self._calls) - self._next_call

    def pending_entries(self) -> list[tuple[Any, ...]]:
        """Every waiting entry, in the order they will run."""
        return sorted(self._heap + self._calls[self._next_call :], key=lambda e: (e[0], e[1]))
