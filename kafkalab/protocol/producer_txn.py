"""The transactional half of the producer client (KafkaProducer's TransactionManager): the
calls to the transaction coordinator, the transaction's state, and what each coordinator error
does to it.

The functions take the producer client they act for (:class:`TxnProducer`, what they use of
:class:`kafkalab.protocol.client.KafkaProducer`); the client calls them from its handlers.

- A transactional producer gets its id and epoch with InitProducerId, adds each partition to the
  open transaction before writing to it (AddPartitionsToTxn), can add a consumer group's offsets
  (AddOffsetsToTxn, then TxnOffsetCommit), and ends the transaction with EndTxn once every batch
  is answered, or with no request at all when nothing was added.
- Fenced (PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH from the coordinator) and INVALID_TXN_STATE
  are fatal: the producer can only be closed. INVALID_PRODUCER_ID_MAPPING is fatal until 2.4;
  since 2.5 (KAFKA-8805) it is abortable, and the abort sends InitProducerId, not EndTxn.
- After a failed send the transaction can only be aborted; since 2.5 (KIP-360) that abort also
  bumps the epoch (EndTxn, then InitProducerId), so the next transaction's sequences start
  from 0.
"""

from __future__ import annotations

from typing import Any, Protocol

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.client_settings import ProducerSettings, TxnCommand
from kafkalab.protocol.internal_topics import offsets_partition, txn_partition

__all__ = [
    "ABORTABLE_ERROR",
    "FATAL_ERROR",
    "FENCED",
    "TxnProducer",
    "abortable",
    "on_txn_response",
    "send_txn_request",
    "txn_command",
    "txn_complete",
    "txn_fatal",
    "txn_result",
    "txn_retry",
]

# TransactionManager.State, reduced.
UNINITIALIZED, READY, IN_TRANSACTION = "UNINITIALIZED", "READY", "IN_TRANSACTION"
COMMITTING, ABORTING = "COMMITTING_TRANSACTION", "ABORTING_TRANSACTION"
ABORTABLE_ERROR, FATAL_ERROR = "ABORTABLE_ERROR", "FATAL_ERROR"
FENCED = frozenset({m.PRODUCER_FENCED, m.INVALID_PRODUCER_EPOCH})
TXN_RETRY = frozenset(
    {m.CONCURRENT_TRANSACTIONS, m.NOT_COORDINATOR, m.COORDINATOR_LOAD_IN_PROGRESS}
)
TRANSACTION_ABORTED = "TRANSACTION_ABORTED"  # the client's TransactionAbortedException


class TxnProducer(Protocol):
    """What these functions use of the producer client (KafkaProducer)."""

    name: str
    settings: ProducerSettings
    producer_id: int
    producer_epoch: int
    next_sequence: dict[str, int]
    queue: list[Any]
    inflight: dict[int, Any]
    deadlines: dict[int, int]
    leaders: dict[str, int | None]
    txn_state: str
    txn_partitions: set[str]
    txn_started: bool
    txn_requests: list[Any]
    txn_waiting: Any
    txn_sent_to: tuple[Any, int]
    txn_error: str
    txn_deadline: int
    epoch_bump_required: bool
    _timer_at: dict[str, int]

    @property
    def transactional(self) -> bool: ...

    def _outcome(self, ctx: Context, batch: Any, error: str, base_offset: int) -> None: ...

    def _set_timer(self, ctx: Context, name: str, delay_ms: int) -> None: ...

    def _refresh_metadata(self, ctx: Context) -> None: ...


