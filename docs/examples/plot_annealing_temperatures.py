"""
Deterministic annealing: the objective against the temperature
===============================================================

AL-SVM (Gehler & Chapelle 2007) treats the labels of the instances of positive bags as
probabilities ``p`` and lowers a temperature ``T`` from ``T0 = 10 C``: at high temperature every
instance is half positive, at low temperature the labels are hard, and the last SVM is mi-SVM's
local optimum found from a smooth start. ``temperatures_`` and ``objective_history_`` record the
path; ``p_`` the final label probabilities of every training instance.
"""

import matplotlib.pyplot as plt
import milsvm
import numpy as np
from milsvm.datasets import make_annealing_toy

bags, y, inst = make_annealing_toy(
    fraction_positive=0.3, n_bags=100, random_state=1, return_instance_labels=True
)

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
for name, est in {
    "ALSVM": milsvm.ALSVM(C=10, gamma=1.0),
    "AWSVM": milsvm.AWSVM(C=10, gamma=1.0),
    "ALPSVM": milsvm.ALPSVM(C=10, gamma=1.0),
}.items():
    est.fit(bags, y)
    ax0.plot(
        est.temperatures_,
        est.objective_history_,
        marker=".",
        label=f"{name} ({len(est.temperatures_)} temperatures)",
    )
ax0.set_xscale("log")
ax0.invert_xaxis()
ax0.set_xlabel("temperature T (falling to the right)")
ax0.set_ylabel("objective")
ax0.legend()
ax0.set_title("The annealing path")

# right: the final label probabilities of the positive bags' instances against the truth
al = milsvm.ALSVM(C=10, gamma=1.0).fit(bags, y)
truth = np.concatenate([labels for labels, t in zip(inst, y) if t == 1])
p_hat = np.concatenate([p for p, t in zip(al.p_, y) if t == 1])
ax1.hist(
    [p_hat[truth == 1], p_hat[truth == 0]],
    bins=20,
    range=(0, 1),
    stacked=True,
    color=["tab:red", "tab:blue"],
    label=["witness", "background"],
)
ax1.set_xlabel("p (ALSVM's final probability of a positive label)")
ax1.set_ylabel("instances of positive bags")
ax1.legend()
ax1.set_title("Instance labels found")
fig.tight_layout()
plt.show()
