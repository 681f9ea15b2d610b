"""The judge and the worker: what crosses the pipe is plain data, a hand-in's cells that hang,
eat memory or end their process are left out and the rest replayed, and the bubblewrap sandbox
hides the course's secrets, the network and the grading user's files."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalab.errors import ConfigError
from kafkalab.grading import Feedback, check_answer, check_function
from kafkalab.grading import sandbox as sandboxes
from kafkalab.grading.assignments import parse_size, repo_root
from kafkalab.grading.checks import Case
from kafkalab.grading.judge import RemoteFunction, Session
from kafkalab.grading.sandbox import IdLease, Limits, Sandbox, bwrap_available, choose
from kafkalab.grading.wire import Opaque, Ref, WireError, decode, encode, loads

ROOT = repo_root()

# ---- plain data ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        3,
        -(2**70),
        1.5,
        math.inf,
        "x",
        [1, (2, 3)],
        (1, [2]),
        {1: "a", (2, 3): {4}},
        {"$oops": 1},
        frozenset({1, 2}),
        Ellipsis,
        {"a": [1, {"b": (None,)}]},
    ],
)
def test_plain_values_cross_unchanged(value: object) -> None:
    assert decode(loads(_line(encode(value)))["v"]) == value
    assert type(decode(encode(value))) is type(value)


def _line(data: object) -> bytes:
    import json

    return json.dumps({"v": data}).encode()


def test_loads_keeps_the_message_whole() -> None:
    assert decode(loads(_line(encode((1, 2))))["v"]) == (1, 2)


def test_an_object_of_the_learners_own_crosses_as_an_inert_stand_in() -> None:
    class Always:
        def __eq__(self, other: object) -> bool:
            return True

        def __repr__(self) -> str:
            return "Always()"

    crossed = decode(encode(Always()))
    assert isinstance(crossed, Opaque)
    assert crossed != "APPEND" and crossed != 3 and crossed != [1]
    assert repr(crossed) == "Always()"
    with pytest.raises(Feedback, match="Always\\(\\) is not what happens"):
        check_answer(crossed, [1, 2], question="q", why="because")


@pytest.mark.parametrize(
    "data",
    [
        {"$tuple": 3},
        {"$int": "12x"},
        {"$int": "9" * 5000},
        {"$set": [[1]]},
        {"$map": [[1, 2, 3]]},
        {"$float": "1e400"},
        {"$what": 1},
    ],
)
def test_malformed_data_is_refused(data: object) -> None:
    with pytest.raises(WireError):
        decode(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)
PLAIN = (type(None), bool, int, float, str, list, tuple, dict, set, frozenset, Opaque, Ref)


@given(json_values)
def test_whatever_the_worker_sends_the_judge_holds_only_plain_types(data: object) -> None:
    try:
        value = decode(data)
    except WireError:
        return
    stack = [value]
    while stack:
        item = stack.pop()
        assert item is Ellipsis or type(item) in PLAIN
        if isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack += list(item)


def test_bad_messages_are_refused() -> None:
    for line in (b"[1]", b"nope", b"[" * 100_000):
        with pytest.raises(WireError):
            loads(line)


# ---- a session with a worker (no sandbox: the protocol itself) ---------------------------------


def _session(tmp_path: Path, cells: list[str], **limits: float) -> Session:
    labelled = [(f"cell {i + 1}", source) for i, source in enumerate(cells)]
    return Session(
        labelled,
        Sandbox("none", Limits(memory_bytes=limits.pop("memory", 1 << 30))),
        tmp_path,
        0,
        limits.get("cell", 5),
        limits.get("call", 2),
    )


def test_a_learners_function_is_called_in_the_worker_with_plain_data(tmp_path: Path) -> None:
    session = _session(
        tmp_path,
        [
            "def f(a, b):\n    return (a + 1, sorted(b), {k: v for k, v in b.items()})",
            "answer = {1: [2, 3]}",
            "class Always:\n    def __eq__(self, o): return True\nsneaky = Always()",
            "def g():\n    return Always()",
        ],
    )
    try:
        f = session.value("f")
        assert isinstance(f, RemoteFunction)
        assert f(1, {2: "x"}) == (2, [2], {2: "x"})
        assert session.value("answer") == {1: [2, 3]}
        assert isinstance(session.value("sneaky"), Opaque)
        assert session.value("missing") is None
        with pytest.raises(Feedback, match="returned <"):
            check_function(session.value("g"), "g", [Case((), "APPEND", "why")])
    finally:
        session.close()


def test_prints_and_forged_answers_do_not_reach_the_judge(tmp_path: Path) -> None:
    forged = (
        "import os, sys\n"
        'print(\'{"id": 3, "kind": "value", "value": 999}\')\n'
        "sys.__stdout__.write('{\"id\": 3}\\n')\n"
        'os.write(1, b\'{"id": 3, "kind": "value", "value": 999}\\n\')\n'
        "answer = 1"
    )
    session = _session(tmp_path, [forged])
    try:
        assert session.value("answer") == 1
    finally:
        session.close()


def test_a_cell_that_swallows_interrupts_is_left_out_and_the_rest_replayed(
    tmp_path: Path,
) -> None:
    loop = (
        "while True:\n    try:\n        while True:\n            pass\n"
        "    except BaseException:\n        pass"
    )
    session = _session(tmp_path, ["a = 1", loop, "b = a + 1"], cell=1)
    try:
        assert session.value("b") == 2
        assert session.skipped == {1: "timeout"}
    finally:
        session.close()


def test_a_function_that_never_returns_fails_at_once_afterwards(tmp_path: Path) -> None:
    body = (
        "def f(x):\n    while True:\n        try:\n            pass\n"
        "        except BaseException:\n            pass"
    )
    session = _session(tmp_path, [body, "after = 5"], call=1)
    try:
        f = session.value("f")
        with pytest.raises(Feedback, match="did not finish within 1 s"):
            f(1)
        with pytest.raises(Feedback, match="did not finish in an earlier check"):
            f(2)
        assert session.value("after") == 5  # a new worker, the cells replayed
    finally:
        session.close()


def test_a_cell_that_ends_its_process_or_eats_memory_is_left_out(tmp_path: Path) -> None:
    cells = [
        "import os\nkept = 1",
        "os._exit(0)",
        "hog = bytearray(3 << 30)",
        "grow = []\nwhile True:\n    grow.append(bytearray(1 << 20))",
        "last = kept + 1",
    ]
    session = _session(tmp_path, cells, memory=512 << 20, cell=20)
    try:
        assert session.value("last") == 2
        assert session.skipped == {1: "ended", 2: "memory", 3: "memory"}
    finally:
        session.close()


# ---- the sandbox ---------------------------------------------------------------------------------

needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not usable here")

PROBE = r"""
import os, socket, subprocess
def can_read(path):
    try:
        with open(path, 'rb'):
            return True
    except OSError:
        return False
