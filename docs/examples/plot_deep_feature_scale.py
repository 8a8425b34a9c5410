"""
Deep-feature scale, in small
============================

Bags of float32 embeddings, shaped like whole-slide images (lognormal bag sizes, tissue
clusters, a few tumour patches per positive slide: :func:`milsvm.datasets.make_embedding_bags`).
With ``kernel="linear"`` the annealing family fits the weight vector in the input space
(Newton-CG, ``solver_ == "linear"``), so the fit grows with the number of stored values, not with
its square, and float32 stays float32. We time linear MISVM and miSVM as the data grow, and check
the test AUROC. (``benches/bench_deep_scale.py`` runs the same at up to 3.2 million instances of
1024 features.)
"""

import time

import matplotlib.pyplot as plt
import milsvm
import numpy as np
from milsvm.datasets import make_embedding_bags
from sklearn.metrics import roc_auc_score

sizes = [2_000, 8_000, 32_000, 96_000]
rows = []
for n_instances in sizes:
    n_bags = 80
    bags, y = make_embedding_bags(
        n_bags=n_bags,
        mean_bag_size=n_instances // n_bags,
        n_features=128,
        witness_rate=0.05,
        random_state=0,
    )
    assert bags[0].dtype == np.float32
    train, test = bags[::2], bags[1::2]
    for name, est in {
        "MISVM": milsvm.MISVM(kernel="linear"),
        "miSVM": milsvm.miSVM(kernel="linear"),
    }.items():
        start = time.perf_counter()
        est.fit(train, y[::2])
        seconds = time.perf_counter() - start
        auc = roc_auc_score(y[1::2], est.decision_function(test))
        total = sum(len(b) for b in bags)
        rows.append((name, total, seconds, auc))
        print(
            f"{name:6s} {total:7d} instances x 128 (float32): fit {seconds:6.2f} s on half, "
            f"test AUROC {auc:.3f}, solver {est.solver_}"
        )

# %%
fig, ax = plt.subplots(figsize=(6.5, 4))
for name in ("MISVM", "miSVM"):
    pts = [(n, s) for m, n, s, _ in rows if m == name]
    ax.loglog(*zip(*pts), marker="o", label=f"linear {name}")
n = np.array([r[1] for r in rows if r[0] == "MISVM"], dtype=float)
s0 = [r[2] for r in rows if r[0] == "MISVM"][0]
ax.loglog(n, s0 * n / n[0], "k:", label="linear growth")
ax.set_xlabel("instances (all bags)")
ax.set_ylabel("fit time on half the bags (s)")
ax.legend()
fig.tight_layout()
plt.show()
