"""``kafkalab campaign``: list, show, validate and run campaign specs.

kafkalab campaign list
kafkalab campaign show SPEC
kafkalab campaign validate SPEC
kafkalab campaign run SPEC --out PATH [--master local[*]|spark://...|yarn] [--overwrite]
                                      [--no-progress]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_campaign_parser", "campaign_command"]


def add_campaign_parser(sub: Any) -> None:
    """Add the ``campaign`` subcommands to the ``kafkalab`` parser's subparsers."""
    campaign = sub.add_parser("campaign", help="generate failure datasets on Spark")
    csub = campaign.add_subparsers(dest="action", required=True, parser_class=type(campaign))
    csub.add_parser("list", help="the campaign specs that ship with kafkalab")
    show = csub.add_parser("show", help="print a spec with its defaults filled in, as JSON")
    show.add_argument("spec", metavar="SPEC", help="a spec file or a shipped spec name")
    validate = csub.add_parser("validate", help="check a spec and say what it would generate")
    validate.add_argument("spec", metavar="SPEC")
    run = csub.add_parser("run", help="generate a campaign (or finish an interrupted one)")
    run.add_argument("spec", metavar="SPEC")
    run.add_argument("--out", required=True, metavar="PATH", help="the output folder")
    run.add_argument(
        "--master",
        default="local[*]",
        help="Spark master: local[*] (default), local[N], spark://host:port, yarn",
    )
    run.add_argument("--overwrite", action="store_true", help="replace another campaign in --out")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")


def campaign_command(args: argparse.Namespace) -> int:
    """Run one ``campaign`` subcommand; user errors raise KafkalabError (the caller prints
    them and exits 2)."""
    from kafkalab.campaign.spec import catalog, load_spec

    if args.action == "list":
        for name, path in catalog().items():
            spec = load_spec(path)
            first = spec.description.split(". ")[0].rstrip(".")
            print(f"{name:<8} {spec.trials:>6} trials  {first}")
        return 0
    spec = load_spec(args.spec)
    if args.action == "show":
        print(json.dumps(spec.as_dict(), indent=2, sort_keys=True))
        return 0
    if args.action == "validate":
        print(
            f"campaign {spec.name}: {len(spec.configs)} config(s) x {spec.seeds} seed(s) = "
            f"{spec.trials} trials in {len(spec.units())} part(s); spec hash "
            f"{spec.spec_hash()[:12]}"
        )
        for i in range(len(spec.configs)):
            print(f"  config {i}: {spec.label(i) or '(the base config)'}")
        return 0
    return _run(spec, args)


def _run(spec: Any, args: argparse.Namespace) -> int:
    from kafkalab.campaign.dataset import read_manifest
    from kafkalab.spark.generate import run_campaign

    try:
        summary = run_campaign(
            spec,
            args.out,
            master=args.master,
            overwrite=args.overwrite,
            progress=not args.no_progress,
        )
    except KeyboardInterrupt:
        manifest = read_manifest(args.out) or {}
        print(
            f"\ninterrupted: the parts already written in {args.out} are kept "
            f"(campaign {manifest.get('campaign', spec.name)}); run the same command again "
            "to resume",
            file=sys.stderr,
        )
        return 130
    print(summary)
    return 0
