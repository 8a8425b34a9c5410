"""The parameter and attribute descriptions that several estimators share, written once and
spliced into the class docstrings (numpydoc layout, four-space indent); :func:`splice` does the
same for the functions that share descriptions (the dataset readers and generators)."""

from __future__ import annotations

import re
import textwrap

from . import _core
from ._constructor import SMO_TAIL

__all__ = [
    "param",
    "attr",
    "field",
    "FIELD_DOCS",
    "number",
    "SEARCH_RANGES",
    "VALID_VALUES",
    "SMO_PARAMS",
    "SMO_ATTRS",
    "SMO_MAX_ITER",
    "NEWTON_INNER",
    "INNER_TOL_BY_SOLVER",
    "splice",
]


def number(x):
    """``x`` as the docs write a number the core owns (``1e-10``, ``1e-8``, ``5000``)."""
    return re.sub(
        r"e([+-])0*(\d)", lambda m: "e" + m.group(1).replace("+", "") + m.group(2), f"{x:g}"
    )


#: What ``inner_tol=None`` means for the estimators that choose the inner solver
#: (``solver="newton"`` or ``"lbfgs"``): the core's default tolerance of each.
INNER_TOL_BY_SOLVER = (
    f"; None: {number(_core.NEWTON_TOL)} for newton, {number(_core.LBFGS_TOL)} for lbfgs"
)

#: A suggested search range per parameter name (one meaning per name across the estimators;
#: a class may add or override entries in ``_search_ranges``), shown by ``milsvm models NAME``.
SEARCH_RANGES = {
    "C": "0.1 ... 1000, log-spaced (e.g. --grid C=0.1,1,10,100,1000)",
    "gamma": "0.1*scale ... 10*scale, log-spaced (--grid gamma=0.1*scale,scale,10*scale), "
    "or median",
    "kernel": "rbf; linear for high-dimensional (e.g. sparse text) features",
    "class_weight": "None, or balanced when the classes have very different sizes",
    "nu": "0.05 ... 0.8 (e.g. --grid nu=0.1,0.25,0.5,0.75)",
    "C2": "0.1 ... 10, log-spaced",
    "p_star": "0.1 ... 0.9",
    "decay": "1.2 ... 2 (nearer 1: slower cooling, more SVM solves)",
}

#: The valid values of parameters whose reader accepts more than their declared range says.
VALID_VALUES = {
    "gamma": "'scale', 'median' or a finite number > 0",
    "n_jobs": "None, -1 (all cores) or an integer >= 1",
}

_PARAMS = {
    "C": """C : float, default=1.0
    Loss weight (> 0).""",
    "kernel": """kernel : {{"rbf", "linear"}}, default="{default}"
    Instance kernel.""",
    "gamma": """gamma : "scale", "median" or float, default="scale"
    Gaussian width: "scale" is ``1 / (n_features * X.var())`` over the training instances (as
    scikit-learn); "median" is ``1 / (2 sigma^2)`` with ``sigma`` the median pairwise distance
    between training instances (Gehler & Chapelle's ``sigma_emp``); a float is used as given.""",
    "class_weight": """class_weight : None, "balanced" or dict, default=None
    Loss weight per class: bag ``i`` costs ``C * weight[y_i]``. "balanced" weighs the positive
    and the negative bags of each binary problem by ``n_bags / (2 n_side)``.""",
    "random_state": """random_state : int, RandomState or None, default=None
    Seed of the random choices. Results do not depend on ``n_jobs``.""",
    "n_jobs": """n_jobs : int or None, default=None
    Threads (None or -1: all cores). Results do not depend on it. ``n_jobs=1`` runs on the
    calling thread (no hand-off to a worker thread: the lowest latency for small fits and
    predictions; Ctrl-C still stops a fit).""",
    "probability": """probability : bool or "ensemble", default=False
    Calibrate on a 5-fold internal cross-validation (five more fits, seeded by
    ``random_state``, else fixed), so that :meth:`predict_proba` and :meth:`predict_log_proba`
    exist; it needs at least 5 bags of every class. ``True``: Platt's sigmoid of the model's
    score, fitted on the held-out scores of all folds (libsvm's protocol). ``"ensemble"``: the
    five fold models, each with a sigmoid fitted on its own held-out part, and the mean of their
    probabilities (``CalibratedClassifierCV(ensemble=True)``); better where the final model's
    scores are on another scale than the fold models' (a linear MISVM on standardised text:
    ``benches/RESULTS.md``, "Probabilities"), at five more models in the file. Either is saved in
    the model file.""",
    "verbose": """verbose : int, default=0
    0: silent; 1: a progress bar on stderr when it is a terminal, and a summary; 2: also the
    objective of every step.""",
    "inner_tol": """inner_tol : float or None, default={default}
    Relative tolerance of the inner solver, in (0, 1){none}.""",
    "inner_max_iter": """inner_max_iter : int or None, default={default}
    Iteration cap of the inner solver{none}.""",
}

