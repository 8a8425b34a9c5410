"""The data loading and evaluation protocol shared by the reproductions of Fu et al. 2013
(``papers.py fu-table1`` and ``fu-table2``; section V-B of the paper): hyperparameters chosen by
inner cross-validation on each training part, per-fold results tallied into per-seed accuracies,
a resumable log of finished folds, and the printed comparison with the paper. Also what the other
benches share: the data directory, the dense MILL parser, `standardise` (the bags on their training
instances' mean / std), `Report` (a printed report that is also written to a file) and `Table`
(a report's table, its columns declared once for the header and the rows).

An outer fold's result is `(seed, fold, out, seconds)`, where `out` maps a row key
`(method, n_xv)` (`n_xv` None for MI-Kernel) to a dict with at least `correct`, `n` (test bags),
`C`, `gamma_scale` (the chosen gamma over the script's unit) and `seconds`, and optionally
`n_xv` (the MI-Kernel model's number of XVs).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from _common import data_dir

# The benchmark data (the driver's --data, $MILSVM_DATA or shared/data beside the repository).
DEFAULT_DATA = data_dir()


def describe_bags(y, n_instances, n_features):
    """``N bags (P positive), I instances, F features``: a data set's size in a benchmark's log
    (positive: label 1)."""
    n_pos = int(np.sum(np.asarray(y) == 1))
    return f"{len(y)} bags ({n_pos} positive), {n_instances} instances, {n_features} features"


def load_mill_dense(path):
    """Minimal parser of the dense MILL format `inst,bag,label,f1,...` (contiguous bags).

    Returns X (N x d float64), bag_ptr (int64, m + 1), y (m,) (0/1, or the class index for COREL).
    """
    with open(path) as f:
        rows = [line.rstrip("\n").split(",", 3) for line in f if line.strip()]
    bag_names = [r[1] for r in rows]
    labels = np.array([int(float(r[2])) for r in rows])
    X = np.loadtxt((r[3] for r in rows), delimiter=",", dtype=np.float64, ndmin=2)
    starts = [0] + [p for p in range(1, len(rows)) if bag_names[p] != bag_names[p - 1]]
    if len(set(bag_names)) != len(starts):
        raise ValueError(f"{path}: bags are not contiguous")
    bag_ptr = np.array(starts + [len(rows)], dtype=np.int64)
    return np.ascontiguousarray(X), bag_ptr, labels[bag_ptr[:-1]]


def standardise(train_bags, test_bags):
    """Both lists of bags standardised with the mean / std of the training instances (a feature
    constant there is only centred)."""
    Xtr = np.vstack(train_bags)
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    return (
        [np.ascontiguousarray((b - mu) / sd) for b in train_bags],
        [np.ascontiguousarray((b - mu) / sd) for b in test_bags],
    )


def mill_file(name):
    """The MILL file of a benchmark set in the data folder: ``<name>/<name>.data`` in lower case
    (``MUSK1`` -> ``musk1/musk1.data``), COREL's ``corel/corel2000.data``."""
    low = name.lower()
    return DEFAULT_DATA / ("corel/corel2000.data" if low == "corel" else f"{low}/{low}.data")


def load_mill_bags(path):
    """The bags (a list of instance arrays) and the labels of a dense MILL file."""
    X, ptr, y = load_mill_dense(path)
    return [X[ptr[i] : ptr[i + 1]] for i in range(len(ptr) - 1)], np.asarray(y)


