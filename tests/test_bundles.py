"""The student and instructor bundles (``kafkalab exercises build``): what each holds; that the
student one holds no hidden test or solution, and that the builder refuses one that would; that
a build gives the same bytes every time; and that the student bundle runs on its own."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from kafkalab.cli import main
from kafkalab.errors import ConfigError
from kafkalab.grading import assignments, bundles
from kafkalab.grading.bundles import INSTRUCTOR, STUDENT

ROOT = Path(__file__).resolve().parent.parent
NAMES = list(assignments.source_notebooks(ROOT))
COURSE = ("README.md", "Makefile", "pyproject.toml", "environment.yml", "kafkalab", "notebooks")
COURSE += ("datasets", "docs", "exercises", "solutions", "tests", "tools", "benchmarks")


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both bundles, built once for the module (Otter Assign runs once per assignment)."""
    folder = tmp_path_factory.mktemp("dist")
    bundles.build_bundles(folder)
    return folder


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _source_cell(name: str, needle: str) -> str:
    cells = json.loads((ROOT / "exercises" / "source" / f"{name}.ipynb").read_text())["cells"]
    return next(text for c in cells if needle in (text := "".join(c["source"])))


def _course_copy(tmp_path: Path, planted: str) -> Path:
    """A course folder linking to this checkout's parts, but for ``planted``, a copy to plant a
    file in."""
    root = tmp_path / "course"
    root.mkdir()
    for part in COURSE:
        if part == planted:
            shutil.copytree(ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (root / part).symlink_to(ROOT / part)
    return root


# ---- what the student bundle holds -------------------------------------------------------------


def test_the_student_bundle_holds_what_the_course_needs(out: Path) -> None:
    files = _files(out / STUDENT)
    for needed in ("README.md", "Makefile", "pyproject.toml", "environment.yml"):
        assert needed in files
    for needed in ("kafkalab/__init__.py", "kafkalab/cli.py", "kafkalab/grading/checks.py"):
        assert needed in files
    assert "kafkalab/scenarios/catalog/kip101-loss.yaml" in files  # package data
    lessons = {f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert lessons and lessons <= set(files)
    assert {f"exercises/{name}.ipynb" for name in NAMES} | {"exercises/README.md"} == {
        path for path in files if path.startswith("exercises/")
    }
    assert files["exercises/03-hw-leo.ipynb"] == (ROOT / "exercises/03-hw-leo.ipynb").read_bytes()
    assert {"datasets/README.md", "datasets/schema.json", "datasets/small/_campaign.json"} <= set(
        files
    )
    assert {"docs/glossary.md", "docs/sources.md"} <= set(files)


def test_the_student_bundle_holds_no_solutions_sources_tests_or_tools(out: Path) -> None:
    files = _files(out / STUDENT)
    forbidden = ("solutions/", "exercises/source/", "tests/", "tools/", "benchmarks/", "dist/")
    assert not [path for path in files if path.startswith(forbidden)]
    assert not [path for path in files if path.endswith((".zip", ".pyc"))]
    assert not [p for p in files if any(part.startswith(".") for part in p.split("/"))]
    assert not [path for path in files if "__pycache__" in path or "datasets/large" in path]
    assert "docs/student-README.md" not in files  # it is README.md


def test_no_student_file_holds_a_hidden_test_or_a_solution(out: Path) -> None:
    assert bundles.find_leaks(_files(out / STUDENT), bundles.secrets(ROOT)) == []
    # The same, independently of the builder's reading of the sources: the name of no hidden
    # test of an autograder appears anywhere in the student bundle.
    hidden = set()
    for name in NAMES:
        with zipfile.ZipFile(out / INSTRUCTOR / "autograders" / f"{name}-autograder.zip") as zf:
            for test in (n for n in zf.namelist() if n.startswith("tests/")):
                text = zf.read(test).decode()
                hidden |= set(re.findall(r"hidden=True\)\s*def (\w+)", text))
    assert len(hidden) >= len(NAMES)
    everything = b"\n".join(_files(out / STUDENT).values())
    assert not [name for name in hidden if name.encode() in everything]


def test_every_assignment_has_hidden_tests_and_solutions_to_guard() -> None:
    whats = [secret.what for secret in bundles.secrets(ROOT)]
    for name in NAMES:
        assert any(what.startswith(f"a hidden test of {name} (test_") for what in whats), name
        assert any(what.startswith(f"a solution of {name} (cell ") for what in whats), name


def test_the_student_readmes_are_for_learners(out: Path) -> None:
    readme = (out / STUDENT / "README.md").read_text()
    exercises = (out / STUDENT / "exercises" / "README.md").read_text()
    for text in (readme, exercises):
        assert "solution" not in text.lower()
        assert "<!--" not in text
    assert "make lab" in readme and 'grader.check("...")' in readme
    for lesson in sorted((ROOT / "notebooks").glob("0*.ipynb")):
        assert f"(notebooks/{lesson.name})" in readme, f"the lessons table lists {lesson.name}"
    assert "Running a workshop" not in readme
    assert "For instructors" not in exercises and "otter" not in exercises.lower()
    assert "`01-start-here.ipynb` | start here" in exercises  # the table of exercises stays


@pytest.mark.parametrize("readme", ["README.md", "exercises/README.md"])
def test_the_student_readmes_link_only_what_the_bundle_holds(out: Path, readme: str) -> None:
    path = out / STUDENT / readme
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", path.read_text())
    local = [link for link in links if "://" not in link]
    assert local
    assert not [link for link in local if not (path.parent / link).exists()]


# ---- the instructor bundle -----------------------------------------------------------------------


def test_the_instructor_bundle_holds_solutions_sources_and_autograders(out: Path) -> None:
    files = _files(out / INSTRUCTOR)
    for name in NAMES:
        assert f"solutions/{name}.ipynb" in files
        assert f"exercises/source/{name}.ipynb" in files
        assert f"exercises/{name}.ipynb" in files
        autograder = out / INSTRUCTOR / "autograders" / f"{name}-autograder.zip"
        with zipfile.ZipFile(autograder) as zf:
            assert zf.testzip() is None
            tests = [zf.read(n).decode() for n in zf.namelist() if n.startswith("tests/")]
        assert any("hidden=True" in test for test in tests), f"{name}: hidden tests"
    assert {"tests/test_bundles.py", "tools/execute_notebooks.py", "docs/student-README.md"} <= set(
        files
    )
    assert files["Makefile"] == (ROOT / "Makefile").read_bytes()
    assert files["exercises/README.md"] == (ROOT / "exercises/README.md").read_bytes()
    readme = files["README.md"].decode()
    note = readme.split("## This bundle is for instructors", 1)[1].split("\n## ", 1)[0]
    assert "solutions/" in note and "autograders/" in note and "kafkalab-student.zip" in note
    assert "exercises/README.md#for-instructors" in note
    assert readme.endswith((ROOT / "README.md").read_text().split("\n", 1)[1])


# ---- deterministic and atomic ------------------------------------------------------------------


def test_a_second_build_through_the_command_gives_the_same_bytes(
    out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setattr(assignments, "build", lambda names=None, root=None: [])  # leave the repo
    (tmp_path / STUDENT).mkdir()
    (tmp_path / STUDENT / "stale.txt").write_text("from an older build")
    assert main(["exercises", "build", "--out", str(tmp_path)]) == 0
    for name in (STUDENT, INSTRUCTOR):
        assert (tmp_path / f"{name}.zip").read_bytes() == (out / f"{name}.zip").read_bytes()
        assert _files(tmp_path / name) == _files(out / name)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [STUDENT, f"{STUDENT}.zip", INSTRUCTOR, f"{INSTRUCTOR}.zip"]
    )  # no temporary folder or file left behind, and the stale file is gone
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        f"wrote {tmp_path / STUDENT}/",
        f"wrote {tmp_path / STUDENT}.zip",
        f"wrote {tmp_path / INSTRUCTOR}/",
        f"wrote {tmp_path / INSTRUCTOR}.zip",
    ]


def test_a_zip_is_sorted_dated_1980_with_fixed_permissions(out: Path) -> None:
    with zipfile.ZipFile(out / f"{STUDENT}.zip") as zf:
        infos = zf.infolist()
    names = [info.filename for info in infos]
    assert names == sorted(names) and all(n.startswith(f"{STUDENT}/") for n in names)
    assert {info.date_time for info in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {info.external_attr >> 16 for info in infos} == {0o100644}
    assert set(names) == {f"{STUDENT}/{path}" for path in _files(out / STUDENT)}


# ---- the builder refuses a leak -----------------------------------------------------------------


def test_a_hidden_test_planted_in_the_docs_is_refused(tmp_path: Path) -> None:
    test = _source_cell("03-hw-leo", "hidden: true")
    function = re.search(r"def (test_\w+)", test).group(1)
    root = _course_copy(tmp_path, "docs")
    (root / "docs" / "notes.md").write_text(f"# Notes\n\n```python\n{test}\n```\n")
    with pytest.raises(ConfigError) as err:
        bundles.build_bundles(tmp_path / "dist", root=root)
    assert f"docs/notes.md holds a hidden test of 03-hw-leo ({function})" in str(err.value)
    assert list((tmp_path / "dist").iterdir()) == []  # nothing written, not even half


def test_a_solution_planted_in_a_lesson_notebook_is_refused(tmp_path: Path) -> None:
    solution = _source_cell("08-idempotence", "# BEGIN SOLUTION\n")
    without_markers = "\n".join(
        line
        for line in solution.splitlines()
        if "# BEGIN SOLUTION" not in line and "# END SOLUTION" not in line
    )
    root = _course_copy(tmp_path, "notebooks")
    example = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(without_markers)])
    nbformat.write(example, root / "notebooks" / "worked-example.ipynb")
    with pytest.raises(ConfigError, match=r"notebooks/worked-example.ipynb holds a solution of "):
        bundles.build_bundles(tmp_path / "dist", root=root)


