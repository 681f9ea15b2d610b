"""The course as two bundles: what learners get, and what instructors keep.

``kafkalab exercises build`` writes both into ``dist/`` (or ``--out DIR``), each as a folder and
a zip:

- ``kafkalab-student``: the lessons, the student exercise notebooks, the package, the datasets
  and the docs, with a learner's README and Makefile. No solution, no assignment source, no
  hidden test, and the builder checks it: it reads every hidden test and solution cell from
  ``exercises/source`` (Otter Assign's markers) and refuses, naming the file, when a file of the
  bundle holds one.
- ``kafkalab-instructor``: the whole course, solutions and sources included, with each
  assignment's autograder zip in ``autograders/``.

A zip holds the same bytes for the same files (sorted entries, a fixed date, fixed permissions).
Both bundles are made in memory and checked before anything is written; then each folder is
built next to its target and renamed into place, so no one ever finds half a bundle.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from kafkalab.atomic import write_atomically
from kafkalab.errors import ConfigError
from kafkalab.grading.assignments import autograder_zip, repo_root, source_notebooks

__all__ = [
    "DEFAULT_OUT",
    "INSTRUCTOR",
    "STUDENT",
    "Secret",
    "build_bundles",
    "find_leaks",
    "out_folder",
    "secrets",
]

STUDENT = "kafkalab-student"
INSTRUCTOR = "kafkalab-instructor"
DEFAULT_OUT = "dist"

_COPIED_FILES = ("pyproject.toml", "environment.yml")
_STUDENT_FOLDERS = ("kafkalab", "notebooks", "datasets", "docs")
_INSTRUCTOR_FOLDERS = (*_STUDENT_FOLDERS, "exercises", "solutions", "tests", "tools", "benchmarks")
_STUDENT_TEMPLATE = "docs/student-README.md"
# Never copied: caches and Spark's scratch files; the large campaign is built by `make datasets`.
_JUNK = frozenset({"__pycache__", "spark-warehouse", "metastore_db", "derby.log"})
_NOT_SHIPPED = ("datasets/large",)
# make targets that need what only the course repository holds, and what that is.
_REPOSITORY_TARGETS = {
    "test": "tests",
    "test-quick": "tests",
    "test-hostile": "tests",
    "bench": "benchmarks",
    "notebooks": "notebook runner (tools/)",
    "exercises": "exercise sources",
    "grade": "hidden tests",
}
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip holds: no build time in the bytes
_INSTRUCTOR_NOTE = """\
## This bundle is for instructors

