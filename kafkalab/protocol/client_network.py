"""What a client does when the network tells it that a broker's connection broke
(:class:`ConnectionClosed`: the broker's process died and its host reset the connection, or
refused a new one). A power loss or a cut link breaks no connection: the client waits for its
request.timeout.ms as before.

The same in every release from 0.8.2 to 3.8: NetworkClient fails every request in flight to a
disconnected node at once with a disconnected response (handleDisconnections,
processDisconnection) and asks for a metadata update.

- The producer's Sender completes each batch of such a request as NETWORK_EXCEPTION
  (handleProduceResponse), a retriable error and an InvalidMetadataException: the batch goes
  back to the queue, is sent again after retry.backoff.ms, and the metadata is refreshed
  (completeBatch, canRetry); an idempotent batch keeps its sequence number. With no retries
  left, the send fails with it.
- A connection to a dead process is refused, so nothing is sent on it: Sender.sendProducerData
  drains no batch for a node that is not ready. The batch waits, using no attempt, until the
  metadata names a leader again (kafkalab tries again after retry.backoff.ms).
- A call to the transaction coordinator is looked up again and sent after retry.backoff.ms
  (TxnRequestHandler.onComplete, wasDisconnected: lookupCoordinator, reenqueue).

The client's own side of a connection (NetworkClient, ClusterConnectionStates):

- A request unanswered within request.timeout.ms closes its connection
  (NetworkClient.handleTimedOutRequests, "Disconnecting from node ... due to request timeout"):
  every request in flight on it fails at once (the producer's batches as REQUEST_TIMED_OUT,
  Sender.handleProduceResponse), and what the network still carries on it is lost.
- The next request to that broker needs a new connection, tried reconnect.backoff.ms (50 ms)
  after the disconnection, twice that after each further failure up to reconnect.backoff.max.ms
  (1000 ms; ClusterConnectionStates.disconnected). Over a cut link it stays CONNECTING until
  socket.connection.setup.timeout.ms (10 s since 2.7, KIP-601; before, the operating system's
  connect timeout, about 127 s on Linux), then counts as disconnected. Meanwhile no batch is
  sent to that broker (Sender.sendProducerData drains only ready nodes). Every disconnection
  asks for a metadata update ("The disconnect may be the result of stale metadata",
  DefaultMetadataUpdater.handleServerDisconnect). kafkalab leaves out the 20 % jitter of both
  waits and the doubling of the setup timeout up to socket.connection.setup.timeout.max.ms.
"""

from __future__ import annotations

from typing import Any, Protocol

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Connect, ConnectionClosed, Context
from kafkalab.protocol.producer_txn import TxnProducer, txn_retry

__all__ = [
    "NetProducer",
    "ProducerConnections",
    "connection_ready",
    "disconnect",
    "metadata_timeouts",
    "on_request_timeout",
    "producer_connection_closed",
]

RECONNECT_BACKOFF_MAX_MS = 1000  # reconnect.backoff.max.ms's default (KIP-144, 0.11.0)


class ProducerConnections:
    """The producer's connections to brokers (ClusterConnectionStates): a broker absent here is
    READY; otherwise CONNECTING since a time, or DISCONNECTED since a time; ``failures`` counts
    the disconnections since the last connection that was set up."""

    def __init__(self) -> None:
        self.state: dict[Any, tuple[str, int]] = {}
        self.failures: dict[Any, int] = {}

    def ready(self, peer: Any) -> bool:
        return peer not in self.state

    def connecting(self, peer: Any) -> bool:
        return self.state.get(peer, ("",))[0] == "connecting"

    def disconnect(self, ctx: Context, peer: Any) -> None:
        """Close the connection (the network loses what it still carries on it)."""
        ctx.disconnect(peer)
        self.state[peer] = ("disconnected", ctx.now)
        self.failures[peer] = self.failures.get(peer, 0) + 1
        ctx.emit("client_disconnect", node=peer)

    def maybe_connect(self, ctx: Context, peer: Any, reconnect_backoff_ms: int) -> int | None:
        """Open a new connection to ``peer`` if reconnect.backoff.ms has passed since it was
        disconnected; else the time to wait. None: connecting or ready."""
        kind, since = self.state.get(peer, ("ready", 0))
        if kind != "disconnected":
            return None
        failures = self.failures.get(peer, 1)
        backoff_ms = min(reconnect_backoff_ms << min(failures - 1, 20), RECONNECT_BACKOFF_MAX_MS)
        wait = since + backoff_ms - ctx.now
        if wait > 0:
            return wait
        self.state[peer] = ("connecting", ctx.now)
        ctx.send(peer, Connect(peer))
        return None

    def connected(self, peer: Any) -> None:
        self.state.pop(peer, None)
        self.failures.pop(peer, None)

    def setup_timed_out(self, ctx: Context, peer: Any, setup_timeout_ms: int) -> bool:
        """NetworkClient.handleTimedOutConnections: still CONNECTING after
        socket.connection.setup.timeout.ms, the connection is given up."""
        kind, since = self.state.get(peer, ("ready", 0))
        if kind != "connecting" or ctx.now < since + setup_timeout_ms:
            return False
        return True


