"""Where a hand-in's code runs while it is graded: a worker process the judge starts and talks to
over a pipe, inside a sandbox.

- ``bwrap`` (the default): Debian's ``bubblewrap``. The worker sees the operating system and
  Python read-only, the ``kafkalab`` package and ``datasets/`` read-only, and nothing else of
  the course (no ``solutions/``, no ``exercises/source``, no ``.git``, no tests, no other
  hand-ins, no home folder); its ``/tmp`` is a private, size-capped tmpfs that disappears with
  it. It has no network (a loopback of its own, for Spark), its own process and IPC namespaces,
  and, when grading runs as root, an unprivileged user id of its own (:class:`IdLease`: no other
  worker on the machine runs as it meanwhile, whichever grading started it). It dies with the
  judge.
- ``docker``: the same worker in a container (``--network none``, a read-only root, memory and
  process limits): for machines where bubblewrap cannot run. Build its image first (README).
- ``none``: only the limits below, a new session and a private temporary folder. A hand-in can
  then read and write whatever the grading user can: use it only for trusted notebooks.

Whatever the sandbox, the worker gets resource limits: memory (address space for data), CPU
seconds, open files, processes and file size.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.errors import ConfigError

__all__ = [
    "SANDBOXES",
    "IdLease",
    "Limits",
    "Sandbox",
    "bwrap_available",
    "choose",
]

SANDBOXES = ("bwrap", "docker", "none")
# Not --unshare-all: as root, its user namespace would map only root, and the worker could not
# drop to an unprivileged id.
_NAMESPACES = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts")
DOCKER_IMAGE = "kafkalab-grader"
_HOST_ONLY = ("PATH", "JAVA_HOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
UID_BASE = 61000  # unprivileged ids the worker runs as when grading runs as root
UID_COUNT = 1000  # how many: UID_BASE .. UID_BASE + UID_COUNT - 1
# Where the ids' lock files live: root's own folder (made 0700 on first use), or one in the
# system's temporary folder where /run cannot be written.
LEASE_DIRS = (Path("/run/kafkalab-grader"), Path(tempfile.gettempdir()) / "kafkalab-grader-ids")
INSTALL_BWRAP = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap), or grade with --sandbox docker, or --sandbox none for notebooks you trust"
)


@dataclass(frozen=True)
class Limits:
    """What one worker may use."""

    memory_bytes: int = 2 << 30
    cpu_seconds: int = 600
    open_files: int = 4096
    processes: int = 2048  # threads count: a Spark driver runs several hundred
    file_bytes: int = 1 << 30
    tmp_bytes: int = 1 << 30

    def __post_init__(self) -> None:
        for name in ("memory_bytes", "cpu_seconds", "open_files", "processes", "file_bytes"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name}={getattr(self, name)!r} is not allowed: it must be > 0")


def bwrap_available() -> bool:
    """Whether bubblewrap is installed and can make a sandbox here."""
    path = shutil.which("bwrap")
    if path is None:
        return False
    probe = [path, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"]
    if os.geteuid() != 0:
        probe.insert(1, "--unshare-user")
    try:
        return subprocess.run(probe, capture_output=True, timeout=20, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@dataclass(frozen=True)
class Sandbox:
    """How to start a worker: ``kind`` is one of :data:`SANDBOXES`."""

    kind: str = "bwrap"
    limits: Limits = field(default_factory=Limits)
    image: str = DOCKER_IMAGE

    def __post_init__(self) -> None:
        if self.kind not in SANDBOXES:
            raise ConfigError(
                f"--sandbox {self.kind!r} is not allowed: use one of {', '.join(SANDBOXES)}"
            )

    def command(
        self, scratch: Path, env: Mapping[str, str], *, uid: int | None = None
    ) -> list[str]:
        """The command that starts a worker whose private files live in ``scratch`` (a folder
        the caller removes afterwards); ``uid``: the id a bubblewrap worker runs as when grading
        runs as root, leased for it (:meth:`lease_id`)."""
        worker = [sys.executable, "-I", "-m", "kafkalab.grading.worker"]
        if self.kind == "none":
            return worker
        if self.kind == "docker":
            return self._docker(env)
        return self._bwrap(worker, scratch, uid, env)

    def lease_id(self, slot: int) -> IdLease | None:
        """The user id a new worker runs as, held until the worker has ended: only bubblewrap
        as root drops to an id of its own; otherwise None."""
        if self.kind != "bwrap" or os.geteuid() != 0:
            return None
        return IdLease.take(slot)

    def environment(self, scratch: Path, env: Mapping[str, str]) -> dict[str, str] | None:
        """The worker's environment for ``none`` (the others set their own inside)."""
        if self.kind != "none":
            return None
        home = scratch / "home"
        home.mkdir(parents=True, exist_ok=True)
        return {**_base_env(str(home)), **env}

    def preexec(self) -> Callable[[], None]:
        """Runs in the child before the sandbox starts: the resource limits."""
        limits = self.limits
        nproc = limits.processes + (_own_processes() if os.geteuid() != 0 else 0)

        def apply() -> None:
            for which, value in (
                (resource.RLIMIT_DATA, limits.memory_bytes),
                (resource.RLIMIT_CPU, limits.cpu_seconds),
                (resource.RLIMIT_NOFILE, limits.open_files),
                (resource.RLIMIT_NPROC, nproc),
                (resource.RLIMIT_FSIZE, limits.file_bytes),
                (resource.RLIMIT_CORE, 0),
            ):
                _, hard = resource.getrlimit(which)
                value = value if hard == resource.RLIM_INFINITY else min(value, hard)
                resource.setrlimit(which, (value, value))

        return apply

    # ---- bubblewrap ---------------------------------------------------------------------------

    def _bwrap(
        self, worker: Sequence[str], scratch: Path, uid: int | None, env: Mapping[str, str]
    ) -> list[str]:
        as_root = os.geteuid() == 0
        if as_root and uid is None:
            raise ValueError("a worker started as root needs an id leased for it (lease_id)")
        uid = uid if as_root and uid is not None else os.getuid()
        scratch.mkdir(parents=True, exist_ok=True)
        passwd = scratch / "passwd"
        passwd.write_text(f"root:x:0:0::/root:/bin/sh\nlearner:x:{uid}:{uid}::/tmp:/bin/sh\n")
        cmd = ["bwrap", *_NAMESPACES, "--die-with-parent", "--new-session"]
        if not as_root:  # a user namespace is what lets an ordinary user build the others
            cmd.insert(1, "--unshare-user")
        # The home folder and /tmp are hidden first, so that a Python, a venv or a course that
        # lives under them is mounted on top, not covered.
        cmd += ["--perms", "0755", "--tmpfs", "/root"]
        cmd += ["--perms", "1777", "--size", str(self.limits.tmp_bytes), "--tmpfs", "/tmp"]
        mounts = _system_mounts()
        for path in _course_paths():
            mounts += ["--ro-bind", str(path), str(path)]
        cmd += _parents([mounts[i + 2] for i, a in enumerate(mounts) if a == "--ro-bind"])
        cmd += mounts
        cmd += ["--ro-bind", str(passwd), "/etc/passwd", "--dev", "/dev", "--proc", "/proc"]
        cmd += ["--chdir", "/tmp", "--clearenv"]
        for key, value in {**_base_env("/tmp"), **env}.items():
            cmd += ["--setenv", key, value]
        if as_root:  # drop to an unprivileged id inside, so the process limit counts
            cmd += [
                "setpriv",
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "--no-new-privs",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--",
            ]
        return cmd + list(worker)

    # ---- docker -------------------------------------------------------------------------------

    def _docker(self, env: Mapping[str, str]) -> list[str]:
        limits = self.limits
        cmd = [
            "docker",
            "run",
            "--rm",
            "-i",
            "--network",
            "none",
            "--read-only",
            "--tmpfs",
            f"/tmp:rw,size={limits.tmp_bytes},mode=1777",
            "--memory",
            str(limits.memory_bytes),
            "--memory-swap",
            str(limits.memory_bytes),
            "--pids-limit",
            str(limits.processes),
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--user",
            f"{UID_BASE}:{UID_BASE}",
            "--workdir",
            "/tmp",
        ]
        for key, value in {**_base_env("/tmp"), **env}.items():
            if key not in _HOST_ONLY:  # paths of this machine mean nothing in the image
                cmd += ["--env", f"{key}={value}"]
        return [*cmd, self.image, "python", "-I", "-m", "kafkalab.grading.worker"]