def outer_cv(bags, y, grid, score, seed=0):
    """10-fold stratified CV over the bags (shuffled with `seed`) of one method: on each training
    part the grid point is chosen by a 3-fold inner stratified CV (seed 0) by the accuracy of the
    scores' signs (`choose_by_inner_cv`), then `score(point, train_bags, y_train, test_bags)`
    gives the test part's decision values.

    Returns the accuracy % (`acc`, `acc_sd`) and AUC (`auc`, `auc_sd`), mean and standard
    deviation over the folds, the pooled out-of-fold AUC (`auc_pooled`), the point chosen on each
    fold (`chosen`) and the seconds.
    """
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold

    def accuracy(point, train, test, part_bags, part_y):
        f = score(point, [part_bags[i] for i in train], part_y[train], [part_bags[i] for i in test])
        return f, np.mean((f > 0).astype(int) == part_y[test])

    outer = StratifiedKFold(10, shuffle=True, random_state=seed)
    accs, aucs, chosen = [], [], []
    oof = np.zeros(len(y))
    start = time.perf_counter()
    for train, test in outer.split(np.zeros(len(y)), y):
        tb, ty = [bags[i] for i in train], y[train]
        parts = list(StratifiedKFold(3, shuffle=True, random_state=0).split(np.zeros(len(ty)), ty))
        point = choose_by_inner_cv(grid, parts, lambda p, a, b: accuracy(p, a, b, tb, ty)[1])
        f, acc = accuracy(point, train, test, bags, y)
        oof[test] = f
        accs.append(acc)
        aucs.append(roc_auc_score(y[test], f))
        chosen.append(point)
    return {
        "acc": 100 * np.mean(accs),
        "acc_sd": 100 * np.std(accs),
        "auc": np.mean(aucs),
        "auc_sd": np.std(aucs),
        "auc_pooled": roc_auc_score(y, oof),
        "chosen": chosen,
        "seconds": time.perf_counter() - start,
    }


def diy_mi_svm(X, bag_ptr, y, C=1.0, max_rounds=20):
    """The mi-SVM loop users write around scikit-learn's ``LinearSVC`` (liblinear, float64):
    fit on the instances `X` (bag `i` the rows ``bag_ptr[i]:bag_ptr[i + 1]``) with their bag's
    label, relabel the instances of positive bags by the sign of the score (at least one positive
    a bag, the highest scored), until no label changes or `max_rounds`. Returns the last SVC."""
    from sklearn.svm import LinearSVC

    owner = np.repeat(np.arange(len(y)), np.diff(bag_ptr))
    labels = y[owner].copy()
    svc = None
    for _ in range(max_rounds):
        svc = LinearSVC(C=C, loss="squared_hinge", dual="auto", max_iter=2000).fit(X, labels)
        f = svc.decision_function(X)
        new = np.where(y[owner] == 1, (f > 0).astype(int), 0)
        for i in np.flatnonzero(y == 1):
            lo, hi = bag_ptr[i], bag_ptr[i + 1]
            if new[lo:hi].sum() == 0:
                new[lo + np.argmax(f[lo:hi])] = 1
        if np.array_equal(new, labels):
            break
        labels = new
    return svc


def cv_header(auc_width=6):
    """The headers of the `cv_cells` of a table row."""
    return (
        f"{'accuracy %':>13s} {'AUC (folds)':>{auc_width + 8}s} {'AUC pooled':>10s} {'seconds':>8s}"
    )


def cv_cells(r, auc_width=6):
    """The cells of an `outer_cv` result in a table row: accuracy %, AUC over the folds (each
    mean +- std), pooled AUC and seconds."""
    return (
        f"{r['acc']:6.1f} +- {r['acc_sd']:4.1f} {r['auc']:{auc_width}.3f} +- {r['auc_sd']:5.3f} "
        f"{r['auc_pooled']:10.3f} {r['seconds']:8.1f}"
    )


class Report:
    """A report printed as it is made and written to a file at the end.

    `out = Report()`; `out(s)` prints `s` (flushed, so that a long run shows its progress) and
    keeps it; `out.write(path)` writes the kept lines to `path` and says so.
    """

    def __init__(self):
        self.lines = []

    def __call__(self, s=""):
        print(s, flush=True)
        self.lines.append(s)

    def header(self, hdr, indent=""):
        """A table header and a rule of dashes under it, after `indent`, to the header's end."""
        self(hdr)
        self(indent + "-" * (len(hdr) - len(indent)))

    def write(self, path):
        path.write_text("\n".join(self.lines) + "\n")
        print(f"wrote {path}")


class Column(NamedTuple):
    """A column of a `Table`: its title, the format spec of its cells (alignment first, as in
    ``">7.1f"`` or ``"<34.34"``; ``""`` for a last column of free text) and the spaces before it."""

    title: str
    spec: str = ""
    gap: int = 1