It holds the whole course with what learners must not see: the worked solutions
(`solutions/`), the assignment sources with their hidden tests (`exercises/source/`) and each
assignment's autograder zip (`autograders/NN-topic-autograder.zip`, for otter-grader or
Gradescope). Hand learners the student bundle, `kafkalab-student.zip`, instead. How to grade a
folder of hand-ins: the section on graded exercises below, and
[`exercises/README.md`](exercises/README.md#for-instructors) ("For instructors").
"""


def build_bundles(out: str | Path | None = None, *, root: Path | None = None) -> list[Path]:
    """Write the student and the instructor bundle into ``out`` (default ``dist/`` in the course
    folder), each as a folder and a zip, and return the four paths. Nothing is written when a
    file of the student bundle would hold a hidden test or a solution: :class:`ConfigError`
    names it. Run after ``exercises build``, which regenerates the notebooks they copy."""
    root = root or repo_root()
    folder = out_folder(out, root=root)
    student = _student_files(root)
    leaks = find_leaks(student, secrets(root))
    if leaks:
        more = f" (and {len(leaks) - 3} more)" if len(leaks) > 3 else ""
        raise ConfigError(
            "refusing to write the student bundle, which learners would read: "
            + "; ".join(leaks[:3])
            + more
        )
    instructor = _instructor_files(root)
    written: list[Path] = []
    for name, files in ((STUDENT, student), (INSTRUCTOR, instructor)):
        written += _write_bundle(files, folder / name)
    return written


def out_folder(out: str | Path | None = None, *, root: Path | None = None) -> Path:
    """The folder the bundles go into, created if needed: ``out``, or ``dist/`` in the course
    folder. Raises :class:`ConfigError` for a file, or for a folder the bundles copy."""
    root = (root or repo_root()).resolve()
    folder = root / DEFAULT_OUT if out is None else Path(out).resolve()
    shown = str(out if out is not None else folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out {shown!r} is a file: give the folder the bundles go into")
    for name in _INSTRUCTOR_FOLDERS:
        if folder == root / name or (root / name) in folder.parents:
            raise ConfigError(
                f"--out {shown!r} is inside {name}/, which the bundles copy: choose another "
                f"folder, such as {DEFAULT_OUT}/"
            )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"--out {shown!r}: cannot create the folder ({err.strerror})") from None
    return folder


# ---- what each bundle holds ------------------------------------------------------------------


def _student_files(root: Path) -> dict[str, bytes]:
    files = _folders(root, _STUDENT_FOLDERS)
    files.pop(_STUDENT_TEMPLATE, None)  # it becomes README.md
    files.update({name: _read(root, name) for name in _COPIED_FILES})
    files["README.md"] = _student_readme(root).encode()
    files["Makefile"] = _student_makefile(_read(root, "Makefile").decode()).encode()
    for notebook in sorted((root / "exercises").glob("*.ipynb")):
        files[f"exercises/{notebook.name}"] = notebook.read_bytes()
    exercises_readme = _read(root, "exercises/README.md").decode()
    files["exercises/README.md"] = _student_exercises_readme(exercises_readme).encode()
    return files


def _instructor_files(root: Path) -> dict[str, bytes]:
    files = _folders(root, _INSTRUCTOR_FOLDERS)
    files.update({name: _read(root, name) for name in (*_COPIED_FILES, "Makefile")})
    title, _, rest = _read(root, "README.md").decode().partition("\n")
    files["README.md"] = f"{title}\n\n{_INSTRUCTOR_NOTE}{rest}".encode()
    files.update(_autograders(root))
    return files


def _folders(root: Path, folders: Iterable[str]) -> dict[str, bytes]:
    """Every file under ``folders`` of the course, by its path from ``root``, but junk."""
    files: dict[str, bytes] = {}
    tracked = _tracked(root)
    for folder in folders:
        if not (root / folder).is_dir():
            raise ConfigError(f"{root / folder} does not exist: the bundles copy {folder}/")
        for dirpath, dirnames, filenames in os.walk(root / folder):
            here = Path(dirpath).relative_to(root).as_posix()
            dirnames[:] = [d for d in dirnames if not _skipped(f"{here}/{d}")]
            for name in filenames:
                path = f"{here}/{name}"
                if not _skipped(path) and (tracked is None or path in tracked):
                    files[path] = (Path(dirpath) / name).read_bytes()
    return files


def _tracked(root: Path) -> set[str] | None:
    """The files git tracks in ``root`` (a scratch file left in the package is not shipped), or
    None outside a git checkout."""
    if not (root / ".git").exists() or shutil.which("git") is None:
        return None
    done = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=False
    )
    if done.returncode != 0:
        return None
    return set(done.stdout.decode("utf-8", "replace").split("\0")) - {""}


def _skipped(path: str) -> bool:
    if any(path == p or path.startswith(f"{p}/") for p in _NOT_SHIPPED):
        return True
    return any(
        part.startswith(".") or part in _JUNK or part.endswith((".pyc", ".egg-info"))
        for part in path.split("/")
    )


def _read(root: Path, name: str) -> bytes:
    try:
        return (root / name).read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{root / name} does not exist: the bundles need it") from None


def _autograders(root: Path) -> dict[str, bytes]:
    """Each assignment's autograder zip (hidden tests included), made deterministic."""
    zips: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, source in source_notebooks(root).items():
            (Path(tmp) / name).mkdir()
            made = autograder_zip(source, Path(tmp) / name)
            with zipfile.ZipFile(made) as zf:
                entries = {i.filename: zf.read(i) for i in zf.infolist() if not i.is_dir()}
            zips[f"autograders/{made.name}"] = _zip_bytes(entries)
    return zips


# ---- the learner's README and Makefile -------------------------------------------------------

_INCLUDE = re.compile(r"^<!-- README\.md: (#+ .+?) -->$", re.M)
_COMMENT = re.compile(r"<!--.*?-->\n?", re.S)


def _student_readme(root: Path) -> str:
    """docs/student-README.md with each ``<!-- README.md: HEADING -->`` replaced by that section
    of the course's README.md, and its other comments left out."""
    readme = _read(root, "README.md").decode()
    template = _read(root, _STUDENT_TEMPLATE).decode()
    included = _INCLUDE.sub(lambda m: _section(readme, m.group(1), "README.md"), template)
    return _COMMENT.sub("", included)


def _section(markdown: str, heading: str, where: str) -> str:
    """The lines of ``markdown`` from ``heading`` to the next heading."""
    lines = markdown.splitlines()
    start, end = _span(lines, heading, where, nested=False)
    return "\n".join(lines[start:end]).rstrip("\n")


def _student_exercises_readme(markdown: str) -> str:
    """exercises/README.md without its "For instructors" section and without the sentences
    that point to the worked solutions."""
    lines = markdown.splitlines()
    start, end = _span(lines, "## For instructors", "exercises/README.md", nested=True)
    kept = "\n".join(lines[:start] + lines[end:]).rstrip("\n") + "\n"
    paragraphs = (_without_sentences(p, "solution") for p in kept.split("\n\n"))
    return "\n\n".join(p for p in paragraphs if p)


def _span(lines: list[str], heading: str, where: str, *, nested: bool) -> tuple[int, int]:
    """Where the section under ``heading`` starts and ends; with ``nested``, its subsections
    belong to it. Headings inside code fences do not count."""
    if heading not in lines:
        raise ConfigError(f"{where} has no section {heading!r}: the bundles need it")
    start = lines.index(heading)
    level = len(heading) - len(heading.lstrip("#"))
    fenced = False
    for index in range(start + 1, len(lines)):
        line = lines[index]
        fenced ^= line.startswith("```")
        depth = len(line) - len(line.lstrip("#"))
        if not fenced and depth and (not nested or depth <= level):
            return start, index
    return start, len(lines)


def _without_sentences(paragraph: str, word: str) -> str:
    """A prose paragraph without its sentences that mention ``word``; line breaks stay."""
    if not paragraph[:1].isalpha() or word not in paragraph.lower():
        return paragraph  # a table, a list or code: left as it is
    parts = re.split(r"(?<=[.!?])(\s+)", paragraph)
    kept = "" if word in parts[0].lower() else parts[0]
    for gap, sentence in zip(parts[1::2], parts[2::2], strict=True):
        if word not in sentence.lower():
            kept += (gap if kept else "") + sentence
    return kept


def _student_makefile(makefile: str) -> str:
    """The course's Makefile, where each target that needs what only the repository holds
    (tests, solutions, exercise sources) says so, and ``make help`` leaves it out."""
    mention = re.compile(rf'^(#\s+|\t@echo ")make ({"|".join(_REPOSITORY_TARGETS)})\b')
    lines: list[str] = []
    in_recipe = False
    for line in makefile.splitlines():
        if in_recipe and line.startswith("\t"):
            continue
        rule = re.match(r"([\w-]+):(?!=)", line)
        in_recipe = rule is not None and rule.group(1) in _REPOSITORY_TARGETS
        if rule and in_recipe:
            name = rule.group(1)
            why = f"make {name} is for the course repository: this bundle has no "
            lines += [f"{name}:", f'\t@echo "{why}{_REPOSITORY_TARGETS[name]}"; exit 2']
        elif not mention.match(line):
            lines.append(line)
    return "\n".join(lines) + "\n"


# ---- what learners must not see --------------------------------------------------------------


@dataclass(frozen=True)
class Secret:
    """A hidden test or a solution cell of an assignment, as the lines a copy of it would hold:
    stripped, without blank lines, Otter's solution markers, prompts or ``# SOLUTION``
    comments. A test has two ``forms``: as written, and as Otter rewrites it into a test file."""

    what: str
    forms: tuple[tuple[str, ...], ...]


def secrets(root: Path | None = None) -> list[Secret]:
    """Every hidden test and every solution cell of the assignments' source notebooks."""
    found: list[Secret] = []
    for name, source in source_notebooks(root).items():
        cells = json.loads(source.read_text(encoding="utf-8"))["cells"]
        found += _secrets_in(name, [(c["cell_type"], _joined(c["source"])) for c in cells])
    return found


def _joined(source: str | list[str]) -> str:
    return source if isinstance(source, str) else "".join(source)


_BLOCK = re.compile(r"# (?P<edge>BEGIN|END) (?P<kind>SOLUTION|TESTS)\b")
_TEST_CONFIG = re.compile(r'# BEGIN TEST CONFIG\n(.*?)\n"""\s*# END TEST CONFIG', re.S)


def _secrets_in(name: str, cells: list[tuple[str, str]]) -> list[Secret]:
    found: list[Secret] = []
    block = None
    for index, (cell_type, text) in enumerate(cells):
        edge = _BLOCK.match(text.strip()) if cell_type == "raw" else None
        if edge:
            block = edge["kind"] if edge["edge"] == "BEGIN" else None
        elif block == "SOLUTION" and (cell_type != "code" or "SOLUTION" in text):
            # a code cell without Otter's markers goes to learners unchanged: no secret there
            what = f"a solution of {name} (cell {index})"
            found.append(Secret(what, (tuple(_normal_lines(text)),)))
        elif block == "TESTS" and (config := _TEST_CONFIG.search(text)):
            if (yaml.safe_load(config.group(1)) or {}).get("hidden"):
                found += _hidden_tests(name, text[config.end() :])
    return found


def _hidden_tests(name: str, code: str) -> list[Secret]:
    """One secret per test function of a hidden test cell (the whole cell if it has none)."""
    try:
        tests = [n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef)]
    except SyntaxError:
        tests = []
    if not tests:
        return [Secret(f"a hidden test of {name}", (tuple(_normal_lines(code)),))]
    return [
        Secret(
            f"a hidden test of {name} ({test.name})",
            (
                tuple(_normal_lines(ast.get_source_segment(code, test) or "")),
                tuple(_normal_lines(ast.unparse(test))),
            ),
        )
        for test in tests
    ]


