"""What the lessons share to replay a catalog scenario step by step and print what each step did.

:func:`play` applies a scenario's steps to a cluster and prints the steps the text talks about,
each with its note and the cluster's state after it: :func:`status` (the controller, the leader
and the ISR, for the controller lessons) or :func:`replica_lines` (each replica's log with its HW
and leader epochs, for the leader-epoch lessons). It also remembers which entry of the trace each
step became, so that ``draw_messages(..., step_labels=labels)`` labels a step with the scenario's
own number; :func:`trace_step` gives the trace's number of the latest step.

>>> from kafkalab import scenarios
>>> s = scenarios.get("controller-failover")
>>> cluster, labels = s.cluster(), {}
>>> play(cluster, s.steps[5:7], labels)
step  6: crash 1
         t=  0.0 s  controller 1 (epoch 1)  leader broker 1 (epoch 0)  ISR [1, 2, 3]
step  7: advance 17000
         t= 17.0 s  controller 1 (epoch 1)  leader broker 1 (epoch 0)  ISR [1, 2, 3]
>>> labels[trace_step(cluster)]
'step 7: advance 17000'
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Collection, Iterable, MutableMapping

from kafkalab.scenarios import Step, apply_step
from kafkalab.sim.cluster import Cluster

__all__ = ["play", "replica_lines", "status", "step_text", "trace_step"]

NOTE_WIDTH = 88  # a step's note, in its parentheses, wraps at this many characters
_INDENT = " " * len("step NN: ")  # what follows a step lines up under its text


def step_text(step: Step) -> str:
    """A step as the scenario file writes it, such as ``fetch 3`` or ``advance 18000``: the
    first argument bare, the others as ``name=value``; a check step shows what it expects."""
    if step.kind == "check":
        return f"check {step.args['expect']}"
    args = [(k, v) for k, v in step.args.items() if v is not None]
    words = [str(v) if i == 0 else f"{k}={v}" for i, (k, v) in enumerate(args)]
    return " ".join([step.kind, *words])


def trace_step(cluster: Cluster) -> int:
    """The trace's number of the latest step (a check step leaves none), for
    ``draw_messages(cluster, steps=...)``."""
    return int(cluster.trace.of_kind("step")[-1].data["index"])


def status(cluster: Cluster) -> str:
    """One line: the simulated time, the controller with its controller epoch, and the
    partition's leader, leader epoch and ISR as the controller committed them."""
    leader = "none (offline)" if cluster.leader is None else f"broker {cluster.leader}"
    return (
        f"t={cluster.now / 1000:>5.1f} s  controller {cluster.controller} "
        f"(epoch {cluster.controller_epoch})  leader {leader} (epoch {cluster.leader_epoch})  "
        f"ISR {cluster.isr}"
    )


def replica_lines(cluster: Cluster) -> str:
    """The leader, then one line per replica: its role, LEO, HW and log, each record with the
    leader epoch it was written in (``m1/e0``) and a ``|`` where the replica's HW is."""
    lines = [f"leader: broker {cluster.leader} in epoch {cluster.leader_epoch}, ISR {cluster.isr}"]
    for broker, r in cluster.replicas_view().items():
        role = r.role if r.running else "stopped"
        cells = [f"{value}/e{epoch}" for _, value, epoch in r.records]
        log = " ".join([*cells[: r.hw], "|", *cells[r.hw :]])
        lines.append(f"broker {broker}  {role:<8}  LEO {r.leo}  HW {r.hw}  {log}")
    return "\n".join(lines)


def play(
    cluster: Cluster,
    steps: Iterable[Step],
    labels: MutableMapping[int, str] | None = None,
    *,
    loud: bool | Collection[int] = True,
    notes: bool = True,
    state: Callable[[Cluster], str] = status,
    verbose: bool = False,
) -> None:
    """Apply scenario steps to ``cluster`` and print what they did.

    ``labels`` (when given) gets, for each step that is not a check, the trace's number of the
    step mapped to ``"step N: text"``, the ``step_labels`` of ``draw_messages``. ``loud`` says
    which steps to print: every one (True), none (False), or those whose numbers it holds;
    ``verbose`` prints every step whatever ``loud`` says. A printed step shows its note (unless
    ``notes=False``: a scenario's notes describe the run as written, not a variant) and then
    ``state(cluster)``, or for a check step whether the check holds."""
    for step in steps:
        mark = len(cluster.trace)
        problems = apply_step(cluster, step)
        if step.kind != "check" and labels is not None:
            labels[trace_step(cluster)] = f"step {step.index}: {step_text(step)}"
        if not (verbose or _chosen(step, loud)):
            continue
        print(f"step {step.index:>2}: {step_text(step)}")
        if step.note and notes:
            note = textwrap.fill(f"({step.note})", NOTE_WIDTH, subsequent_indent=" ")
            print(textwrap.indent(note, _INDENT))
        if step.kind == "check":
            print(_INDENT + ("; ".join(problems) if problems else "the check holds"))
        else:
            for line in _refused_registrations(cluster, mark):
                print(_INDENT + line)
            print(textwrap.indent(state(cluster), _INDENT))


def _refused_registrations(cluster: Cluster, since: int) -> list[str]:
    """A restart that could not register in ZooKeeper, said as it happened."""
    lines = []
    for e in cluster.trace.events[since:]:
        if e.kind == "zk_registration_refused":
            d = e.data
            then = (
                f"it tries again in {d['retry_ms']} ms"
                if d["next"] == "retry"
                else "start-up aborted: the broker is down again"
            )
            lines.append(
                f"broker {d['broker']} could not register: its previous run's session "
                f"{d['old_session']} still lives; {then}"
            )
    return lines


def _chosen(step: Step, loud: bool | Collection[int]) -> bool:
    if isinstance(loud, bool):
        return loud
    return step.index in loud