class NetProducer(TxnProducer, Protocol):
    """What these functions use of the producer client (KafkaProducer)."""

    sent_to: dict[int, tuple[Any, int]]
    connections: ProducerConnections
    expired_requests: dict[int, tuple[Any, int]]
    metadata_sent: dict[int, int]

    def _timeout_error(self, ctx: Context, batch: Any) -> str: ...

    def _requeue(self, ctx: Context, batch: Any) -> None: ...

    def _retry_or_fail(self, ctx: Context, batch: Any, error: str) -> None: ...


def producer_connection_closed(p: NetProducer, ctx: Context, msg: ConnectionClosed) -> None:
    """Fail what was in flight to ``msg.peer`` at or before ``msg.at_ms`` (a later request
    went on a newer connection). The next request to it needs a new connection."""
    if p.connections.ready(msg.peer) or p.connections.connecting(msg.peer):
        disconnect(p, ctx, msg.peer)
    for cid, batch in list(p.inflight.items()):
        peer, sent_ms = p.sent_to[cid]
        if peer != msg.peer or sent_ms > msg.at_ms:
            continue
        del p.inflight[cid]
        p.deadlines.pop(cid, None)
        del p.sent_to[cid]
        if msg.refused:
            batch.attempts -= 1  # it never left
            if batch.attempts == 0:  # nor was it drained: no producer id or epoch yet
                batch.producer_id = batch.producer_epoch = -1
            p._requeue(ctx, batch)
            p.leaders.pop(batch.tp, None)
            p._refresh_metadata(ctx)
        else:
            p._retry_or_fail(ctx, batch, m.NETWORK_EXCEPTION)
    peer, sent_ms = p.txn_sent_to
    if p.txn_waiting is not None and peer == msg.peer and sent_ms <= msg.at_ms:
        request, p.txn_waiting = p.txn_waiting, None
        txn_retry(p, ctx, request, m.NOT_COORDINATOR)


def on_request_timeout(p: NetProducer, ctx: Context) -> None:
    """Sender.getExpiredInflightBatches fails a batch whose delivery.timeout.ms passed (its
    request stays in flight); NetworkClient.handleTimedOutRequests closes a connection whose
    request passed request.timeout.ms, failing every request in flight on it as
    REQUEST_TIMED_OUT."""
    timed_out = set()
    request_timeout_ms = p.settings.request_timeout_ms
    for cid, deadline in list(p.deadlines.items()):
        if deadline > ctx.now:
            continue
        if cid in p.expired_requests:
            timed_out.add(p.expired_requests[cid][0])
        elif cid in p.inflight:
            peer, sent_ms = p.sent_to[cid]
            if ctx.now > sent_ms + request_timeout_ms:
                timed_out.add(peer)
            _fail_inflight(p, ctx, cid)
            if peer not in timed_out:  # the batch expired; its request is still awaited
                p.expired_requests[cid] = (peer, sent_ms)
                p.deadlines[cid] = sent_ms + request_timeout_ms + 1
    for peer in sorted(timed_out):
        for cid in [c for c in p.inflight if p.sent_to[c][0] == peer]:
            _fail_inflight(p, ctx, cid)
        disconnect(p, ctx, peer)


def _fail_inflight(p: NetProducer, ctx: Context, cid: int) -> None:
    p.deadlines.pop(cid, None)
    p.sent_to.pop(cid, None)
    batch = p.inflight.pop(cid)
    p._retry_or_fail(ctx, batch, p._timeout_error(ctx, batch))


def disconnect(p: NetProducer, ctx: Context, peer: Any) -> None:
    """Close the connection to ``peer`` (what was still awaited on it is forgotten); the
    disconnection may come from stale metadata, so the client asks for an update
    (NetworkClient.handleDisconnections, DefaultMetadataUpdater.handleServerDisconnect)."""
    p.connections.disconnect(ctx, peer)
    for cid, (to, _) in list(p.expired_requests.items()):
        if to == peer:
            del p.expired_requests[cid]
            p.deadlines.pop(cid, None)
    p._refresh_metadata(ctx)


def metadata_timeouts(p: NetProducer, ctx: Context) -> None:
    """A metadata request unanswered within request.timeout.ms closes its connection too."""
    for peer, sent_ms in sorted(p.metadata_sent.items()):
        if ctx.now > sent_ms + p.settings.request_timeout_ms:
            del p.metadata_sent[peer]
            if p.connections.ready(peer):
                disconnect(p, ctx, peer)


def connection_ready(p: NetProducer, ctx: Context, leader: int) -> bool:
    """Sender.sendProducerData drains only nodes whose connection is ready; one that is not is
    connected again after reconnect.backoff.ms, and given up after
    socket.connection.setup.timeout.ms."""
    if p.connections.ready(leader):
        return True
    wait = p.connections.maybe_connect(ctx, leader, p.settings.reconnect_backoff_ms)
    if wait is not None:
        p._set_timer(ctx, f"reconnect:{leader}", wait)
    elif p.connections.connecting(leader):
        setup_ms = p.settings.socket_connection_setup_timeout_ms
        since = p.connections.state[leader][1]
        p._set_timer(ctx, f"connection_setup:{leader}", since + setup_ms - ctx.now)
    return False
