"""The do-it-yourself mi-SVM that users write today: a relabelling loop around scikit-learn's
SVC (Andrews, Tsochantaridis & Hofmann 2002, mi-SVM, with the hinge loss of libsvm).

Algorithm (DIYmiSVM.fit):
  * instances of negative bags are negative; instances of positive bags start positive;
  * repeat (at most max_iter = 50 rounds): train SVC(kernel="rbf", C=C, gamma=gamma) on all
    instances with the current labels; relabel every instance of a positive bag by the sign of
    decision_function; in a positive bag left without a positive instance, force the instance
    of largest score positive; stop when no label changes;
  * bag score = max instance score; predict = classes_[1] where the bag score > 0.

It is the baseline of benches/speed.py annealing (import DIYmiSVM from here). Run on its
own, it fits MUSK1 once (features standardised, gamma = "median" of milsvm resolved by the caller
or by --gamma) as a smoke test:

    python benches/speed.py diy-misvm                 # MUSK1, C=10, gamma from milsvm
    python benches/speed.py diy-misvm --gamma 0.0015

Output: printed only (iterations, training accuracy, seconds).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.svm import SVC


class DIYmiSVM:
    """mi-SVM as a relabelling loop around sklearn.svm.SVC.

    Parameters
    ----------
    C : float
    gamma : float or "scale"
    max_iter : int, default=50
    cache_size : float, default=500 (MB, libsvm's kernel cache)

    Attributes after fit: svc_, n_iter_, converged_, fit_time_, labels_ (per-instance, stacked),
    p_hat_ (mean fraction of positive instances per positive bag), classes_.
    """

    def __init__(self, C=1.0, gamma="scale", max_iter=50, cache_size=500):
        self.C, self.gamma, self.max_iter, self.cache_size = C, gamma, max_iter, cache_size

    def fit(self, bags, y):
        t0 = time.perf_counter()
        y = np.asarray(y)
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise ValueError("binary bag labels only")
        pos = y == self.classes_[1]
        X = np.ascontiguousarray(np.vstack(bags), dtype=np.float64)
        sizes = np.array([len(b) for b in bags])
        ptr = np.concatenate([[0], np.cumsum(sizes)])
        bag_of = np.repeat(np.arange(len(bags)), sizes)
        in_pos = pos[bag_of]
        labels = np.where(in_pos, 1, -1)
        self.converged_ = False
        for it in range(1, self.max_iter + 1):  # noqa: B007 (read after the loop: n_iter_)
            svc = SVC(kernel="rbf", C=self.C, gamma=self.gamma, cache_size=self.cache_size)
            svc.fit(X, labels)
            f = svc.decision_function(X)
            new = np.where(in_pos, np.where(f > 0, 1, -1), -1)
            for i in np.flatnonzero(pos):
                a, b = ptr[i], ptr[i + 1]
                if not np.any(new[a:b] > 0):
                    new[a + int(np.argmax(f[a:b]))] = 1
            changed = np.any(new != labels)
            labels = new
            if not changed:
                self.converged_ = True
                break
        self.svc_ = svc
        self.n_iter_ = it
        self.labels_ = labels
        self.p_hat_ = float(
            np.mean([np.mean(labels[ptr[i] : ptr[i + 1]] > 0) for i in np.flatnonzero(pos)])
        )
        self.fit_time_ = time.perf_counter() - t0
        return self

    def decision_function(self, bags):
        X = np.ascontiguousarray(np.vstack(bags), dtype=np.float64)
        f = self.svc_.decision_function(X)
        split = np.cumsum([len(b) for b in bags])[:-1]
        return np.array([s.max() for s in np.split(f, split)])

    def predict(self, bags):
        return self.classes_[(self.decision_function(bags) > 0).astype(int)]


def main():
    import sys

    here = Path(__file__).resolve().parent
    sys.path[:0] = [str(here), str(here.parent)]  # this folder, then benches/
    from _protocol import DEFAULT_DATA, load_mill_dense

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", default="musk1")
    parser.add_argument("--C", type=float, default=10.0)
    parser.add_argument(
        "--gamma", type=float, default=None, help="default: milsvm's 'median' gamma_"
    )
    args = parser.parse_args()
    X, ptr, y = load_mill_dense(DEFAULT_DATA / args.dataset / f"{args.dataset}.data")
    sd = X.std(0)
    sd[sd == 0] = 1
    X = (X - X.mean(0)) / sd
    bags = [X[ptr[i] : ptr[i + 1]] for i in range(len(y))]
    gamma = args.gamma
    if gamma is None:
        import milsvm

        gamma = milsvm.miSVM(C=args.C, gamma="median", n_jobs=1).fit(bags, y).gamma_
    m = DIYmiSVM(C=args.C, gamma=gamma).fit(bags, y)
    print(
        f"{args.dataset}: DIY mi-SVM C={args.C:g} gamma={gamma:.6g}: {m.n_iter_} rounds "
        f"(converged {m.converged_}), p_hat {m.p_hat_:.3f}, training bag accuracy "
        f"{np.mean(m.predict(bags) == y):.3f}, {m.fit_time_:.2f} s"
    )


if __name__ == "__main__":
    main()
