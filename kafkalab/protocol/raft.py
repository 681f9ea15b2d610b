"""KRaft's controller quorum: Raft over the metadata log (KIP-595).

In KRaft mode a few controller nodes ("c1", "c2", "c3") keep the cluster metadata in one
replicated log. One of them is the leader (the active controller); it appends metadata records,
the others copy them by fetching, and a record is *committed* once a majority of the voters hold
it. A :class:`QuorumController` is one voter; it mirrors Kafka's ``KafkaRaftClient`` with its
``QuorumState`` and the epoch states (``UnattachedState``, ``FollowerState``, ``CandidateState``,
``LeaderState``, ``ResignedState``) from apache/kafka's ``raft`` module.

How it differs from textbook Raft, as Kafka does it:

- **Pull, not push.** Followers send ``FetchMetadata`` to the leader with their log end offset
  and the epoch of their last record; the leader answers with the records that follow and its
  high watermark (HW). There is no AppendEntries. The leader holds an empty fetch for up to
  ``MAX_FETCH_WAIT_MS`` (a long poll) and answers it as soon as it has news.
- **Divergence via epochs.** When a follower's last fetched epoch ends earlier on the leader,
  the leader answers with a *diverging epoch* (the end offset of that epoch in its own log, as
  the ``LeaderEpochFileCache`` would give it) and the follower truncates to it.
- **A leader-change record.** A new leader first appends a control record in its epoch
  (Kafka's ``LeaderChangeMessage``); the HW can only move past records of the leader's own
  epoch, so this record lets earlier records commit without waiting for new metadata.
- **Check quorum.** A leader that has not been fetched from by a majority within 1.5 times the
  fetch timeout resigns.
- **Back-off between a candidate's tries.** A candidate whose election timed out, or that a
  majority refused, waits a random binary-exponential back-off before it campaigns again in
  the next epoch.

The actor is pure: it never reads a clock and never draws a random number. The randomized part
of every election timeout comes from ``election_draws``, and of every back-off from
``backoff_draws``, both supplied by the simulation.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from typing import Any

from kafkalab.protocol.actor import Context
from kafkalab.protocol.raft_messages import (
    BeginQuorumEpoch,
    FetchMetadata,
    FetchMetadataResponse,
    LeaderChange,
    MetadataRecord,
    QuorumStore,
    VoteRequest,
    VoteResponse,
)

NO_HW = -1  # in a fetch response that teaches nothing about the HW

__all__ = [
    "BeginQuorumEpoch",
    "FetchMetadata",
    "FetchMetadataResponse",
    "LeaderChange",
    "MetadataRecord",
    "QuorumController",
    "QuorumStore",
    "VoteRequest",
    "VoteResponse",
]

# The epoch states of Kafka's QuorumState. "voted" is an unattached voter that has granted its
# vote in the current epoch (Kafka's UnattachedState with a voted key, once VotedState).
UNATTACHED = "unattached"
VOTED = "voted"
FOLLOWER = "follower"
CANDIDATE = "candidate"
LEADER = "leader"
RESIGNED = "resigned"

NO_EPOCH = 0  # the last epoch of an empty log (Kafka's OffsetAndEpoch(0, 0))
MAX_FETCH_WAIT_MS = 500  # KafkaRaftClient.MAX_FETCH_WAIT_MS: how long the leader holds a fetch
CHECK_QUORUM_TIMEOUT_FACTOR = 1.5  # LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR
RETRY_BACKOFF_BASE_MS = 100  # KafkaRaftClient.RETRY_BACKOFF_BASE_MS
BACKOFF_DRAW_BOUND = 2 << 20  # the largest bound of KafkaRaftClient's back-off draw


# ---- the actor -----------------------------------------------------------------------------


class QuorumController:
    """One voter of the KRaft controller quorum (KafkaRaftClient with its QuorumState).

    ``election_draws`` supplies the random part of each election timeout: every time the node
    enters a state that waits for an election it takes the next draw ``d`` (``0 <= d < T``) and
    waits ``T + d`` ms, T being ``election_timeout_ms`` (QuorumState.randomElectionTimeoutMs,
    with the Random taken out so that runs replay). ``backoff_draws`` (each ``0 <= d <
    BACKOFF_DRAW_BOUND``) supplies the random part of the candidate's back-offs. ``store`` is
    what a restarted node reads from disk (see :meth:`durable`). Timer names start with
    ``raft:`` so a host actor can embed it.
    """

    def __init__(
        self,
        node_id: str,
        voters: Iterable[str],
        *,
        election_draws: Iterable[int],
        backoff_draws: Iterable[int],
        election_timeout_ms: int = 1000,
        election_backoff_max_ms: int = 1000,
        fetch_timeout_ms: int = 2000,
        request_timeout_ms: int = 2000,
        check_quorum: bool = True,
        store: QuorumStore | None = None,
    ) -> None:
        self.id = node_id
        self.check_quorum = check_quorum  # KAFKA-15489 (3.7); before, a leader never resigned
        self.voters = _validate_voters(node_id, tuple(voters))
        _validate_timeouts(
            election_timeout_ms=election_timeout_ms,
            fetch_timeout_ms=fetch_timeout_ms,
            request_timeout_ms=request_timeout_ms,
        )
        if not isinstance(election_backoff_max_ms, int) or election_backoff_max_ms < 0:
            raise ValueError(
                f"election_backoff_max_ms must be a whole number of ms >= 0, "
                f"got {election_backoff_max_ms!r}"
            )
        self.election_timeout_ms = election_timeout_ms
        self.election_backoff_max_ms = election_backoff_max_ms
        self._backoff_draws = iter(backoff_draws)
        self._retries = 0  # candidate: CandidateState.retries, 1 in a first campaign
        self.fetch_timeout_ms = fetch_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self._draws = iter(election_draws)
        self._store = store or QuorumStore()
        self.state = UNATTACHED
        self.epoch = self._store.epoch
        self.voted_for = self._store.voted_for
        self.leader: str | None = None
        self.log: list[MetadataRecord] = list(self._store.records)
        self.hw = 0
        self._generation = 0  # bumped on every transition: older timers are ignored
        self._reset_role_state()
        self._handlers: dict[type, Callable[[Context, Any, Any], None]] = {
            VoteRequest: self._on_vote_request,
            VoteResponse: self._on_vote_response,
            BeginQuorumEpoch: self._on_begin_quorum_epoch,
            FetchMetadata: self._on_fetch,
            FetchMetadataResponse: self._on_fetch_response,
        }
        self._timers: dict[str, Callable[[Context, Any], None]] = {
            "raft:election": self._election_timed_out,
            "raft:backoff": self._backoff_done,
            "raft:fetch_timeout": self._fetch_timed_out,
            "raft:check_quorum": self._check_quorum,
            "raft:begin_epoch": self._resend_begin_quorum_epoch,
            "raft:fetch_wait": self._fetch_wait_expired,
        }

    def _reset_role_state(self) -> None:
        self._granted: set[str] = set()  # candidate: voters that granted
        self._rejected: set[str] = set()  # candidate: voters that refused
        self._backing_off = False  # candidate: waiting before it campaigns again
        self._epoch_start_offset = 0  # leader: log end offset when it was elected
        self._end_offsets: dict[str, int] = {}  # leader: each follower's validated fetch offset
        self._fetched: set[str] = set()  # leader: followers that fetched in this epoch
        self._recent_fetchers: set[str] = set()  # leader: since a majority last fetched
        self._check_quorum_deadline_ms = 0  # leader: resigns if no majority fetched by then
        self._parked: dict[str, tuple[int, FetchMetadata]] = {}  # leader: held empty fetches
        self._parked_seq = 0
        self._fetch_inflight = False  # follower: a fetch awaits its response
        self._fetch_deadline_ms = 0  # follower: becomes candidate if no response by then

    # ---- what the rest of kafkalab reads ----------------------------------------------------

    @property
    def leo(self) -> int:
        """Log end offset: the offset the next record gets."""
        return len(self.log)

    @property
    def last_epoch(self) -> int:
        """The epoch of the last record (``NO_EPOCH`` for an empty log)."""
        return self.log[-1].epoch if self.log else NO_EPOCH

    @property
    def is_leader(self) -> bool:
        return self.state == LEADER

    def committed(self) -> list[MetadataRecord]:
        """The committed records, in order (those below the HW), control records included (see
        :attr:`MetadataRecord.is_control`). A controller state machine applies these."""
        return self.log[: self.hw]

    def durable(self) -> QuorumStore:
        """What survives a crash: the quorum-state file and the (flushed) metadata log."""
        leader = self.leader if self.state in (FOLLOWER, LEADER, RESIGNED) else None
        return QuorumStore(self.epoch, self.voted_for, leader, tuple(self.log))

    def append(self, ctx: Context, payload: Any) -> int | None:
        """The leader appends one metadata record in its epoch and returns its offset; on any
        other node it returns None (Kafka's RaftClient.prepareAppend/schedulePrepend refuse a
        non-leader). The record is committed once a majority holds it."""
        if self.state != LEADER:
            return None
        offset = self._append_local(payload)
        self._maybe_advance_hw(ctx)
        self._release_parked(ctx)  # long-polling followers get the record now
        return offset

    # ---- the actor interface ----------------------------------------------------------------

    def start(self, ctx: Context) -> None:
        """Resume from disk as QuorumState.initialize does: a former leader resigns, a former
        candidate campaigns again in its epoch, a voter keeps its vote, a follower follows."""
        stored = self._store
        if stored.leader == self.id:
            self._enter(ctx, RESIGNED, self.epoch, self.id)
        elif stored.leader is not None:
            self._become_follower(ctx, self.epoch, stored.leader)
        elif stored.voted_for == self.id:
            self._campaign(ctx, self.epoch)
        else:
            self._enter(ctx, VOTED if stored.voted_for else UNATTACHED, self.epoch, None)

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        handler = self._handlers.get(type(msg))
        if handler is not None:
            handler(ctx, src, msg)

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        generation, *rest = data
        if generation == self._generation:  # else the state that armed it is gone
            self._timers[name](ctx, rest)

    # ---- transitions (QuorumState.transitionTo*) ----------------------------------------------

    def _enter(self, ctx: Context, state: str, epoch: int, leader: str | None) -> None:
        if epoch < self.epoch:
            raise AssertionError(f"{self.id}: epoch would go back from {self.epoch} to {epoch}")
        if epoch > self.epoch:
            self.voted_for = None  # a vote is for one epoch only
        was_leader = self.state == LEADER
        parked = self._parked
        self.state, self.epoch, self.leader = state, epoch, leader
        self._generation += 1
        self._reset_role_state()
        ctx.emit("raft_state", node=self.id, state=state, epoch=epoch, leader=leader)
        if state in (UNATTACHED, VOTED, CANDIDATE, RESIGNED):
            self._set_timer(ctx, self._random_election_timeout_ms(), "raft:election")
        if was_leader:  # held fetches learn about the new epoch instead of timing out
            for replica, (_, request) in sorted(parked.items()):
                self._answer_fetch(ctx, replica, request)

    def _become_unattached(self, ctx: Context, epoch: int) -> None:
        self._enter(ctx, UNATTACHED, epoch, None)

    def _become_follower(self, ctx: Context, epoch: int, leader: str) -> None:
        self._enter(ctx, FOLLOWER, epoch, leader)
        self._fetch_deadline_ms = ctx.now + self.fetch_timeout_ms
        self._set_timer(ctx, self.fetch_timeout_ms, "raft:fetch_timeout")
        self._send_fetch(ctx)

    def _campaign(self, ctx: Context, epoch: int) -> None:
        """Become a candidate in ``epoch``: vote for yourself and ask the others."""
        retries = self._retries + 1 if self.state == CANDIDATE else 1
        self._enter(ctx, CANDIDATE, epoch, None)
        self._retries = retries
        self.voted_for = self.id
        self._granted = {self.id}
        if self._has_majority(self._granted):
            self._become_leader(ctx)
            return
        request = VoteRequest(self.epoch, self.id, self.last_epoch, self.leo)
        for voter in self._others():
            ctx.send(voter, request)

    def _become_leader(self, ctx: Context) -> None:
        """KafkaRaftClient.onBecomeLeader: remember where the epoch starts, write the
        leader-change record, announce the epoch."""
        self._enter(ctx, LEADER, self.epoch, self.id)
        self._epoch_start_offset = self.leo
        self._append_local(LeaderChange(self.id, self.voters))
        for voter in self._others():
            ctx.send(voter, BeginQuorumEpoch(self.epoch, self.id))
        self._check_quorum_deadline_ms = ctx.now + self._check_quorum_timeout_ms
        if self.check_quorum:
            self._set_timer(ctx, self._check_quorum_timeout_ms, "raft:check_quorum")
        self._set_timer(ctx, self.request_timeout_ms, "raft:begin_epoch")
        self._maybe_advance_hw(ctx)  # a quorum of one commits at once

    def _observe_leader(self, ctx: Context, epoch: int, leader: str | None) -> bool:
        """React to an epoch and leader seen in a message (KafkaRaftClient.maybeTransition).
        Returns True when this moved the node to a new state."""
        if epoch > self.epoch:
            if leader is None:
                self._become_unattached(ctx, epoch)
            else:
                self._become_follower(ctx, epoch, leader)
            return True
        if epoch == self.epoch and leader is not None and self.leader is None:
            self._become_follower(ctx, epoch, leader)
            return True
        return False

    # ---- elections ----------------------------------------------------------------------------

    def _on_vote_request(self, ctx: Context, src: Any, req: VoteRequest) -> None:
        """KafkaRaftClient.handleVoteRequest: a higher epoch makes this node unattached in it
        first; then the vote goes by the epoch state's canGrantVote."""
        if req.candidate not in self.voters:  # validateVoterOnlyRequest
            ctx.send(src, VoteResponse(self.epoch, False, self.id, self._known_leader()))
            return
        if req.epoch > self.epoch:
            self._become_unattached(ctx, req.epoch)
        granted = req.epoch == self.epoch and self._can_grant_vote(req)
        if granted and self.state == UNATTACHED:
            self._enter(ctx, VOTED, self.epoch, None)
            self.voted_for = req.candidate
        ctx.emit(
            "raft_vote", voter=self.id, candidate=req.candidate, epoch=req.epoch, granted=granted
        )
        ctx.send(src, VoteResponse(self.epoch, granted, self.id, self._known_leader()))

    def _can_grant_vote(self, req: VoteRequest) -> bool:
        """One vote per epoch, none once the epoch has a leader, and only for a candidate whose
        log ends at or after ours: (last epoch, end offset) compared in that order."""
        if self.state == VOTED:
            return self.voted_for == req.candidate
        if self.state != UNATTACHED:
            return False  # a candidate voted for itself; a leader or follower knows the leader
        return (req.last_epoch, req.last_offset) >= (self.last_epoch, self.leo)

    def _on_vote_response(self, ctx: Context, src: Any, resp: VoteResponse) -> None:
        """KafkaRaftClient.handleVoteResponse: a higher epoch, or a leader already elected in
        this epoch, ends the candidacy (maybeHandleCommonResponse); else count the vote."""
        if resp.epoch < self.epoch or self._observe_leader(ctx, resp.epoch, resp.leader):
            return
        if self.state != CANDIDATE:
            return
        if not resp.granted:
            # KafkaRaftClient.handleVoteResponse: once a majority can no longer be reached,
            # back off at once instead of waiting out the election timeout.
            self._rejected.add(resp.voter)
            if self._vote_rejected() and not self._backing_off:
                self._start_backoff(ctx)
            return
        self._granted.add(resp.voter)
        if self._has_majority(self._granted):
            self._become_leader(ctx)

    def _vote_rejected(self) -> bool:
        """CandidateState.isVoteRejected: the voters that granted or have not answered are no
        longer a majority."""
        still_possible = set(self.voters) - (self._rejected - self._granted)
        return not self._has_majority(still_possible)

    def _start_backoff(self, ctx: Context) -> None:
        """binaryExponentialElectionBackoffMs: RETRY_BACKOFF_BASE_MS times a random whole number
        below 2 ** retries (the exponent capped at 21), at most election_backoff_max_ms."""
        self._backing_off = True
        bound = 2 << min(20, self._retries - 1)
        draw = next(self._backoff_draws, None)
        if draw is None or not 0 <= draw < BACKOFF_DRAW_BOUND:
            raise ValueError(
                f"{self.id}: back-off draw {draw!r} is missing or outside "
                f"[0, {BACKOFF_DRAW_BOUND}); supply an endless stream"
            )
        delay = min(RETRY_BACKOFF_BASE_MS * (draw % bound), self.election_backoff_max_ms)
        ctx.emit("raft_backoff", node=self.id, epoch=self.epoch, backoff_ms=delay)
        self._set_timer(ctx, delay, "raft:backoff")

    def _backoff_done(self, ctx: Context, _: list[Any]) -> None:
        self._campaign(ctx, self.epoch + 1)

    def _on_begin_quorum_epoch(self, ctx: Context, src: Any, msg: BeginQuorumEpoch) -> None:
        self._observe_leader(ctx, msg.epoch, msg.leader)

    def _election_timed_out(self, ctx: Context, _: list[Any]) -> None:
        """No leader showed up in time: campaign in the next epoch. A candidate whose election
        timed out first backs off (KafkaRaftClient.pollCandidate), then campaigns again, in
        the next epoch, with a fresh random election timeout."""
        if self.state != CANDIDATE:
            self._campaign(ctx, self.epoch + 1)
        elif not self._backing_off:
            self._start_backoff(ctx)

    # ---- the leader -------------------------------------------------------------------------

    def _on_fetch(self, ctx: Context, src: Any, req: FetchMetadata) -> None:
        """KafkaRaftClient.handleFetchRequest/tryCompleteFetchRequest on the leader."""
        if self.state != LEADER or req.epoch != self.epoch or req.replica not in self.voters:
            # A stale fetcher learns our epoch and leader from the answer; a fetch from outside
            # the voter set is served but does not count towards the HW.
            self._answer_fetch(ctx, src, req)
            return
        self._fetched.add(req.replica)
        self._update_check_quorum(ctx, req.replica)
        if self._diverging(req) is None:
            self._end_offsets[req.replica] = req.fetch_offset
            if self._maybe_advance_hw(ctx):
                self._release_parked(ctx)
            elif req.fetch_offset >= self.leo:
                self._park(ctx, src, req)  # nothing new: hold it (a long poll)
                return
        self._answer_fetch(ctx, src, req)

    def _known_leader(self) -> str | None:
        """The leader this node names in its answers: a resigned leader names none, so that
        nobody follows it."""
        return None if self.state == RESIGNED else self.leader

    def _answer_fetch(self, ctx: Context, src: Any, req: FetchMetadata) -> None:
        if self.state != LEADER or req.epoch != self.epoch:
            # Not a fetch to serve: tell the fetcher our epoch and its leader, if we know one.
            # It carries no HW: the fetcher's log was not validated, so it must not learn one
            # (Kafka answers with an error such as FENCED_LEADER_EPOCH).
            leader = self._known_leader()
            ctx.send(src, FetchMetadataResponse(self.epoch, leader, (), NO_HW, None))
            return
        diverging = self._diverging(req)
        records = () if diverging else tuple(self.log[req.fetch_offset :])
        ctx.send(src, FetchMetadataResponse(self.epoch, self.id, records, self.hw, diverging))

    def _diverging(self, req: FetchMetadata) -> tuple[int, int] | None:
        """ReplicatedLog.validateOffsetAndEpoch: the fetch is valid when our log has the
        follower's last fetched epoch ending at or after its fetch offset; else the follower
        diverged, and gets (epoch, end offset) of the last epoch we share with it."""
        if req.fetch_offset == 0:
            return None
        epoch, end_offset = self._end_offset_for_epoch(req.last_fetched_epoch)
        if epoch != req.last_fetched_epoch or end_offset < req.fetch_offset:
            return (epoch, end_offset)
        return None

    def _park(self, ctx: Context, src: Any, req: FetchMetadata) -> None:
        self._parked_seq += 1
        self._parked[src] = (self._parked_seq, req)
        self._set_timer(ctx, MAX_FETCH_WAIT_MS, "raft:fetch_wait", src, self._parked_seq)

    def _release_parked(self, ctx: Context) -> None:
        parked, self._parked = self._parked, {}
        for replica, (_, request) in sorted(parked.items()):
            self._answer_fetch(ctx, replica, request)

    def _fetch_wait_expired(self, ctx: Context, data: list[Any]) -> None:
        replica, seq = data
        entry = self._parked.get(replica)
        if entry is not None and entry[0] == seq:
            del self._parked[replica]
            self._answer_fetch(ctx, replica, entry[1])

    def _maybe_advance_hw(self, ctx: Context) -> bool:
        """LeaderState.maybeUpdateHighWatermark: the HW is the largest end offset a majority of
        voters have reached (the leader counts its own), and it may only move once it passes the
        start of the leader's epoch, i.e. once a record of the current epoch is on a majority."""
        offsets = sorted(
            (self.leo if v == self.id else self._end_offsets.get(v, 0) for v in self.voters),
            reverse=True,
        )
        candidate = offsets[len(self.voters) // 2]
        if candidate > self._epoch_start_offset and candidate > self.hw:
            self._set_hw(ctx, candidate)
            return True
        return False

    @property
    def _check_quorum_timeout_ms(self) -> int:
        return int(self.fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)

    def _update_check_quorum(self, ctx: Context, replica: str) -> None:
        """LeaderState.updateCheckQuorumForFollowingVoter: once a majority (the leader counts)
        has fetched, start the check-quorum period again."""
        self._recent_fetchers.add(replica)
        if self._has_majority(self._recent_fetchers | {self.id}):
            self._recent_fetchers = set()
            self._check_quorum_deadline_ms = ctx.now + self._check_quorum_timeout_ms

    def _check_quorum(self, ctx: Context, _: list[Any]) -> None:
        """The check-quorum timer: a leader that a majority has not fetched from for 1.5 times
        the fetch timeout resigns (it is probably cut off, and a new leader may exist)."""
        if ctx.now < self._check_quorum_deadline_ms:
            remaining_ms = self._check_quorum_deadline_ms - ctx.now
            self._set_timer(ctx, remaining_ms, "raft:check_quorum")
        else:
            self._enter(ctx, RESIGNED, self.epoch, self.id)

    def _resend_begin_quorum_epoch(self, ctx: Context, _: list[Any]) -> None:
        """Voters that have not fetched in this epoch may have missed the announcement."""
        for voter in self._others():
            if voter not in self._fetched:
                ctx.send(voter, BeginQuorumEpoch(self.epoch, self.id))
        self._set_timer(ctx, self.request_timeout_ms, "raft:begin_epoch")

    # ---- the follower -----------------------------------------------------------------------

    def _send_fetch(self, ctx: Context) -> None:
        assert self.leader is not None  # a follower knows its leader
        self._fetch_inflight = True
        ctx.send(self.leader, FetchMetadata(self.epoch, self.id, self.leo, self.last_epoch))

    def _on_fetch_response(self, ctx: Context, src: Any, resp: FetchMetadataResponse) -> None:
        """KafkaRaftClient.handleFetchResponse: truncate on divergence, else append, then learn
        the HW and fetch again."""
        if resp.epoch < self.epoch or self._observe_leader(ctx, resp.epoch, resp.leader):
            return
        if self.state != FOLLOWER or src != self.leader or resp.leader != src:
            return
        if not self._fetch_inflight:
            return
        self._fetch_inflight = False
        self._fetch_deadline_ms = ctx.now + self.fetch_timeout_ms
        if resp.diverging is not None:
            self._truncate_to_end_offset(ctx, *resp.diverging)
        elif resp.records and resp.records[0].offset == self.leo:
            self.log.extend(resp.records)
        if self.hw < min(resp.hw, self.leo):
            self._set_hw(ctx, min(resp.hw, self.leo))
        self._send_fetch(ctx)

    def _truncate_to_end_offset(self, ctx: Context, epoch: int, end_offset: int) -> None:
        """ReplicatedLog.truncateToEndOffset: cut the log where it stops agreeing with the
        leader's (epoch, end offset). Committed records are never cut."""
        if epoch == NO_EPOCH:
            offset = min(end_offset, self.leo)
        else:
            local_epoch, local_end = self._end_offset_for_epoch(epoch)
            offset = min(local_end, end_offset) if local_epoch == epoch else local_end
        if offset < self.hw:
            raise AssertionError(f"{self.id}: told to truncate to {offset}, below HW {self.hw}")
        if offset < self.leo:
            ctx.emit("raft_truncate", node=self.id, offset=offset, epoch=self.epoch)
            del self.log[offset:]

    def _fetch_timed_out(self, ctx: Context, _: list[Any]) -> None:
        """FollowerState.hasFetchTimeoutExpired: no answer from the leader for
        fetch_timeout_ms makes a voter a candidate."""
        if ctx.now < self._fetch_deadline_ms:
            self._set_timer(ctx, self._fetch_deadline_ms - ctx.now, "raft:fetch_timeout")
        else:
            self._campaign(ctx, self.epoch + 1)

    # ---- helpers ------------------------------------------------------------------------------

    def _append_local(self, payload: Any) -> int:
        offset = self.leo
        self.log.append(MetadataRecord(offset, self.epoch, payload))
        return offset

    def _end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """LeaderEpochFileCache.endOffsetFor: the largest epoch in our log not above ``epoch``,
        and where it ends (the start of the next epoch, or the log end)."""
        end = bisect_right(self.log, epoch, key=lambda r: r.epoch)
        return (self.log[end - 1].epoch if end else NO_EPOCH, end)

    def _set_hw(self, ctx: Context, hw: int) -> None:
        self.hw = hw
        ctx.emit("raft_commit", node=self.id, hw=hw)

    def _has_majority(self, nodes: set[str]) -> bool:
        return len(nodes & set(self.voters)) > len(self.voters) // 2

    def _others(self) -> list[str]:
        return [v for v in self.voters if v != self.id]

    def _set_timer(self, ctx: Context, delay_ms: int, name: str, *data: Any) -> None:
        ctx.set_timer(delay_ms, name, (self._generation, *data))

    def _random_election_timeout_ms(self) -> int:
        draw = next(self._draws, None)
        if draw is None:
            raise ValueError(f"{self.id}: election_draws ran out; supply an endless stream")
        if not 0 <= draw < self.election_timeout_ms:
            raise ValueError(
                f"{self.id}: election draw {draw!r} is outside [0, {self.election_timeout_ms})"
            )
        return self.election_timeout_ms + draw


def _validate_voters(node_id: str, voters: tuple[str, ...]) -> tuple[str, ...]:
    if not voters or len(set(voters)) != len(voters):
        raise ValueError(f"voters must be distinct node ids, at least one, got {voters!r}")
    if node_id not in voters:
        raise ValueError(f"node {node_id!r} is not among the voters {voters!r}")
    return voters


def _validate_timeouts(**timeouts_ms: int) -> None:
    for name, value in timeouts_ms.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive integer of ms, got {value!r}")
