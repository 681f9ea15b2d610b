"""The leader's and the follower's rules for one partition (kafka.cluster.Partition): becoming
leader or follower, the follower fetch state, the HW, ISR changes through AlterPartition, and the
leader's answers to follower fetches and OffsetsForLeaderEpoch.

Each rule names the Kafka function it mirrors (apache/kafka, core/src/main/scala/kafka/...).
"""

from __future__ import annotations

from typing import Any

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.coordinator import Coordinator
from kafkalab.protocol.fetcher import ReplicaFetcher
from kafkalab.protocol.host import CONTROLLER_CHANNEL_RETRY_MS, BrokerHost
from kafkalab.protocol.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET
from kafkalab.protocol.purgatory import Purgatory
from kafkalab.protocol.replica import (
    NEVER_MS,
    UNKNOWN_LEO,
    DelayedFetch,
    Remote,
    ReplicaState,
    arm,
    diverging_epoch,
    fetch_response,
    min_isr,
    read,
    set_hw,
)
from kafkalab.protocol.zookeeper import ZOOKEEPER

__all__ = ["Partition"]

# Partition.handleAlterPartitionError: answers that keep the proposal pending until new
# metadata arrives, and answers that restore the committed state.
_ALTER_PARTITION_WAIT = frozenset(
    {
        m.FENCED_LEADER_EPOCH,
        m.INVALID_UPDATE_VERSION,
        m.UNKNOWN_TOPIC_OR_PARTITION,
        m.INVALID_REQUEST,
        m.NEW_LEADER_ELECTED,
    }
)
_ALTER_PARTITION_RESET = frozenset({m.INELIGIBLE_REPLICA, m.OPERATION_NOT_ATTEMPTED})


