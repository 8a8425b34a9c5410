"""
Probability calibration
=======================

``probability=True`` fits Platt's sigmoid on out-of-fold scores of a 5-fold internal
cross-validation; ``probability="ensemble"`` keeps the five fold models, each with its own
sigmoid, and averages them. Both are compared here with the naive ``1 / (1 + exp(-F))`` of the
raw score on held-out bags of MUSK1 (bundled with the package): reliability diagram, log-loss and
Brier score.
"""

import matplotlib.pyplot as plt
import milsvm
import numpy as np
from milsvm.datasets import load_musk1
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

bags, y = load_musk1()
idx_train, idx_test = train_test_split(
    np.arange(len(bags)), test_size=0.5, stratify=y, random_state=0
)
train, test = [bags[i] for i in idx_train], [bags[i] for i in idx_test]


def model(probability):
    return make_pipeline(milsvm.BagStandardScaler(), milsvm.NSK(C=10, probability=probability))


raw = model(False).fit(train, y[idx_train])
curves = {"1 / (1 + exp(-F))": 1 / (1 + np.exp(-raw.decision_function(test)))}
for probability in (True, "ensemble"):
    curves[f"probability={probability!r}"] = (
        model(probability).fit(train, y[idx_train]).predict_proba(test)[:, 1]
    )

fig, ax = plt.subplots(figsize=(6, 5))
ax.plot([0, 1], [0, 1], "k:", label="perfectly calibrated")
for name, p in curves.items():
    frac, mean = calibration_curve(y[idx_test], p, n_bins=6, strategy="quantile")
    ax.plot(
        mean,
        frac,
        marker="o",
        label=f"{name}: log-loss {log_loss(y[idx_test], p):.3f}, "
        f"Brier {brier_score_loss(y[idx_test], p):.3f}",
    )
ax.set_xlabel("predicted probability")
ax.set_ylabel("fraction of positive bags")
ax.set_title("NSK on MUSK1, held-out half")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
plt.show()
