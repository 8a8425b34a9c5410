"""
Finding the witnesses
=====================

A positive bag is positive because of a few *witness* instances. When the instance labels are
known, as for :func:`milsvm.datasets.make_embedding_bags`, we can check how well each estimator's
instance scores (``instance_decision_function``) rank the witnesses of held-out bags above the
other instances: the instance-level AUROC. Max-pooling estimators are trained to put one witness
on top of each positive bag; mean-pooling ones spread the evidence over the bag.
"""

import matplotlib.pyplot as plt
import milsvm
import numpy as np
from milsvm.datasets import make_embedding_bags
from sklearn.metrics import roc_auc_score

bags, y, inst = make_embedding_bags(
    n_bags=120,
    mean_bag_size=40,
    n_features=32,
    witness_rate=0.1,
    random_state=0,
    return_instance_labels=True,
)
train, test = np.arange(0, 120, 2), np.arange(1, 120, 2)
# standardise with the training instances (a pipeline would too, but here we want the estimators'
# own instance scores)
scaler = milsvm.BagStandardScaler().fit([bags[i] for i in train])
bags = scaler.transform(bags)

estimators = {
    "miSVM (linear)": milsvm.miSVM(kernel="linear", C=1.0),
    "MISVM (linear)": milsvm.MISVM(kernel="linear", C=1.0),
    "SVMCC": milsvm.SVMCC(kernel="rbf", C=10),
    "sMIL": milsvm.sMIL(C=10),
    "sAwMIL": milsvm.sAwMIL(kernel="rbf", C=10),
    "SparseMI": milsvm.SparseMI(n_xv=10, C=10, random_state=0),
    "NSK": milsvm.NSK(C=10),
    "MILES": milsvm.MILES(C=1.0, n_concepts=200, random_state=0),
}

truth = np.concatenate([inst[i] for i in test])
results = {}
for name, est in estimators.items():
    est.fit([bags[i] for i in train], y[train])
    scores = np.concatenate(est.instance_decision_function([bags[i] for i in test]))
    bag_auc = roc_auc_score(y[test], est.decision_function([bags[i] for i in test]))
    results[name] = (roc_auc_score(truth, scores), bag_auc)
    print(f"{name:16s} instance AUROC {results[name][0]:.3f}   bag AUROC {bag_auc:.3f}")

# %%
names = list(results)
fig, ax = plt.subplots(figsize=(9, 4))
x = np.arange(len(names))
ax.bar(x - 0.2, [results[n][0] for n in names], width=0.4, label="instances (witnesses)")
ax.bar(x + 0.2, [results[n][1] for n in names], width=0.4, label="bags")
ax.set_xticks(x, names, rotation=30, ha="right")
ax.set_ylim(0.4, 1.0)
ax.axhline(0.5, color="k", lw=0.8, ls=":")
ax.set_ylabel("AUROC on held-out bags")
ax.legend()
fig.tight_layout()
plt.show()