class IdLease:
    """An unprivileged user id that one worker runs as, held (an advisory lock on a file named
    after it) until :meth:`release`, or until the process holding it ends.

    The process limit (RLIMIT_NPROC) counts every process and thread of a user id, whoever
    started them. Two gradings on one machine (two instructors, two test runs) that gave their
    first workers the same id would count each other's processes: a Spark worker's few hundred
    threads in one, or a fork bomb, would stop the other's worker from starting at all; and
    either could signal the other's processes. A leased id is used by one worker at a time."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid, self._fd = uid, fd

    @classmethod
    def take(cls, slot: int = 0) -> IdLease:
        """The first free id from ``UID_BASE + slot`` on (wrapping round the range)."""
        folder = _lease_folder()
        for offset in range(UID_COUNT):
            uid = UID_BASE + (slot + offset) % UID_COUNT
            fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return cls(uid, fd)
        raise ConfigError(
            f"every sandbox user id from {UID_BASE} to {UID_BASE + UID_COUNT - 1} is in use by "
            f"another worker on this machine (lock files in {folder}): wait for a grading to end"
        )

    def release(self) -> None:
        """Give the id back (once its worker and everything it started have ended)."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1


def _lease_folder() -> Path:
    """The first usable folder of :data:`LEASE_DIRS`: made 0700 if missing; it must be a real
    folder owned by this user and writable by it alone (another user's files could otherwise
    hold ids for ever)."""
    refused = []
    for folder in LEASE_DIRS:
        with contextlib.suppress(FileExistsError, FileNotFoundError, PermissionError):
            folder.mkdir(mode=0o700)
        try:
            info = folder.lstat()
        except OSError:
            continue
        if (
            stat.S_ISDIR(info.st_mode)
            and info.st_uid == os.geteuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            and os.access(folder, os.W_OK)
        ):
            return folder
        refused.append(str(folder))
    raise ConfigError(
        "no folder to keep the sandbox ids' locks in: "
        + (
            f"{', '.join(refused)} must be folders owned by this user, writable by it alone"
            if refused
            else f"cannot create {LEASE_DIRS[0]}"
        )
    )


