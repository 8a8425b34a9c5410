"""Speed and memory of milsvm's annealing family (ALSVM, AWSVM, ALPSVM, miSVM, MISVM) against the
do-it-yourself mi-SVM (a relabelling loop around sklearn.svm.SVC, benches/speed.py diy-misvm).

Protocol:
  (a) MUSK2, 90% training part: StratifiedKFold(10, shuffle=True, random_state=0) over bags, the
      first fold's training part; features standardised with the training mean / std (a zero std
      is set to 1). gamma = milsvm's "median" (1 / (2 sigma_emp^2)), resolved once by a cheap fit
      (miSVM(n_xv=50, max_iter=1, gamma="median").gamma_; the median looks at the training
      instances only, not the basis) and passed as a float to every method; C = 10; n_jobs = 1.
      Methods: miSVM, MISVM, ALSVM (T0 = 10C, init "uniform"), AWSVM (T0 = 10C), ALPSVM
      (T0 = 10C, C2 = 1, p_star = 0.5), all full basis (n_xv=None), miSVM(n_xv=500) (k-means basis,
      random_state=0) and DIYmiSVM (same data, gamma, C). Each fit runs in its own subprocess
      (this script with --single METHOD) under /usr/bin/time -v: we report the fit's wall seconds
      (perf_counter around .fit, measured in the child; fit_time_ of milsvm = core seconds), the
      child's peak RSS ("Maximum resident set size") and, for reference, the peak RSS of a child
      that loads the data and imports everything but fits nothing ("baseline"). A fit that runs
      over --timeout-a (default 120 s) is killed and recorded as "timeout >120 s". Ratios
      DIY / ours are printed for the fit seconds.
  (b) MUSK1 10-fold CV accuracy (StratifiedKFold(10, shuffle=True, random_state=s) for the split
      seeds s = 0 .. --b-repeats - 1, standardised per training fold, C = 10, gamma = "median"
      resolved per fold): miSVM full basis, miSVM(n_xv=200, random_state=s) (MUSK1 has only 476
      instances, ~430 per training fold, so 500 basis vectors are impossible: 200 instead), and
      the DIY route with the gamma_ of that fold's full-basis miSVM; mean and std over the seeds
      (one bag is 1.1 points). In-process, sequential; seconds are summed over all folds.
  (c) Scale: ALSVM(n_xv=200, C=1, gamma="scale", random_state=0, n_jobs=1) on synthetic data of
      1,000 / 2,000 / 10,000 bags of 10 instances, 50 features: negative instances N(0, I);
      half of the bags positive, each with 1-3 (uniform) instances shifted by +1.5 in the first 5
      features (seed 0). Each size runs in a subprocess under /usr/bin/time -v (fit seconds,
      fit_time_, peak RSS); a size over --timeout-c (default 300 s) is killed and recorded, and
      the larger sizes are skipped.

Children run with OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1 (the machine is shared).

Run (from the repository root):

    python benches/speed.py annealing                 # (a), (b), (c)
    python benches/speed.py annealing --parts a b
    python benches/speed.py annealing --parts a --n-jobs 2       # milsvm on 2 threads
    python benches/speed.py annealing --single ALSVM --gamma 0.0016   # one child

Output: printed and written to benches/results/annealing_speed.txt (--out).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import RESULTS, run_measured  # noqa: E402
from _protocol import DEFAULT_DATA, Report, Table, describe_bags, load_mill_dense, standardise  # noqa: E402

PY = sys.executable
METHODS_A = ["miSVM", "MISVM", "ALSVM", "AWSVM", "ALPSVM", "miSVM_xv500", "DIY"]
SCALE_SIZES = [1000, 2000, 10000]


# ----------------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------------


def split_bags(X, ptr, idx):
    return [X[ptr[i] : ptr[i + 1]] for i in idx]


def musk2_train(data_dir):
    """The first fold's 90% training part of MUSK2, standardised."""
    X, ptr, y = load_mill_dense(data_dir / "musk2" / "musk2.data")
    tr, _ = next(StratifiedKFold(10, shuffle=True, random_state=0).split(np.zeros(len(y)), y))
    bags, _ = standardise(split_bags(X, ptr, tr), [])
    return bags, y[tr]


