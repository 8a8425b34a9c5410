"""milsvm's sbMIL against Doran's ``misvm`` sbMIL on the same problem (MUSK1, standardised): the
second-stage instance labels, the instance scores with and without the biases, the predictions.

The two packages solve the same problems when misvm runs with ``scale_C=False`` (every unit of
sMIL and every instance of the second stage bounded by ``C``, as milsvm without class weights)
and the averaging set kernel ``"rbf_av"`` (sMIL's bag mean; on single instances it is the RBF
kernel), at the same ``gamma`` (milsvm's "scale" over the standardised instances, given to both
as a number). misvm solves its QPs with cvxopt (default tolerances); milsvm with the SMO at
``inner_tol=1e-8``.

Two steps, the first in a Python that has misvm (and cvxopt), the second in milsvm's:

    ../venv-peers/bin/python benches/peers.py sbmil-misvm --side misvm --npz /tmp/misvm_sbmil.npz
    python benches/peers.py sbmil-misvm --npz /tmp/misvm_sbmil.npz \\
        --out benches/results/sbmil_vs_misvm.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import RESULTS, benchmark_parser  # noqa: E402
from _protocol import DEFAULT_DATA, Report, load_mill_dense, standardise  # noqa: E402

C, ETAS = 10.0, (0.1, 0.3, 0.7)


def musk1():
    X, ptr, y = load_mill_dense(DEFAULT_DATA / "musk1" / "musk1.data")
    bags = [X[ptr[i] : ptr[i + 1]] for i in range(len(ptr) - 1)]
    bags, _ = standardise(bags, bags[:1])
    return bags, np.asarray(y)


def misvm_side(npz):
    import misvm

    bags, y = musk1()
    x = np.vstack(bags)
    gamma = 1.0 / (x.shape[1] * x.var())
    out = {"gamma": gamma}
    for eta in ETAS:
        est = misvm.sbMIL(kernel="rbf_av", gamma=gamma, C=C, eta=eta, scale_C=False, verbose=False)
        est.fit(bags, np.where(y == 1, 1.0, -1.0))
        out[f"labels_{eta}"] = np.asarray(est._y).ravel()  # negative bags' instances first
        out[f"bag_{eta}"] = np.asarray(est.predict(bags)).ravel()
        out[f"inst_{eta}"] = np.asarray(super(misvm.sil.SIL, est).predict(x)).ravel()
        out[f"b_{eta}"] = float(np.asarray(est._b).ravel()[0])
    np.savez(npz, **out)
    print(f"wrote {npz}")


def milsvm_side(npz, out_path):
    import milsvm

    bags, y = musk1()
    ref = np.load(npz)
    gamma = float(ref["gamma"])
    sizes = np.array([len(b) for b in bags])
    # misvm stacks the instances of the negative bags first, then those of the positive bags
    order = np.concatenate(
        [np.flatnonzero(np.repeat(y == 0, sizes)), np.flatnonzero(np.repeat(y == 1, sizes))]
    )
    out = Report()
    out(
        f"sbMIL on MUSK1 (standardised), C={C:g}, gamma={gamma:.6g}: milsvm (SMO, inner_tol=1e-8) "
        "against misvm (cvxopt; scale_C=False, kernel='rbf_av')"
    )
    out.header(
        f"{'eta':>4}  {'labels differ':>13}  {'positives':>9}  {'max |f diff|':>12}  "
        f"{'w/o biases':>10}  {'b milsvm':>9}  {'b misvm':>9}  {'same bag labels':>15}"
    )
    for eta in ETAS:
        est = milsvm.sbMIL(C=C, gamma=gamma, eta=eta, inner_tol=1e-8).fit(bags, y)
        ours, theirs = est.instance_labels_[order], ref[f"labels_{eta}"]
        f = np.concatenate(est.instance_decision_function(bags))
        fm = ref[f"inst_{eta}"]
        raw = np.abs((f - est.intercept_) - (fm - ref[f"b_{eta}"])).max()
        same = np.mean((est.decision_function(bags) > 0) == (ref[f"bag_{eta}"] > 0))
        out(
            f"{eta:4g}  {int((ours != theirs).sum()):>6} of {len(ours):<4}  "
            f"{int((ours > 0).sum()):>9}  {np.abs(f - fm).max():12.2e}  {raw:10.2e}  "
            f"{est.intercept_:9.4f}  {ref[f'b_{eta}']:9.4f}  {same:15.3f}"
        )
    out.write(Path(out_path))


def main():
    ap = benchmark_parser(__doc__)
    ap.add_argument("--side", choices=["misvm", "milsvm"], default="milsvm")
    ap.add_argument("--npz", default="/tmp/misvm_sbmil.npz")
    ap.add_argument("--out", default=str(RESULTS / "sbmil_vs_misvm.txt"))
    args = ap.parse_args()
    if args.side == "misvm":
        misvm_side(args.npz)
    else:
        milsvm_side(args.npz, args.out)


if __name__ == "__main__":
    main()
