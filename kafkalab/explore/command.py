"""``kafkalab explore``: search every schedule up to a bound for one that breaks an invariant.

kafkalab explore [--set key=value ...] [--brokers N] [--depth N] [--records N] [--crashes N]
                 [--actions a,b,...] [--invariant NAME ...] [--max-states N] [--json]
                 [--out FILE.yaml] [--master SPARK_MASTER] [--no-progress]

Exit 0 when no invariant breaks within the bounds, 1 when one does, 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["add_explore_parser", "explore_command"]


def add_explore_parser(sub: Any) -> None:
    """Add ``explore`` to the ``kafkalab`` parser's subparsers."""
    from kafkalab.explore import ACTIONS, DEFAULT_ACTIONS

    p = sub.add_parser(
        "explore",
        help="try every schedule up to a bound; print the shortest that breaks an invariant",
    )
    p.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a config setting"
    )
    p.add_argument("--brokers", type=int, default=2, help="brokers (default 2)")
    p.add_argument("--depth", type=int, default=8, help="steps per schedule at most (default 8)")
    p.add_argument("--records", type=int, default=2, help="records produced at most (default 2)")
    p.add_argument("--crashes", type=int, default=1, help="crashes per schedule (default 1)")
    p.add_argument(
        "--actions",
        default=",".join(DEFAULT_ACTIONS),
        help=f"the alphabet, from {', '.join(ACTIONS)} (default: {', '.join(DEFAULT_ACTIONS)})",
    )
    p.add_argument(
        "--invariant",
        action="append",
        default=[],
        metavar="NAME",
        help="check only this invariant (repeatable; default: every one)",
    )
    p.add_argument(
        "--max-states", type=int, default=200_000, help="stop after this many distinct states"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--out", metavar="FILE.yaml", help="write the counterexample as a scenario")
    p.add_argument(
        "--master", help="expand each depth on Spark (local[2], spark://host:port, yarn)"
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="processes that expand a large depth side by side (default: "
        "$KAFKALAB_EXPLORE_WORKERS, else one per core on Linux and 1 elsewhere; the result is "
        "the same)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--restart-replaces-session",
        action="store_true",
        help="a restarted broker registers at once beside the dedicated controller, as KIP-101's "
        "scenarios tell it (Kafka refuses it while the old ZooKeeper session lives)",
    )


def explore_command(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """Run the search; user errors raise KafkalabError (the caller prints them, exit 2)."""
    from kafkalab.atomic import write_atomically
    from kafkalab.errors import ConfigError
    from kafkalab.explore import explore

    out = Path(args.out) if args.out else None
    if out is not None and out.suffix not in (".yaml", ".yml"):
        raise ConfigError(f"--out {args.out!r} is not allowed: name a .yaml file")
    if out is not None and not out.parent.is_dir():
        raise ConfigError(f"--out {args.out!r}: the folder {str(out.parent)!r} does not exist")
    bar = None if args.no_progress or args.json or not sys.stderr.isatty() else _Bar(args.depth)
    kwargs: dict[str, Any] = dict(
        brokers=args.brokers,
        depth=args.depth,
        records=args.records,
        crashes=args.crashes,
        actions=args.actions,
        invariants=args.invariant or None,
        max_states=args.max_states,
        progress=bar.update if bar else None,
        restart_replaces_session=args.restart_replaces_session,
    )
    try:
        if args.master:
            from kafkalab.explore.spark import explore_on_spark

            result = explore_on_spark(settings, master=args.master, **kwargs)
        else:
            result = explore(settings, workers=args.workers, **kwargs)
    finally:
        if bar is not None:
            bar.close()
    if out is not None and result.violation is not None:
        write_atomically(out, result.violation.scenario_yaml)
    if args.json:
        print(json.dumps(result.as_json(), sort_keys=True))
    else:
        print(result.summary())
        if out is not None:
            print(f"wrote {out}" if result.violation else f"nothing to write to {out}")
    return 1 if result.violation is not None else 0


class _Bar:
    """A tqdm bar over the depths: depth, distinct states and states per second."""

    def __init__(self, depth: int) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=depth, unit="depth", file=sys.stderr, leave=False)
        self.started = time.perf_counter()

    def update(self, depth: int, states: int, frontier: int) -> None:
        rate = states / max(time.perf_counter() - self.started, 1e-9)
        self.bar.set_postfix_str(f"{states} states, {rate:.0f} states/s, frontier {frontier}")
        self.bar.update(depth - self.bar.n)

    def close(self) -> None:
        self.bar.close()