def synthetic(n_bags, seed=0, m=10, d=50):
    """n_bags bags of m instances, d features: negatives N(0, I); half the bags positive with
    1-3 instances shifted by +1.5 in the first 5 features."""
    rng = np.random.RandomState(seed)
    y = np.zeros(n_bags, dtype=int)
    y[rng.permutation(n_bags)[: n_bags // 2]] = 1
    X = rng.standard_normal((n_bags * m, d))
    for i in np.flatnonzero(y):
        k = rng.randint(1, 4)
        rows = i * m + rng.choice(m, k, replace=False)
        X[np.ix_(rows, np.arange(5))] += 1.5
    return [X[i * m : (i + 1) * m] for i in range(n_bags)], y


# ----------------------------------------------------------------------------------------------
# estimators
# ----------------------------------------------------------------------------------------------


def make(method, C, gamma, n_jobs=1):
    import milsvm
    from diy_misvm import DIYmiSVM

    kw = dict(
        C=C, gamma=gamma, n_jobs=n_jobs, n_xv=None
    )  # full basis unless the method says otherwise
    if method == "miSVM":
        return milsvm.miSVM(**kw)
    if method == "MISVM":
        return milsvm.MISVM(**kw)
    if method == "ALSVM":
        return milsvm.ALSVM(**kw)
    if method == "AWSVM":
        return milsvm.AWSVM(**kw)
    if method == "ALPSVM":
        return milsvm.ALPSVM(C2=1.0, p_star=0.5, **kw)
    if method.startswith("miSVM_xv"):
        kw["n_xv"] = int(method[len("miSVM_xv") :])
        return milsvm.miSVM(random_state=0, **kw)
    if method == "DIY":
        return DIYmiSVM(C=C, gamma=gamma)
    raise ValueError(method)


def fit_record(est, bags, y):
    """Fit with warnings recorded: dict of seconds, fit_time_, n_iter_, n_solves_, p_hat_, ..."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        est.fit(bags, y)
        secs = time.perf_counter() - t0
    rec = dict(
        seconds=secs,
        fit_time=getattr(est, "fit_time_", secs),
        n_iter=int(est.n_iter_),
        n_solves=int(getattr(est, "n_solves_", est.n_iter_)),
        p_hat=float(est.p_hat_),
        converged=bool(est.converged_),
        warnings=[f"{w.category.__name__}: {w.message}" for w in caught],
        train_acc=float(np.mean(np.asarray(est.predict(bags)) == np.asarray(y))),
    )
    if hasattr(est, "gamma_"):
        rec["gamma"] = float(est.gamma_)
    return rec


def resolve_gamma_musk2(data_dir):
    import milsvm

    bags, y = musk2_train(data_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(
            milsvm.miSVM(C=10, gamma="median", n_xv=50, max_iter=1, random_state=0, n_jobs=1)
            .fit(bags, y)
            .gamma_
        )


# ----------------------------------------------------------------------------------------------
# child mode
# ----------------------------------------------------------------------------------------------


def single(args):
    if args.single == "baseline":
        import milsvm  # noqa: F401
        from diy_misvm import DIYmiSVM  # noqa: F401

        bags, y = musk2_train(args.data)
        print("RESULT " + json.dumps(dict(seconds=0.0)))
        return
    if args.single == "scale":
        bags, y = synthetic(args.n_bags)
        import milsvm

        est = milsvm.ALSVM(n_xv=200, C=1.0, gamma="scale", random_state=0, n_jobs=1)
    else:
        bags, y = musk2_train(args.data)
        est = make(args.single, 10.0, args.gamma, n_jobs=args.n_jobs)
    rec = fit_record(est, bags, y)
    print("RESULT " + json.dumps(rec), flush=True)


def run_child(extra, timeout):
    """Run this script with extra args under /usr/bin/time -v: (record or None, peak RSS MB,
    wall seconds, status string)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    p = run_measured([PY, str(Path(__file__).resolve()), *extra], timeout, env=env)
    if p.timed_out:
        return None, None, p.wall, f"timeout >{timeout:g} s"
    rss = p.peak_rss_kb / 1024 if p.peak_rss_kb is not None else None
    rec = None
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            rec = json.loads(line[7:])
    if p.returncode != 0 or rec is None:
        tail = "\n".join(p.stderr.strip().splitlines()[-30:])
        return None, rss, p.wall, f"failed (rc {p.returncode}): {tail[:2000]}"
    return rec, rss, p.wall, "ok"


# ----------------------------------------------------------------------------------------------
# parts
# ----------------------------------------------------------------------------------------------


def part_a(args, out):
    gamma = resolve_gamma_musk2(args.data)
    bags, y = musk2_train(args.data)
    n_inst = sum(len(b) for b in bags)
    out(
        f"(a) MUSK2 fold-0 training part: {describe_bags(y, n_inst, bags[0].shape[1])}; C = 10, "
        f"gamma = median = {gamma:.6g}; one "
        f"subprocess per fit, timeout {args.timeout_a:g} s"
    )
    base, base_rss, _, st = run_child(["--single", "baseline"], 120)
    out(f"    baseline child (imports + data, no fit): peak RSS {base_rss:.0f} MB ({st})")
    table = Table(
        "    ",
        ("method", "<13"),
        ("fit s", ">8.2f"),
        ("core s", ">8.2f"),
        ("rounds", ">6d"),
        ("solves", ">6d"),
        ("p_hat", ">6.3f"),
        ("train acc", ">9.3f"),
        ("peak RSS MB", ">11.0f"),
        ("notes", "", 2),
    )
    out.header(table.header(), table.indent)
    recs = {}
    for method in args.methods_a:
        rec, rss, wall, status = run_child(
            ["--single", method, "--gamma", repr(gamma), "--n-jobs", str(args.n_jobs)],
            args.timeout_a,
        )
        if rec is None:
            out(table.row(method) + " " + (status.splitlines()[0] if status else status))
            if status.startswith("failed"):
                out("      " + status.replace("\n", "\n      "))
            recs[method] = None
            continue
        recs[method] = rec
        warn = "; ".join(sorted(set(rec["warnings"])))
        notes = (
            ("converged" if rec["converged"] else "NOT converged")
            + (
                f"; gamma_ {rec['gamma']:.6g}"
                if "gamma" in rec and abs(rec["gamma"] - gamma) > 1e-12 * gamma
                else ""
            )
            + (f"; {warn}" if warn else "")
        )
        fields = ("seconds", "fit_time", "n_iter", "n_solves", "p_hat", "train_acc")
        out(table.row(method, *(rec[f] for f in fields), rss, notes))
    diy = recs.get("DIY")
    if diy:
        out("    fit-time ratio DIY / ours (> 1: ours faster):")
        for method in args.methods_a:
            r = recs.get(method)
            if method != "DIY":
                out(
                    f"      {method:<13} "
                    + (f"{diy['seconds'] / r['seconds']:8.2f}" if r else "   n/a (no fit)")
                )


def part_b(args, out):
    import milsvm
    from diy_misvm import DIYmiSVM

    X, ptr, y = load_mill_dense(args.data / "musk1" / "musk1.data")
    out(
        f"(b) MUSK1 10-fold CV repeated over {args.b_repeats} split seeds (StratifiedKFold seeds "
        "0..; standardised per fold), C = 10, gamma = median per fold; n_xv = 200 for the reduced "
        "miSVM (MUSK1 has 476 instances: 500 is impossible), its k-means seeded with the split "
        "seed"
    )
    rows = ["miSVM full", "miSVM n_xv=200", "DIY (SVC)"]
    acc = {r: [] for r in rows}
    secs = {r: 0.0 for r in rows}
    warns = {r: 0 for r in rows}
    p_hat = {r: [] for r in rows}
    for seed in range(args.b_repeats):
        folds = list(
            StratifiedKFold(10, shuffle=True, random_state=seed).split(np.zeros(len(y)), y)
        )
        correct = {r: 0 for r in rows}
        for tr, te in folds:
            trb, teb = standardise(split_bags(X, ptr, tr), split_bags(X, ptr, te))
            ests = {
                "miSVM full": milsvm.miSVM(C=10, gamma="median", n_jobs=1),
                "miSVM n_xv=200": milsvm.miSVM(
                    C=10, gamma="median", n_xv=200, random_state=seed, n_jobs=1
                ),
            }
            for r, est in ests.items():
                rec = fit_record(est, trb, y[tr])
                secs[r] += rec["seconds"]
                warns[r] += len(rec["warnings"])
                p_hat[r].append(rec["p_hat"])
                correct[r] += int(np.sum(np.asarray(est.predict(teb)) == y[te]))
            g = ests["miSVM full"].gamma_
            diy = DIYmiSVM(C=10, gamma=g)
            rec = fit_record(diy, trb, y[tr])
            secs["DIY (SVC)"] += rec["seconds"]
            p_hat["DIY (SVC)"].append(rec["p_hat"])
            correct["DIY (SVC)"] += int(np.sum(diy.predict(teb) == y[te]))
        for r in rows:
            acc[r].append(100 * correct[r] / len(y))
    out(
        f"    {'method':<16} {'accuracy % (mean +- std over seeds)':>36} {'per seed':>30} "
        f"{'fit s (sum)':>11} {'p_hat':>6} {'warnings':>8}"
    )
    for r in rows:
        per = " ".join(f"{a:.1f}" for a in acc[r])
        out(
            f"    {r:<16} {np.mean(acc[r]):29.1f} +- {np.std(acc[r]):4.1f} {per:>30} "
            f"{secs[r]:11.2f} {np.mean(p_hat[r]):6.3f} {warns[r]:8d}"
        )
    out(
        "    (for reference: Andrews et al. 2002 mi-SVM MUSK1 87.4% = 12.6% error; Gehler & "
        "Chapelle's AL-SVM T=1e-8 85.7%)"
    )


def part_c(args, out):
    out(
        "(c) scale: ALSVM(n_xv=200, C=1, gamma='scale', n_jobs=1), bags of 10 instances, 50 "
        f"features; subprocess + /usr/bin/time -v, timeout {args.timeout_c:g} s"
    )
    out(
        f"    {'bags':>6} {'instances':>9} {'fit s':>8} {'core s':>8} {'temps':>5} {'solves':>6} "
        f"{'p_hat':>6} {'train acc':>9} {'peak RSS MB':>11}  notes"
    )
    for n in args.sizes:
        rec, rss, wall, status = run_child(
            ["--single", "scale", "--n-bags", str(n)], args.timeout_c
        )
        if rec is None:
            out(f"    {n:6d} {10 * n:9d} {status.splitlines()[0]}")
            if status.startswith("failed"):
                out("      " + status.replace("\n", "\n      "))
            out("    (larger sizes skipped)")
            break
        warn = "; ".join(sorted(set(rec["warnings"])))
        out(
            f"    {n:6d} {10 * n:9d} {rec['seconds']:8.2f} {rec['fit_time']:8.2f} "
            f"{rec['n_iter']:5d} {rec['n_solves']:6d} {rec['p_hat']:6.3f} {rec['train_acc']:9.3f} "
            f"{rss:11.0f}  {'converged' if rec['converged'] else 'NOT converged'}"
            + (f"; {warn}" if warn else "")
        )


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", nargs="+", default=["a", "b", "c"], choices=["a", "b", "c"])
    parser.add_argument("--methods-a", nargs="+", default=METHODS_A, choices=METHODS_A)
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=SCALE_SIZES, help="bags for part (c)"
    )
    parser.add_argument("--timeout-a", type=float, default=120.0)
    parser.add_argument("--timeout-c", type=float, default=300.0)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=RESULTS / "annealing_speed.txt")
    # child mode
    parser.add_argument(
        "--single", default=None, help="child: fit one METHOD (or 'baseline', 'scale')"
    )
    parser.add_argument("--gamma", type=float, default=None)
    parser.add_argument("--b-repeats", type=int, default=5, help="split seeds of part (b)")
    parser.add_argument(
        "--n-jobs", type=int, default=1, help="milsvm's n_jobs in part (a) (DIY: 1 thread)"
    )
    parser.add_argument("--n-bags", type=int, default=1000)
    args = parser.parse_args()
    if args.single:
        single(args)
        return

    args.out.parent.mkdir(parents=True, exist_ok=True)
    out = Report()
    t0 = time.perf_counter()
    import milsvm

    core = milsvm._core.__file__
    out(
        f"benches/speed.py annealing, milsvm {getattr(milsvm, '__version__', '?')} (_core built "
        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(os.path.getmtime(core)))} UTC), "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} cores, n_jobs = {args.n_jobs} in "
        "part (a), 1 elsewhere"
    )
    for part, fn in (("a", part_a), ("b", part_b), ("c", part_c)):
        if part in args.parts:
            t1 = time.perf_counter()
            fn(args, out)
            out(f"    part ({part}) wall time {time.perf_counter() - t1:.1f} s")
            out("")
    out(f"total wall time {time.perf_counter() - t0:.1f} s")
    out.write(args.out)


if __name__ == "__main__":
    main()
