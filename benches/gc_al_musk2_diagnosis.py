"""Why AL-SVM (T0 = 10 C) underfits MUSK2 at sigma = sigma_emp (issue 8, Table 2 of Gehler &
Chapelle 2007): one training fold (fold 0 of seed 0 of reproduce_gc_table2.py, features
standardised as there), C = 10.

Part 1: p over the temperatures. The fit is repeated with max_iter = k (the core keeps no
per-temperature p), for sigma = sigma_emp and 0.5 sigma_emp; printed: the last temperature, p_hat
(fraction of p > 1/2 per positive bag), mean p, positive training bags whose largest score is
< 0, negative training bags whose largest score is > 0, the objective at the last temperature.

Part 2: variants of the schedule and of the grid at sigma_emp (eps, decay, T0, C, sigma) with
training / test bag accuracy, p_hat and the final objective, and AL at T0 = 1e-8 (mi-SVM) for
the objective it reaches; --detail lists, for the default fit, each misclassified positive
training bag (its instance of largest p and its score).

    /work/venv-gc/bin/python benches/gc_al_musk2_diagnosis.py [--detail]

Output: printed and written to benches/results/gc_al_musk2_diagnosis.txt.
"""

import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import milsvm  # noqa: E402
import reproduce_gc_table2 as R  # noqa: E402
from _protocol import Report, standardise  # noqa: E402

out = Report()


def main():
    detail = "--detail" in sys.argv
    warnings.simplefilter("ignore")
    d = R.load("musk2", R.DEFAULT_DATA)
    tr, te = R.folds_of(d, 0)[0]
    trb, teb = standardise(d.bags(tr), d.bags(te))
    ytr, yte = d.y[tr], d.y[te]
    g = R.median_gamma(trb)
    n_pos = int(np.sum(ytr == 1))
    out(
        f"MUSK2 fold 0: {len(trb)} training bags ({n_pos} positive, "
        f"{sum(len(b) for b, y in zip(trb, ytr) if y == 1)} instances in positive bags, "
        f"{sum(len(b) for b in trb)} in all), gamma_median {g:.6g}; C = 10"
    )
    out()
    out("Part 1: AL-SVM (T0 = 10 C, decay 1.5, eps 1e-4) stopped after k temperatures")
    for f in (1.0, 0.5):
        for k in (1, 4, 6, 8, 12, 16, 20, 26, 40):
            est = milsvm.ALSVM(C=10, gamma=g / f**2, n_jobs=1, max_iter=k, n_xv=None).fit(trb, ytr)
            P = np.concatenate([p for p, y in zip(est.p_, ytr) if y == 1])
            S = est.instance_decision_function(trb)
            fp = sum(np.max(s) < 0 for s, y in zip(S, ytr) if y == 1)
            fn = sum(np.max(s) > 0 for s, y in zip(S, ytr) if y != 1)
            out(
                f"  sigma {f:g} sigma_emp  k {len(est.temperatures_):2d}  T "
                f"{est.temperatures_[-1]:9.4g}  p_hat {est.p_hat_:.3f}  mean p {P.mean():.3f}  "
                f"pos bags max f < 0: {fp:2d}/{n_pos}  neg bags max f > 0: {fn}  objective "
                f"{est.objective_history_[-1]:10.4g}"
                + ("  (stopping rule met)" if est.converged_ else "")
            )
            if est.converged_:
                break
    out()
    out("Part 2: variants (train / test = bag accuracy on the training part / the test fold)")
    variants = [
        ("AL0 = mi-SVM (T0 1e-8, init labels)", milsvm.ALSVM, dict(T0=1e-8, init="labels")),
        ("AL default (T0 10C, decay 1.5, eps 1e-4)", milsvm.ALSVM, {}),
        ("AL eps 1e-6", milsvm.ALSVM, dict(eps=1e-6)),
        ("AL decay 1.1", milsvm.ALSVM, dict(decay=1.1)),
        ("AL T0 = C", milsvm.ALSVM, dict(T0=10.0)),
        ("AL T0 = 100 C", milsvm.ALSVM, dict(T0=1000.0)),
        ("AL sigma 0.5 sigma_emp", milsvm.ALSVM, dict(gamma=4 * g)),
        ("AL sigma 2 sigma_emp", milsvm.ALSVM, dict(gamma=g / 4)),
        ("AL C = 100 (off the grid)", milsvm.ALSVM, dict(C=100.0)),
    ]
    for name, cls, kw in variants:
        kw = dict(dict(C=10.0, gamma=g, n_jobs=1), **kw)
        t0 = time.perf_counter()
        est = cls(**kw).fit(trb, ytr)
        secs = time.perf_counter() - t0
        tra = np.mean(np.asarray(est.predict(trb)) == ytr)
        tea = np.mean(np.asarray(est.predict(teb)) == yte)
        S = est.instance_decision_function(trb)
        fp = sum(np.max(s) < 0 for s, y in zip(S, ytr) if y == 1)
        out(
            f"  {name:<42} train {tra:.3f} test {tea:.3f} p_hat {est.p_hat_:.3f} pos bags max f < "
            f"0: {fp:2d}/{n_pos}  objective {est.objective_history_[-1]:8.2f}  temperatures "
            f"{len(est.temperatures_):3d}  solves {est.n_solves_:3d}  {secs:5.1f} s"
        )
        if detail and name.startswith("AL default"):
            for k, (p, s, y) in enumerate(zip(est.p_, S, ytr)):
                if y == 1 and np.max(s) < 0:
                    j = int(np.argmax(p))
                    out(
                        f"      bag {k:2d}: m {len(p):3d}  sum p {p.sum():.2f}  n(p > 1/2) "
                        f"{(p > 0.5).sum()}  max p {p[j]:.3f} at score {s[j]:+.3f}; max score "
                        f"{np.max(s):+.3f}"
                    )
    out.write(HERE / "results" / "gc_al_musk2_diagnosis.txt")


if __name__ == "__main__":
    main()
