"""The ``kafkalab`` command.

    kafkalab scenario list
    kafkalab scenario show NAME
    kafkalab scenario run FILE_OR_NAME [--json] [--set key=value ...] [--variant NAME]
                                       [--trace FILE]
    kafkalab simulate [--seed N] [--brokers N] [--duration-ms MS] [--set key=value ...]
                      [--no-faults] [--json] [--trace FILE]
    kafkalab exercises build [NAME ...] [--out DIR] [--no-bundles]
                             regenerate exercises/ and solutions/ (otter assign), then write the
                             student and instructor bundles into dist/ (or DIR)
    kafkalab exercises check                 are they what exercises/source generates?
    kafkalab grade SUBMISSIONS --assignment NAME --out grades.csv [--cell-timeout S]
                   [--sandbox bwrap|docker|none] [--memory 2G] [--feedback DIR]
                   [--timeout S]
    kafkalab campaign list | show SPEC | validate SPEC
    kafkalab campaign run SPEC --out PATH [--master local[*]] [--overwrite] [--no-progress]
    kafkalab explore [--set key=value ...] [--brokers N] [--depth N] [--records N] [--crashes N]
                     [--actions a,b,...] [--invariant NAME ...] [--json] [--out FILE.yaml]
                     [--master SPARK_MASTER]

Exit codes: 0 when every expectation holds, 1 when one does not (with a readable diff), 2 for a
malformed file, a bad setting or an impossible step (one line, no traceback). ``explore`` exits
0 when no invariant breaks within its bounds, 1 when one does.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml

from kafkalab.atomic import write_atomically
from kafkalab.campaign.command import add_campaign_parser, campaign_command
from kafkalab.errors import KafkalabError, ScenarioError
from kafkalab.explore.command import add_explore_parser, explore_command

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own usage errors also exit 2
        self.print_usage(sys.stderr)
        self.exit(2, f"kafkalab: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kafkalab", description="Learn how Kafka keeps data safe across replicas."
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    scenario = sub.add_parser("scenario", help="list, show and replay scenarios")
    ssub = scenario.add_subparsers(dest="action", required=True, parser_class=_Parser)
    ssub.add_parser("list", help="show the catalog of named scenarios")
    show = ssub.add_parser("show", help="print a scenario's YAML")
    show.add_argument("name")
    run = ssub.add_parser("run", help="replay a scenario and check its expect block")
    run.add_argument("scenario", metavar="FILE_OR_NAME")
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config key (repeatable)",
    )
    run.add_argument("--variant", help="run one of the scenario's named variants")
    run.add_argument("--trace", metavar="FILE", help="write the trace as JSON lines to FILE")
    sim = sub.add_parser("simulate", help="one timed run: steady writes under random faults")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--brokers", type=int, default=3)
    sim.add_argument("--duration-ms", type=int, default=60000)
    sim.add_argument("--settle-ms", type=int, default=60000)
    sim.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config key (repeatable)",
    )
    sim.add_argument("--no-faults", action="store_true", help="run without faults")
    sim.add_argument("--json", action="store_true", help="print one JSON object")
    sim.add_argument("--trace", metavar="FILE", help="write the trace as JSON lines to FILE")
    _grading_parsers(sub)
    add_campaign_parser(sub)
    add_explore_parser(sub)
    return parser


def _grading_parsers(sub: Any) -> None:
    ex = sub.add_parser("exercises", help="generate the student and solution notebooks")
    exsub = ex.add_subparsers(dest="action", required=True, parser_class=_Parser)
    build = exsub.add_parser(
        "build",
        help="regenerate exercises/ and solutions/ from sources, then write the student and "
        "instructor bundles",
    )
    build.add_argument("names", nargs="*", metavar="NAME", help="assignments (default: all)")
    bundles = build.add_mutually_exclusive_group()
    bundles.add_argument(
        "--out", metavar="DIR", help="the folder the bundles go into (default: dist/)"
    )
    bundles.add_argument("--no-bundles", action="store_true", help="regenerate the notebooks only")
    exsub.add_parser("check", help="fail if a committed notebook differs from its source")
    grade = sub.add_parser("grade", help="grade a folder of submissions into a CSV")
    grade.add_argument("submissions", metavar="SUBMISSIONS", help="a folder of .ipynb files")
    grade.add_argument("--assignment", required=True, help="e.g. 03-hw-leo, or a source notebook")
    grade.add_argument("--out", required=True, metavar="CSV", help="the CSV file to write")
    grade.add_argument(
        "--cell-timeout", type=int, default=60, metavar="S", help="seconds per cell (default 60)"
    )
    grade.add_argument(
        "--timeout", type=int, default=600, metavar="S", help="seconds per submission (600)"
    )
    grade.add_argument(
        "--time-limit",
        type=float,
        default=10,
        metavar="S",
        help="seconds a learner's function may run in one check (default 10)",
    )
    grade.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="submissions graded at once"
    )
    grade.add_argument(
        "--sandbox",
        default="bwrap",
        choices=("bwrap", "docker", "none"),
        help="where hand-ins run: bubblewrap (default), a Docker container, or no sandbox "
        "(trusted notebooks only)",
    )
    grade.add_argument(
        "--memory",
        default="2G",
        metavar="SIZE",
        help="memory a hand-in may use, e.g. 2G or 1500M (default 2G)",
    )
    grade.add_argument(
        "--docker-image",
        default="kafkalab-grader",
        metavar="IMAGE",
        help="the image --sandbox docker runs (default kafkalab-grader)",
    )
    grade.add_argument(
        "--feedback",
        metavar="DIR",
        default=None,
        help="also write one text file per hand-in with what each failing test said",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "simulate":
            return _simulate(args)
        if args.command in ("exercises", "grade"):
            return _grading(args)
        if args.command == "campaign":
            return campaign_command(args)
        if args.command == "explore":
            return explore_command(args, _overrides(args.set))
        if args.action == "list":
            return _list()
        if args.action == "show":
            return _show(args.name)
        return _run(args.scenario, args.set, args.json, args.variant, args.trace)
    except KafkalabError as err:
        print(f"kafkalab: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into head
        return 0
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM while grading): stopped cleanly
        print("kafkalab: interrupted", file=sys.stderr)
        return 130


def _grading(args: argparse.Namespace) -> int:
    from kafkalab.grading import assignments

    if args.command == "grade":
        # SIGTERM ends grading like Ctrl-C: judges stopped, temporary files removed.
        signal.signal(signal.SIGTERM, _raise_interrupt)
        rows = assignments.grade_folder(
            Path(args.submissions),
            args.assignment,
            Path(args.out),
            cell_timeout_s=args.cell_timeout,
            submission_timeout_s=args.timeout,
            time_limit_s=args.time_limit,
            jobs=args.jobs,
            sandbox=args.sandbox,
            memory_bytes=assignments.parse_size(args.memory, "--memory"),
            docker_image=args.docker_image,
            feedback_dir=Path(args.feedback) if args.feedback else None,
        )
        for row in rows:
            print(
                f"{row.submission}: {row.total:g} of {sum(row.possible.values()):g} ({row.status})"
            )
        print(f"wrote {args.out}")
        failed = [row for row in rows if not row.graded]
        if failed:
            print(
                f"kafkalab: could not grade {len(failed)} of {len(rows)} hand-ins: see their "
                "status in the CSV",
                file=sys.stderr,
            )
            return 1
        return 0
    if args.action == "build":
        return _build(args.names, args.out, bundled=not args.no_bundles)
    problems = assignments.out_of_sync()
    for line in problems:
        print(line)
    return 1 if problems else 0


def _build(names: list[str], out: str | None, *, bundled: bool) -> int:
    from kafkalab.grading import assignments, bundles

    root = assignments.repo_root()
    folder = bundles.out_folder(out) if bundled else None  # a bad --out fails before otter runs
    written = assignments.build(names or None)
    if folder is not None:
        written += bundles.build_bundles(folder)
    for path in written:
        shown = path.relative_to(root) if root in path.parents else path
        print(f"wrote {shown}{'/' if path.is_dir() else ''}")
    return 0


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _list() -> int:
    from kafkalab import scenarios

    entries = scenarios.catalog()
    width = max(len(n) for n in entries)
    for name, s in entries.items():
        first = s.description.split(". ")[0].rstrip(".")
        variants = f"  [+{len(s.variants)} variant(s)]" if s.variants else ""
        print(f"{name:<{width}}  {first}{variants}")
    return 0


def _show(name: str) -> int:
    from kafkalab import scenarios

    print(scenarios.get(name).source, end="")
    return 0


def _overrides(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ScenarioError(f"--set {pair!r} is not allowed: use --set key=value")
        try:
            out[key.strip()] = yaml.safe_load(value) if value.strip() else None
        except yaml.YAMLError:
            out[key.strip()] = value
    return out


def _run(
    target: str, sets: list[str], as_json: bool, variant_name: str | None, trace: str | None
) -> int:
    from kafkalab import scenarios
    from kafkalab.config import normalize_key

    scenario = scenarios.load(target)
    overrides = _overrides(sets)
    for key in overrides:
        normalize_key(key)  # unknown keys fail with a "did you mean"
    variant = None
    if variant_name is not None:
        names = [v.name for v in scenario.variants]
        matches = [v for v in scenario.variants if v.name == variant_name]
        if not matches:
            raise ScenarioError(
                f"scenario {scenario.name!r} has no variant {variant_name!r}: "
                f"variants are {', '.join(names) or 'none'}"
            )
        variant = matches[0]
    result = scenarios.run(scenario, overrides, variant)
    if trace:
        _write_trace(result.cluster.trace, trace)
    if as_json:
        print(json.dumps(result.as_json(), sort_keys=True))
    else:
        _print_human(result)
    return 0 if result.ok else 1


def _write_trace(trace: Any, path: str) -> None:
    """Write the trace next to ``path`` first and rename it into place, so a failure never
    leaves half a file behind."""
    target = Path(path)
    if not target.parent.is_dir():
        raise ScenarioError(f"--trace {path!r}: the folder {str(target.parent)!r} does not exist")
    write_atomically(target, trace.to_jsonl())


def _simulate(args: argparse.Namespace) -> int:
    from kafkalab.config import make_config
    from kafkalab.sim.timed import simulate

    if args.duration_ms < 1 or args.settle_ms < 0:
        raise ScenarioError(
            f"--duration-ms {args.duration_ms} / --settle-ms {args.settle_ms} are not allowed: "
            "use a duration >= 1 ms and a settle time >= 0 ms"
        )
    config = make_config(_overrides(args.set))
    result, cluster = simulate(
        config,
        seed=args.seed,
        brokers=args.brokers,
        duration_ms=args.duration_ms,
        settle_ms=args.settle_ms,
        faults=[] if args.no_faults else None,
        trace_messages=bool(args.trace),
        keep_cluster=True,
    )
    if args.trace:
        _write_trace(cluster.trace, args.trace)
    if args.json:
        print(
            json.dumps(
                {
                    **result.as_dict(),
                    "schedule": [dataclasses.asdict(f) for f in result.schedule],
                    "safe": result.safe,
                },
                sort_keys=True,
                default=list,
            )
        )
        return 0
    _print_run(result)
    return 0


def _print_run(result: Any) -> None:
    print(
        f"timed run: seed {result.seed}, {result.brokers} brokers, "
        f"{result.duration_ms} ms of writes + {result.settle_ms} ms to settle, "
        f"{result.faults} fault actions, {result.events} trace events"
    )
    print(
        f"produced {result.produced}, acknowledged {result.acked}, "
        f"lost after acknowledgement {len(result.lost_acked)}"
    )
    print(
        f"divergent logs: {'yes' if result.divergent else 'no'}, HW regressions: "
        f"{result.hw_regressions}, unclean elections: {result.unclean_elections}, "
        f"ISR shrinks/expands: {result.isr_shrinks}/{result.isr_expands}"
    )
    if result.errors:
        print("client errors: " + ", ".join(f"{k} x{v}" for k, v in sorted(result.errors.items())))
    print("safe" if result.safe else "UNSAFE: " + result.replay_hint())


def _print_human(result: Any) -> None:
    c = result.cluster
    title = result.scenario.name + (f" (variant {result.variant.name})" if result.variant else "")
    print(f"scenario {title}: {len(result.scenario.steps)} steps, {c.now} ms simulated")
    leader = "none (offline)" if c.leader is None else f"broker {c.leader}"
    print(f"leader: {leader}, leader epoch {c.leader_epoch}, ISR {c.isr}")
    for b, v in c.replicas_view().items():
        status = "running" if v.running else "stopped"
        cells = " ".join(f"{off}:{val}@e{ep}" for off, val, ep in v.records) or "(empty)"
        print(f"  broker {b} [{status}] LEO {v.leo} HW {v.hw}  {cells}")
    print(str(c.report()))
    if result.ok:
        print("expectations: all hold")
    else:
        print("expectations that do not hold:")
        for line in result.mismatches:
            print(f"  - {line}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
