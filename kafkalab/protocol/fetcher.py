"""The follower side of replication (AbstractFetcherThread / ReplicaFetcherThread): fetch from
the leader, find the truncation point (with OffsetsForLeaderEpoch from 0.11 to 2.7, from the
fetch response since 2.8), truncate, follow the HW.

Each rule names the Kafka function it mirrors (apache/kafka, core/src/main/scala/kafka/...).
"""

from __future__ import annotations

from typing import Any

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import ConnectionClosed, Context
from kafkalab.protocol.commands import FetchNow
from kafkalab.protocol.host import BrokerHost
from kafkalab.protocol.log import UNDEFINED_EPOCH
from kafkalab.protocol.producer_state import ProducerStateManager
from kafkalab.protocol.replica import ReplicaState, arm, set_hw

__all__ = ["ReplicaFetcher"]


class ReplicaFetcher:
    """The fetcher of one broker, for every partition it follows. ``host.auto_fetch`` is timed
    mode: the follower fetches on its own, in a loop; in stepped mode it only fetches when told
    (:class:`~kafkalab.protocol.commands.FetchNow`)."""

    def __init__(self, host: BrokerHost) -> None:
        self.host = host

    def auto(self, r: ReplicaState) -> bool:
        """Whether the follower fetches on its own: always in timed mode, and for the internal
        topics in stepped mode too (a lesson steps the data partition by hand, not them)."""
        return self.host.auto_fetch or r.tp.startswith("__")

    def on_fetch_now(self, ctx: Context, src: Any, cmd: FetchNow) -> None:
        r = self.host.partitions[cmd.tp]
        if r.role == "follower":
            r.inflight = None  # an outstanding request whose response was lost has timed out
            self.send_fetch(ctx, r, cmd.max_wait_ms)

    def send_fetch(self, ctx: Context, r: ReplicaState, max_wait_ms: int | None = None) -> None:
        """AbstractFetcherThread: truncate first when needed, else fetch from the LEO. Since 2.8
        (``truncation_on_fetch``) the fetch names the latest epoch in the follower's cache
        (PartitionFetchState.lastFetchedEpoch), so the leader can tell it where to truncate."""
        assert r.leader is not None
        host, config = self.host, self.host.config
        correlation = host.next_correlation()
        r.inflight = correlation
        current_epoch = r.leader_epoch if config.kip320 else None
        if r.truncating and not config.truncation_on_fetch:
            req: Any = m.OffsetsForLeaderEpochRequest(
                r.tp, host.id, r.log.latest_epoch, current_epoch, correlation
            )
        else:
            wait = config.replica_fetch_wait_max_ms if max_wait_ms is None else max_wait_ms
            req = m.FetchRequest(
                r.tp,
                host.id,
                r.log.leo,
                current_epoch,
                wait,
                correlation,
                config.replica_fetch_max_bytes,
                host.session if host.kraft and host.session is not None else -1,
                config.replica_fetch_response_max_bytes,
                r.log.log_start_offset,
                r.log.latest_epoch if config.truncation_on_fetch else UNDEFINED_EPOCH,
            )
        ctx.send(r.leader, req)
        r.fetch_sent_ms = ctx.now
        if self.auto(r):
            r.fetch_sent_ms = ctx.now
            # The fetcher's request timeout: a lost request or response does not stall it forever.
            r.fetch_deadline_ms = ctx.now + config.request_timeout_ms
            arm(ctx, r, "fetch_timeout", r.fetch_deadline_ms)

    def fetch_timed_out(self, ctx: Context, r: ReplicaState) -> None:
        """No answer within the request timeout: a failed fetch like any other
        (AbstractFetcherThread.processFetchRequest marks every partition as failed and backs
        them off, since 0.9; the 0.8 fetcher tried again at once)."""
        if r.role != "follower" or r.inflight is None:
            return
        if r.fetch_deadline_ms <= ctx.now:
            r.inflight = None
            self._next_fetch(ctx, r, self._error_backoff_ms(ctx, r))
        else:
            arm(ctx, r, "fetch_timeout", r.fetch_deadline_ms)

    def _waits_on(self, r: ReplicaState, peer: Any) -> bool:
        return r.role == "follower" and r.leader == peer and r.inflight is not None

    def awaits_answer_from(self, peer: Any) -> bool:
        """Whether a request sent on its own (timed mode) waits for ``peer``'s answer."""
        return any(self._waits_on(r, peer) and self.auto(r) for r in self.host.partitions.values())

    def on_connection_closed(self, ctx: Context, src: Any, msg: ConnectionClosed) -> None:
        """The connection to the leader broke (its process died) or was refused: NetworkClient
        fails the request at once, and AbstractFetcherThread marks the partitions failed and
        backs off replica.fetch.backoff.ms (processFetchRequest; maybeTruncate for
        OffsetsForLeaderEpoch). The same in every release: 0.8's SimpleConsumer tried one
        reconnection, then failed too. A request sent after ``msg.at_ms`` went on a new
        connection and waits on."""
        for r in self.host.partitions.values():
            if self._waits_on(r, msg.peer) and self.auto(r) and r.fetch_sent_ms <= msg.at_ms:
                r.inflight = None
                ctx.emit("fetch_error", broker=self.host.id, tp=r.tp, error=m.NETWORK_EXCEPTION)
                self._next_fetch(ctx, r, self.host.config.replica_fetch_backoff_ms)

    def on_backoff_timer(self, ctx: Context, name: str, tp: str) -> None:
        r = self.host.partitions[tp]
        if r.role == "follower" and r.inflight is None:
            self.send_fetch(ctx, r)

    def _accept_response(self, r: ReplicaState, correlation_id: int) -> bool:
        if r.role != "follower" or r.inflight != correlation_id:
            return False
        r.inflight = None
        return True

    def on_fetch_response(self, ctx: Context, src: Any, resp: m.FetchResponse) -> None:
        """ReplicaFetcherThread.processPartitionData: append, then follower HW =
        min(leader's HW, own LEO). The follower takes that HW as it comes
        (UnifiedLog.maybeUpdateHighWatermark), so it moves back when a new leader's is lower.
        A response with a diverging epoch (since 2.8) carries no records: the follower
        truncates (:meth:`truncate_on_fetch_response`); since 3.4.1 (KAFKA-14704,
        ``diverging_fetch_skips_hw``) it leaves that response's HW and log start offset alone
        (the next fetch brings them), before it took them first, so its HW could pass the
        truncation point until the truncation brought it back. After FENCED_LEADER_EPOCH
        (KIP-320, 2.1) the follower stops fetching until its next LeaderAndIsr
        (onPartitionFenced); other errors are retried after the back-off."""
        host = self.host
        r = host.partitions[resp.tp]
        if not self._accept_response(r, resp.correlation_id):
            return
        if resp.error == m.NONE and resp.diverging_epoch is not None:
            if not host.config.diverging_fetch_skips_hw:
                self._follow_leader_offsets(ctx, r, resp)  # before 3.4.1 (KAFKA-14704)
            self.truncate_on_fetch_response(ctx, r, resp.diverging_epoch)
        elif resp.error == m.NONE:
            r.truncating = False  # the leader found nothing to truncate
            if resp.records and resp.records[0].offset == r.log.leo:
                r.log.append_replicated(resp.records)
                r.producers.observe(resp.records)  # followers rebuild producer state as they go
                ctx.emit(
                    "replicate",
                    broker=host.id,
                    tp=r.tp,
                    first=resp.records[0].offset,
                    last=resp.records[-1].offset,
                )
            self._follow_leader_offsets(ctx, r, resp)
            self._next_fetch(ctx, r, 0)
        elif resp.error == m.OFFSET_OUT_OF_RANGE:
            self.handle_offset_out_of_range(ctx, r, resp.leader_leo)
        else:
            ctx.emit("fetch_error", broker=host.id, tp=r.tp, error=resp.error)
            self._after_error(ctx, r, resp.error)

    def _follow_leader_offsets(self, ctx: Context, r: ReplicaState, resp: m.FetchResponse) -> None:
        """The follower's HW and log start offset after a fetch response."""
        host = self.host
        new_hw = host.rules.follower_hw(resp.hw, r.log.leo)
        if host.config.hw_floor_at_log_start:  # Log.updateHighWatermark (2.4)
            new_hw = max(new_hw, r.log.log_start_offset)
        if new_hw != r.log.hw:
            set_hw(ctx, host.id, r, new_hw)
        if host.config.kip107 and r.log.increment_log_start_offset(resp.log_start_offset):
            ctx.emit("log_start_offset", broker=host.id, tp=r.tp, offset=resp.log_start_offset)

    def _after_error(self, ctx: Context, r: ReplicaState, error: str) -> None:
        """AbstractFetcherThread after an error answer: since 2.1 (KIP-320) a fenced follower
        (its leader epoch is older than the leader's) stops fetching the partition and waits for
        the LeaderAndIsr that tells it the new epoch (onPartitionFenced); every other error is
        tried again after the back-off (UNKNOWN_LEADER_EPOCH too: the leader has not heard of
        the new epoch yet)."""
        if error == m.FENCED_LEADER_EPOCH and self.host.config.kip320:
            ctx.emit("fetch_fenced", broker=self.host.id, tp=r.tp, leader_epoch=r.leader_epoch)
            return
        self._next_fetch(ctx, r, self._error_backoff_ms(ctx, r))

    def truncate_on_fetch_response(
        self, ctx: Context, r: ReplicaState, diverging_epoch: tuple[int, int]
    ) -> None:
        """AbstractFetcherThread.truncateOnFetchResponse (KAFKA-10554, 2.8): the leader said
        where the follower's last fetched epoch ends in its log (the diverging epoch). The
        follower truncates as after an OffsetsForLeaderEpoch answer
        (getOffsetTruncationState), and goes on fetching from its new LEO: when its copy of that
        epoch ends elsewhere, the next fetch names its new latest epoch, so KIP-279's loop runs
        through fetches (updateFetchOffsetAndMaybeMarkTruncationComplete)."""
        epoch, end_offset = diverging_epoch
        target, _ = self.host.rules.truncation_offset(
            epoch, end_offset, tuple(r.log.epochs), r.log.leo, r.log.hw
        )
        self.truncate(ctx, r, target, "diverging_epoch")
        self._next_fetch(ctx, r, 0)

    def _error_backoff_ms(self, ctx: Context, r: ReplicaState) -> int:
        """How long the fetcher waits after a failed request: replica.fetch.backoff.ms since 0.9
        (KAFKA-1461, AbstractFetcherThread.delayPartitions). Before (0 here, the 0.8 preset)
        there was no back-off: the fetcher thread built and sent the next request as soon as it
        had handled the error, so it was bounded only by the round trip. On a network without
        latency that round trip takes no simulated time, and the next try goes 1 ms later, so
        that a leader that keeps refusing does not stop the clock."""
        backoff = self.host.config.replica_fetch_backoff_ms
        if backoff == 0 and ctx.now == r.fetch_sent_ms:
            return 1
        return backoff

    def handle_offset_out_of_range(self, ctx: Context, r: ReplicaState, leader_leo: int) -> None:
        """ReplicaFetcherThread.handleOffsetOutOfRange (AbstractFetcherThread.
        fetchOffsetAndTruncate since 2.8): a follower ahead of the leader truncates to the
        leader's LEO (the pre-0.11 path that loses acknowledged records; since 2.8 also the
        answer to a last fetched epoch the leader cannot place), and fetches again from its LEO.
        A follower that removed nothing tries again 1 ms later when the answer took no
        simulated time, so that a leader that keeps refusing does not stop the clock (Kafka
        asks the leader's offsets with ListOffsets in between)."""
        config = self.host.config
        before = r.log.leo
        if r.log.leo > leader_leo:
            if not config.unclean_leader_election_enable and config.out_of_range_halts:
                # 0.8.2 to 2.0.0: "Exiting because log truncation is not allowed" (System.exit).
                ctx.stop_process(
                    f"broker {self.host.id} is ahead of the leader ({r.log.leo} > {leader_leo}) "
                    "and unclean leader election is disabled, so it may not truncate: it halts"
                )
                return
            self.truncate(ctx, r, leader_leo, "offset_out_of_range")
        r.truncating = False  # fetchOffsetAndTruncate: Fetching from here
        stalled = r.log.leo == before and ctx.now == r.fetch_sent_ms
        self._next_fetch(ctx, r, 1 if stalled else 0)

    def on_epoch_response(
        self, ctx: Context, src: Any, resp: m.OffsetsForLeaderEpochResponse
    ) -> None:
        """AbstractFetcherThread.maybeTruncate / getOffsetTruncationState.

        KIP-101: truncate to min(leader's end offset, own LEO); an undefined answer falls back to
        the HW. KIP-279: if the leader answered with an epoch this replica does not end at the same
        place, truncate to where this replica's copy of that epoch ends and ask again."""
        host = self.host
        r = host.partitions[resp.tp]
        if not self._accept_response(r, resp.correlation_id):
            return
        if resp.error != m.NONE:
            ctx.emit("fetch_error", broker=host.id, tp=r.tp, error=resp.error)
            self._after_error(ctx, r, resp.error)
            return
        target, done = host.rules.truncation_offset(
            resp.leader_epoch, resp.end_offset, tuple(r.log.epochs), r.log.leo, r.log.hw
        )
        self.truncate(ctx, r, target, "leader_epoch")
        r.truncating = not done or not r.log.epochs
        if not r.log.epochs:
            r.truncating = False
        self._next_fetch(ctx, r, 0)

    def _next_fetch(self, ctx: Context, r: ReplicaState, backoff_ms: int) -> None:
        if not self.auto(r) or r.role != "follower":
            return
        if backoff_ms:
            ctx.set_timer(backoff_ms, "fetch_backoff", r.tp)
        else:
            self.send_fetch(ctx, r)

    def truncate(self, ctx: Context, r: ReplicaState, offset: int, reason: str) -> None:
        """UnifiedLog.truncateTo: drop the records from ``offset`` on, and rebuild the producer
        state from what is left. A truncation at or past the LEO removes nothing, but Kafka
        logs it all the same (Log.truncateTo in 0.10, UnifiedLog.truncateTo's "has no effect"
        in 3.7), so the trace notes it too."""
        old_leo, old_hw = r.log.leo, r.log.hw
        if offset >= old_leo:
            ctx.emit(
                "truncate_no_effect",
                broker=self.host.id,
                tp=r.tp,
                to=offset,
                leo=old_leo,
                reason=reason,
            )
            return
        removed = [rec.value for rec in r.log.records[offset:]]
        r.log.truncate_to(offset)
        r.producers = ProducerStateManager.rebuild(r.log.records)
        ctx.emit(
            "truncate",
            broker=self.host.id,
            tp=r.tp,
            to=offset,
            old_leo=old_leo,
            old_hw=old_hw,
            removed=removed,
            reason=reason,
        )
