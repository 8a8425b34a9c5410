"""What every benchmark driver shares: where the data and the results are, the commit measured,
the time and peak memory of a run, and the command line of a driver.

A driver (``peers.py``, ``speed.py``, ``scale.py``, ``studies.py``, ``serving.py``, ``papers.py``)
names its benchmarks; each benchmark is a module of ``suite/`` or ``reproduce/`` with a ``main()``
reading its own options. ``python benches/DRIVER.py --help`` lists them,
``python benches/DRIVER.py NAME --help`` gives the options of one, and
``python benches/DRIVER.py --smoke`` runs each driver's smallest configuration.

The data folder (the benchmark sets in the layout of ``shared/data``: ``musk1/``, ``musk2/``,
``elephant/``, ``corel/``, ``tst/``) is, first to last: the driver's ``--data``, the environment
variable ``MILSVM_DATA``, ``../shared/data`` beside the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

#: This folder, the repository above it and the folder of the current outputs.
BENCHES = Path(__file__).resolve().parent
REPO = BENCHES.parent
RESULTS = BENCHES / "results"
#: The environment variable naming the data folder (children of a benchmark inherit it).
DATA_ENV = "MILSVM_DATA"


def data_dir() -> Path:
    """The data folder: ``$MILSVM_DATA`` when set, else ``shared/data`` beside the repository."""
    given = os.environ.get(DATA_ENV)
    return Path(given).expanduser().resolve() if given else REPO.parent / "shared" / "data"


def sibling_python(venv: str, env: str) -> str:
    """The Python of a peer's virtual environment: ``$<env>`` when set, else ``<venv>/bin/python``
    beside the repository (peers never share milsvm's environment)."""
    return os.environ.get(env) or str(REPO.parent / venv / "bin" / "python")


def commit() -> str:
    """The repository's commit (short hash, ``+`` when the work tree differs), or ``unknown``."""

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout

    try:
        head = git("rev-parse", "--short", "HEAD").strip()
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+" if dirty.strip() else "")


def peak_rss_mib(children: bool = False) -> float:
    """Peak resident memory of this process (or of its waited-for children), in MiB."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024.0  # Linux reports KiB


@contextlib.contextmanager
def timed():
    """``with timed() as t: ...`` then ``t()`` is the wall-clock seconds of the block."""
    start = time.perf_counter()
    end = []
    yield lambda: (end[0] if end else time.perf_counter()) - start
    end.append(time.perf_counter())


def benchmark_parser(doc) -> argparse.ArgumentParser:
    """The command line of a benchmark module, described by the first paragraph of its `doc`."""
    return argparse.ArgumentParser(description=doc.split("\n\n")[0])


def add_list(parser, flag, kind, default, help=None, **kwargs):
    """An option of one or more values of type `kind` (``nargs="+"``), by default `default` (a
    list, or None)."""
    default = None if default is None else list(default)
    parser.add_argument(flag, type=kind, nargs="+", default=default, help=help, **kwargs)


def add_out(parser, default, help):
    """The ``--out`` option: the file (a ``Path``) a benchmark writes, by default `default`."""
    parser.add_argument("--out", type=Path, default=default, help=help)


def add_seed(parser, help=None):
    """The ``--seed`` option: an integer seed, by default 0."""
    parser.add_argument("--seed", type=int, default=0, help=help)


def add_choice(parser, flag, choices, help):
    """An option of one of `choices` (space-separated), by default the first."""
    choices = choices.split()
    parser.add_argument(flag, choices=choices, default=choices[0], help=help)


def picked(args, names: str) -> dict:
    """The options `names` (separated by spaces) of parsed `args`, as a dict in that order (the
    settings a run logs)."""
    return {name: getattr(args, name) for name in names.split()}


def child_command(file, *args) -> list[str]:
    """The command line that runs the benchmark module `file` again in a child process of this
    Python (to measure one fit's memory alone, or stop it at a timeout), with `args` as strings."""
    return [sys.executable, str(Path(file).resolve()), *map(str, args)]


@dataclass(frozen=True)
class Measured:
    """A child process run by `run_measured`: its output, exit status, wall seconds, peak RSS in
    KiB (``/usr/bin/time``'s report; None when absent) and whether the timeout stopped it."""

    stdout: str
    stderr: str
    returncode: int
    wall: float
    peak_rss_kb: int | None
    timed_out: bool


def run_measured(cmd, timeout, env=None) -> Measured:
    """`cmd` under ``/usr/bin/time -v``, in a session of its own, so that a timeout (seconds)
    kills the whole group: ``time`` and the process under it."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        ["/usr/bin/time", "-v", *cmd],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        timed_out = True
    wall = time.perf_counter() - t0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    rss = int(m.group(1)) if m else None
    return Measured(stdout, stderr, proc.returncode, wall, rss, timed_out)


def output_path(out, default_name: str) -> Path:
    """Where a benchmark writes: ``out`` when given, else ``results/<default_name>``."""
    return Path(out) if out else RESULTS / default_name


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of a driver: the module (``suite.x`` or ``reproduce.x``) whose ``main()``
    runs it, what it measures, and the arguments of its smallest configuration (``None``: the
    driver's smoke run leaves it out, for instance because it needs the peers' environment)."""

    module: str
    summary: str
    smoke: tuple[str, ...] | None = None


def run_driver(description: str, benchmarks: dict[str, Benchmark], argv=None) -> int:
    """The command line of a driver: ``[--data DIR] NAME [options of NAME]``, ``--list`` or
    ``--smoke``. Prints the commit and milsvm's version first, the wall time and peak RSS
    (this process and its children) last."""
    listing = "\n".join(f"  {name:<22} {b.summary}" for name, b in benchmarks.items())
    prog = Path(sys.argv[0]).name
    parser = argparse.ArgumentParser(
        prog=prog,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"benchmarks:\n{listing}\n\n`{prog} NAME --help` gives the options of NAME.",
    )
    parser.add_argument(
        "--data",
        type=Path,
        help=f"the data folder (default: ${DATA_ENV}, else ../shared/data beside the repository)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="run the smallest configuration of each benchmark that has one",
    )
    parser.add_argument(
        "name", nargs="?", choices=sorted(benchmarks), metavar="NAME", help="the benchmark to run"
    )
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="the options of NAME")
    args = parser.parse_args(argv)
    if args.data is not None:
        os.environ[DATA_ENV] = str(args.data.expanduser().resolve())
    if not args.data and DATA_ENV not in os.environ:
        os.environ[DATA_ENV] = str(data_dir())
    if args.smoke:
        runs = [(n, list(b.smoke)) for n, b in benchmarks.items() if b.smoke is not None]
    elif args.name:
        runs = [(args.name, args.rest)]
    else:
        parser.print_help()
        return 2
    # before any import: a child's peak RSS counts the parent's pages at fork time
    measured = commit()
    # the benchmark modules import _common, _protocol and their neighbours
    for folder in (BENCHES, BENCHES / "suite", BENCHES / "reproduce"):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    for name, rest in runs:
        if not any(flag in rest for flag in ("-h", "--help")):
            try:
                from milsvm import __version__ as version
            except ImportError:  # a peer's environment runs the peer's side
                version = "not installed"
            print(
                f"# {prog} {name}: commit {measured}, milsvm {version}, "
                f"data {os.environ[DATA_ENV]}",
                flush=True,
            )
        module = importlib.import_module(benchmarks[name].module)
        saved = sys.argv
        sys.argv = [f"{prog} {name}", *rest]
        try:
            with timed() as seconds:
                status = module.main()
        finally:
            sys.argv = saved
        if isinstance(status, int) and status:  # some main()s return their results
            return status
        print(
            f"# {prog} {name}: {seconds():.1f} s wall, peak RSS {peak_rss_mib():.0f} MiB "
            f"(children {peak_rss_mib(children=True):.0f} MiB)",
            flush=True,
        )
    return 0