# A secret's forms by their first line, each with what it is.
_Index = dict[str, list[tuple[tuple[str, ...], str]]]
_MARKER = re.compile(r'^(?:"""\s*)?#\s*(?:BEGIN|END) (?:SOLUTION|PROMPT)\b')
_SOLUTION_COMMENT = re.compile(r"\s*#\s*SOLUTION(?: NO PROMPT)?$")
# Otter's source format, and a hidden test in an autograder's test file: no learner file has them.
_OTTER_SOURCE = re.compile(
    r'^(?:"""\s*)?#\s*(?:(?:BEGIN|END) (?:SOLUTION|TESTS|TEST CONFIG|QUESTION|PROMPT)'
    r"|ASSIGNMENT CONFIG)\b|^@test_case\(.*\bhidden=True"
)


def _normal_lines(text: str) -> list[str]:
    lines: list[str] = []
    in_prompt = False
    for raw in text.splitlines():
        line = raw.strip()
        if _MARKER.match(line):
            in_prompt = "BEGIN PROMPT" in line
            continue
        line = _SOLUTION_COMMENT.sub("", line)
        if line and not in_prompt:
            lines.append(line)
    return lines


def find_leaks(files: Mapping[str, bytes], secrets: Iterable[Secret]) -> list[str]:
    """One line for each file of ``files`` (path -> content) that holds one of ``secrets``, line
    for line, or Otter's source markers, such as ``"docs/x.md holds a solution of 03-hw-leo
    (cell 5)"``. A notebook or JSON file is read string by string, a zip member by member."""
    by_first_line: _Index = defaultdict(list)
    for secret in secrets:
        for form in secret.forms:
            if form:
                by_first_line[form[0]].append((form, secret.what))
    leaks = []
    for path in sorted(files):
        for where, text in _texts(path, files[path]):
            leaks += [f"{where} holds {what}" for what in _leaks_in(text, by_first_line)]
    return leaks