def txn_command(p: TxnProducer, ctx: Context, cmd: TxnCommand) -> None:
    if p.txn_state == FATAL_ERROR:
        txn_result(p, ctx, cmd.op, p.txn_error or m.PRODUCER_FENCED)
        return
    allowed = {
        "begin": (READY,),
        "send_offsets": (IN_TRANSACTION,),
        "commit": (IN_TRANSACTION,),
        "abort": (IN_TRANSACTION, ABORTABLE_ERROR),
    }[cmd.op]
    if p.txn_state == ABORTABLE_ERROR and cmd.op != "abort":
        # TransactionManager.maybeFailWithError: the error that made it abortable.
        txn_result(p, ctx, cmd.op, p.txn_error, state=p.txn_state)
        return
    if p.txn_state not in allowed:
        txn_result(p, ctx, cmd.op, m.INVALID_TXN_STATE, state=p.txn_state)
        return
    if cmd.op == "begin":
        p.txn_state = IN_TRANSACTION
        p.txn_partitions = set()
        p.txn_started = False
        txn_result(p, ctx, "begin", m.NONE)
    elif cmd.op == "send_offsets":
        p.txn_requests.append(("add_offsets", cmd.group, cmd.offsets))
    elif cmd.op == "commit":
        p.txn_state = COMMITTING
        p.txn_requests.append(("end", True))
    else:
        # beginCompletingTransaction (2.5+): a coordinator that does not know this producer
        # id would refuse an EndTxn again; InitProducerId ends the transaction instead.
        unknown_id = p.txn_state == ABORTABLE_ERROR and (
            p.txn_error == m.INVALID_PRODUCER_ID_MAPPING
        )
        p.txn_state = ABORTING
        for batch in p.queue:  # unsent batches fail with TransactionAbortedException
            p._outcome(ctx, batch, TRANSACTION_ABORTED, -1)
        p.queue = []
        p.txn_requests = [r for r in p.txn_requests if r[0] != "add_partitions"]
        if not unknown_id:
            p.txn_requests.append(("end", False))
        if unknown_id or p.epoch_bump_required:
            p.txn_requests.append("init")  # InitProducerId with the current epoch


def txn_result(p: TxnProducer, ctx: Context, op: str, error: str, **extra: Any) -> None:
    ctx.emit(
        "txn_client",
        producer=p.name,
        op=op,
        error=error,
        producer_id=p.producer_id,
        producer_epoch=p.producer_epoch,
        **extra,
    )


def _coordinator(p: TxnProducer, ctx: Context, tp: str) -> int | None:
    leader = p.leaders.get(tp)
    if leader is None:
        p._refresh_metadata(ctx)
    return leader


def send_txn_request(p: TxnProducer, ctx: Context) -> None:
    """maybeSendAndPollTransactionalRequest: one coordinator call at a time, in order; the
    EndTxn only once every batch of the transaction is answered, and only if a partition
    or offsets were added to the transaction: else the end is complete at once, with no
    request (TransactionManager.nextRequest)."""
    if p.txn_waiting is not None or not p.txn_requests:
        return
    if p._timer_at.get("txn_backoff", -1) > ctx.now:
        return
    request = p.txn_requests[0]
    kind = request if isinstance(request, str) else request[0]
    if kind == "end" and (p.queue or p.inflight):
        return
    if kind == "end" and not p.txn_started:
        p.txn_requests.pop(0)
        txn_complete(p, ctx, request[1])
        return
    txn_id = p.settings.transactional_id
    target = txn_partition(txn_id)
    if kind == "txn_offset_commit":
        target = offsets_partition(request[1])
    coordinator = _coordinator(p, ctx, target)
    if coordinator is None:
        return
    pid, epoch = p.producer_id, p.producer_epoch
    if kind == "init":
        msg: Any = m.InitProducerIdRequest(txn_id, p.settings.transaction_timeout_ms)
    elif kind == "add_partitions":
        msg = m.AddPartitionsToTxnRequest(txn_id, pid, epoch, request[1])
    elif kind == "add_offsets":
        msg = m.AddOffsetsToTxnRequest(txn_id, pid, epoch, request[1])
    elif kind == "txn_offset_commit":
        msg = m.TxnOffsetCommitRequest(request[1], txn_id, pid, epoch, request[2])
    else:
        msg = m.EndTxnRequest(txn_id, pid, epoch, request[1])
    p.txn_requests.pop(0)
    p.txn_waiting = request
    p.txn_sent_to = (coordinator, ctx.now)
    ctx.send(coordinator, msg)
    p.txn_deadline = ctx.now + p.settings.request_timeout_ms
    p._set_timer(ctx, "txn_timeout", p.settings.request_timeout_ms)


