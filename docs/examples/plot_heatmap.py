"""
A heatmap on a synthetic slide
==============================

A whole-slide image cut into tiles is a bag; each tile's embedding is an instance, and the
slide's label (tumour or not) is the bag's. A max-pooling estimator learns which tiles make a
slide positive: its instance scores, drawn at the tiles' positions, are a heatmap of where the
model sees tumour.

We make small synthetic slides: a 32 x 32 grid of tiles, background tiles from a few tissue
types, and on positive slides a round tumour region whose tiles carry a shift along a hidden
direction. A linear MISVM is trained on the slide labels only; then one held-out positive slide
is scored tile by tile.
"""

import matplotlib.pyplot as plt
import milsvm
import numpy as np
from sklearn.metrics import roc_auc_score

rng = np.random.default_rng(0)
side, n_features, n_tissues = 32, 64, 5
tissues = rng.normal(size=(n_tissues, n_features))
tumour_direction = rng.normal(size=n_features)
tumour_direction /= np.linalg.norm(tumour_direction)
rows, cols = np.divmod(np.arange(side * side), side)


def slide(positive):
    """One slide: tile embeddings (float32), the tumour mask."""
    tissue = (rows // 8 + cols // 8 + rng.integers(n_tissues)) % n_tissues
    X = tissues[tissue] + rng.normal(size=(side * side, n_features))
    mask = np.zeros(side * side, dtype=bool)
    if positive:
        cy, cx, r = rng.uniform(6, side - 6, size=2).tolist() + [rng.uniform(2.5, 5)]
        mask = (rows - cy) ** 2 + (cols - cx) ** 2 <= r**2
        X[mask] += 4.0 * tumour_direction
    return X.astype(np.float32), mask


labels = np.array([0, 1] * 30)
slides = [slide(t) for t in labels]
bags = [X for X, _ in slides]
clf = milsvm.MISVM(kernel="linear", C=1.0).fit(bags[:40], labels[:40])
print("held-out slide AUROC:", roc_auc_score(labels[40:], clf.decision_function(bags[40:])))

# %%
# The heatmap of one held-out positive slide, next to its true tumour region; the top tile is
# the witness ``explain`` reports.

X, mask = slides[41]
scores = clf.instance_decision_function([X])[0]
explanation = clf.explain([X])[0]
print(
    f"tile AUROC on this slide: {roc_auc_score(mask, scores):.3f}; witness tile {explanation.top}, "
    f"in the tumour: {bool(mask[explanation.top])}"
)

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4.6))
ax0.imshow(mask.reshape(side, side), cmap="Greys")
ax0.set_title("true tumour tiles")
im = ax1.imshow(scores.reshape(side, side), cmap="magma")
wy, wx = divmod(int(explanation.top), side)
ax1.plot(wx, wy, "c*", ms=14, label="witness (arg-max)")
ax1.set_title("instance scores (MISVM, trained on slide labels)")
ax1.legend(loc="lower right")
fig.colorbar(im, ax=ax1, shrink=0.8)
fig.tight_layout()
plt.show()
