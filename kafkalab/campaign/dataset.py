"""A campaign's output folder: partitioned Parquet, written so that a run can stop and resume.

    OUT/_campaign.json              the manifest: spec, spec hash, schema version, every part
    OUT/trials/part-00000.parquet   one file per unit (a block of seeds of one config)
    OUT/events/part-00000.parquet   (unless the spec says ``tables: [trials]``)
    OUT/_units/part-00000.json      written last: the unit is complete

Each file is written under a hidden temporary name and renamed into place once complete, so a
reader (Spark and DuckDB skip names starting with ``.`` or ``_``) never sees half a file. A rerun
with the same spec skips the complete units; a different spec is refused unless asked to
overwrite. The same spec always gives the same rows, and with the same pyarrow the same bytes.

Running the units is not this module's business: :func:`generate` takes a ``map_units``
function (in-process by default; :mod:`kafkalab.spark.generate` passes one that runs on Spark).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.campaign.schema import EVENTS, SCHEMA_VERSION, TRIALS, Column, arrow_schema
from kafkalab.campaign.spec import ALL_TABLES, CampaignError, CampaignSpec, Unit
from kafkalab.campaign.trial import draw_trial, run_trial

__all__ = [
    "MANIFEST",
    "TABLES",
    "Summary",
    "UnitOutput",
    "check_out",
    "content_digest",
    "generate",
    "manifest_tables",
    "read_manifest",
    "run_unit",
    "verify",
]

MANIFEST = "_campaign.json"
UNITS_DIR = "_units"
TABLES: dict[str, tuple[Column, ...]] = {"trials": TRIALS, "events": EVENTS}

MapUnits = Callable[[CampaignSpec, Sequence[Unit]], Iterable["UnitOutput"]]


@dataclass(frozen=True)
class UnitOutput:
    """One unit's Parquet files (as bytes), one per table the spec writes, and what they
    hold."""

    unit: Unit
    files: dict[str, bytes]  # table name -> Parquet bytes
    rows: dict[str, int]
    digests: dict[str, str]  # table name -> content digest (independent of the encoding)

    @property
    def trials(self) -> int:
        return self.rows["trials"]


@dataclass
class Summary:
    """What a run wrote."""

    out: str
    campaign: str
    spec_hash: str
    units: int
    written: int
    skipped: int
    trials: int
    events: int
    bytes: int
    seconds: float = 0.0
    tables: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        rate = ""
        if self.seconds and self.written:
            rate = f", {self.written / self.seconds:.1f} units/s"
        return (
            f"campaign {self.campaign} in {self.out}: {self.units} parts "
            f"({self.written} written now, {self.skipped} already there{rate})\n"
            f"trials: {self.trials:,} rows, events: {self.events:,} rows, "
            f"{self.bytes / 1e6:.1f} MB of Parquet; spec hash {self.spec_hash[:12]}"
        )


# ---- running units ---------------------------------------------------------------------------


def run_unit(spec: CampaignSpec, unit: Unit) -> UnitOutput:
    """Run every trial of a unit and encode its tables as Parquet (a plain function: Spark
    maps it over units, and so does the in-process runner)."""
    trials: dict[str, list[Any]] = {c.name: [] for c in TRIALS}
    events: dict[str, list[Any]] = {c.name: [] for c in EVENTS}
    with_events = "events" in spec.tables
    for seed in range(unit.seed_start, unit.seed_start + unit.seeds):
        trial = draw_trial(spec, unit.config_id, seed)
        try:
            rows = run_trial(trial, events=with_events)
        except Exception as err:  # a simulator bug: say which trial, and how to replay it
            raise RuntimeError(
                f"campaign {spec.name}: trial {trial.trial_id} (config {trial.config_id}, "
                f"seed {seed}) failed: {err!r}; {trial.replay_hint(spec.name)}"
            ) from err
        for name, value in rows.trial.items():
            trials[name].append(value)
        if with_events:
            for name, values in rows.events.items():
                events[name].extend(values)
    columns = {"trials": trials, "events": events}
    return UnitOutput(
        unit=unit,
        files={t: _parquet(columns[t], TABLES[t]) for t in spec.tables},
        rows={t: len(columns[t]["trial_id"]) for t in spec.tables},
        digests={t: content_digest(columns[t], TABLES[t]) for t in spec.tables},
    )


def _parquet(columns: dict[str, list[Any]], schema: tuple[Column, ...]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pydict(columns, schema=arrow_schema(schema))
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", row_group_size=1 << 20)
    return buf.getvalue()


def content_digest(columns: dict[str, list[Any]], schema: tuple[Column, ...]) -> str:
    """SHA-256 of a table's values in column order: the same for the same rows whatever the
    Parquet writer (compare a regenerated dataset with this, not with file bytes)."""
    h = hashlib.sha256()
    for c in schema:
        h.update(c.name.encode())
        h.update(json.dumps(columns[c.name], separators=(",", ":")).encode())
    return h.hexdigest()


def _in_process(spec: CampaignSpec, units: Sequence[Unit]) -> Iterator[UnitOutput]:
    for unit in units:
        yield run_unit(spec, unit)


# ---- the output folder -----------------------------------------------------------------------


def generate(
    spec: CampaignSpec,
    out: str | Path,
    *,
    overwrite: bool = False,
    map_units: MapUnits | None = None,
    on_unit: Callable[[UnitOutput], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
) -> Summary:
    """Run the units of ``spec`` that ``out`` lacks and write them; return what was written.

    ``map_units(spec, units)`` yields each unit's output in any order (in-process by default);
    ``on_start(pending_trials, done_trials)`` and ``on_unit(output)`` report progress."""
    started = time.perf_counter()
    folder = _prepare(spec, Path(out), overwrite)
    units = spec.units()
    done = {u.index for u in units if _complete(folder, u, spec.tables)}
    pending = [u for u in units if u.index not in done]
    if on_start is not None:
        on_start(sum(u.seeds for u in pending), sum(u.seeds for u in units if u.index in done))
    written = 0
    for output in (map_units or _in_process)(spec, pending):
        _commit(folder, output)
        written += 1
        if on_unit is not None:
            on_unit(output)
    summary = _finish(spec, folder, units)
    summary.written, summary.skipped = written, len(done)
    summary.seconds = time.perf_counter() - started
    return summary


def manifest_tables(manifest: dict[str, Any]) -> tuple[str, ...]:
    """The tables a campaign folder holds, as its manifest's spec names them."""
    spec = manifest.get("spec")
    named = spec.get("tables", ALL_TABLES) if isinstance(spec, dict) else ALL_TABLES
    return tuple(t for t in ALL_TABLES if t in named)