def txn_retry(p: TxnProducer, ctx: Context, request: Any, error: str) -> None:
    """A coordinator's error (the TxnRequestHandlers' handleResponse): fencing and
    INVALID_TXN_STATE are fatal (since 0.11.0.0); INVALID_PRODUCER_ID_MAPPING is fatal until
    2.4 and abortable since 2.5 (KAFKA-8805, ``kip360``: abortableErrorIfPossible); the
    retriable ones are sent again after retry.backoff.ms; any other makes the transaction
    abortable."""
    kind = request if isinstance(request, str) else request[0]
    mapping = error == m.INVALID_PRODUCER_ID_MAPPING
    if error in FENCED or error == m.INVALID_TXN_STATE or (mapping and not p.settings.kip360):
        txn_fatal(p, ctx, error)
        return
    if error not in TXN_RETRY:
        p.txn_state = ABORTABLE_ERROR
        p.txn_error = error
        txn_result(p, ctx, kind, error)
        return
    p.txn_requests.insert(0, request)
    if error == m.NOT_COORDINATOR:
        tp = txn_partition(p.settings.transactional_id)
        if kind == "txn_offset_commit":
            tp = offsets_partition(request[1])
        p.leaders.pop(tp, None)
    p._set_timer(ctx, "txn_backoff", p.settings.retry_backoff_ms)


def txn_fatal(p: TxnProducer, ctx: Context, error: str) -> None:
    """TransactionManager.transitionToFatalError: a newer instance of this transactional.id
    bumped the epoch (this one is a zombie), or another error the client cannot recover
    from. Every batch not yet answered fails with it (Sender.maybeAbortBatches), and so does
    every later call and send: the producer can only be closed."""
    p.txn_state = FATAL_ERROR
    p.txn_error = error
    if p.transactional:
        txn_result(p, ctx, "fenced" if error in FENCED else "fatal", error)
    for batch in [*p.inflight.values(), *p.queue]:
        p._outcome(ctx, batch, error, -1)
    p.inflight.clear()
    p.deadlines.clear()
    p.queue = []
    p.txn_requests = []


def on_txn_response(p: TxnProducer, ctx: Context, msg: Any) -> None:
    request, p.txn_waiting = p.txn_waiting, None
    if request is None:
        return
    if msg.error != m.NONE:
        txn_retry(p, ctx, request, msg.error)
        return
    kind = request[0]
    if kind == "add_partitions":
        p.txn_partitions |= set(request[1])
        p.txn_started = True
    elif kind == "add_offsets":
        p.txn_requests.insert(0, ("txn_offset_commit", request[1], request[2]))
        p.txn_started = True
    elif kind == "txn_offset_commit":
        txn_result(p, ctx, "send_offsets", m.NONE, group=request[1])
    elif kind == "end":
        if msg.producer_epoch > p.producer_epoch:  # transaction version 2: a new epoch
            p.producer_epoch = msg.producer_epoch
            p.next_sequence.clear()
        if p.txn_requests and p.txn_requests[0] == "init":
            return  # completeTransaction: the abort ends once the epoch is bumped
        txn_complete(p, ctx, request[1])


def txn_complete(p: TxnProducer, ctx: Context, commit: bool) -> None:
    """completeTransaction: ready for the next transaction (the error that made the last
    one abortable is forgotten)."""
    p.txn_state = READY
    p.txn_error = ""
    p.epoch_bump_required = False
    p.txn_partitions = set()
    p.txn_started = False
    txn_result(p, ctx, "commit" if commit else "abort", m.NONE)


def abortable(p: TxnProducer, error: str) -> None:
    """TransactionManager.maybeTransitionToErrorState for a failed send: the transaction
    can only be aborted; since 2.5 (KIP-360, ``kip360``) its abort also bumps the epoch, so
    that the next transaction's sequences start from 0 (epochBumpRequired), unless the
    transaction was already being completed."""
    if p.txn_state == ABORTING:
        # transitionToAbortableError skips a transaction already being aborted (since
        # 0.11.0.0, KAFKA-5427): a batch failing during the abort does not stop it
        return
    if p.settings.kip360 and p.txn_state != COMMITTING:
        p.epoch_bump_required = True
    p.txn_state = ABORTABLE_ERROR
    p.txn_error = error
