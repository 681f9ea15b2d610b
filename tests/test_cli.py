"""The ``kafkalab`` command: scenario list, show and run, exit codes and error messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kafkalab.cli import main

KAFKALAB = Path(sys.executable).with_name("kafkalab")

OFFLINE = """\
name: offline
brokers: 2
leader: 1
steps:
  - crash: 2
  - advance: 18000
    note: 2's session expires; the ISR shrinks to [1]
  - crash: 1
  - advance: 18000
    note: no live ISR replica and unclean election off, so no leader
expect:
  leader: null
  isr: [1]
"""

SIMPLE = """\
name: simple
brokers: 2
leader: 1
steps:
  - produce: m1
  - fetch: 2
  - fetch: 2
expect:
  leader: {leader}
  logs: {{1: [m1], 2: {logs2}}}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, text: str, name: str = "scenario.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code, out, err = run(capsys, "scenario", "run", *argv, "--json")
    assert out.count("\n") == 1, out  # one JSON object on one line
    return code, json.loads(out)


# ---- list and show -------------------------------------------------------------------------


def test_scenario_list_names_the_catalog(capsys):
    code, out, err = run(capsys, "scenario", "list")
    assert code == 0
    assert err == ""
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert "kip101-loss" in names
    assert "variant" in out


def test_scenario_show_prints_yaml_that_parses(capsys):
    code, out, _ = run(capsys, "scenario", "show", "kip101-loss")
    assert code == 0
    doc = yaml.safe_load(out)
    assert doc["name"] == "kip101-loss"
    assert doc["brokers"] == 2
    assert isinstance(doc["steps"], list) and doc["steps"]
    assert "expect" in doc


def test_scenario_show_an_unknown_name_exits_2(capsys):
    code, out, err = run(capsys, "scenario", "show", "kip101-los")
    assert code == 2
    assert "did you mean 'kip101-loss'" in err
    assert "Traceback" not in err


# ---- run -----------------------------------------------------------------------------------


def test_scenario_run_of_the_catalog_entry_exits_0(capsys):
    code, out, err = run(capsys, "scenario", "run", "kip101-loss")
    assert code == 0, out + err
    assert "expectations: all hold" in out
    assert "acknowledged but lost: ['m2']" in out


def test_scenario_run_json_prints_the_final_state(capsys):
    code, state = run_json(capsys, "kip101-loss")
    assert code == 0
    for key in (
        "leader",
        "leader_epoch",
        "isr",
        "hw",
        "leo",
        "logs",
        "acked",
        "lost_acked",
        "divergent",
        "errors",
    ):
        assert key in state, key
    assert state["leader"] == 1
    assert state["leader_epoch"] == 1
    assert state["isr"] == [1]
    assert state["logs"] == {"1": ["m1"], "2": ["m1"]}
    assert state["hw"] == {"1": 1, "2": 1}
    assert state["leo"] == {"1": 1, "2": 1}
    assert sorted(state["acked"]) == ["m1", "m2"]
    assert state["lost_acked"] == ["m2"]
    assert state["divergent"] is False
    assert state["errors"] == {}
    assert state["ok"] is True


def test_scenario_run_json_has_a_null_leader_when_the_partition_is_offline(capsys, tmp_path):
    code, state = run_json(capsys, write(tmp_path, OFFLINE))
    assert code == 0, state["mismatches"]
    assert state["leader"] is None
    assert state["isr"] == [1]
    assert state["running"] == []


def test_scenario_run_human_output_says_offline(capsys, tmp_path):
    code, out, _ = run(capsys, "scenario", "run", write(tmp_path, OFFLINE))
    assert code == 0
    assert "leader: none (offline)" in out


def test_a_scenario_file_whose_expectations_hold_exits_0(capsys, tmp_path):
    path = write(tmp_path, SIMPLE.format(leader=1, logs2="[m1]"))
    code, out, _ = run(capsys, "scenario", "run", path)
    assert code == 0, out


