"""
Decision regions of six estimators
==================================

The 2-D toy of Gehler & Chapelle (2007, section 5): negative bags sample the square
``[-3, 3]^2`` outside a disc, positive bags put a fraction of their instances inside the disc.
Each estimator is fitted on the same bags, and every point of a grid is scored as a
one-instance bag: the regions show where each model puts the positive class, and how the
pooling (mean or max) shapes them.
"""

import matplotlib.pyplot as plt
import milsvm
import numpy as np
from milsvm.datasets import make_annealing_toy

bags, y = make_annealing_toy(fraction_positive=0.5, n_bags=100, random_state=0)

estimators = {
    "SparseMI (mean)": milsvm.SparseMI(n_xv=10, C=10, gamma=1.0, random_state=0),
    "NSK (mean)": milsvm.NSK(C=10, gamma=1.0),
    "MISVM (max)": milsvm.MISVM(C=10, gamma=1.0),
    "ALSVM (max)": milsvm.ALSVM(C=10, gamma=1.0),
    "SIL (max)": milsvm.SIL(C=10, gamma=1.0),
    "MILES (concepts)": milsvm.MILES(C=10, gamma=1.0),
}

grid = np.linspace(-3, 3, 121)
gx, gy = np.meshgrid(grid, grid)
points = [p[None, :] for p in np.c_[gx.ravel(), gy.ravel()]]
positives = np.vstack([b for b, t in zip(bags, y) if t == 1])
negatives = np.vstack([b for b, t in zip(bags, y) if t == 0])

fig, axes = plt.subplots(2, 3, figsize=(12, 8), sharex=True, sharey=True)
for ax, (name, est) in zip(axes.ravel(), estimators.items()):
    est.fit(bags, y)
    scores = est.decision_function(points).reshape(gx.shape)
    ax.contourf(gx, gy, scores > 0, levels=[-0.5, 0.5, 1.5], colors=["#c6dbef", "#fcbba1"])
    ax.contour(gx, gy, scores, levels=[0], colors="k", linewidths=1)
    ax.scatter(negatives[:, 0], negatives[:, 1], s=3, color="tab:blue")
    ax.scatter(positives[:, 0], positives[:, 1], s=3, color="tab:red")
    ax.add_patch(plt.Circle((0, 0), 1.5, fill=False, ls="--", color="k"))
    ax.set_title(f"{name}: train acc. {est.score(bags, y):.2f}")
    ax.set_aspect("equal")
fig.suptitle(
    "Instances of positive (red) and negative (blue) bags; dashed: the true positive region"
)
fig.tight_layout()
plt.show()