class Partition:
    """kafka.cluster.Partition's rules. One instance serves every partition of its broker:
    each call names the :class:`~kafkalab.protocol.replica.ReplicaState` it acts on. The
    ``coordinators`` hear when this broker gains or loses a partition's leadership."""

    def __init__(
        self,
        host: BrokerHost,
        purgatory: Purgatory,
        fetcher: ReplicaFetcher,
        coordinators: tuple[Coordinator, ...],
    ) -> None:
        self.host = host
        self.purgatory = purgatory
        self.fetcher = fetcher
        self.coordinators = coordinators
        # 0.9 to 2.6 (ReplicaManager.recordIsrChange): the partitions whose ISR this broker
        # wrote to ZooKeeper since its last /isr_change_notification, and when it last did.
        self.isr_changes: dict[str, None] = {}
        self.last_isr_change_ms = 0

    # ---- becoming leader or follower -----------------------------------------------------

    def update_partition(self, ctx: Context, r: ReplicaState, msg: m.LeaderAndIsr) -> None:
        """Same leader epoch, newer partition epoch: only the ISR changed (in KRaft an ISR
        change does not bump the leader epoch; Partition.makeLeader compares partition
        epochs)."""
        r.isr = msg.isr
        r.partition_epoch = msg.partition_epoch
        r.alter_isr_pending = False  # the committed state replaces any pending proposal
        r.maximal_isr = ()
        if r.role == "leader":
            ctx.emit("isr_applied", broker=self.host.id, tp=r.tp, isr=list(msg.isr))
            self.maybe_increment_hw(ctx, r)
            self.purgatory.complete_produces(ctx, r)

    def resets_on_same_epoch(self, r: ReplicaState, msg: m.LeaderAndIsr) -> bool:
        """Before 3.3 (KAFKA-13790, ``reset_followers_only_on_new_epoch`` off) a KRaft broker
        ran Partition.makeLeader for every partition change naming it as leader, with the same
        leader epoch too (an ISR expansion; ReplicaManager.applyLocalLeadersDelta), and so
        reset its followers' state. A ZooKeeper-era broker ignores a LeaderAndIsr of its
        current leader epoch (ReplicaManager.becomeLeaderOrFollower)."""
        return (
            not self.host.config.reset_followers_only_on_new_epoch
            and self.host.kraft
            and r.role == "leader"
            and msg.leader == self.host.id
            and msg.partition_epoch >= r.partition_epoch
        )

    def reset_on_same_epoch(self, ctx: Context, r: ReplicaState, msg: m.LeaderAndIsr) -> None:
        """The pre-3.3 KRaft leader's makeLeader of its own epoch (:meth:`resets_on_same_epoch`):
        the ISR change, every follower's state reset as on a re-election, and the epoch's start
        offset, which a follower must reach to join the ISR, moved to the LEO."""
        self._reset_remotes(ctx, r, msg, new_leader=False)
        r.epoch_start_override = r.log.leo
        if msg.partition_epoch > r.partition_epoch:
            self.update_partition(ctx, r, msg)
        else:
            self.maybe_increment_hw(ctx, r)
            self.purgatory.complete_produces(ctx, r)

    def make_leader(self, ctx: Context, r: ReplicaState, msg: m.LeaderAndIsr) -> None:
        """Partition.makeLeader: record the new epoch at the LEO at once, and reset the view of
        every follower (:meth:`_reset_remotes`). The HW starts from this replica's own, possibly
        stale, HW."""
        was_leader = r.role == "leader"
        self._set_partition_state(r, msg)
        r.role = "leader"
        if self.host.config.leader_epoch_on_election:  # else with the first append (before 2.0.1)
            r.log.assign_epoch(msg.leader_epoch, r.log.leo)
        r.truncating = False
        r.inflight = None
        self._reset_remotes(ctx, r, msg, new_leader=not was_leader)
        r.alter_isr_pending = False  # the committed state replaces any pending proposal
        r.maximal_isr = ()
        ctx.emit(
            "became_leader",
            broker=self.host.id,
            tp=r.tp,
            controller_epoch=msg.controller_epoch,
            leader_epoch=msg.leader_epoch,
            isr=list(msg.isr),
            leo=r.log.leo,
            hw=r.log.hw,
        )
        self.maybe_increment_hw(ctx, r)
        self.purgatory.complete_produces(ctx, r)
        for coordinator in self.coordinators:
            coordinator.elected(ctx, r)

    def _reset_remotes(
        self, ctx: Context, r: ReplicaState, msg: m.LeaderAndIsr, *, new_leader: bool
    ) -> None:
        """Replica.resetReplicaState, for every new leader epoch (since 0.10.2, KAFKA-4485), not
        only when this broker newly leads: a follower in the new ISR gets a fresh lag window
        (caught up now), one outside it counts as never caught up, so it holds the HW back
        only once it has caught up again. A newly elected leader knows no follower's LEO
        until each fetches; a re-elected one keeps them, with the re-election as every ISR
        follower's last fetch (before 3.3, ``reset_fetch_time_by_isr`` off: every follower's).
        Under the pre-0.9 rule (``lag_time_from_caught_up`` off) the lag clock is the time of
        the last fetch, which a new leader starts at now. Before 0.10.2 see
        :meth:`_forget_remote_leos`."""
        config = self.host.config
        if not config.make_leader_resets_caught_up:
            self._forget_remote_leos(ctx, r, msg, new_leader=new_leader)
            return
        legacy = not config.lag_time_from_caught_up
        every_follower = not new_leader and not config.reset_fetch_time_by_isr
        remotes: dict[int, Remote] = {}
        for rid in msg.replicas:
            if rid == self.host.id:
                continue
            old = r.remotes.get(rid)
            in_sync = rid in msg.isr
            remote = Remote() if new_leader or old is None else old
            remote.last_caught_up_ms = ctx.now if in_sync else NEVER_MS
            remote.last_fetch_ms = ctx.now if in_sync or legacy or every_follower else NEVER_MS
            remote.last_fetch_leader_leo = UNKNOWN_LEO if new_leader else r.log.leo
            remotes[rid] = remote
        r.remotes = remotes

    def _forget_remote_leos(
        self, ctx: Context, r: ReplicaState, msg: m.LeaderAndIsr, *, new_leader: bool
    ) -> None:
        """Partition.makeLeader before 0.10.2 (``make_leader_resets_caught_up`` off): a leader
        forgets its followers' LEOs when it newly leads (every new epoch in 0.8,
        ``reelected_leader_forgets_leos``), and nothing else: a follower's last caught-up time
        is the one it had, from when this broker first heard of the partition
        (:meth:`_known_remotes`) or from its last catch-up while this broker led. The 0.8 lag
        clock, the last fetch, restarts with the forgotten LEO (Replica.logEndOffset_=)."""
        self._known_remotes(ctx, r, msg)
        if not new_leader and not self.host.config.reelected_leader_forgets_leos:
            return
        legacy = not self.host.config.lag_time_from_caught_up
        for remote in r.remotes.values():
            remote.leo = UNKNOWN_LEO
            remote.last_fetch_leader_leo = UNKNOWN_LEO
            if legacy:
                remote.last_fetch_ms = ctx.now

    def _known_remotes(self, ctx: Context, r: ReplicaState, msg: m.LeaderAndIsr) -> None:
        """Partition.getOrCreateReplica and removeReplica, as every LeaderAndIsr runs them
        (leader or follower) before 0.10.2: the view of a follower this broker has not heard of
        starts caught up now (kafka.cluster.Replica's creation time), and the views of
        replicas no longer assigned go."""
        remotes: dict[int, Remote] = {}
        for rid in msg.replicas:
            if rid != self.host.id:
                old = r.remotes.get(rid)
                remotes[rid] = old or Remote(last_caught_up_ms=ctx.now, last_fetch_ms=ctx.now)
        r.remotes = remotes

    def make_follower(self, ctx: Context, r: ReplicaState, msg: m.LeaderAndIsr) -> None:
        """Partition.makeFollower and ReplicaManager.makeFollowers. Before leader epochs (0.11) the
        follower truncates to its HW at once; with them, from 0.11 to 2.7, it first asks the
        leader where the epoch it holds ends (OffsetsForLeaderEpoch); since 2.8
        (``truncation_on_fetch``) it fetches at once from its LEO and the fetch response tells
        it where to truncate (:meth:`_truncates_again` says when an unchanged leader makes it
        truncate again)."""
        same_leader = r.role == "follower" and r.leader == msg.leader
        truncate_again = not same_leader or self._truncates_again(r.leader_epoch, msg.leader_epoch)
        self.purgatory.fail_pending(ctx, r, m.NOT_LEADER_OR_FOLLOWER)
        for coordinator in self.coordinators:
            coordinator.resigned(r.tp)
        self._set_partition_state(r, msg)
        r.role = "follower" if msg.leader is not None else None
        if self.host.config.make_leader_resets_caught_up:
            r.remotes = {}
        else:  # kept for when this broker leads again (Partition.makeFollower before 0.10.2)
            self._known_remotes(ctx, r, msg)
        r.alter_isr_inflight = None
        r.alter_isr_pending = False
        r.maximal_isr = ()
        r.inflight = None
        ctx.emit(
            "became_follower",
            broker=self.host.id,
            tp=r.tp,
            controller_epoch=msg.controller_epoch,
            leader=msg.leader,
            leader_epoch=msg.leader_epoch,
        )
        config = self.host.config
        if config.leader_epochs and r.log.latest_epoch != UNDEFINED_EPOCH:
            if truncate_again:
                # AbstractFetcherThread.addPartitions: Truncating from 0.11; since 2.8 Fetching
                # from the LEO with the latest epoch (partitionFetchState), and the first
                # answer tells where the logs agree.
                r.truncating = True
        elif not same_leader:
            # ReplicaManager.makeFollowers (0.10) truncates to the HW only for partitions whose
            # leader changed; the others are skipped.
            target = self.host.rules.truncate_before_fetch(r.log.hw, r.log.leo)
            self.fetcher.truncate(
                ctx, r, target, "truncate_to_hw" if target == r.log.hw else "rule"
            )
            r.truncating = False
        if r.role == "follower" and self.fetcher.auto(r):
            self.fetcher.send_fetch(ctx, r)

    def _truncates_again(self, old_epoch: int, new_epoch: int) -> bool:
        """Whether a follower whose leader is unchanged restarts its fetcher with truncation
        (Partition.makeFollower's answer): on every new leader epoch since 2.1 (KAFKA-7395, with
        ``kip320``); in 2.0.1 only when it missed an epoch (KAFKA-7164,
        ``truncate_after_missed_epoch``), since the leader may have truncated meanwhile; before,
        never: the fetcher went on as it was."""
        config = self.host.config
        if config.kip320:
            return new_epoch != old_epoch
        if config.truncate_after_missed_epoch:
            return new_epoch not in (old_epoch, old_epoch + 1)
        return False

    def _set_partition_state(self, r: ReplicaState, msg: m.LeaderAndIsr) -> None:
        r.epoch_start_override = None
        r.leader = msg.leader
        r.leader_epoch = msg.leader_epoch
        r.isr = msg.isr
        r.partition_epoch = msg.partition_epoch
        r.replicas = msg.replicas

    # ---- HW and ISR (leader) ---------------------------------------------------------------

    def caught_up(self, r: ReplicaState, remote: Remote, now: int) -> bool:
        """Replica.isCaughtUp: at the leader's LEO, or caught up with it within the lag time.
        Before 0.9 (KAFKA-1546) Partition.getOutOfSyncReplicas instead dropped a follower that
        had not fetched for replica.lag.time.max.ms ("stuck") or was more than
        replica.lag.max.messages behind ("slow"); the message rule can be switched on alone."""
        config = self.host.config
        lag_messages = config.replica_lag_max_messages
        known = remote.leo != UNKNOWN_LEO  # the message rule skips a follower not heard from
        if lag_messages is not None and known and r.log.leo - remote.leo > lag_messages:
            return False
        if not config.lag_time_from_caught_up:
            return now - remote.last_fetch_ms <= config.replica_lag_time_max_ms
        if config.isr_keeps_follower_at_leo and remote.leo == r.log.leo:
            return True
        return now - remote.last_caught_up_ms <= config.replica_lag_time_max_ms

    def maybe_increment_hw(
        self, ctx: Context, r: ReplicaState, *, complete_produces: bool = True
    ) -> None:
        """Partition.maybeIncrementLeaderHW: the HW is the smallest LEO of the leader and every
        member of the ISR, and since 0.10.2 (KAFKA-4485, ``hw_includes_caught_up_followers``) of
        any caught-up follower outside it, which is about to join. Since 3.6 (KAFKA-15021,
        ``kafka_15021``) such a follower counts only if it may join
        (:meth:`isr_eligible`). While an ISR change is in flight the wider ISR counts (the
        maximal ISR of KIP-497), so a joining follower can never be elected without what was
        acknowledged. Since 3.7 (KAFKA-15583) the HW does not move while the ISR is below
        min(min.insync.replicas, replication factor)."""
        if r.role != "leader":
            return
        config = self.host.config
        isr = r.maximal_isr or r.isr
        if config.hw_freeze_under_min_isr and len(r.isr) < min_isr(config, r):
            return
        waited_for = {self.host.id, *isr}
        if config.hw_includes_caught_up_followers:
            check_eligible = config.kafka_15021
            for rid, remote in r.remotes.items():
                if (
                    rid not in waited_for
                    and self.caught_up(r, remote, ctx.now)
                    and (not check_eligible or self.isr_eligible(rid, remote))
                ):
                    waited_for.add(rid)
        remote_leos = {rid: remote.leo for rid, remote in r.remotes.items()}
        old_hw = r.log.hw
        new_hw = self.host.rules.leader_hw(old_hw, r.log.leo, waited_for, remote_leos)
        if new_hw != old_hw:
            set_hw(ctx, self.host.id, r, new_hw)
        if new_hw > old_hw:
            if complete_produces:
                self.purgatory.complete_produces(ctx, r)
            if config.follower_fetch_completes_on_hw_change:
                self.purgatory.complete_fetches_behind(ctx, r, new_hw)

    def isr_eligible(self, follower: int, remote: Remote) -> bool:
        """Partition.isReplicaIsrEligible. With ZooKeeper: the broker is alive. In KRaft: it is
        not fenced and not in controlled shutdown (KIP-841, 3.3), and the broker epoch of its
        latest fetch is the one the metadata holds (KAFKA-14617, 3.5), so a fetch state left by
        an earlier incarnation of a bounced broker does not count."""
        if follower not in self.host.live_brokers:
            return False
        if not self.host.kraft:
            return True
        if follower in self.host.shutting_down_brokers:
            return False
        cached = self.host.live_broker_epochs.get(follower, -1)
        return remote.broker_epoch in (-1, cached)

    def _maybe_expand_isr(
        self, ctx: Context, r: ReplicaState, follower: int, remote: Remote
    ) -> None:
        """Partition.maybeExpandIsr / isFollowerInSync: a follower outside the ISR joins once its
        LEO reaches the HW and (since 2.0.1, KAFKA-7128) the start of the leader's current
        epoch (Partition.leaderEpochStartOffsetOpt; :meth:`reset_on_same_epoch` moves it), if
        (since 3.3, KAFKA-13916) it may be in the ISR at all."""
        config = self.host.config
        if follower in r.isr or r.alter_isr_pending:
            return
        if config.isr_join_only_eligible and not self.isr_eligible(follower, remote):
            return
        epoch_start = r.epoch_start_override
        if epoch_start is None:
            epoch_start = r.log.epoch_start_offset(r.leader_epoch) or 0
        if not config.isr_join_after_epoch_start:
            epoch_start = 0
        if remote.leo >= r.log.hw and remote.leo >= epoch_start:
            self._alter_isr(ctx, r, r.isr + (follower,), "expand")

    def maybe_shrink_isr(self, ctx: Context, r: ReplicaState) -> None:
        """Partition.maybeShrinkIsr (every replica.lag.time.max.ms / 2): drop every follower
        that is not caught up."""
        if r.alter_isr_pending:
            return
        out = [
            rid
            for rid in r.isr
            if rid != self.host.id and not self.caught_up(r, r.remotes[rid], ctx.now)
        ]
        if out:
            self._alter_isr(ctx, r, tuple(i for i in r.isr if i not in out), "shrink")

    def _alter_isr(self, ctx: Context, r: ReplicaState, isr: tuple[int, ...], why: str) -> None:
        """Partition.alterIsr (AlterIsr/AlterPartition since 2.7, KIP-497): the request goes to
        the controller and, while it is pending, the HW counts the wider, maximal ISR. Before
        2.7 (``alter_isr`` off) Partition.updateIsr wrote the znode itself, through ZooKeeper
        in the ZooKeeper era (the dedicated controller stands beside ZooKeeper and takes the
        write), and only the written ISR counted. One change per partition is in flight at a
        time (DefaultAlterPartitionManager.submit): another attempt before its answer is not
        made (OPERATION_NOT_ATTEMPTED), and the partition stays at its committed state."""
        if r.alter_isr_inflight is not None:
            return
        r.alter_isr_pending = True
        if self.host.config.alter_isr:
            r.maximal_isr = r.isr + tuple(i for i in isr if i not in r.isr)
        ctx.emit("alter_isr", broker=self.host.id, tp=r.tp, isr=list(isr), reason=why)
        self._send_alter_isr(ctx, r, isr)

    def _send_alter_isr(self, ctx: Context, r: ReplicaState, isr: tuple[int, ...]) -> None:
        """Send the proposal to the controller this broker knows now (the ZooKeeper-era write
        goes to ZooKeeper), and time it out after request.timeout.ms."""
        config = self.host.config
        if not config.alter_isr and config.controller_mode == "zk":
            target: Any = ZOOKEEPER
        else:
            target = self.host.controller_address
        r.alter_isr_inflight, r.alter_isr_target = isr, target
        if target is None:  # no controller known: the channel looks again 100 ms later
            ctx.set_timer(CONTROLLER_CHANNEL_RETRY_MS, "alter_isr_timeout", (r.tp, r.leader_epoch))
            return
        ctx.send(target, m.AlterIsr(r.tp, self.host.id, r.leader_epoch, r.partition_epoch, isr))
        ctx.set_timer(config.request_timeout_ms, "alter_isr_timeout", (r.tp, r.leader_epoch))

    def on_alter_isr_response(self, ctx: Context, src: Any, msg: m.AlterIsrResponse) -> None:
        """Partition.handleAlterPartitionUpdate and handleAlterPartitionError. An answer to a
        proposal that new partition state has already replaced is ignored. Otherwise: when the
        controller says the proposal was not applied (INELIGIBLE_REPLICA,
        OPERATION_NOT_ATTEMPTED) the committed state is restored; when the leader's view is
        out of date (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, UNKNOWN_TOPIC_OR_PARTITION,
        INVALID_REQUEST, NEW_LEADER_ELECTED) the proposal stays pending, unretried, until new
        metadata replaces it; an error it does not know is retried at once with the same
        proposal, and so is NOT_CONTROLLER, which the controller channel answers by sending the
        request again to the controller it finds (BrokerToControllerRequestThread)."""
        r = self.host.partitions[msg.tp]
        proposed, r.alter_isr_inflight = r.alter_isr_inflight, None
        if not r.alter_isr_pending or proposed is None:
            return
        if msg.error != m.NONE:
            ctx.emit("alter_isr_failed", broker=self.host.id, tp=r.tp, error=msg.error)
        if msg.error in _ALTER_PARTITION_WAIT:
            return
        if msg.error not in _ALTER_PARTITION_RESET and msg.error != m.NONE:
            if r.role == "leader":
                self._send_alter_isr(ctx, r, proposed)
            return
        r.alter_isr_pending = False
        r.maximal_isr = ()
        if msg.error != m.NONE or r.role != "leader" or msg.leader_epoch != r.leader_epoch:
            return
        r.isr = msg.isr
        r.partition_epoch = msg.partition_epoch
        ctx.emit("isr_applied", broker=self.host.id, tp=r.tp, isr=list(msg.isr))
        if not self.host.config.alter_isr:
            self.isr_changes[r.tp] = None  # the leader's own ZooKeeper write went through
            self.last_isr_change_ms = ctx.now
        self.maybe_increment_hw(ctx, r)
        self.purgatory.complete_produces(ctx, r)

    def on_alter_isr_timeout(self, ctx: Context, name: str, data: tuple[str, int]) -> None:
        """The proposal got no answer within request.timeout.ms: Kafka never gives it up
        (AlterPartitionManager retries without a time limit; the controller channel treats the
        timeout as a broken connection and sends the same request again, to the controller it
        finds then). Before 2.7 the leader's own ZooKeeper write was retried until it went
        through (ZooKeeperClient). A proposal that new partition state replaced is dropped."""
        tp, leader_epoch = data
        r = self.host.partitions[tp]
        proposed = r.alter_isr_inflight
        if proposed is None or r.leader_epoch != leader_epoch:
            return  # answered in time, or replaced by newer partition state
        if r.role == "leader" and r.alter_isr_pending:
            self._send_alter_isr(ctx, r, proposed)
        else:
            r.alter_isr_inflight = None

    # ---- follower fetches and OffsetsForLeaderEpoch (leader) -----------------------------

    def _update_follower_fetch_state(
        self,
        ctx: Context,
        r: ReplicaState,
        follower: int,
        fetch_offset: int,
        broker_epoch: int = -1,
        log_start_offset: int = -1,
    ) -> None:
        """Replica.updateFetchState, then Partition.maybeExpandIsr and maybeIncrementLeaderHW,
        and a DeleteRecords that waits for this follower's log start offset.

        lastCaughtUpTime: now if the fetch reaches the leader's LEO; else the time of the previous
        fetch if this one reaches the LEO the leader had then; else unchanged."""
        remote = r.remotes.get(follower)
        if remote is None:
            return
        leader_leo = r.log.leo
        if fetch_offset >= leader_leo:
            remote.last_caught_up_ms = max(remote.last_caught_up_ms, ctx.now)
        elif (
            self.host.config.caught_up_from_previous_fetch
            and fetch_offset >= remote.last_fetch_leader_leo
        ):
            remote.last_caught_up_ms = max(remote.last_caught_up_ms, remote.last_fetch_ms)
        remote.last_fetch_leader_leo = leader_leo
        remote.last_fetch_ms = ctx.now
        remote.leo = fetch_offset
        remote.broker_epoch = broker_epoch
        moved = remote.log_start_offset != log_start_offset
        remote.log_start_offset = log_start_offset
        self._maybe_expand_isr(ctx, r, follower, remote)
        self.maybe_increment_hw(ctx, r)
        if moved:
            self.purgatory.complete_deletes(ctx, r)

    def on_fetch(self, ctx: Context, src: Any, req: m.FetchRequest) -> None:
        """ReplicaManager.fetchMessages: check the epoch (KIP-320) and the offset, read the log and
        the HW, apply the follower's fetch offset (Partition.updateFollowerFetchState), and park
        a read that found nothing in the fetch purgatory.

        Since 0.8.2 (KAFKA-1430) the read comes *before* the fetch offset is applied, so a
        response sent at once carries the HW as it was before this fetch; before, the offset
        was applied first (``hw_read_before_fetch_update`` off). A parked fetch is answered by
        DelayedFetch.onComplete, which reads again: it carries the HW this very fetch raised.
        In stepped mode nothing else can happen while a fetch waits, so its wait ends within
        the step and the clock does not move."""
        r = self.host.partitions.get(req.tp)
        if r is None:  # a partition this broker does not host
            ctx.send(src, m.FetchResponse(req.tp, req.correlation_id, m.NOT_LEADER_OR_FOLLOWER))
            return
        error = self.check_fetch(r, req.current_leader_epoch)
        diverging = None
        if error is None and req.last_fetched_epoch != UNDEFINED_EPOCH:
            error, diverging = diverging_epoch(r, req, self.host.rules.end_offset_for)
        if error is None and diverging is None and req.fetch_offset > r.log.leo:
            error = m.OFFSET_OUT_OF_RANGE
        if error is not None:
            ctx.send(src, m.FetchResponse(r.tp, req.correlation_id, error, leader_leo=r.log.leo))
            return
        if diverging is not None:  # not the follower's position (KAFKA-13141, 2.8.1)
            ctx.send(src, fetch_response(r, req, (), r.log.hw, diverging))
            return
        read_first = self.host.config.hw_read_before_fetch_update
        if read_first:
            records, hw = read(r, req), r.log.hw
        self._update_follower_fetch_state(
            ctx, r, req.replica_id, req.fetch_offset, req.broker_epoch, req.log_start_offset
        )
        if not read_first:
            records, hw = read(r, req), r.log.hw
        if not records and req.max_wait_ms > 0 and not self._needs_hw_update(r, req, hw):
            deadline = ctx.now + req.max_wait_ms if self.fetcher.auto(r) else ctx.now
            r.delayed_fetches.append(DelayedFetch(src, req, deadline))
            arm(ctx, r, "fetch_wait", deadline)
            return
        self.purgatory.send_fetch_response(ctx, src, r, req, records, hw)

    def _needs_hw_update(self, r: ReplicaState, req: m.FetchRequest, hw: int) -> bool:
        """2.4 to 2.5 (KAFKA-8443, ``follower_fetch_completes_on_hw_change``): a follower whose
        last answer carried an older HW is answered now (ReplicaManager followerNeedsHwUpdate,
        DelayedFetch case H)."""
        if not self.host.config.follower_fetch_completes_on_hw_change:
            return False
        remote = r.remotes.get(req.replica_id)
        return remote is not None and remote.last_sent_hw < hw

    def check_fetch(self, r: ReplicaState, current_leader_epoch: int | None) -> str | None:
        """Partition.checkCurrentLeaderEpoch (KIP-320) and the leadership check."""
        if current_leader_epoch is not None and self.host.config.kip320:
            if current_leader_epoch < r.leader_epoch:
                return m.FENCED_LEADER_EPOCH
            if current_leader_epoch > r.leader_epoch:
                return m.UNKNOWN_LEADER_EPOCH
        if r.role != "leader":
            return m.NOT_LEADER_OR_FOLLOWER
        return None

    def on_epoch_request(self, ctx: Context, src: Any, req: m.OffsetsForLeaderEpochRequest) -> None:
        """ReplicaManager.lastOffsetForLeaderEpoch -> LeaderEpochFileCache.endOffsetFor. Before
        KIP-279 the answer carries no epoch."""
        r = self.host.partitions.get(req.tp)
        if r is None:  # ReplicaManager.lastOffsetForLeaderEpoch: a partition it does not host
            ctx.send(
                src,
                m.OffsetsForLeaderEpochResponse(
                    req.tp,
                    req.correlation_id,
                    m.NOT_LEADER_OR_FOLLOWER,
                    UNDEFINED_EPOCH,
                    UNDEFINED_OFFSET,
                ),
            )
            return
        error = self.check_fetch(r, req.current_leader_epoch)
        if error is not None:
            reply = m.OffsetsForLeaderEpochResponse(
                r.tp, req.correlation_id, error, UNDEFINED_EPOCH, UNDEFINED_OFFSET
            )
        elif not self.host.config.leader_epoch_on_election and (
            not r.log.epochs or req.leader_epoch < r.log.epochs[0][0]
        ):
            # Before 2.0.1 (KAFKA-7415) an epoch older than every cached one was undefined.
            reply = m.OffsetsForLeaderEpochResponse(
                r.tp, req.correlation_id, m.NONE, UNDEFINED_EPOCH, UNDEFINED_OFFSET
            )
        else:
            epoch, end_offset = self.host.rules.end_offset_for(
                tuple(r.log.epochs), r.log.leo, req.leader_epoch
            )
            if not self.host.config.kip279:
                epoch = UNDEFINED_EPOCH
            reply = m.OffsetsForLeaderEpochResponse(
                r.tp, req.correlation_id, m.NONE, epoch, end_offset
            )
        ctx.send(src, reply)
