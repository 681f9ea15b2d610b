"""Campaign specs: which configs, how many seeds, what each trial runs, which faults it may draw.

A spec is a YAML file (like the scenario files) or a mapping::

    name: acks-vs-min-isr
    description: How often does each setting lose acknowledged data?
    seeds: 200                    # seeds 0..199; or {start: 1000, count: 200}
    seeds_per_partition: 25       # trials per output file (the unit of resume)
    tables: [trials, events]      # the default; [trials] skips the events table (one row per
                                  # trial only: for campaigns of tens of thousands of trials)
    trial: {brokers: 3, duration_ms: 30000, settle_ms: 30000, interval_ms: 20, batch: 1}
    faults:
      kinds: [crash, power_loss, disconnect, partition, slow, zk_isolation, burst, bursty,
              slow_link]
      swarm: true                 # each trial enables a random subset of the kinds
      mean_interval_ms: [3000, 12000]   # one value, or [low, high] drawn per trial
      max_down_ms: 20000
      burst_records: [100, 2000]
    configs:
      base: {preset: "3.7"}
      grid: {acks: ["1", all], min.insync.replicas: [1, 2]}
      # or instead of grid, a random sample of the product:
      # sample: {count: 20, seed: 7, space: {acks: ["1", all], ...}}

Every config is validated when the spec is read, so a bad value fails before any trial runs,
and the error names the field (``configs.grid.acks[1]``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from kafkalab.config import Config, make_config
from kafkalab.errors import ConfigError, KafkalabError, did_you_mean
from kafkalab.sim.timed import FAULT_KINDS

__all__ = ["CampaignError", "CampaignSpec", "Unit", "catalog", "load_spec", "parse_spec"]

TOP_KEYS = (
    "name",
    "description",
    "seeds",
    "seeds_per_partition",
    "tables",
    "trial",
    "faults",
    "configs",
)
ALL_TABLES = ("trials", "events")  # what a campaign can write, in the order it writes them
TRIAL_KEYS = ("brokers", "duration_ms", "settle_ms", "interval_ms", "batch", "latency_ms")
FAULT_KEYS = ("kinds", "swarm", "mean_interval_ms", "max_down_ms", "burst_records")
CONFIG_KEYS = ("base", "grid", "sample")
SAMPLE_KEYS = ("count", "seed", "space")
MAX_SEEDS_PER_PARTITION = 10000
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class CampaignError(KafkalabError, ValueError):
    """A campaign spec or output folder is not usable: the message names the field."""


@dataclass(frozen=True)
class Unit:
    """One output partition: a block of seeds of one config, written as one file per table."""

    index: int
    config_id: int
    seed_start: int
    seeds: int

    @property
    def name(self) -> str:
        return f"part-{self.index:05d}"


@dataclass(frozen=True)
class CampaignSpec:
    """A validated campaign: its configs (each a full settings mapping) times its seeds."""

    name: str
    description: str
    seed_start: int
    seeds: int
    seeds_per_partition: int
    brokers: int
    duration_ms: int
    settle_ms: int
    interval_ms: int
    batch: int
    latency_ms: tuple[int, int]
    fault_kinds: tuple[str, ...]
    swarm: bool
    mean_fault_interval_ms: tuple[int, int]
    max_down_ms: int
    burst_records: tuple[int, int]
    base: dict[str, Any]
    varied: tuple[str, ...]  # the keys the configs vary, as written in the spec
    configs: tuple[dict[str, Any], ...]  # each: base plus that config's varied settings
    tables: tuple[str, ...] = ALL_TABLES  # the tables it writes: both, or trials alone

    @property
    def trials(self) -> int:
        return len(self.configs) * self.seeds

    def label(self, config_id: int) -> str:
        """The varied settings of one config, as ``key=value`` pairs."""
        cfg = self.configs[config_id]
        return " ".join(f"{k}={_text(cfg[k])}" for k in self.varied)

    def units(self) -> list[Unit]:
        """The output partitions, config by config, each a block of consecutive seeds."""
        out: list[Unit] = []
        for config_id in range(len(self.configs)):
            for offset in range(0, self.seeds, self.seeds_per_partition):
                count = min(self.seeds_per_partition, self.seeds - offset)
                out.append(Unit(len(out), config_id, self.seed_start + offset, count))
        return out

    def as_dict(self) -> dict[str, Any]:
        """Every setting with its defaults filled in: what the spec hash covers."""
        return {
            "name": self.name,
            "description": self.description,
            "seeds": {"start": self.seed_start, "count": self.seeds},
            "seeds_per_partition": self.seeds_per_partition,
            "trial": {
                "brokers": self.brokers,
                "duration_ms": self.duration_ms,
                "settle_ms": self.settle_ms,
                "interval_ms": self.interval_ms,
                "batch": self.batch,
                "latency_ms": list(self.latency_ms),
            },
            "faults": {
                "kinds": list(self.fault_kinds),
                "swarm": self.swarm,
                "mean_interval_ms": list(self.mean_fault_interval_ms),
                "max_down_ms": self.max_down_ms,
                "burst_records": list(self.burst_records),
            },
            "configs": [dict(c) for c in self.configs],
            "varied": list(self.varied),
            # Named only when it is not the default, so the hash of a campaign written before
            # the option existed (both tables) is what it was.
            **({"tables": list(self.tables)} if self.tables != ALL_TABLES else {}),
        }

    def spec_hash(self) -> str:
        """SHA-256 of the canonical spec: two specs with the same hash make the same data."""
        text = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def catalog() -> dict[str, Path]:
    """The campaign specs that ship with kafkalab, by name."""
    folder = resources.files("kafkalab.campaign") / "specs"
    return {
        Path(str(p)).stem: Path(str(p))
        for p in sorted(folder.iterdir(), key=lambda p: p.name)
        if p.name.endswith(".yaml")
    }


def load_spec(target: str | Path) -> CampaignSpec:
    """A spec from a YAML file, or one of the :func:`catalog` by name."""
    path = Path(target)
    if not path.is_file():
        specs = catalog()
        if str(target) not in specs:
            if str(target).endswith((".yaml", ".yml")) or "/" in str(target):
                raise CampaignError(f"campaign spec {str(target)!r}: no such file")
            raise CampaignError(
                f"campaign spec {str(target)!r} is neither a file nor a shipped spec"
                f"{did_you_mean(str(target), specs)}: shipped specs are {', '.join(specs)}"
            )
        path = specs[str(target)]
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise CampaignError(f"campaign spec {str(target)!r} is not valid YAML: {err}") from None
    return parse_spec(data)


def parse_spec(data: Any) -> CampaignSpec:
    """Validate a spec mapping and fill in its defaults."""
    top = _mapping(data, "the campaign spec", TOP_KEYS)
    name = top.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise CampaignError(
            f"campaign spec: name={name!r} is not allowed: use lower-case letters, digits, "
            "'.', '_' and '-'"
        )
    description = top.get("description", "")
    if not isinstance(description, str):
        raise CampaignError(f"campaign spec: description={description!r} is not allowed: text")
    seed_start, seeds = _seeds(top.get("seeds", 10))
    per_unit = _int(top.get("seeds_per_partition", 25), "seeds_per_partition", 1)
    if per_unit > MAX_SEEDS_PER_PARTITION:
        raise CampaignError(
            f"campaign spec: seeds_per_partition={per_unit} is not allowed: use 1.."
            f"{MAX_SEEDS_PER_PARTITION}"
        )
    tables = _tables(top.get("tables", list(ALL_TABLES)))
    trial = _trial(_mapping(top.get("trial", {}), "trial", TRIAL_KEYS))
    faults = _faults(_mapping(top.get("faults", {}), "faults", FAULT_KEYS))
    base, varied, configs = _configs(
        _mapping(top.get("configs", {}), "configs", CONFIG_KEYS), trial["brokers"]
    )
    return CampaignSpec(
        name=name,
        description=description.strip(),
        seed_start=seed_start,
        seeds=seeds,
        seeds_per_partition=per_unit,
        **trial,
        **faults,
        base=base,
        varied=varied,
        configs=configs,
        tables=tables,
    )


# ---- pieces ------------------------------------------------------------------------------------


def _mapping(value: Any, where: str, allowed: Sequence[str] | None) -> dict[str, Any]:
    """``value`` as a dict whose keys are all in ``allowed`` (None: any string key)."""
    if not isinstance(value, Mapping):
        raise CampaignError(f"campaign spec: {where} must be a mapping, not {value!r}")
    for key in value:
        if allowed is None and not isinstance(key, str):
            raise CampaignError(f"campaign spec: {where} has a key {key!r} that is not text")
        if allowed is not None and key not in allowed:
            raise CampaignError(
                f"campaign spec: {where} has an unknown key {key!r}"
                f"{did_you_mean(str(key), allowed)}: allowed are {', '.join(allowed)}"
            )
    return dict(value)


def _int(value: Any, where: str, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise CampaignError(
            f"campaign spec: {where}={value!r} is not allowed: use a whole number >= {low}"
        )
    if high is not None and value > high:
        raise CampaignError(f"campaign spec: {where}={value!r} is not allowed: use {low}..{high}")
    return value


def _range(value: Any, where: str, low: int) -> tuple[int, int]:
    """One whole number, or [low, high]."""
    if isinstance(value, list) and len(value) == 2:
        a, b = _int(value[0], f"{where}[0]", low), _int(value[1], f"{where}[1]", low)
        if b < a:
            raise CampaignError(f"campaign spec: {where}={value!r} is not allowed: use [low, high]")
        return a, b
    if isinstance(value, list):
        raise CampaignError(
            f"campaign spec: {where}={value!r} is not allowed: use a number or [low, high]"
        )
    n = _int(value, where, low)
    return n, n


def _seeds(value: Any) -> tuple[int, int]:
    if isinstance(value, Mapping):
        seeds = _mapping(value, "seeds", ("start", "count"))
        start = _int(seeds.get("start", 0), "seeds.start", 0)
        return start, _int(seeds.get("count"), "seeds.count", 1)
    return 0, _int(value, "seeds", 1)


def _choices(value: Any, where: str, allowed: Collection[str], use: str) -> list[str]:
    """``value`` as a list of distinct names, each one of ``allowed`` (``use`` says what to
    write instead in the error)."""
    if not isinstance(value, list):
        raise CampaignError(f"campaign spec: {where}={value!r} is not allowed: use {use}")
    for i, name in enumerate(value):
        if name not in allowed:
            raise CampaignError(
                f"campaign spec: {where}[{i}]={name!r} is not allowed"
                f"{did_you_mean(str(name), allowed)}: use {use}"
            )
    if len(set(value)) != len(value):
        raise CampaignError(f"campaign spec: {where}={value!r} names one twice: use {use}")
    return list(value)


def _tables(value: Any) -> tuple[str, ...]:
    use = "[trials, events] (the default) or [trials]"
    tables = _choices(value, "tables", ALL_TABLES, use)
    if "trials" not in tables:
        raise CampaignError(f"campaign spec: tables={value!r} is not allowed: use {use}")
    return tuple(t for t in ALL_TABLES if t in tables)


def _trial(t: dict[str, Any]) -> dict[str, Any]:
    latency = _range(t.get("latency_ms", [1, 5]), "trial.latency_ms", 0)
    return {
        "brokers": _int(t.get("brokers", 3), "trial.brokers", 1, 64),
        "duration_ms": _int(t.get("duration_ms", 60000), "trial.duration_ms", 1),
        "settle_ms": _int(t.get("settle_ms", 60000), "trial.settle_ms", 0),
        "interval_ms": _int(t.get("interval_ms", 20), "trial.interval_ms", 1),
        "batch": _int(t.get("batch", 1), "trial.batch", 1),
        "latency_ms": latency,
    }


def _faults(f: dict[str, Any]) -> dict[str, Any]:
    use = f"a list of {', '.join(FAULT_KINDS)}"
    kinds = _choices(f.get("kinds", ["crash", "disconnect"]), "faults.kinds", FAULT_KINDS, use)
    swarm = f.get("swarm", True)
    if not isinstance(swarm, bool):
        raise CampaignError(f"campaign spec: faults.swarm={swarm!r} is not allowed: true or false")
    return {
        "fault_kinds": tuple(kinds),
        "swarm": swarm,
        "mean_fault_interval_ms": _range(
            f.get("mean_interval_ms", 8000), "faults.mean_interval_ms", 1
        ),
        "max_down_ms": _int(f.get("max_down_ms", 25000), "faults.max_down_ms", 500),
        "burst_records": _range(f.get("burst_records", [100, 2000]), "faults.burst_records", 1),
    }


def _configs(
    c: dict[str, Any], brokers: int
) -> tuple[dict[str, Any], tuple[str, ...], tuple[dict[str, Any], ...]]:
    base = _mapping(c.get("base", {}), "configs.base", None)
    if "grid" in c and "sample" in c:
        raise CampaignError("campaign spec: configs has both grid and sample: keep one")
    if "sample" in c:
        sample = _mapping(c["sample"], "configs.sample", SAMPLE_KEYS)
        space = _space(sample.get("space"), "configs.sample.space")
        count = _int(sample.get("count"), "configs.sample.count", 1)
        combos = _sampled(space, count, _int(sample.get("seed", 0), "configs.sample.seed", 0))
        where = "configs.sample.space"
    else:
        space = _space(c.get("grid", {}), "configs.grid")
        combos = list(itertools.product(*space.values()))
        where = "configs.grid"
    keys = tuple(space)
    configs = []
    for combo in combos:
        varied = dict(zip(keys, combo, strict=True))
        settings = {**base, **varied}
        _check_config(settings, brokers, base, varied, where, space)
        configs.append(settings)
    return base, keys, tuple(configs)


def _space(value: Any, where: str) -> dict[str, list[Any]]:
    space = _mapping(value if value is not None else {}, where, None)
    for key, values in space.items():
        if not isinstance(values, list) or not values:
            raise CampaignError(
                f"campaign spec: {where}.{key}={values!r} is not allowed: list its values"
            )
    return space


def _sampled(space: dict[str, list[Any]], count: int, seed: int) -> list[tuple[Any, ...]]:
    """``count`` distinct combinations drawn from the product, in product order."""
    sizes = [len(v) for v in space.values()]
    total = 1
    for s in sizes:
        total *= s
    if count > total:
        raise CampaignError(
            f"campaign spec: configs.sample.count={count} is not allowed: the space has only "
            f"{total} combination(s)"
        )
    picks = sorted(random.Random(f"{seed}:configs").sample(range(total), count))
    out = []
    for index in picks:
        combo = []
        for values, size in zip(reversed(list(space.values())), reversed(sizes), strict=True):
            index, digit = divmod(index, size)
            combo.append(values[digit])
        out.append(tuple(reversed(combo)))
    return out


def _check_config(
    settings: dict[str, Any],
    brokers: int,
    base: dict[str, Any],
    combo: dict[str, Any],
    where: str,
    space: dict[str, list[Any]],
) -> Config:
    try:
        cfg = make_config(settings)
        if (cfg.replication_factor or brokers) > brokers:
            raise ConfigError(
                f"replication.factor={cfg.replication_factor} is not allowed with {brokers} "
                f"brokers: use 1..{brokers}"
            )
    except ConfigError as err:
        field = _blame(err, base, combo, where, space)
        raise CampaignError(f"campaign spec: {field}: {err}") from None
    return cfg


def _blame(
    err: ConfigError,
    base: dict[str, Any],
    combo: dict[str, Any],
    where: str,
    space: dict[str, list[Any]],
) -> str:
    """The field a config error comes from: the varied key (and value index) it names if any,
    else the base key, else the whole combination."""
    text = str(err)
    for key, value in combo.items():
        if _names(text, key):
            return f"{where}.{key}[{space[key].index(value)}]"
    for key in base:
        if _names(text, key):
            return f"configs.base.{key}"
    pairs = ", ".join(f"{k}={_text(v)}" for k, v in combo.items())
    return f"{where} combination ({pairs})" if pairs else "configs.base"


def _names(text: str, key: str) -> bool:
    variants = {key, key.replace(".", "_"), key.replace("_", ".")}
    return any(v in text for v in variants)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)
