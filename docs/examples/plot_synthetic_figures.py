"""
SparseMI on the papers' synthetic data
======================================

Fu et al. (2013, Fig. 2) show SparseMI moving its expansion vectors (XVs) from poor starting
points to the concepts of two 2-D multiple-instance sets:

* the binary *centre and ring* set: positive bags hold at least one instance at the origin,
  negative bags only instances on the ring; one XV at the centre suffices;
* the 3-class *four Gaussians* set: two classes are marked by instances of their own Gaussian,
  the third only by background; two XVs suffice.

We start the XVs away from the answer (on the ring, and in the empty space between the
Gaussians), fit, and draw the data over the decision regions with the path of each XV from its
start to its end, and the objective ``g(Z)`` per iteration.
"""

import matplotlib.pyplot as plt
import milsvm
import numpy as np
from milsvm.datasets import make_center_ring_bags, make_four_gaussians_bags

# %%
# Fit both sets from poor starts
# ------------------------------
# A Gaussian kernel of width 1 (``gamma = 0.5``) suits data on the unit scale; ``init`` takes the
# starting points as an array.

sets = {
    "centre and ring": (make_center_ring_bags(random_state=0), np.array([[2.0, 0.0]])),
    "four Gaussians": (
        make_four_gaussians_bags(random_state=0),
        np.array([[3.5, 0.0], [0.0, 2.5]]),
    ),
}
fits = {}
for name, ((bags, y), init) in sets.items():
    clf = milsvm.SparseMI(n_xv=len(init), init=init, gamma=0.5, C=10, max_iter=50, random_state=0)
    fits[name] = clf.fit(bags, y)
    print(
        f"{name}: training accuracy {clf.score(bags, y):.3f}, XVs {np.round(clf.xv_, 2).tolist()}"
    )

# %%
# Decision regions, XV paths and the objective
# --------------------------------------------
# Every point of a grid is scored as a one-instance bag.

grid = np.linspace(-4, 4, 161)
gx, gy = np.meshgrid(grid, grid)
points = np.c_[gx.ravel(), gy.ravel()]

fig, axes = plt.subplots(2, 2, figsize=(10, 9))
for row, (name, ((bags, y), init)) in zip(axes, sets.items()):
    clf = fits[name]
    regions = clf.predict([p[None, :] for p in points]).reshape(gx.shape)
    ax = row[0]
    ax.contourf(
        gx, gy, regions, levels=np.arange(len(clf.classes_) + 1) - 0.5, cmap="Pastel1", alpha=0.8
    )
    for label, colour in zip(clf.classes_, ["tab:blue", "tab:red", "tab:green"]):
        X = np.vstack([b for b, t in zip(bags, y) if t == label])
        ax.scatter(X[:, 0], X[:, 1], s=6, color=colour, label=f"bags of class {label}")
    for start, end in zip(init, clf.xv_):
        ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="->", lw=2))
        ax.plot(*start, "k+", ms=14, mew=2)
        ax.plot(*end, "k*", ms=14)
    ax.set_title(f"{name}: regions, XVs from + to *")
    ax.set_aspect("equal")
    ax.legend(loc="lower left", fontsize=8)
    row[1].plot(np.arange(1, len(clf.objective_history_) + 1), clf.objective_history_, marker=".")
    row[1].set_xlabel("iteration")
    row[1].set_ylabel("g(Z)")
    row[1].set_title(f"{name}: objective")
fig.tight_layout()
plt.show()
