"""Reproduce Fig. 2 of Fu et al. 2013 (IEEE TNNLS 24(9), section V-A): SparseMI on two 2-D
synthetic multiple-instance sets, started from *poor* expansion-vector (XV) locations.

(a) binary "centre and ring" set (``milsvm.datasets.make_center_ring_bags(random_state=0)``):
    positive bags hold at least one instance at the origin, negative bags only ring instances;
    one XV (at the centre) should suffice.
(b) 3-class "four Gaussians" set (``milsvm.datasets.make_four_gaussians_bags(random_state=0)``):
    classes 0 / 1 (the paper's 1 / 2) contain instances from mu1 = (-2, 2) / mu3 = (2, -2);
    class 2 only background instances from mu2 = (2, 2) and mu4 = (-2, -2); two XVs (at mu1
    and mu3) should suffice.

For each set one PNG with the paper's three panels: (1) the data, instances coloured by the
class of their bag (witness instances -- the centre / mu1 / mu3 instances -- drawn large with a
black edge, the others small) and the initial XVs as big plus signs; (2) the data over the
decision regions (every grid point predicted as a one-instance bag), the final XVs and arrows
from each initial XV to its final one; (3) g(Z) per outer iteration (``objective_history_``).

Parameters (fixed, no tuning on the figure): Gaussian kernel gamma = 0.5 = 1 / (2 sigma^2)
with sigma = 1 (the data are 2-D and on the unit scale, so no standardisation), C = 10,
max_iter = 50 and the library defaults otherwise (s_max = 10 step halvings, tol = 1e-6).
Initial XVs (never at the answer):

- binary: one XV at (2, 0), on the ring, i.e. on negative-bag instances;
- 3-class: XVs at (3.5, 0) and (0, 2.5), in the empty space between the data: each is exactly
  as far from the background Gaussian mu2 as from a concept Gaussian (2.5 from mu2 and mu3;
  2.06 from mu2 and mu1).

Because g(Z) is non-convex, success depends on the start. The script therefore also

- saves ``fig2_failures.png`` (same panels): a binary start just outside the ring, (0, -2.5),
  and a 3-class start near the background Gaussians, (2.3, 2.3) and (-2.3, -2.3), both of
  which end in local minima;
- prints a robustness sweep (unless ``--no-sweep``): for gamma in {0.5, 1, 2} and C in
  {10, 100}, the share of poor starts that reach 100% training accuracy with the XVs within
  0.3 of the relevant centres -- binary: one XV at 16 angles x radii {1, 2 (the ring), 2.5, 3,
  4}; 3-class: 40 random pairs in [-5, 5]^2, each XV > 1 from mu1 and mu3.

Run from the repository root (about 10 s; figures go to benches/out/, which is git-ignored):

    python benches/papers.py fu-figure2
    python benches/papers.py fu-figure2 --no-sweep --out-dir /tmp/figs
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import milsvm  # noqa: E402
import milsvm.datasets  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import BENCHES, benchmark_parser  # noqa: E402

GAMMA = 0.5  # 1 / (2 sigma^2), sigma = 1
C = 10.0
MAX_ITER = 50
SUCCESS_RADIUS = 0.3  # an XV "ends at" a centre when it is within this distance

ORIGIN = np.zeros((1, 2))
MU = {
    1: np.array([-2.0, 2.0]),
    2: np.array([2.0, 2.0]),
    3: np.array([2.0, -2.0]),
    4: np.array([-2.0, -2.0]),
}
CONCEPTS = np.array([MU[1], MU[3]])  # the relevant centres of the 3-class set

INIT_BINARY = np.array([[2.0, 0.0]])
INIT_MULTI = np.array([[3.5, 0.0], [0.0, 2.5]])
FAIL_BINARY = np.array([[0.0, -2.5]])
FAIL_MULTI = np.array([[2.3, 2.3], [-2.3, -2.3]])

CLASS_COLOURS = {
    "binary": ["tab:blue", "tab:red"],  # negative, positive bags
    "multi": ["tab:red", "tab:green", "tab:blue"],  # paper classes 1, 2, 3
}
REGION_COLOURS = {
    "binary": ["#c6dbef", "#fcbba1"],
    "multi": ["#fcbba1", "#c7e9c0", "#c6dbef"],
}
CLASS_NAMES = {
    "binary": ["negative bag", "positive bag"],
    "multi": ["class 1 (label 0)", "class 2 (label 1)", "class 3 (label 2)"],
}


# ----------------------------------------------------------------------------------------------
# Data and fitting
# ----------------------------------------------------------------------------------------------


def load(kind):
    """Return (Bags, y, X, instance bag labels, instance is-witness flags)."""
    if kind == "binary":
        bags, y, inst = milsvm.datasets.make_center_ring_bags(
            random_state=0, return_instance_labels=True
        )
        witness = np.concatenate(inst) == 1  # centre instances
    else:
        bags, y, inst = milsvm.datasets.make_four_gaussians_bags(
            random_state=0, return_instance_labels=True
        )
        witness = np.concatenate(inst) != 2  # mu1 / mu3 instances
    sizes = np.array([len(b) for b in bags])
    X = np.vstack(bags)
    B = milsvm.Bags.from_instances(X, sizes)
    return B, y, X, np.repeat(y, sizes), witness


def fit(B, y, init, gamma=GAMMA, c=C):
    init = np.asarray(init, dtype=np.float64)
    clf = milsvm.SparseMI(
        n_xv=len(init), init=init, C=c, gamma=gamma, max_iter=MAX_ITER, random_state=0
    )
    return clf.fit(B, y)


def centre_distances(kind, xv):
    """Distance of every XV to its nearest relevant centre, and of every centre to its nearest
    XV."""
    centres = ORIGIN if kind == "binary" else CONCEPTS
    d = np.linalg.norm(xv[:, None, :] - centres[None, :, :], axis=2)
    return d.min(axis=1), d.min(axis=0)


def succeeded(kind, clf, B, y):
    _, centre_to_xv = centre_distances(kind, clf.xv_)
    return bool(np.mean(clf.predict(B) == y) == 1.0 and centre_to_xv.max() < SUCCESS_RADIUS)


def report(kind, title, clf, B, y):
    h = clf.objective_history_
    acc = np.mean(clf.predict(B) == y)
    xv_to_centre, centre_to_xv = centre_distances(kind, clf.xv_)
    monotone = bool(np.all(np.diff(h) <= 0))
    print(f"--- {title}")
    print(
        f"    n_iter = {clf.n_iter_}, g first = {h[0]:.3f}, g last = {h[-1]:.3f} (non-increasing: "
        f"{monotone})"
    )
    print(f"    training accuracy = {100 * acc:.1f}% ({int(round(acc * len(y)))}/{len(y)} bags)")
    for k, (z0, z) in enumerate(zip(clf.initial_xv_, clf.xv_)):
        if kind == "binary":
            where = f"distance to origin {xv_to_centre[k]:.3f}"
        else:
            d1, d3 = np.linalg.norm(z - MU[1]), np.linalg.norm(z - MU[3])
            where = f"distance to mu1 {d1:.3f}, to mu3 {d3:.3f} (nearest {min(d1, d3):.3f})"
        print(
            f"    XV {k}: initial ({z0[0]:+.3f}, {z0[1]:+.3f}) -> final ({z[0]:+.3f}, "
            f"{z[1]:+.3f}); {where}"
        )
    if kind == "multi":
        print(f"    nearest XV to mu1: {centre_to_xv[0]:.3f}, to mu3: {centre_to_xv[1]:.3f}")
    print(
        f"    success (100% accuracy and every centre within {SUCCESS_RADIUS} of an XV): "
        f"{succeeded(kind, clf, B, y)}"
    )


# ----------------------------------------------------------------------------------------------
# Figures
# ----------------------------------------------------------------------------------------------


def limits(X, *points):
    P = np.vstack([X, *points])
    lo, hi = P.min(axis=0) - 0.7, P.max(axis=0) + 0.7
    return (float(lo[0]), float(hi[0])), (float(lo[1]), float(hi[1]))


def scatter_data(ax, kind, X, inst_class, witness):
    colours = CLASS_COLOURS[kind]
    for c, name in enumerate(CLASS_NAMES[kind]):
        m = inst_class == c
        ax.scatter(
            X[m & ~witness, 0], X[m & ~witness, 1], s=7, c=colours[c], alpha=0.55, lw=0, label=name
        )
        if np.any(m & witness):
            ax.scatter(
                X[m & witness, 0], X[m & witness, 1], s=22, c=colours[c], edgecolors="k", lw=0.6
            )
    ax.scatter([], [], s=22, c="w", edgecolors="k", lw=0.6, label="witness instance")


def legend_below(ax):
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=3, fontsize=8, frameon=False)


def draw_row(axes, kind, clf, B, y, X, inst_class, witness, title):
    xlim, ylim = limits(X, clf.initial_xv_)
    init, final = clf.initial_xv_, clf.xv_
    acc = np.mean(clf.predict(B) == y)

    ax = axes[0]
    scatter_data(ax, kind, X, inst_class, witness)
    ax.scatter(init[:, 0], init[:, 1], marker="+", s=600, lw=3.5, c="k", zorder=5)
    ax.scatter([], [], marker="+", s=150, lw=2.5, c="k", label="initial XV")
    ax.set_title(f"{title}: data and initial XVs")
    legend_below(ax)

    ax = axes[1]
    gx, gy = np.meshgrid(np.linspace(*xlim, 220), np.linspace(*ylim, 220))
    grid = np.column_stack([gx.ravel(), gy.ravel()])
    G = milsvm.Bags.from_instances(grid, np.ones(len(grid), dtype=np.int64))
    pred = np.searchsorted(clf.classes_, clf.predict(G)).reshape(gx.shape)
    n_classes = len(clf.classes_)
    ax.contourf(
        gx,
        gy,
        pred,
        levels=np.arange(n_classes + 1) - 0.5,
        cmap=ListedColormap(REGION_COLOURS[kind]),
    )
    if kind == "binary":
        ax.contour(
            gx,
            gy,
            clf.decision_function(G).reshape(gx.shape),
            levels=[0.0],
            colors="k",
            linewidths=0.8,
        )
    scatter_data(ax, kind, X, inst_class, witness)
    for z0, z in zip(init, final):
        # clip the arrow head to the axes so an XV that left the data stays visible as a direction
        zc = np.array([np.clip(z[0], *xlim), np.clip(z[1], *ylim)])
        ax.annotate(
            "", xy=zc, xytext=z0, arrowprops=dict(arrowstyle="->", lw=1.8, color="k"), zorder=6
        )
        ax.scatter(*z0, marker="+", s=250, lw=2, c="0.35", zorder=6)
    inside = np.all((final >= [xlim[0], ylim[0]]) & (final <= [xlim[1], ylim[1]]), axis=1)
    ax.scatter(
        final[inside, 0],
        final[inside, 1],
        marker="X",
        s=170,
        c="gold",
        edgecolors="k",
        lw=1.2,
        zorder=7,
    )
    ax.scatter([], [], marker="+", s=100, lw=2, c="0.35", label="initial XV")
    ax.scatter([], [], marker="X", s=100, c="gold", edgecolors="k", lw=1.2, label="final XV")
    ax.set_title(f"final XVs and decision regions (train acc {100 * acc:.0f}%)")
    legend_below(ax)

    for a in axes[:2]:
        a.set_xlim(*xlim)
        a.set_ylim(*ylim)
        a.set_aspect("equal")

    ax = axes[2]
    h = clf.objective_history_
    ax.plot(np.arange(len(h)), h, "o-", ms=4)
    ax.set_xlabel("iteration")
    ax.set_ylabel("g(Z)")
    ax.set_title(f"objective: {h[0]:.1f} -> {h[-1]:.1f} in {clf.n_iter_} iterations")
    ax.grid(alpha=0.3)


def figure(rows, path, suptitle):
    fig, axes = plt.subplots(
        len(rows),
        3,
        figsize=(17, 6.2 * len(rows)),
        squeeze=False,
        gridspec_kw={"width_ratios": [1, 1, 0.9]},
    )
    for ax_row, row in zip(axes, rows):
        draw_row(ax_row, *row)
    fig.suptitle(suptitle, y=1.0 + 0.02 / len(rows))
    fig.tight_layout(h_pad=3.0)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    print(f"    saved {path}")


# ----------------------------------------------------------------------------------------------
# Robustness sweep
# ----------------------------------------------------------------------------------------------


def sweep_starts(kind):
    if kind == "binary":
        angles = 2 * np.pi * np.arange(16) / 16 + 0.1
        return [
            np.array([[r * np.cos(a), r * np.sin(a)]])
            for r in (1.0, 2.0, 2.5, 3.0, 4.0)
            for a in angles
        ]
    rng = np.random.default_rng(1)
    starts = []
    while len(starts) < 40:
        p = rng.uniform(-5, 5, size=(2, 2))
        if np.linalg.norm(p[:, None, :] - CONCEPTS[None, :, :], axis=2).min() > 1.0:
            starts.append(p)
    return starts


def sweep(kind, B, y):
    starts = sweep_starts(kind)
    print(f"--- robustness, {kind}: share of {len(starts)} poor starts that succeed")
    if kind == "binary":
        print("    (16 angles per radius; by radius r = 1 / 2 (ring) / 2.5 / 3 / 4)")
    for gamma in (0.5, 1.0, 2.0):
        for c in (10.0, 100.0):
            ok = np.array([succeeded(kind, fit(B, y, s, gamma, c), B, y) for s in starts])
            detail = ""
            if kind == "binary":
                detail = "  by radius: " + " / ".join(
                    str(int(v)) for v in ok.reshape(5, 16).sum(axis=1)
                )
            print(f"    gamma={gamma:<4} C={c:<6g} {ok.sum():3d}/{len(ok)}{detail}")


def main():
    parser = benchmark_parser(__doc__)
    parser.add_argument("--out-dir", type=Path, default=BENCHES / "out")
    parser.add_argument("--no-sweep", action="store_true", help="skip the robustness sweep")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    print(
        f"SparseMI, Gaussian kernel gamma={GAMMA} (sigma=1), C={C:g}, max_iter={MAX_ITER}, "
        "s_max=10, tol=1e-6"
    )

    data = {kind: load(kind) for kind in ("binary", "multi")}
    failures = []
    for kind, init, fail, name, label in (
        ("binary", INIT_BINARY, FAIL_BINARY, "fig2_binary.png", "(a) binary, 1 XV"),
        ("multi", INIT_MULTI, FAIL_MULTI, "fig2_multiclass.png", "(b) 3 classes, 2 XVs"),
    ):
        B, y, X, inst_class, witness = data[kind]
        print(f"\n=== {label}: {len(y)} bags, {len(X)} instances")
        clf = fit(B, y, init)
        report(kind, "poor initialisation (figure)", clf, B, y)
        figure(
            [(kind, clf, B, y, X, inst_class, witness, label)],
            args.out_dir / name,
            f"Fu et al. 2013, Fig. 2{label[:3]}: SparseMI from a poor initialisation "
            f"(gamma={GAMMA}, C={C:g})",
        )
        clf_fail = fit(B, y, fail)
        report(kind, "another poor initialisation (failure example)", clf_fail, B, y)
        failures.append((kind, clf_fail, B, y, X, inst_class, witness, f"{label}, other start"))

    print()
    figure(
        failures,
        args.out_dir / "fig2_failures.png",
        f"Starts that end in local minima of g(Z) (gamma={GAMMA}, C={C:g})",
    )

    if not args.no_sweep:
        for kind in ("binary", "multi"):
            print()
            sweep(kind, *data[kind][:2])
    print(f"\ntotal time {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
