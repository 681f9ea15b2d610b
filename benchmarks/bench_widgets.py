#!/usr/bin/env python
"""How fast the explorers answer a learner's click, for every catalog scenario.

For each scenario the script steps through every step three ways and times each step:

* bare: ``scenarios.apply_step`` on a plain Cluster, nothing drawn (the baseline: what the
  simulator itself costs);
* model: ``ExplorerModel.forward()`` (the step, plus the snapshot the timeline keeps);
* widget: a click on the cluster explorer's "next step" button: the model step, both pictures
  redrawn (replica logs, message diagram) as SVG, the invariant report and the text twins,
  and every widget value set (no browser: what the kernel spends before it answers).

It also times a rewind with the timeline slider (replaying from the start, then redrawing) to
the middle and to the start of each scenario, and one run of the ISR lag and trade-off
explorers. The target is 100 ms per step; the ratio column is widget / bare.

Run ``python benchmarks/bench_widgets.py`` (about a minute) or ``--quick`` for a smoke test.
Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmark the working tree, installed or not

import matplotlib  # noqa: E402
from _table import machine, table  # noqa: E402  (benchmarks/_table.py, next to this script)

matplotlib.use("Agg")

from kafkalab import scenarios  # noqa: E402
from kafkalab.widgets import (  # noqa: E402
    ClusterExplorer,
    ExplorerModel,
    IsrLagModel,
    IsrLagSettings,
    TradeoffModel,
    TradeoffSettings,
)

BUDGET_MS = 100.0


@dataclass
class ScenarioTiming:
    name: str
    steps: int
    bare_ms: list[float]
    model_ms: list[float]
    widget_ms: list[float]
    rewind_ms: list[float]

    @property
    def ratio(self) -> float:
        return statistics.median(self.widget_ms) / max(statistics.median(self.bare_ms), 1e-6)


def _clock(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def _best(per_repeat: list[list[float]]) -> list[float]:
    """Per step, the best of the repeats (the least disturbed by the rest of the machine)."""
    return [min(times) for times in zip(*per_repeat, strict=True)]


def measure(name: str, repeats: int) -> ScenarioTiming:
    s = scenarios.get(name)
    bare, model, widget, rewind = [], [], [], []
    for _ in range(repeats):
        cluster = s.cluster()
        bare.append(
            [_clock(lambda c=cluster, st=st: scenarios.apply_step(c, st)) for st in s.steps]
        )
        m = ExplorerModel(name)
        model.append([_clock(m.forward) for _ in s.steps])
        e = ClusterExplorer(name)
        widget.append([_clock(e.next_button.click) for _ in s.steps])
        rewind.append(
            [_clock(lambda e=e, k=k: setattr(e.slider, "value", k)) for k in (len(s.steps) // 2, 0)]
        )
        if e.model.position != 0:
            raise SystemExit(f"{name}: the slider did not rewind the explorer")
    return ScenarioTiming(
        name, len(s.steps), _best(bare), _best(model), _best(widget), _best(rewind)
    )


def report(results: list[ScenarioTiming]) -> str:
    rows = []
    for r in results:
        rows.append(
            [
                r.name,
                str(r.steps),
                f"{statistics.median(r.bare_ms):.2f}",
                f"{statistics.median(r.model_ms):.2f}",
                f"{statistics.median(r.widget_ms):.1f}",
                f"{max(r.widget_ms):.1f}",
                f"{max(r.rewind_ms):.1f}",
                f"{r.ratio:.0f}",
                str(sum(1 for t in [*r.widget_ms, *r.rewind_ms] if t > BUDGET_MS)),
            ]
        )
    every = [t for r in results for t in r.widget_ms]
    worst = max(results, key=lambda r: max(r.widget_ms))
    over = sum(1 for t in every if t > BUDGET_MS)
    return "\n".join(
        [
            table(
                [
                    "scenario",
                    "steps",
                    "bare ms",
                    "model ms",
                    "widget ms",
                    "widget max",
                    "rewind max",
                    "ratio",
                    f">{BUDGET_MS:.0f} ms",
                ],
                rows,
            ),
            "",
            f"all steps: widget median {statistics.median(every):.1f} ms, p95 "
            f"{_p95(every):.1f} ms, max {max(every):.1f} ms ({worst.name}); "
            f"{over} of {len(every)} steps over {BUDGET_MS:.0f} ms",
        ]
    )


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(0.95 * len(ordered)) - 1)]


def other_explorers(quick: bool) -> str:
    isr = IsrLagSettings(duration_ms=20000 if quick else 60000)
    t_isr = _clock(lambda: IsrLagModel().run(isr))
    trade = TradeoffSettings(seeds=1 if quick else 3)
    t_trade = _clock(lambda: TradeoffModel().run(trade))
    return (
        f"ISR lag explorer, one run of {isr.duration_ms} simulated ms: {t_isr:.0f} ms\n"
        f"trade-off explorer, one setting ({trade.seeds} seeds x "
        f"{trade.duration_ms + trade.settle_ms} simulated ms): {t_trade:.0f} ms "
        "(behind a run button; each setting is computed once and cached)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="three scenarios, one repeat")
    parser.add_argument("--repeats", type=int, default=3, help="repeats per step (best kept)")
    parser.add_argument("--scenarios", nargs="+", help="catalog names (default: all)")
    args = parser.parse_args(argv)
    names = args.scenarios or sorted(scenarios.catalog())
    if args.quick:
        names, args.repeats = names[:3] if not args.scenarios else names, 1
    results = []
    for name in names:
        results.append(measure(name, args.repeats))
        print(f"{name}: done", file=sys.stderr, flush=True)
    print(
        f"kafkalab widget benchmark: best of {args.repeats} per step; {machine()}; "
        f"matplotlib {matplotlib.__version__}"
    )
    print("bare: scenarios.apply_step on a Cluster; model: ExplorerModel.forward(); widget: a")
    print("click on 'next step' (model + both SVG pictures + report + widget values);")
    print("rewind: the timeline slider moved to the middle, then to the start; ratio: widget/bare")
    print()
    print(report(results))
    print()
    print(other_explorers(args.quick))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