def read_manifest(out: str | Path) -> dict[str, Any] | None:
    """The manifest of a campaign folder, or None when there is none."""
    path = Path(out) / MANIFEST
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise CampaignError(f"{path} is not a campaign manifest (not readable JSON)") from None


def check_out(spec: CampaignSpec, out: str | Path, *, overwrite: bool = False) -> bool:
    """Whether ``out`` already holds this campaign (complete or not); raise CampaignError when
    it cannot take it: a file, a folder of other things, or (without ``overwrite``) another
    campaign. Touches nothing, so a caller can ask before it starts Spark."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise CampaignError(f"--out {str(out)!r} is a file: name a folder")
    manifest = read_manifest(out)
    if manifest is None and out.is_dir() and any(out.iterdir()):
        raise CampaignError(
            f"--out {str(out)!r} holds files that are not a campaign: name an empty or new folder"
        )
    same = manifest is not None and (
        manifest.get("spec_hash") == spec.spec_hash()
        and manifest.get("schema_version") == SCHEMA_VERSION
    )
    if manifest is not None and not same and not overwrite:
        raise CampaignError(
            f"--out {str(out)!r} holds another campaign ({manifest.get('campaign')!r}, spec "
            f"hash {str(manifest.get('spec_hash'))[:12]}; this spec's is "
            f"{spec.spec_hash()[:12]}): name another folder or pass --overwrite"
        )
    return same


def _prepare(spec: CampaignSpec, out: Path, overwrite: bool) -> Path:
    same = check_out(spec, out, overwrite=overwrite)
    if not same and read_manifest(out) is not None:
        _clear(out)
    for sub in (*spec.tables, UNITS_DIR):
        (out / sub).mkdir(parents=True, exist_ok=True)
        for stale in (out / sub).glob(".*.tmp"):
            stale.unlink()
    if not same:
        _write_json(out / MANIFEST, _manifest(spec, parts=None))
    return out


def _clear(out: Path) -> None:
    """Remove what a campaign wrote (and nothing else)."""
    for sub in (*TABLES, UNITS_DIR):
        if (out / sub).is_dir():
            shutil.rmtree(out / sub)
    (out / MANIFEST).unlink(missing_ok=True)


def _complete(out: Path, unit: Unit, tables: tuple[str, ...]) -> bool:
    return (out / UNITS_DIR / f"{unit.name}.json").is_file() and all(
        (out / t / f"{unit.name}.parquet").is_file() for t in tables
    )


def _commit(out: Path, output: UnitOutput) -> None:
    """The table files first, then the unit's record: the record says the unit is
    complete."""
    name = output.unit.name
    record: dict[str, Any] = {**asdict(output.unit), "name": name}
    for table, data in output.files.items():
        _write_bytes(out / table / f"{name}.parquet", data)
        record[table] = {
            "rows": output.rows[table],
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "digest": output.digests[table],
        }
    _write_json(out / UNITS_DIR / f"{name}.json", record)


def _finish(spec: CampaignSpec, out: Path, units: list[Unit]) -> Summary:
    parts = [json.loads((out / UNITS_DIR / f"{u.name}.json").read_text()) for u in units]
    _write_json(out / MANIFEST, _manifest(spec, parts))
    return Summary(
        out=str(out),
        campaign=spec.name,
        spec_hash=spec.spec_hash(),
        units=len(units),
        written=0,
        skipped=0,
        trials=sum(p["trials"]["rows"] for p in parts),
        events=sum(p["events"]["rows"] for p in parts if "events" in p),
        bytes=sum(p[t]["bytes"] for p in parts for t in spec.tables),
    )


def _manifest(spec: CampaignSpec, parts: list[dict[str, Any]] | None) -> dict[str, Any]:
    import pyarrow

    out: dict[str, Any] = {
        "campaign": spec.name,
        "description": spec.description,
        "schema_version": SCHEMA_VERSION,
        "spec_hash": spec.spec_hash(),
        "spec": spec.as_dict(),
        "parquet_writer": f"pyarrow {pyarrow.__version__}",
        "complete": parts is not None,
    }
    if parts is not None:
        out["rows"] = {t: sum(p[t]["rows"] for p in parts) for t in spec.tables}
        out["parts"] = parts
    return out


def _write_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a dataset is for reading
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_json(path: Path, data: dict[str, Any]) -> None:
    _write_bytes(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())


# ---- checking a folder -----------------------------------------------------------------------


def verify(out: str | Path, *, digests: bool = True) -> list[str]:
    """What is wrong with a complete campaign folder: a missing or changed file, a row count or
    (with ``digests``) content that does not match the manifest. Empty when all is well."""
    import pyarrow.parquet as pq

    out = Path(out)
    manifest = read_manifest(out)
    if manifest is None or not manifest.get("complete"):
        return [f"{out} holds no complete campaign"]
    problems = []
    tables = manifest_tables(manifest)
    for part in manifest["parts"]:
        for table in tables:
            path = out / table / f"{part['name']}.parquet"
            if not path.is_file():
                problems.append(f"{path} is missing")
                continue
            data = path.read_bytes()
            if hashlib.sha256(data).hexdigest() != part[table]["sha256"]:
                problems.append(f"{path}: its SHA-256 is not the manifest's")
            columns = pq.read_table(io.BytesIO(data)).to_pydict()
            if len(columns["trial_id"]) != part[table]["rows"]:
                problems.append(f"{path}: {len(columns['trial_id'])} rows, not the manifest's")
            if digests and content_digest(columns, TABLES[table]) != part[table]["digest"]:
                problems.append(f"{path}: its content is not the manifest's")
    return problems