def test_an_autograder_zip_is_read_member_by_member(out: Path) -> None:
    autograder = (out / INSTRUCTOR / "autograders" / "03-hw-leo-autograder.zip").read_bytes()
    leaks = bundles.find_leaks({"docs/03.zip": autograder}, bundles.secrets(ROOT))
    function = re.search(r"def (test_\w+)", _source_cell("03-hw-leo", "hidden: true")).group(1)
    # as Otter rewrites the test into its test file, not as the source has it
    assert any(
        leak.startswith("docs/03.zip:tests/")
        and leak.endswith(f"holds a hidden test of 03-hw-leo ({function})")
        for leak in leaks
    ), leaks


def test_otter_source_markers_alone_are_a_leak() -> None:
    source = (ROOT / "exercises" / "source" / "03-hw-leo.ipynb").read_bytes()
    assert bundles.find_leaks({"notebooks/copy.ipynb": source}, [])[0].startswith(
        "notebooks/copy.ipynb holds Otter's source format"
    )


# ---- the command --------------------------------------------------------------------------------


def test_an_out_that_is_a_file_exits_2_before_otter_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    def build(names=None, root=None):
        raise AssertionError("the notebooks were regenerated before --out was checked")

    monkeypatch.setattr(assignments, "build", build)
    a_file = tmp_path / "bundles.zip"
    a_file.write_text("not a folder")
    assert main(["exercises", "build", "--out", str(a_file)]) == 2
    err = capsys.readouterr().err
    assert err == f"kafkalab: error: --out {str(a_file)!r} is a file: give the folder the " + (
        "bundles go into\n"
    )
    assert main(["exercises", "build", "--out", str(ROOT / "solutions" / "dist")]) == 2
    assert "is inside solutions/, which the bundles copy" in capsys.readouterr().err
    assert not (ROOT / "solutions" / "dist").exists()


