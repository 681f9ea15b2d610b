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
"""

from __future__ import annotations

from typing import Any, Protocol

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import ConnectionClosed, Context
from kafkalab.protocol.producer_txn import TxnProducer, txn_retry

__all__ = ["NetProducer", "producer_connection_closed"]


class NetProducer(TxnProducer, Protocol):
    """What :func:`producer_connection_closed` uses of the producer client (KafkaProducer)."""

    sent_to: dict[int, tuple[Any, int]]

    def _requeue(self, ctx: Context, batch: Any) -> None: ...

    def _retry_or_fail(self, ctx: Context, batch: Any, error: str) -> None: ...


def producer_connection_closed(p: NetProducer, ctx: Context, msg: ConnectionClosed) -> None:
    """Fail what was in flight to ``msg.peer`` at or before ``msg.at_ms`` (a later request
    went on a newer connection)."""
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