def _texts(path: str, data: bytes) -> Iterator[tuple[str, str]]:
    if path.endswith(".zip"):
        with contextlib.suppress(zipfile.BadZipFile), zipfile.ZipFile(io.BytesIO(data)) as zf:
            members = {i.filename: zf.read(i) for i in zf.infolist() if not i.is_dir()}
            for name in sorted(members):
                yield from _texts(f"{path}:{name}", members[name])
            return
    text = data.decode("utf-8", errors="replace")
    if path.endswith((".ipynb", ".json")):
        with contextlib.suppress(ValueError):
            text = "\n".join(_strings(json.loads(text)))
    yield path, text


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | dict):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _strings(item)


def _leaks_in(text: str, by_first_line: _Index) -> list[str]:
    found = [
        f"Otter's source format ({line[:60]!r})"
        for line in (raw.strip() for raw in text.splitlines())
        if _OTTER_SOURCE.match(line)
    ][:1]
    lines = _normal_lines(text)
    for index, line in enumerate(lines):
        for form, what in by_first_line.get(line, ()):
            if tuple(lines[index : index + len(form)]) == form and what not in found:
                found.append(what)
    return found


# ---- writing ---------------------------------------------------------------------------------


def _write_bundle(files: Mapping[str, bytes], target: Path) -> list[Path]:
    """``target`` as a folder and as ``target.zip``, each replaced whole."""
    zipped = _zip_bytes(files, top=target.name)
    _replace_folder(files, target)
    archive = target.with_name(f"{target.name}.zip")
    write_atomically(archive, zipped)
    archive.chmod(0o644)  # a temporary file starts private; a bundle is for handing out
    return [target, archive]


def _replace_folder(files: Mapping[str, bytes], target: Path) -> None:
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    old = tmp.with_name(f"{tmp.name}.old")
    try:
        tmp.chmod(0o755)
        for path, data in files.items():
            (tmp / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp / path).write_bytes(data)
        if target.exists():
            os.replace(target, old)  # a folder cannot replace a folder in one step
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not target.exists():
            os.replace(old, target)  # the previous bundle, whole, rather than none
        raise
    shutil.rmtree(old, ignore_errors=True)


def _zip_bytes(files: Mapping[str, bytes], top: str = "") -> bytes:
    """A zip of ``files`` under the folder ``top``: sorted, dated 1980-01-01, mode 644."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for path in sorted(files):
            info = zipfile.ZipInfo(f"{top}/{path}" if top else path, date_time=_ZIP_DATE)
            info.create_system = 3  # Unix, so that unzip reads the mode below
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[path])
    return buffer.getvalue()
