"""Campaigns without Spark: fault kinds, specs, swarm trials, the rows of a trial, the output
folder (atomic parts, resume, refusal), the shipped dataset and the ``campaign`` command."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kafkalab.campaign import (
    EVENTS,
    TRIALS,
    CampaignError,
    draw_trial,
    generate,
    load_spec,
    parse_spec,
    read_manifest,
    run_trial,
    run_unit,
    schema_document,
    verify,
)
from kafkalab.campaign.schema import EXCLUDED_KINDS
from kafkalab.campaign.trial import percentile
from kafkalab.cli import main
from kafkalab.errors import ConfigError
from kafkalab.sim.timed import FAULT_KINDS, Fault, random_faults, simulate

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "datasets" / "small"
TINY = {
    "name": "t",
    "seeds": 4,
    "seeds_per_partition": 2,
    "trial": {"duration_ms": 4000, "settle_ms": 3000, "interval_ms": 100},
    "faults": {"kinds": list(FAULT_KINDS), "mean_interval_ms": [500, 1500], "max_down_ms": 2000},
    "configs": {"grid": {"acks": ["0", "all"]}},
}


# ---- random_faults ----------------------------------------------------------------------------


def test_the_first_fault_kinds_draw_the_schedules_they_always_drew() -> None:
    # Digest of these schedules taken before the new kinds were added: adding kinds must not
    # move a single draw of the old ones (named random streams, draws in the same order).
    h = hashlib.sha256()
    for seed in range(50):
        for kw in [
            {},
            {"kinds": ("crash", "disconnect", "pause")},
            {"power_loss": True, "mean_interval_ms": 3000},
            {"controllers": ("c1", "c2", "c3"), "kinds": ("crash", "pause")},
        ]:
            h.update(repr(random_faults(seed, 3, 60000, **kw)).encode())  # type: ignore[arg-type]
    assert h.hexdigest() == "7d89e0867fcdf4fdcfdc9959702460d4a73eba06b13829a407b6d625beaabdf4"


@pytest.mark.parametrize(
    ("kind", "actions"),
    [
        ("power_loss", {"crash", "restart"}),
        ("slow", {"pause", "resume"}),
        ("partition", {"partition", "heal"}),
        ("zk_isolation", {"disconnect", "reconnect"}),
        ("burst", {"burst"}),
        ("slow_link", {"throttle"}),
        ("bursty", {"burst"}),
    ],
)
def test_each_new_fault_kind_schedules_its_actions(kind: str, actions: set[str]) -> None:
    faults = [f for s in range(10) for f in random_faults(s, 3, 60000, kinds=[kind])]
    assert faults, kind
    assert {f.action for f in faults} == actions
    for f in faults:
        if f.action == "crash":
            assert f.lose_unflushed  # a power loss loses what was not flushed
        if f.action == "disconnect":
            assert f.args[1] == "zk" and f.args[0] in (1, 2, 3)
        if f.action == "partition":
            (groups,) = f.args
            sides = [set(g) - {"zk"} for g in groups]
            assert sides[0] | sides[1] == {1, 2, 3} and not sides[0] & sides[1]
            assert all(sides) and "zk" in groups[0]
        if f.action == "burst":
            assert 100 <= f.args[0] <= 2000
    if kind == "bursty":  # spells of bursts, one to three seconds apart
        gaps = {b.time_ms - a.time_ms for a, b in zip(faults, faults[1:], strict=False)}
        assert gaps & set(range(1000, 3001))
        if f.action == "throttle":
            slow, other, rate = f.args
            assert slow in (1, 2, 3) and other in {1, 2, 3} - {slow}
            assert rate in (0.1, 0.2, 0.5, None)


def test_faults_never_overlap_on_a_node_and_a_partition_has_the_cluster_to_itself() -> None:
    for seed in range(30):
        down: dict[object, int] = {}  # node -> number of open faults
        for f in random_faults(seed, 3, 60000, kinds=list(FAULT_KINDS), mean_interval_ms=2000):
            if f.action in ("crash", "pause"):
                (node,) = f.args
                assert not down.get(node), f
                down[node] = 1
            elif f.action in ("restart", "resume"):
                down[f.args[0]] = 0
            elif f.action == "disconnect":
                assert not any(down.get(n) for n in f.args), f
                down.update(dict.fromkeys(f.args, 1))
            elif f.action == "reconnect":
                down.update(dict.fromkeys(f.args, 0))
            elif f.action == "partition":
                assert not any(down.values()), f
                down = dict.fromkeys([1, 2, 3, "zk"], 1)
            elif f.action == "heal":
                down = {}


def test_an_unknown_fault_kind_is_refused_with_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match="'meteor' is not allowed: use one of crash"):
        random_faults(0, 3, 1000, kinds=["meteor"])


def test_a_burst_is_produced_and_counted() -> None:
    quiet = simulate(seed=1, duration_ms=2000, settle_ms=1000, faults=[])
    burst = simulate(seed=1, duration_ms=2000, settle_ms=1000, faults=[Fault(500, "burst", (300,))])
    assert burst.produced == quiet.produced + 300
    assert burst.acked == quiet.acked + 300


# ---- specs ------------------------------------------------------------------------------------


def test_a_grid_is_the_product_of_its_values_in_order() -> None:
    spec = parse_spec(
        {
            "name": "g",
            "configs": {
                "base": {"preset": "3.7"},
                "grid": {"acks": ["1", "all"], "min.insync.replicas": [1, 2]},
            },
        }
    )
    assert [spec.label(i) for i in range(4)] == [
        "acks=1 min.insync.replicas=1",
        "acks=1 min.insync.replicas=2",
        "acks=all min.insync.replicas=1",
        "acks=all min.insync.replicas=2",
    ]
    assert all(c["preset"] == "3.7" for c in spec.configs)
    assert spec.trials == 4 * 10


def test_a_sample_draws_distinct_configs_from_its_seed() -> None:
    space = {
        "acks": ["0", "1", "all"],
        "min.insync.replicas": [1, 2, 3],
        "leader_epochs": [True, False],
    }
    spec = {"name": "s", "configs": {"sample": {"count": 5, "seed": 3, "space": space}}}
    a, b = parse_spec(spec), parse_spec(spec)
    assert a.configs == b.configs and len(set(map(a.label, range(5)))) == 5
    other = parse_spec({**spec, "configs": {"sample": {"count": 5, "seed": 4, "space": space}}})
    assert other.configs != a.configs
    with pytest.raises(CampaignError, match=r"configs.sample.count=19 .* only 18"):
        parse_spec({**spec, "configs": {"sample": {"count": 19, "space": space}}})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": "Bad Name"}, "name='Bad Name' is not allowed"),
        ({"seeds": 0}, "seeds=0 is not allowed"),
        ({"seeds": {"start": -1, "count": 3}}, "seeds.start=-1"),
        ({"seedz": 3}, "unknown key 'seedz' (did you mean 'seeds'?)"),
        ({"trial": {"brokers": 0}}, "trial.brokers=0"),
        ({"trial": {"latency_ms": [5, 1]}}, "trial.latency_ms=[5, 1]"),
        ({"faults": {"kinds": ["crash", "meteor"]}}, "faults.kinds[1]='meteor'"),
        ({"faults": {"mean_interval_ms": [10, 1, 2]}}, "faults.mean_interval_ms="),
        ({"configs": {"grid": {"acks": ["1", "2"]}}}, "configs.grid.acks[1]: acks='2'"),
        ({"configs": {"grid": {"acks": []}}}, "configs.grid.acks=[] is not allowed"),
        ({"configs": {"grid": {"min.insync.replicas": [1, 0]}}}, "min.insync.replicas[1]"),
        ({"configs": {"base": {"acks": 7}}}, "configs.base.acks: acks=7"),
        ({"configs": {"base": {"acks": "1"}, "grid": {}, "sample": {}}}, "both grid and sample"),
        ({"configs": {"base": {"no_such_key": 1}}}, "no_such_key"),
        ({"tables": ["events"]}, "tables=['events'] is not allowed: use [trials, events]"),
        ({"tables": ["trials", "event"]}, "tables[1]='event' is not allowed (did you mean"),
        ({"tables": "trials"}, "tables='trials' is not allowed"),
        ({"tables": ["trials", "trials"]}, "tables=['trials', 'trials'] names one twice"),
        ({"faults": {"kinds": ["crash", "crash"]}}, "faults.kinds=['crash', 'crash'] names one"),
    ],
)
def test_an_invalid_spec_names_the_bad_field(change: dict, message: str) -> None:
    with pytest.raises(CampaignError) as err:
        parse_spec({**TINY, **change})
    assert message in str(err.value)


def test_a_spec_file_or_name_that_does_not_exist_is_named(tmp_path: Path) -> None:
    with pytest.raises(CampaignError, match="shipped specs are census, large, small, tiny"):
        load_spec("smal")
    with pytest.raises(CampaignError, match="no such file"):
        load_spec(str(tmp_path / "x.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(CampaignError, match="not valid YAML"):
        load_spec(bad)


def test_the_spec_hash_follows_every_setting() -> None:
    base = parse_spec(TINY)
    assert parse_spec(dict(TINY)).spec_hash() == base.spec_hash()
    for change in (
        {"seeds": 5},
        {"trial": {"duration_ms": 4001}},
        {"description": "x"},
        {"tables": ["trials"]},
    ):
        assert parse_spec({**TINY, **change}).spec_hash() != base.spec_hash()
    # Both tables is the default, and the hash of a spec that does not name it.
    assert parse_spec({**TINY, "tables": ["events", "trials"]}).spec_hash() == base.spec_hash()


# ---- trials -----------------------------------------------------------------------------------


def test_a_seed_chooses_the_same_faults_for_every_config() -> None:
    spec = parse_spec(TINY)
    for seed in range(4):
        a, b = draw_trial(spec, 0, seed), draw_trial(spec, 1, seed)
        assert (a.fault_kinds, a.mean_fault_interval_ms) == (
            b.fault_kinds,
            b.mean_fault_interval_ms,
        )
        assert a.fault_kinds and set(a.fault_kinds) <= set(FAULT_KINDS)
        assert b.trial_id == 4 + seed and a.trial_id == seed
    kinds = {draw_trial(spec, 0, s).fault_kinds for s in range(4)}
    assert len(kinds) > 1  # swarm: seeds switch different kinds on
    with pytest.raises(ValueError, match="seed=9"):
        draw_trial(spec, 0, 9)


def test_a_trial_gives_the_same_rows_every_time_and_follows_the_schema() -> None:
    spec = parse_spec(TINY)
    first = run_trial(draw_trial(spec, 1, 2))
    again = run_trial(draw_trial(spec, 1, 2))
    assert first == again
    assert list(first.trial) == [c.name for c in TRIALS]
    assert list(first.events) == [c.name for c in EVENTS]
    n = first.trial["events"]
    assert n > 0 and all(len(v) == n for v in first.events.values())
    assert set(first.events["trial_id"]) == {first.trial["trial_id"]}
    assert first.events["seq"] == sorted(first.events["seq"])
    assert not set(first.events["kind"]) & EXCLUDED_KINDS


def test_event_rows_carry_what_their_trace_events_say() -> None:
    spec = parse_spec(TINY)
    rows = run_trial(draw_trial(spec, 1, 0))
    ev = [dict(zip(rows.events, r, strict=True)) for r in zip(*rows.events.values(), strict=True)]
    for e in ev:
        if e["hw"] is not None or e["leo"] is not None:
            assert e["node"].isdigit() and int(e["node"]) == e["broker"]
        if e["hw"] is not None and e["leo"] is not None:
            assert e["hw"] <= e["leo"]
        if e["kind"] == "produce_result":
            assert e["latency_ms"] is not None and e["latency_ms"] >= 0 and e["records"] >= 1
        if e["kind"] == "append":
            assert e["leo"] is not None and e["records"] >= 1
        if e["isr"] is not None:
            assert e["isr_size"] == len(e["isr"])
    sizes = [3] + [e["isr_size"] for e in ev if e["kind"] == "partition_state"]
    shrinks = sum(1 for prev, cur in zip(sizes, sizes[1:], strict=False) if cur < prev)
    assert shrinks == rows.trial["isr_shrinks"]  # the report counts what the events show


def test_the_trials_row_adds_up() -> None:
    spec = parse_spec(TINY)
    for config_id in (0, 1):
        for seed in range(4):
            t = run_trial(draw_trial(spec, config_id, seed)).trial
            assert 0 <= t["acked"] <= t["produced"] and 0 <= t["lost_acked"] <= t["acked"]
            assert 0 <= t["offline_ms"] <= t["duration_ms"] + t["settle_ms"]
            assert t["safe"] == (
                t["lost_acked"] == 0
                and not t["divergent"]
                and t["hw_regressions"] == 0
                and t["two_leaders"] == 0
            )
            if t["acks"] == "0":
                assert t["unavailable_ms"] is None and t["latency_p50_ms"] is None
            else:
                assert 0 <= t["unavailable_ms"] <= t["duration_ms"]
                batches = len(range(100, t["duration_ms"], 100))
                assert t["unavailable_ms"] % 100 == 0 and t["unavailable_ms"] // 100 <= batches


def test_the_package_example_runs() -> None:
    import doctest

    import kafkalab.campaign

    assert doctest.testmod(kafkalab.campaign).failed == 0


def test_a_trial_that_fails_says_how_to_replay_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import kafkalab.campaign.dataset as dataset

    spec = parse_spec(TINY)

    def broken(trial: object, *, events: bool = True) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(dataset, "run_trial", broken)
    with pytest.raises(RuntimeError) as err:
        run_unit(spec, spec.units()[3])
    assert "campaign t: trial 6 (config 1, seed 2) failed: KeyError('boom')" in str(err.value)
    assert "run_trial(draw_trial(load_spec('t'), config_id=1, seed=2))" in str(err.value)


def test_percentile_interpolates_linearly() -> None:
    assert percentile([], 0.5) is None
    assert percentile([7], 0.99) == 7.0
    assert percentile([1, 2, 3, 4], 0.5) == 2.5
    assert percentile([0, 10], 0.99) == pytest.approx(9.9)
    assert percentile(list(range(101)), 0.95) == 95.0


# ---- the output folder ------------------------------------------------------------------------


def _files(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("campaign") / "ref"
    summary = generate(parse_spec(TINY), out)
    assert (summary.units, summary.written, summary.skipped, summary.trials) == (4, 4, 0, 8)
    return out


def test_a_campaign_folder_holds_both_tables_and_a_manifest(reference: Path) -> None:
    assert verify(reference) == []
    manifest = read_manifest(reference)
    assert manifest is not None and manifest["complete"]
    assert manifest["spec_hash"] == parse_spec(TINY).spec_hash()
    assert manifest["rows"]["trials"] == 8
    names = sorted(_files(reference))
    assert [n for n in names if n.startswith("trials/")] == [
        f"trials/part-0000{i}.parquet" for i in range(4)
    ]
    assert not [n for n in names if "tmp" in n]


def test_a_trials_only_campaign_writes_the_same_trials_and_no_events(
    reference: Path, tmp_path: Path
) -> None:
    spec, out = parse_spec({**TINY, "tables": ["trials"]}), tmp_path / "trials-only"
    summary = generate(spec, out)
    assert (summary.trials, summary.events) == (8, 0)
    assert verify(out) == []
    manifest = read_manifest(out)
    assert manifest is not None and manifest["rows"] == {"trials": 8}
    assert manifest["spec"]["tables"] == ["trials"]
    files, full = _files(out), _files(reference)
    assert not (out / "events").exists()
    assert {n: h for n, h in files.items() if n.startswith("trials/")} == {
        n: h for n, h in full.items() if n.startswith("trials/")
    }
    again = generate(spec, out)  # resumes like any campaign: nothing left to write
    assert (again.written, again.skipped) == (0, 4)
    (out / "trials" / "part-00001.parquet").unlink()
    assert verify(out) == [f"{out / 'trials' / 'part-00001.parquet'} is missing"]
    assert generate(spec, out).written == 1 and verify(out) == []


def test_the_same_spec_gives_byte_identical_files(reference: Path, tmp_path: Path) -> None:
    generate(parse_spec(TINY), tmp_path / "again")
    assert _files(tmp_path / "again") == _files(reference)


def test_a_rerun_skips_complete_parts(reference: Path) -> None:
    before = _files(reference)
    summary = generate(parse_spec(TINY), reference)
    assert (summary.written, summary.skipped) == (0, 4)
    assert _files(reference) == before


def test_an_interrupted_run_leaves_whole_parts_and_resumes(reference: Path, tmp_path: Path) -> None:
    spec, out = parse_spec(TINY), tmp_path / "stopped"

    def stops_after_two(spec, units):  # type: ignore[no-untyped-def]
        for unit in units[:2]:
            yield run_unit(spec, unit)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        generate(spec, out, map_units=stops_after_two)
    visible = sorted(p.name for p in (out / "events").iterdir())
    assert visible == ["part-00000.parquet", "part-00001.parquet"]
    assert not read_manifest(out)["complete"]  # type: ignore[index]
    # a temporary file a killed process left behind is never taken for a part
    (out / "events" / ".part-00002.parquet.x.tmp").write_bytes(b"half a file")
    summary = generate(spec, out)
    assert (summary.written, summary.skipped) == (2, 2)
    assert _files(out) == _files(reference)


def test_a_part_without_its_record_is_written_again(reference: Path, tmp_path: Path) -> None:
    out = tmp_path / "copy"
    generate(parse_spec(TINY), out)
    (out / "_units" / "part-00003.json").unlink()
    (out / "trials" / "part-00003.parquet").unlink()
    summary = generate(parse_spec(TINY), out)
    assert (summary.written, summary.skipped) == (1, 3)
    assert _files(out) == _files(reference)


def test_another_campaign_in_out_is_refused_unless_overwritten(
    reference: Path, tmp_path: Path
) -> None:
    out = tmp_path / "other"
    generate(parse_spec(TINY), out)
    changed = parse_spec({**TINY, "seeds": 2})
    with pytest.raises(CampaignError, match="holds another campaign .* --overwrite"):
        generate(changed, out)
    summary = generate(changed, out, overwrite=True)
    assert summary.trials == 4 and verify(out) == []
    assert not (out / "trials" / "part-00003.parquet").exists()


def test_a_folder_that_is_not_a_campaign_is_never_touched(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(CampaignError, match="holds files that are not a campaign"):
            generate(parse_spec(TINY), tmp_path, overwrite=overwrite)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
    with pytest.raises(CampaignError, match="is a file"):
        generate(parse_spec(TINY), tmp_path / "notes.txt")


def test_verify_notices_a_changed_file(reference: Path, tmp_path: Path) -> None:
    out = tmp_path / "changed"
    generate(parse_spec(TINY), out)
    part = out / "events" / "part-00001.parquet"
    part.write_bytes((out / "events" / "part-00000.parquet").read_bytes())
    problems = verify(out)
    assert any("part-00001.parquet: its SHA-256" in p for p in problems)
    assert any("part-00001.parquet: its content" in p for p in problems)


# ---- the shipped dataset and schema -----------------------------------------------------------


def test_the_schema_file_is_the_schema_in_the_code() -> None:
    shipped = json.loads((ROOT / "datasets" / "schema.json").read_text())
    assert shipped == schema_document(), "regenerate it: make datasets-small"


def test_the_shipped_small_dataset_is_whole_and_matches_its_spec() -> None:
    manifest = read_manifest(SMALL)
    assert manifest is not None and manifest["complete"]
    spec = load_spec("small")
    assert manifest["spec_hash"] == spec.spec_hash(), "regenerate it: make datasets-small"
    assert manifest["schema_version"] == schema_document()["schema_version"]
    assert verify(SMALL) == []  # every file's SHA-256, row count and content digest
    size = sum(p.stat().st_size for p in SMALL.rglob("*") if p.is_file())
    assert size < 8_000_000


def test_regenerating_parts_of_the_shipped_dataset_gives_the_same_rows() -> None:
    manifest = read_manifest(SMALL)
    assert manifest is not None
    spec = load_spec("small")
    units = spec.units()
    for index in (0, len(units) - 1):
        output = run_unit(spec, units[index])
        part = manifest["parts"][index]
        for table in ("trials", "events"):
            stale = f"{table} of {part['name']} changed: the simulator's behaviour changed? "
            stale += "Review the change, then `make datasets-small`"
            assert output.rows[table] == part[table]["rows"], stale
            assert output.digests[table] == part[table]["digest"], stale
            if manifest["parquet_writer"] == _writer():
                assert hashlib.sha256(output.files[table]).hexdigest() == part[table]["sha256"]


CENSUS = ROOT / "datasets" / "census"


def test_the_shipped_census_is_whole_and_matches_its_spec() -> None:
    manifest = read_manifest(CENSUS)
    assert manifest is not None and manifest["complete"]
    spec = load_spec("census")
    assert spec.trials >= 50_000 and spec.duration_ms >= 60_000 and spec.swarm
    assert manifest["spec_hash"] == spec.spec_hash(), "regenerate it: make datasets-census"
    assert manifest["rows"] == {"trials": spec.trials}
    assert verify(CENSUS) == []
    assert not (CENSUS / "events").exists()
    size = sum(p.stat().st_size for p in CENSUS.rglob("*") if p.is_file())
    assert size < 8_000_000


def test_trials_of_the_shipped_census_replay_to_their_rows() -> None:
    """A part takes half a minute: three trials of different configs and parts stand for it."""
    import pyarrow.parquet as pq

    spec = load_spec("census")
    rows = pq.read_table(CENSUS / "trials").to_pylist()
    by_id = {r["trial_id"]: r for r in rows}
    for config_id, seed in ((0, 7), (6, 2100), (len(spec.configs) - 1, spec.seeds - 1)):
        trial = draw_trial(spec, config_id, seed)
        again = run_trial(trial, events=False).trial
        stale = f"census trial {trial.trial_id} changed: the simulator's behaviour changed? "
        stale += "Review the change, then `make datasets-census`"
        assert again == by_id[trial.trial_id], stale


def _writer() -> str:
    import pyarrow

    return f"pyarrow {pyarrow.__version__}"


# ---- the command ------------------------------------------------------------------------------


def test_campaign_list_validate_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["campaign", "list"]) == 0
    out = capsys.readouterr().out
    assert {line.split()[0] for line in out.splitlines()} == {"census", "large", "small", "tiny"}
    assert main(["campaign", "validate", "small"]) == 0
    out = capsys.readouterr().out
    assert "12 config(s) x 32 seed(s) = 384 trials in 24 part(s)" in out
    assert "config 11: preset=3.7 acks=all min.insync.replicas=2" in out
    assert main(["campaign", "show", "tiny"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "tiny"


def test_a_bad_spec_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: bad\nconfigs:\n  grid:\n    acks: ['1', '2']\n")
    for args in (["validate", str(spec)], ["run", str(spec), "--out", str(tmp_path / "o")]):
        assert main(["campaign", *args]) == 2
        err = capsys.readouterr().err
        assert err == (
            "kafkalab: error: campaign spec: configs.grid.acks[1]: acks='2' is not allowed: "
            "use 0, 1 or all (-1)\n"
        )
    assert not (tmp_path / "o").exists()


def test_a_bad_master_or_out_is_refused_before_spark_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyspark.sql

    def no_spark(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark must not start")

    monkeypatch.setattr(pyspark.sql.SparkSession.Builder, "getOrCreate", no_spark)
    out = tmp_path / "o"
    assert main(["campaign", "run", "tiny", "--out", str(out), "--master", "spark:/x"]) == 2
    assert "--master 'spark:/x' is not allowed: use local[*], local[N]" in capsys.readouterr().err
    generate(load_spec("tiny"), out)
    assert main(["campaign", "run", "small", "--out", str(out)]) == 2
    assert "holds another campaign ('tiny'" in capsys.readouterr().err


def test_without_java_run_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import kafkalab.spark.session as session

    monkeypatch.setattr(session, "find_java_home", lambda: None)
    assert main(["campaign", "run", "tiny", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "Spark needs Java" in err and "apt-get install openjdk-17-jre-headless" in err


def test_java_is_found_where_debian_puts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kafkalab.spark.session as session

    fake = tmp_path / "jvm"
    (fake / "bin").mkdir(parents=True)
    (fake / "bin" / "java").write_text("")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(session, "JAVA_17", fake)
    assert session.find_java_home() == fake
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    assert session.find_java_home() == fake  # a JAVA_HOME that holds no java is passed over
    monkeypatch.setattr(session, "JAVA_17", tmp_path / "none")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert session.find_java_home() is None


def test_a_trial_without_its_events_has_the_same_row() -> None:
    """A campaign that writes the trials table alone (``tables: [trials]``) skips building the
    events rows; the trial's row (latencies and event count included) must not change."""
    spec = parse_spec(TINY)
    for config_id, seed in ((0, 0), (1, 2), (len(spec.configs) - 1, spec.seeds - 1)):
        trial = draw_trial(spec, config_id, seed)
        full, alone = run_trial(trial), run_trial(trial, events=False)
        assert alone.events == {}
        assert alone.trial == full.trial
        assert full.trial["events"] == len(full.events["seq"])
        latencies = sorted(
            lat
            for kind, err, lat in zip(
                full.events["kind"], full.events["error"], full.events["latency_ms"], strict=True
            )
            if kind == "produce_result" and err == "NONE" and lat is not None
        )
        assert full.trial["latency_max_ms"] == (latencies[-1] if latencies else None)
        assert full.trial["latency_p50_ms"] == percentile(latencies, 0.5)


def test_duckdb_answers_the_per_trial_questions_on_the_census() -> None:
    """A campaign of the trials table alone opens in DuckDB too (no events view)."""
    import pyarrow.parquet as pq

    from kafkalab.spark import reference

    con = reference.connect(CENSUS)
    rows = {r["config_id"]: r for r in reference.answer(con, "loss_probability")}
    table = pq.read_table(CENSUS / "trials").to_pylist()
    for config_id in (0, 11):
        mine = [t for t in table if t["config_id"] == config_id]
        lossy = sum(t["lost_acked"] > 0 for t in mine)
        assert (rows[config_id]["trials"], rows[config_id]["lossy_trials"]) == (len(mine), lossy)
        assert rows[config_id]["ci_low"] <= lossy / len(mine) <= rows[config_id]["ci_high"]