def test_out_and_no_bundles_together_are_a_usage_error(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["exercises", "build", "--out", "x", "--no-bundles"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


# ---- the student bundle on its own -------------------------------------------------------------


def test_the_student_bundle_runs_its_own_copy_of_kafkalab(out: Path) -> None:
    bundle = out / STUDENT
    env = {**os.environ, "PYTHONPATH": str(bundle)}
    run = [sys.executable, "-c", "import kafkalab; print(kafkalab.__file__)"]
    imported = subprocess.run(run, cwd=bundle, env=env, capture_output=True, text=True, check=True)
    assert Path(imported.stdout.strip()) == bundle / "kafkalab" / "__init__.py"
    scenario = [sys.executable, "-m", "kafkalab.cli", "scenario", "run", "kip101-loss"]
    replayed = subprocess.run(scenario, cwd=bundle, env=env, capture_output=True, text=True)
    assert replayed.returncode == 0, replayed.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_student_makefile_runs_lab_and_explains_test(out: Path) -> None:
    bundle = out / STUDENT

    def make(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["make", *args], cwd=bundle, capture_output=True, text=True)

    lab = make("-n", "lab")
    assert lab.returncode == 0 and "pip install -e" in lab.stdout and "jupyter lab" in lab.stdout
    assert make("-n", "install").returncode == 0
    test = make("test")
    assert test.returncode != 0
    assert "make test is for the course repository: this bundle has no tests" in test.stdout
    listed = make("help").stdout
    assert "make lab" in listed and "make test" not in listed and "make grade" not in listed