class Table:
    """The columns of a report's table, written once for its header and its rows.

    `Table(indent, *columns)`, each column a `Column` or its fields ``(title, spec[, gap])``.
    `table.header()` is the header line and `table.row(*cells)` a row of the first
    ``len(cells)`` columns, both after `indent`. A number takes its column's spec. Text (a title,
    or a text cell such as ``"-"`` in a number column) takes the whole spec in a text column,
    else only the spec's alignment and width.
    """

    def __init__(self, indent, *columns):
        self.indent = indent
        self.columns = [Column(*c) for c in columns]
        self._text_specs = [_text_spec(c.spec) for c in self.columns]

    def header(self):
        return self.row(*(c.title for c in self.columns))

    def row(self, *cells):
        line = self.indent
        for i, (cell, column, text_spec) in enumerate(zip(cells, self.columns, self._text_specs)):
            line += " " * column.gap if i else ""
            line += format(cell, text_spec if isinstance(cell, str) else column.spec)
        return line


def _text_spec(spec):
    """The spec of text in a column of cells formatted by `spec`: `spec` itself in a text column,
    its alignment and width in a number column (whose spec ends in a presentation type)."""
    if not spec or spec[-1] not in "bcdeEfFgGnoxX%":
        return spec
    align, width = re.match(r"(.?[<>^])?[-+ ]?z?#?0?(\d*)", spec).groups()
    return (align or "") + width


def choose_by_inner_cv(grid, inner, accuracy):
    """The grid point with the best mean inner-CV accuracy (ties: the first in grid order).

    grid: list of hyperparameter points; inner: list of (train, validation) parts;
    accuracy(point, train, validation) -> validation accuracy. A one-point grid is returned
    without fitting.
    """
    if len(grid) == 1:
        return grid[0]
    scores = [np.mean([accuracy(point, tr, va) for tr, va in inner]) for point in grid]
    return grid[int(np.argmax(scores))]


class FoldLog:
    """A JSON-lines file of finished outer folds, so that a long run survives an interruption.

    Each line holds the run's settings, the seed, the fold, the rows and the seconds; a later run
    with the same settings reuses the folds whose logged rows cover every row it asks for.
    """

    def __init__(self, path, settings):
        self.path, self.settings = path, settings

    def finished(self, wanted):
        """The logged results `(seed, fold, out, seconds)` whose rows cover `wanted`.

        Rows of one fold are merged over the lines that hold them (a later line wins for a row
        logged twice), so methods run separately (say, in two processes) make one table; every
        row is seeded by (seed, fold) alone, whatever else the run computes. `seconds` is the sum
        over the lines used.
        """
        if self.path is None or not self.path.exists():
            return []
        wanted = set(wanted)
        rows, seconds = {}, {}
        for line in self.path.read_text().splitlines():
            rec = json.loads(line)
            if rec["settings"] != self.settings:
                continue
            key = rec["seed"], rec["fold"]
            got = {(m, n): r for m, n, r in rec["rows"]}
            if got.keys() & wanted:
                rows.setdefault(key, {}).update(got)
                seconds[key] = seconds.get(key, 0.0) + rec["seconds"]
        return [
            (seed, fold, {k: out[k] for k in wanted}, seconds[seed, fold])
            for (seed, fold), out in rows.items()
            if wanted <= set(out)
        ]

    def wrap(self, fn):
        """fn, with its result `(seed, fold, out, seconds)` appended to the log and announced."""
        if self.path is None:
            return fn
        path, settings = self.path, self.settings

        def run(*args, **kwargs):
            seed, fold, out, secs = fn(*args, **kwargs)
            rows = [[m, n, r] for (m, n), r in out.items()]
            line = json.dumps(
                dict(settings=settings, seed=seed, fold=fold, rows=rows, seconds=secs)
            )
            with open(path, "a") as f:  # one short write a line: appends from workers do not mix
                f.write(line + "\n")
            print(f"  seed {seed} fold {fold} done in {secs:.0f} s", flush=True)
            return seed, fold, out, secs

        return run