_ATTRS = {
    "xv_": """xv_ : ndarray of shape (n_xv, n_features)
    The expansion vectors.""",
    "coef_": """coef_ : ndarray of shape (n_xv,) or (n_classes, n_xv)
    Expansion coefficients.""",
    "intercept_": """intercept_ : float or ndarray of shape (n_classes,)
    Bias ``b``.""",
    "gamma_": """gamma_ : float
    The kernel width used.""",
    "classes_": """classes_ : ndarray
    Class labels.""",
    "n_features_in_": """n_features_in_ : int
    Number of features of an instance.""",
    "fit_time_": """fit_time_ : float
    Seconds spent in ``fit``.""",
    "converged_": """converged_ : bool
    Whether the outer loop met its stopping rule before ``max_iter`` (else a
    ``ConvergenceWarning``).""",
}


def _indent(text):
    return "\n".join(("    " + line) if line else line for line in text.splitlines())


def param(*names, **formats):
    """The shared descriptions of ``names``, each formatted with ``formats`` (``default``,
    ``none``), for a ``Parameters`` section."""
    return "\n".join(
        _indent(_PARAMS[n].format(**{"default": "", "none": "", **formats.get(n, {})}))
        for n in names
    )


def splice(shared):
    """A decorator that writes ``shared[name]`` (numpydoc text) into a function's docstring where
    a line ``<name>`` stands, at that line's indent: the function form of :func:`param` (a
    function's docstring cannot be an f-string). A marker without its text is a ``KeyError`` at
    import."""

    def decorate(func):
        if func.__doc__:  # None under ``python -OO``
            func.__doc__ = re.sub(
                r"^( *)<(\w+)>$",
                lambda m: textwrap.indent(shared[m.group(2)], m.group(1)),
                func.__doc__,
                flags=re.MULTILINE,
            )
        return func

    return decorate


def attr(*names):
    """The shared descriptions of ``names`` for an ``Attributes`` section."""
    return "\n".join(_indent(_ATTRS[n]) for n in names)


#: ``{(result class, field): (attribute, text)}``: every fitted attribute whose entry
#: :func:`field` spliced from the core's record, and the text it took from the field's doc.
FIELD_DOCS = {}


def _rst(text):
    """A Rust doc comment as docstring text: ``code`` for Markdown's `code` and intra-doc
    links, one paragraph."""
    text = re.sub(r"\[`([^`]+)`\](?:\([^)]*\))?", r"`\1`", " ".join(text.split()))
    return re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text)


def field(record, name, kind, attribute=None, more=""):
    """The ``Attributes`` entry of the fitted attribute ``attribute`` (default ``name + "_"``), of
    type ``kind``, that is the field ``name`` of the core's result class ``record`` as it is
    (a per-problem field: one problem's entry for two classes): its text is the field's doc, the
    Rust record's doc comment (``crate::record::record!``), so the words exist once; ``more``
    follows it. A leading "Per problem:" goes (``kind`` says it)."""
    doc = _rst(getattr(getattr(_core, record), name).__doc__ or "")
    if not doc:
        raise ValueError(f"{record}.{name} has no doc in the core")
    doc = re.sub(r"^Per problem(?:,|:) (\w)", lambda m: m.group(1).upper(), doc)
    attribute = attribute or name + "_"
    FIELD_DOCS[(record, name)] = (attribute, doc)
    text = textwrap.fill(
        f"{doc} {more}".strip(), width=100, initial_indent=" " * 8, subsequent_indent=" " * 8
    )
    return f"    {attribute} : {kind}\n{text}"


#: ``inner_max_iter`` of the estimators whose inner solver is the SMO.
SMO_MAX_ITER = {
    "default": "None",
    "none": " (None: the solver's default; a ``ConvergenceWarning`` when it is hit)",
}

#: ``inner_tol`` and ``inner_max_iter`` of the estimators that choose a Newton or an L-BFGS inner
#: solver (``solver="newton"`` or ``"lbfgs"``).
NEWTON_INNER = {
    "inner_tol": {"default": "None", "none": INNER_TOL_BY_SOLVER},
    "inner_max_iter": {"default": "1000"},
}

#: The shared parameters of the estimators fitted by SMO solves (``_constructor.SMO_TAIL``).
SMO_PARAMS = param(*SMO_TAIL, inner_tol={"default": "1e-3"}, inner_max_iter=SMO_MAX_ITER)

#: The end of the ``Attributes`` of the estimators fitted by SMO solves: the solves' record, then
#: what every estimator has.
SMO_ATTRS = f"""{field("SvmFit", "n_iter", "int")}
{field("SvmFit", "inner_converged", "bool", "converged_")}
{attr("gamma_", "classes_", "n_features_in_", "fit_time_")}"""
