"""What the decision table says about each estimator beyond what its class declares.

The generator (``milsvm_docs.py``) reads the estimators from the registry
(:mod:`milsvm._registry`) and takes from their classes what they declare (summary line, default
kernel, linear solver, ``C`` path, multi-class); the columns below are judgements the classes do
not carry. The build fails when an estimator of the registry has no entry here, or an entry names
no estimator, so a new estimator cannot be left out of the table.

Columns:

- ``family``: the group the guide discusses it under;
- ``model``: what is learned and how a bag is scored (the pooling of the instance scores);
- ``size``: the data it suits (bags x instances per bag; kernel methods keep an instance or bag
  kernel in memory, so the size matters most there);
- ``speed``: fit time relative to the others at their defaults, on a set of about 10,000 instances
  (the benchmarks page has the measurements);
- ``instances``: what its instance scores mean, i.e. what :meth:`explain` and the heatmaps show.
"""

from milsvm import _core

FAST, MODERATE, SLOW = "fast", "moderate", "slow"

FACETS = {
    "SparseMI": dict(
        family="Label-mean (Fu et al.)",
        model="bag = mean of instance scores over `n_xv` learned expansion vectors",
        size="any: the model has `n_xv` vectors; `n_basis=` for sparse text",
        speed=FAST,
        instances="shares of the bag score (mean pooling)",
    ),
    "RSVM": dict(
        family="Label-mean (Fu et al.)",
        model="SparseMI's problem on random expansion vectors",
        size="any; a baseline for SparseMI",
        speed=FAST,
        instances="shares of the bag score (mean pooling)",
    ),
    "MIKernel": dict(
        family="Label-mean (Fu et al.)",
        model="set-kernel SVM, every training instance a basis vector",
        size="up to a few thousand bags (a bag x bag kernel)",
        speed=FAST,
        instances="shares of the bag score (mean pooling)",
    ),
    "ReducedSet": dict(
        family="Label-mean (Fu et al.)",
        model="MIKernel compressed to `n_xv` vectors",
        size="as MIKernel; a small model to serve",
        speed=MODERATE,
        instances="shares of the bag score (mean pooling)",
    ),
    "NSK": dict(
        family="Set kernels",
        model="hinge SVM on the normalised set kernel (mean or normalised mean)",
        size="up to about ten thousand bags",
        speed=FAST,
        instances="shares of the bag score (mean pooling)",
    ),
    "sMIL": dict(
        family="Set kernels",
        model="NSK for sparse positive bags (few witnesses)",
        size="kernel: about 10k instances; linear: any",
        speed=MODERATE,
        instances="shares of the bag score (shifted mean)",
    ),
    "ALSVM": dict(
        family="Annealing (Gehler & Chapelle)",
        model="instance classifier, annealed instance labels; bag = max",
        size=f"any: full basis to {_core.AUTO_FULL_BASIS_MAX:,} instances, "
        f"{_core.AUTO_N_XV} centroids above, or linear",
        speed=MODERATE,
        instances="instance labels; the witness (max pooling)",
    ),
    "AWSVM": dict(
        family="Annealing (Gehler & Chapelle)",
        model="instance classifier, annealed witness per positive bag; bag = max",
        size="any: as ALSVM",
        speed=MODERATE,
        instances="instance labels; the witness (max pooling)",
    ),
    "ALPSVM": dict(
        family="Annealing (Gehler & Chapelle)",
        model="ALSVM with a prior on the share of positives per bag; bag = max",
        size="any: as ALSVM",
        speed=MODERATE,
        instances="instance labels; the witness (max pooling)",
    ),
    "miSVM": dict(
        family="Annealing (Gehler & Chapelle)",
        model="Andrews et al.'s instance-label heuristic; bag = max",
        size="any: as ALSVM; linear for millions of instances",
        speed=FAST,
        instances="instance labels; the witness (max pooling)",
    ),
    "MISVM": dict(
        family="Annealing (Gehler & Chapelle)",
        model="Andrews et al.'s witness heuristic; bag = max",
        size="any: as ALSVM; linear for millions of instances",
        speed=FAST,
        instances="instance labels; the witness (max pooling)",
    ),
    "SVMCC": dict(
        family="Convex combination (Yang & Deng)",
        model="positive bag = convex combination of its instances; bag = max",
        size="kernel: about 10k instances; linear: any, sparse kept sparse",
        speed=FAST,
        instances="instance labels; the witness (max pooling)",
    ),
    "stMIL": dict(
        family="Transductive (CCCP)",
        model="sMIL plus a transductive hinge on positive bags' instances",
        size="about 10k instances (one kernel over all of them)",
        speed=SLOW,
        instances="shares of the bag score (shifted mean)",
    ),
    "MissSVM": dict(
        family="Transductive (CCCP)",
        model="semi-supervised SVM, positive bags' instances unlabelled; bag = max",
        size="about 10k instances (one kernel over all of them)",
        speed=SLOW,
        instances="instance labels; the witness (max pooling)",
    ),
    "OneClassMISVM": dict(
        family="One-class",
        model="support of the positive bags' instances; bag = max",
        size="about 10k instances; two classes only",
        speed=FAST,
        instances="instance scores for ranking (instance AUROC)",
    ),
    "SIL": dict(
        family="Baselines",
        model="one SVM over all instances, each labelled by its bag; bag = max",
        size="about 10k instances (an instance kernel)",
        speed=MODERATE,
        instances="instance labels; the witness (max pooling)",
    ),
    "STK": dict(
        family="Baselines",
        model="SVM on each bag's per-feature minima and maxima",
        size="any number of instances; up to about ten thousand bags",
        speed=FAST,
        instances="none: the score is no pooling of instance scores",
    ),
    "MILES": dict(
        family="Embedding (Chen, Bi & Wang)",
        model="bags embedded by similarity to concepts; sparse 1-norm SVM selects a few",
        size="bags x concepts embedding in memory; `n_concepts=` for large sets",
        speed=SLOW,
        instances="shares that sum to the bag score (selected concepts)",
    ),
    "sbMIL": dict(
        family="Two-stage (on sMIL)",
        model="sMIL ranks, the top `eta` share relabelled, then SIL; bag = max",
        size="about 10k instances; linear: any",
        speed=MODERATE,
        instances="instance labels; the witness (max pooling)",
    ),
    "sAwMIL": dict(
        family="Two-stage (on sMIL)",
        model="sMIL, then an instance SVM on the top `eta` quantile; bag = max",
        size="about 10k instances; linear (its default): any",
        speed=FAST,
        instances="instance labels; the witness (max pooling)",
    ),
}