def add_protocol_args(parser, quick_C, c_grid, gamma_scales, gamma_unit, part):
    """The options both tables take alike: --quick (with its --C, default `quick_C`, and
    --gamma-scale), the inner-CV grid (--C-grid, and --gamma-grid in units of `gamma_unit`),
    SparseMI's --tol, --n-jobs, --data and the resumable --log (`part`: what an outer part is
    called, "fold" or "split")."""
    parser.add_argument(
        "--quick", action="store_true", help="1 seed, fixed C / gamma, no inner CV (smoke run)"
    )
    parser.add_argument("--C", type=float, default=quick_C, help="C in --quick mode")
    parser.add_argument(
        "--gamma-scale",
        type=float,
        default=1.0,
        help=f"gamma = this x {gamma_unit} in --quick mode",
    )
    parser.add_argument(
        "--C-grid",
        type=float,
        nargs="+",
        default=list(c_grid),
        dest="C_grid",
        help="C values of the inner CV grid",
    )
    parser.add_argument(
        "--gamma-grid",
        type=float,
        nargs="+",
        default=list(gamma_scales),
        help=f"gamma values of the inner CV grid, in units of {gamma_unit}",
    )
    parser.add_argument(
        "--tol", type=float, default=1e-6, help="SparseMI relative-decrease tolerance"
    )
    parser.add_argument(
        "--n-jobs", type=int, default=os.cpu_count(), help=f"parallel outer {part}s"
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--log",
        type=Path,
        default=None,
        help=f"append each finished outer {part} to this JSON-lines file and skip "
        f"the {part}s already in it (long runs survive an interruption)",
    )


def describe_grid(args, unit):
    """How (C, gamma) are chosen, for a table's first line (`unit`: gamma's, as printed after the
    values: "/d", " gamma_0")."""
    if args.quick:
        return f"quick: C = {args.C:g}, gamma = {args.gamma_scale:g}{unit}, no inner CV"
    return f"inner 3-fold CV over C {args.C_grid} x gamma {args.gamma_grid}{unit}"


def parse_protocol_args(parser):
    """The parsed arguments, --quick meaning one seed, --methods without repeats."""
    args = parser.parse_args()
    if args.quick:
        args.seeds = 1
    args.methods = list(dict.fromkeys(args.methods))
    return args


def skip_missing_methods(milsvm, methods, class_of):
    """Removes from `methods`, with a note, those whose class `class_of[method]` this milsvm
    lacks."""
    for method in list(methods):
        if not hasattr(milsvm, class_of[method]):
            print(f"note: this milsvm has no milsvm.{class_of[method]}: skipping {method}")
            methods.remove(method)


def inner_grid(args, y, random_state):
    """The (C, gamma scale) points of one outer training part (labels `y`) and its 3-fold inner CV
    parts, (train, validation) index pairs (folds shuffled with `random_state`): with --quick the
    one point (--C, --gamma-scale) and no parts, else --C-grid x --gamma-grid."""
    from sklearn.model_selection import StratifiedKFold

    if args.quick:
        return [(args.C, args.gamma_scale)], []
    skf = StratifiedKFold(3, shuffle=True, random_state=random_state)
    grid = list(itertools.product(args.C_grid, args.gamma_grid))
    return grid, list(skf.split(np.zeros(len(y)), y))


@dataclass
class OuterRun:
    """The outer parts of one run: every task's result `(seed, fold, out, seconds)`, those taken
    from the log, the parallel workers, the seconds of the parallel run and the number of tasks."""

    results: list
    done: list
    workers: int
    elapsed: float
    n_tasks: int

    def print_wall(self, threads, parts, part):
        """The closing line: wall time, `parts` run (how the outer parts are called), the workers,
        milsvm's `threads` a fit, the median seconds a `part`."""
        print(
            f"\nwall time {self.elapsed:.1f} s ({self.n_tasks} {parts}, {len(self.done)} from the "
            f"log, {self.workers} parallel, {threads} milsvm thread(s) a fit; per {part} median "
            f"{np.median([r[3] for r in self.results]):.1f} s)"
        )