def choose(kind: str | None, limits: Limits, image: str = DOCKER_IMAGE) -> Sandbox:
    """The sandbox to grade in: ``kind`` as asked, or bubblewrap by default; a clear error when
    the one asked for cannot run here."""
    kind = kind or "bwrap"
    sandbox = Sandbox(kind, limits, image)
    if kind == "bwrap" and not bwrap_available():
        raise ConfigError(
            "grading runs hand-ins in a bubblewrap sandbox, which is not usable here: "
            + INSTALL_BWRAP
        )
    if kind == "docker" and shutil.which("docker") is None:
        raise ConfigError("--sandbox docker: the docker command is not installed")
    return sandbox


def _base_env(home: str) -> dict[str, str]:
    from kafkalab.spark.session import find_java_home

    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{home}/.matplotlib",
        "IPYTHONDIR": f"{home}/.ipython",
        "PYTHONDONTWRITEBYTECODE": "1",
        "KAFKALAB_SCRATCH_DIR": f"{home}/spark",
        "KAFKALAB_SPARK_DRIVER_MEMORY": "1g",  # the JVM then stays well within the memory limit
        "HADOOP_USER_NAME": "learner",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    java = find_java_home()
    if java is not None:
        env["JAVA_HOME"] = str(java)
    return env


def _system_mounts() -> list[str]:
    """The operating system, read-only: /usr and /etc, the top-level links into /usr, and the
    Python installation the venv was made from."""
    cmd = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        path = Path(top)
        if path.is_symlink():
            cmd += ["--symlink", os.readlink(path), top]
        elif path.is_dir():
            cmd += ["--ro-bind", top, top]
    for prefix in {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}:
        if not str(prefix).startswith("/usr/"):
            cmd += ["--ro-bind", str(prefix), str(prefix)]
    java = _java_outside_usr()
    if java is not None:
        cmd += ["--ro-bind", str(java), str(java)]
    return cmd


def _parents(paths: Sequence[str]) -> list[str]:
    """Readable folders leading to each bind mount (bubblewrap would make them 0700)."""
    made = {"/", "/usr", "/etc", "/root", "/tmp", "/dev", "/proc"}
    cmd = []
    for path in paths:
        for parent in reversed(Path(path).parents):
            if str(parent) not in made:
                made.add(str(parent))
                cmd += ["--perms", "0755", "--dir", str(parent)]
    return cmd


def _java_outside_usr() -> Path | None:
    from kafkalab.spark.session import find_java_home

    java = find_java_home()
    if java is None or str(java.resolve()).startswith("/usr/"):
        return None
    return java.resolve()


def _course_paths() -> list[Path]:
    """What of the course a worker sees: the package and the shipped datasets, nothing else."""
    import kafkalab

    package = Path(kafkalab.__file__).resolve().parent
    paths = [package]
    datasets = package.parent / "datasets"
    if datasets.is_dir():
        paths.append(datasets)
    return paths


def _own_processes() -> int:
    """Processes and threads this user runs now: the process limit counts them too."""
    try:
        import psutil
    except ImportError:
        return 0
    me = os.getuid()
    count = 0
    for proc in psutil.process_iter(["uids", "num_threads"]):
        uids = proc.info.get("uids")
        if uids is not None and uids.real == me:
            count += proc.info.get("num_threads") or 1
    return count