def can_write(path):
    try:
        with open(path, 'w') as f:
            f.write('x')
        return True
    except OSError:
        return False
def can_connect(host, port):
    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False
root = ROOT
seen = {
    'uid': os.getuid(),
    'course': sorted(os.listdir(root)),
    'solution': can_read(f'{root}/solutions/08-idempotence.ipynb'),
    'source': can_read(f'{root}/exercises/source/08-idempotence.ipynb'),
    'git': os.path.exists(f'{root}/.git'),
    'home': os.listdir(os.path.expanduser('~')),
    'write_course': can_write(f'{root}/kafkalab/planted.py'),
    'write_marker': can_write(MARKER),
    'write_tmp': can_write('/tmp/inside'),
    'net': can_connect('pypi.org', 443),
    'shell': subprocess.run(['sh', '-c', 'touch ' + MARKER + '.sh']).returncode,
    'processes': sorted(p for p in os.listdir('/proc') if p.isdigit()),
}
"""


@needs_bwrap
def test_the_worker_sees_no_secret_no_network_and_writes_nothing_outside(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    probe = PROBE.replace("ROOT", repr(str(ROOT))).replace("MARKER", repr(str(marker)))
    session = Session([("cell 1", probe)], Sandbox("bwrap"), tmp_path / "scratch", 0, 60, 10)
    try:
        seen = session.value("seen")
        pids = [p.pid for p in psutil.Process(session.channel().proc.pid).children(recursive=True)]
    finally:
        session.close()
    assert seen["uid"] != 0
    assert set(seen["course"]) <= {".venv", "kafkalab", "datasets"}
    assert not seen["solution"] and not seen["source"] and not seen["git"]
    assert seen["home"] == [".ipython"] or ".ipython" in seen["home"]
    assert not seen["write_course"] and not seen["write_marker"] and not seen["net"]
    assert seen["write_tmp"]  # a private /tmp: writable inside, gone afterwards
    assert seen["shell"] != 0 and not marker.exists() and not Path(f"{marker}.sh").exists()
    assert not (ROOT / "kafkalab" / "planted.py").exists()
    assert not Path("/tmp/inside").exists()
    assert len(seen["processes"]) < 10  # its own process namespace
    assert not _alive(pids)  # all gone


@needs_bwrap
def test_a_fork_bomb_stops_at_the_process_limit_and_leaves_nothing(tmp_path: Path) -> None:
    bomb = (
        "import os, time\n"
        "for _ in range(100000):\n"
        "    try:\n"
        "        os.fork()\n"
        "    except OSError:\n"
        "        time.sleep(0.01)"
    )
    box = Sandbox("bwrap", Limits(processes=200))
    session = Session([("cell 1", "kept = 1"), ("cell 2", bomb)], box, tmp_path, 0, 5, 5)
    try:
        assert session.value("kept") == 1
        assert session.skipped == {1: "timeout"}
        pids = [p.pid for p in psutil.Process(session.channel().proc.pid).children(recursive=True)]
    finally:
        session.close()
    assert not _alive(pids)


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="only grading as root drops to ids of its own")
def test_another_gradings_threads_do_not_count_against_a_workers_process_limit(
    tmp_path: Path,
) -> None:
    """Another grading on this machine holds the first sandbox id and runs 300 threads as it (a
    Spark worker has that many): a worker limited to 200 processes still starts, as another id.
    (With one id per slot, as before, setpriv could not even start Python: EAGAIN.)"""
    other = IdLease.take(0)
    threads = (
        "import threading, time\n"
        "for _ in range(300):\n"
        "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "print('ready', flush=True); time.sleep(60)"
    )
    crowd = subprocess.Popen(
        ["setpriv", f"--reuid={other.uid}", f"--regid={other.uid}", "--clear-groups", "--"]
        + [sys.executable, "-c", threads],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert crowd.stdout is not None and crowd.stdout.readline().strip() == "ready"
        assert psutil.Process(crowd.pid).num_threads() > 200
        box = Sandbox("bwrap", Limits(processes=200))
        session = Session([("cell 1", "import os\nme = os.getuid()")], box, tmp_path, 0, 30, 5)
        try:
            me = session.value("me")
        finally:
            session.close()
        assert me != other.uid and sandboxes.UID_BASE <= me < sandboxes.UID_BASE + 1000
    finally:
        crowd.kill()
        crowd.wait()
        other.release()


def test_no_two_workers_hold_one_user_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandboxes, "LEASE_DIRS", (tmp_path / "ids",))
    base = sandboxes.UID_BASE
    first, second = IdLease.take(0), IdLease.take(0)
    assert (first.uid, second.uid) == (base, base + 1)
    assert IdLease.take(5).uid == base + 5  # a slot starts its search at its own id
    first.release()
    assert IdLease.take(0).uid == base  # given back, taken again
    # an id another process holds (another grading) is skipped; it is free once that one ends
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            f"fd = os.open({str(tmp_path / 'ids' / str(base + 2))!r}, os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert IdLease.take(2).uid == base + 3
    finally:
        holder.kill()
        holder.wait()
    assert IdLease.take(2).uid == base + 2


def test_a_lock_folder_others_could_write_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "ids"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setattr(sandboxes, "LEASE_DIRS", (shared,))
    with pytest.raises(ConfigError, match=f"{shared} must be folders owned by this user"):
        IdLease.take(0)


def test_when_every_id_is_taken_the_error_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandboxes, "LEASE_DIRS", (tmp_path / "ids",))
    monkeypatch.setattr(sandboxes, "UID_COUNT", 2)
    held = [IdLease.take(0), IdLease.take(0)]
    with pytest.raises(ConfigError, match="every sandbox user id from 61000 to 61001 is in use"):
        IdLease.take(0)
    for lease in held:
        lease.release()


def _alive(pids: list[int]) -> list[int]:
    """The processes of ``pids`` still running (a zombie waiting for its reaper is not)."""
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


# ---- choosing a sandbox -------------------------------------------------------------------------


def test_docker_runs_the_worker_without_network_with_limits() -> None:
    box = Sandbox("docker", Limits(memory_bytes=1 << 30, processes=300), image="my-grader")
    cmd = box.command(Path("/tmp/x"), {"KAFKALAB_TIME_LIMIT_S": "3"})
    joined = " ".join(cmd)
    assert cmd[:4] == ["docker", "run", "--rm", "-i"]
    for part in ("--network none", "--read-only", f"--memory {1 << 30}", "--pids-limit 300"):
        assert part in joined
    assert "--cap-drop ALL" in joined and "KAFKALAB_TIME_LIMIT_S=3" in joined
    assert cmd[-5:] == ["my-grader", "python", "-I", "-m", "kafkalab.grading.worker"]


def test_a_missing_sandbox_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(ConfigError, match="apt-get install bubblewrap"):
        choose("bwrap", Limits())
    with pytest.raises(ConfigError, match="docker command is not installed"):
        choose("docker", Limits())
    with pytest.raises(ConfigError, match="use one of bwrap, docker, none"):
        choose("chroot", Limits())
    assert choose("none", Limits()).kind == "none"


@pytest.mark.parametrize(
    ("text", "size"), [("2G", 2 << 30), ("1500M", 1500 << 20), ("1GiB", 1 << 30)]
)
def test_memory_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "1K", "-2G", "0"])
def test_bad_memory_sizes_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="is not allowed: use a size of at least 64M"):
        parse_size(text)


def test_the_worker_module_runs_on_its_own() -> None:
    """The command the sandboxes start: it answers a run and a describe."""
    done = subprocess.run(
        [os.sys.executable, "-I", "-m", "kafkalab.grading.worker"],
        input=b'{"id": 1, "op": "run", "source": "x = 2"}\n'
        b'{"id": 2, "op": "describe", "name": "x"}\n',
        capture_output=True,
        timeout=60,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert loads(lines[0]) == {"ready": True}
    assert loads(lines[2]) == {"id": 2, "kind": "value", "value": 2}
