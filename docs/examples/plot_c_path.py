"""
A path over ``C``
=================

``fit_path(bags, y, Cs)`` fits one model per value of ``C``; for NSK (and MIKernel, ReducedSet,
sMIL, RSVM, MILES, SIL, STK) what does not depend on ``C`` (here the set-kernel matrix and the
kernel-row cache) is computed once for the whole path. We trace the held-out accuracy and the
number of support instances (``xv_``) of NSK on MUSK1 against ``C``, and compare the path's time
with independent fits.
"""

import time

import matplotlib.pyplot as plt
import milsvm
import numpy as np
from milsvm.datasets import load_musk1
from sklearn.model_selection import train_test_split

bags, y = load_musk1()
scaler = milsvm.BagStandardScaler().fit(bags)
bags = scaler.transform(bags)
idx_train, idx_test = train_test_split(
    np.arange(len(bags)), test_size=0.3, stratify=y, random_state=0
)
train, test = [bags[i] for i in idx_train], [bags[i] for i in idx_test]
Cs = np.logspace(-2, 3, 16)

start = time.perf_counter()
path = milsvm.NSK(gamma="scale").fit_path(train, y[idx_train], Cs)
path_time = time.perf_counter() - start
start = time.perf_counter()
single = [milsvm.NSK(gamma="scale", C=C).fit(train, y[idx_train]) for C in Cs]
single_time = time.perf_counter() - start
print(f"path: {path_time:.2f} s, independent fits: {single_time:.2f} s")
print(
    "same predictions:",
    all((a.predict(test) == b.predict(test)).all() for a, b in zip(path, single)),
)

fig, ax = plt.subplots(figsize=(7, 4))
ax.semilogx(Cs, [m.score(test, y[idx_test]) for m in path], marker="o", label="held-out accuracy")
ax.semilogx(
    Cs, [m.score(train, y[idx_train]) for m in path], marker=".", ls="--", label="training accuracy"
)
ax.set_xlabel("C")
ax.set_ylabel("accuracy")
ax2 = ax.twinx()
ax2.semilogx(
    Cs,
    [m.xv_.shape[0] for m in path],
    color="tab:gray",
    marker="s",
    ms=3,
    label="support instances",
)
ax2.set_ylabel("support instances (xv_ rows)")
fig.legend(loc="lower right", bbox_to_anchor=(0.88, 0.18))
ax.set_title("NSK on MUSK1 (scaled features)")
fig.tight_layout()
plt.show()