def test_a_failed_expectation_exits_1_with_a_readable_diff(capsys, tmp_path):
    path = write(tmp_path, SIMPLE.format(leader=2, logs2="[m1, m9]"))
    code, out, err = run(capsys, "scenario", "run", path)
    assert code == 1
    assert "Traceback" not in err
    assert "expectations that do not hold" in out
    assert "leader: expected 2, got 1" in out
    assert "logs[2]: expected ['m1', 'm9'], got ['m1']" in out


def test_a_failed_expectation_in_json_lists_the_mismatches(capsys, tmp_path):
    path = write(tmp_path, SIMPLE.format(leader=2, logs2="[m1]"))
    code, state = run_json(capsys, path)
    assert code == 1
    assert state["ok"] is False
    assert state["mismatches"] == ["leader: expected 2, got 1"]


def test_a_failed_check_step_names_the_step(capsys, tmp_path):
    text = "brokers: 2\nsteps:\n  - produce: m1\n  - check: {leo: {1: 5}}\n"
    code, out, _ = run(capsys, "scenario", "run", write(tmp_path, text))
    assert code == 1
    assert "after step 2: leo[1]: expected 5, got 1" in out


def test_set_leader_epochs_selects_the_kip101_variant(capsys):
    code, out, _ = run(capsys, "scenario", "run", "kip101-loss", "--set", "leader_epochs=true")
    assert code == 0, out
    assert "variant leader-epochs" in out
    assert "acknowledged but lost: none" in out

    code, state = run_json(capsys, "kip101-loss", "--set", "leader_epochs=true")
    assert code == 0
    assert state["variant"] == "leader-epochs"
    assert state["logs"] == {"1": ["m1", "m2"], "2": ["m1", "m2"]}
    assert state["lost_acked"] == []


def test_variant_by_name(capsys):
    code, state = run_json(capsys, "kip101-loss", "--variant", "leader-epochs")
    assert code == 0
    assert state["variant"] == "leader-epochs"


# ---- errors: exit 2, one message, no traceback ---------------------------------------------