def run_outer_parts(run, data_args, tasks, rows, args, part, settings):
    """`run(*data_args, train, test, seed, fold, args)` for every task `(train, test, seed, fold)`
    whose `rows` are not in the log `args.log` yet (a `FoldLog` of the runs with these
    `settings`), in parallel over up to `args.n_jobs` processes (joblib); sets `args.threads`,
    milsvm's threads a fit (the cores a worker has). `part` names an outer part in the message
    about the logged ones. Returns an `OuterRun`.
    """
    from joblib import Parallel, delayed

    log = FoldLog(args.log, settings)
    wanted = {(seed, fold) for _, _, seed, fold in tasks}
    done = [r for r in log.finished(rows) if (r[0], r[1]) in wanted]
    finished = {(seed, fold) for seed, fold, _, _ in done}
    todo = [t for t in tasks if (t[2], t[3]) not in finished]
    if done:
        print(f"{log.path}: {len(done)} outer {part}(s) already done, {len(todo)} to run")
    workers = max(1, min(args.n_jobs, len(todo) or 1))
    args.threads = max(1, args.n_jobs // workers)
    t0 = time.perf_counter()
    results = done + Parallel(n_jobs=workers, verbose=0)(
        delayed(log.wrap(run))(*data_args, tr, te, seed, fold, args) for tr, te, seed, fold in todo
    )
    return OuterRun(results, done, workers, time.perf_counter() - t0, len(tasks))


def tally(results, n_seeds):
    """Per row key: accuracy % per seed (correct bags over all test bags of that seed), the
    chosen (C, gamma_scale) counts, the total seconds and the MI-Kernel XV counts."""
    acc, chosen, seconds, nxv = {}, {}, Counter(), {}
    for seed, _, out, _ in results:
        for key, r in out.items():
            c, n = acc.setdefault(key, {}).get(seed, (0, 0))
            acc[key][seed] = (c + r["correct"], n + r["n"])
            chosen.setdefault(key, Counter())[(r["C"], r["gamma_scale"])] += 1
            seconds[key] += r["seconds"]
            if "n_xv" in r:
                nxv.setdefault(key, []).append(r["n_xv"])
    per_seed = {
        key: np.array([100.0 * c / n for c, n in (by_seed[s] for s in range(n_seeds))])
        for key, by_seed in acc.items()
    }
    return per_seed, chosen, seconds, nxv


def fmt_pm(mean, std):
    """`mean +- std` in the tables' width."""
    return f"{mean:6.2f} +- {std:4.2f}"


def print_table(title, rows, per_seed, seconds, paper_of):
    """One line per row key: ours (mean +- std over seeds), the paper's, the difference, the
    seconds spent and the per-seed accuracies. paper_of(key) -> (mean, std) or None."""
    print(title)
    header = (
        f"{'method':<10} {'N_xv':>5}  {'ours':>15}  {'paper':>15}  {'diff':>6}  {'time s':>7}  "
        "per seed"
    )
    print(header)
    print("-" * len(header))
    for key in rows:
        method, n_xv = key
        a = per_seed[key]
        std = f"{a.std(ddof=1):4.2f}" if len(a) > 1 else "   -"
        p = paper_of(key)
        diff = f"{a.mean() - p[0]:+6.2f}" if p else "-"
        print(
            f"{method:<10} {'-' if n_xv is None else n_xv:>5}  {a.mean():6.2f} +- {std}  "
            f"{fmt_pm(*p) if p else '-':>15}  {diff:>6}  {seconds[key]:7.1f}  "
            + " ".join(f"{x:.1f}" for x in a)
        )


def print_wins(pairs, per_seed, paper_of, note=""):
    """Is SparseMI better than each baseline? pairs: list of (label, sparse_key, base_key);
    ours as the mean difference in points and seeds won/lost, beside the paper's difference."""
    print(
        "\nIs SparseMI better than the baselines?"
        + note
        + "\n  (ours: mean difference in points, seeds won/lost; paper: its difference)"
    )
    for label, sk, bk in pairs:
        d = per_seed[sk] - per_seed[bk]
        verdict = "yes" if d.mean() > 0 else ("tie" if d.mean() == 0 else "NO")
        ps, pb = paper_of(sk), paper_of(bk)
        pdiff = f"{ps[0] - pb[0]:+.2f}" if ps and pb else "-"
        print(
            f"  {label}: {verdict} ({d.mean():+.2f}, won/lost "
            f"{int(np.sum(d > 0))}/{int(np.sum(d < 0))}; paper {pdiff})"
        )


def print_chosen(rows, chosen, unit):
    """The (C, gamma) points chosen over the outer folds, per row."""
    print(f"\nchosen (C, gamma / {unit}) over the outer folds:")
    for key in rows:
        method, n_xv = key
        print(
            f"  {method:<9} {'-' if n_xv is None else n_xv:>4}: "
            + ", ".join(f"({c:g}, {g:g}) x{k}" for (c, g), k in chosen[key].most_common())
        )