def expect_error(capsys, *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2, out + err
    assert "Traceback" not in err
    assert err.startswith("kafkalab: error: ")
    assert err.count("\n") == 1, err
    return err


def test_malformed_yaml_names_the_line(capsys, tmp_path):
    text = "name: x\nbrokers: 2\nsteps:\n  - produce: m1\n  - fetch: 1\n - crash: 1\n"
    err = expect_error(capsys, "scenario", "run", write(tmp_path, text))
    assert "malformed YAML at line 6" in err


def test_an_unknown_step_names_the_step_number_and_key_with_a_suggestion(capsys, tmp_path):
    text = "name: x\nbrokers: 2\nsteps:\n  - produce: m1\n  - fetc: 2\n"
    err = expect_error(capsys, "scenario", "run", write(tmp_path, text))
    assert "step 2" in err
    assert "'fetc'" in err
    assert "did you mean 'fetch'" in err


def test_an_unknown_step_key_names_the_step_and_key(capsys, tmp_path):
    text = "brokers: 2\nsteps:\n  - produce: m1\n  - fetch: {follower: 2, respons: lost}\n"
    err = expect_error(capsys, "scenario", "run", write(tmp_path, text))
    assert "step 2 (fetch)" in err
    assert "'respons'" in err and "did you mean 'response'" in err


def test_a_broker_that_does_not_exist(capsys, tmp_path):
    text = "name: x\nbrokers: 2\nsteps:\n  - produce: m1\n  - crash: 5\n"
    err = expect_error(capsys, "scenario", "run", write(tmp_path, text))
    assert "step 2" in err
    assert "broker 5 does not exist" in err
    assert "1..2" in err


def test_restarting_a_running_broker_names_the_step(capsys, tmp_path):
    text = "name: x\nbrokers: 2\nsteps:\n  - produce: m1\n  - restart: 2\n"
    err = expect_error(capsys, "scenario", "run", write(tmp_path, text))
    assert "step 2 (restart)" in err
    assert "already running" in err


def test_an_unknown_set_key_suggests_the_right_one(capsys):
    err = expect_error(capsys, "scenario", "run", "kip101-loss", "--set", "min.insync.replica=2")
    assert "'min.insync.replica'" in err
    assert "did you mean 'min.insync.replicas'" in err


def test_a_set_without_a_value_is_an_error(capsys):
    err = expect_error(capsys, "scenario", "run", "kip101-loss", "--set", "leader_epochs")
    assert "key=value" in err


def test_min_insync_replicas_above_the_replication_factor_is_accepted(capsys, tmp_path):
    # Kafka accepts it: before 3.7 every acks=all write is refused, since 3.7 it counts as the
    # replication factor (Partition.effectiveMinIsr, KAFKA-15583).
    text = "name: x\nbrokers: 2\nconfig: {min.insync.replicas: 3}\nsteps: [{produce: m1}]\n"
    assert main(["scenario", "run", write(tmp_path, text)]) == 0
    assert main(["scenario", "run", "kip101-loss", "--set", "min.insync.replicas=3"]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err


def test_an_unknown_catalog_name(capsys):
    err = expect_error(capsys, "scenario", "run", "kip101-los")
    assert "'kip101-los'" in err
    assert "did you mean 'kip101-loss'" in err


def test_a_missing_scenario_file(capsys, tmp_path):
    err = expect_error(capsys, "scenario", "run", str(tmp_path / "nope.yaml"))
    assert "nope.yaml" in err


def test_an_unknown_variant_lists_the_variants(capsys):
    err = expect_error(capsys, "scenario", "run", "kip101-loss", "--variant", "nope")
    assert "leader-epochs" in err


def test_a_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["scenario", "frobnicate"])
    assert exit_info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


# ---- the installed entry point -------------------------------------------------------------


def test_the_installed_command_runs_a_scenario_as_json():
    assert KAFKALAB.exists(), f"{KAFKALAB} is not installed"
    done = subprocess.run(
        [str(KAFKALAB), "scenario", "run", "kip101-loss", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout)
    assert state["lost_acked"] == ["m2"]
    assert state["logs"] == {"1": ["m1"], "2": ["m1"]}


def test_the_installed_command_reports_a_malformed_file_without_a_traceback(tmp_path):
    path = write(tmp_path, "steps: [\n")
    done = subprocess.run(
        [str(KAFKALAB), "scenario", "run", path], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "malformed YAML" in done.stderr
    assert "Traceback" not in done.stderr


# ---- kafkalab simulate and --trace ---------------------------------------------------------


def test_simulate_prints_a_summary_and_replays_deterministically(capsys) -> None:
    args = ["simulate", "--seed", "3", "--duration-ms", "5000", "--settle-ms", "2000", "--json"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert first["seed"] == 3 and first["brokers"] == 3 and first["safe"] is True
    assert first["produced"] > 0 and first["faults"] == len(first["schedule"])


def test_simulate_flags_an_unsafe_run_with_its_replay(capsys) -> None:
    args = [
        "simulate",
        "--seed",
        "7",
        "--duration-ms",
        "40000",
        "--settle-ms",
        "40000",
        "--set",
        "preset=0.10",
        "--set",
        "acks=1",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "UNSAFE: replay: " in out and "'preset': '0.10'" in out


def test_simulate_rejects_bad_settings_with_exit_2(capsys) -> None:
    assert main(["simulate", "--set", "acks=2"]) == 2
    assert "acks=2 is not allowed" in capsys.readouterr().err
    assert main(["simulate", "--duration-ms", "0"]) == 2
    assert "--duration-ms 0" in capsys.readouterr().err


def test_trace_is_written_whole_as_json_lines(tmp_path, capsys) -> None:
    path = tmp_path / "kip101.jsonl"
    assert main(["scenario", "run", "kip101-loss", "--trace", str(path)]) == 0
    lines = path.read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert any(e["kind"] == "truncate" and e["reason"] == "offset_out_of_range" for e in events)
    assert list(tmp_path.iterdir()) == [path], "no temporary file is left behind"


def test_trace_into_a_missing_folder_is_a_clear_error(tmp_path, capsys) -> None:
    missing = tmp_path / "nope" / "t.jsonl"
    assert main(["scenario", "run", "kip101-loss", "--trace", str(missing)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not missing.parent.exists()
