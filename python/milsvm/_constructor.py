"""The estimators' constructors, built from their parameter lists.

An estimator declares the names of its constructor's parameters, in order (``_init_params``), and
the defaults that are its own (``_init_defaults``); :func:`build_init` makes its ``__init__``
from them. Every other default is read: a parameter of the core from the fit's declaration
(``milsvm._core.<_core_fit>_hyperparameters()``, the Rust ``hyperparams!`` table), a parameter
of the Python layer from :data:`PYTHON_DEFAULTS`. So a default is written once.

The ``__init__`` built is an ordinary function (as ``dataclasses`` builds its ``__init__``):
positional-or-keyword parameters with real ``__defaults__``, so ``inspect.signature``,
scikit-learn's ``get_params`` / ``clone`` / ``repr``, ``help`` and Sphinx see the signature.
Static type checkers read it from the generated stubs next to the family modules
(``scripts/gen_stub.py``).
"""

from __future__ import annotations

import keyword

from . import _core

__all__ = [
    "PYTHON_DEFAULTS",
    "SVM_HEAD",
    "RUN_TAIL",
    "SEEDED_TAIL",
    "INNER_TAIL",
    "SMO_TAIL",
    "build_init",
    "defaults",
]

#: Defaults of the constructor parameters the core does not take (``_python_only``, and
#: ``random_state``, which reaches the core as ``seed``).
PYTHON_DEFAULTS = {
    "random_state": None,
    "probability": False,
    "verbose": 0,
    "init": "random",
}

# Runs of parameters that several estimators declare in the same order.
#: The loss weight and the instance kernel, first in most estimators.
SVM_HEAD = ("C", "kernel", "gamma")
#: How a fit runs and reports, last in every estimator.
RUN_TAIL = ("probability", "n_jobs", "verbose")
#: :data:`RUN_TAIL` after the seed of the estimators with random choices.
SEEDED_TAIL = ("random_state", *RUN_TAIL)
#: The inner solver's settings, then :data:`SEEDED_TAIL`.
INNER_TAIL = ("inner_tol", "inner_max_iter", *SEEDED_TAIL)
#: The parameters after the method's own ones in the estimators fitted by SMO solves (NSK,
#: sMIL, SIL, STK, sbMIL, sAwMIL); ``_docs.SMO_PARAMS`` documents them.
SMO_TAIL = ("class_weight", "inner_tol", "inner_max_iter", *RUN_TAIL)


def defaults(cls):
    """``{name: default}`` of ``cls``'s constructor parameters, in order: the class's own
    ``_init_defaults``, else the core's declaration, else :data:`PYTHON_DEFAULTS`."""
    core = {name: d for name, d, _ in getattr(_core, f"{cls._core_fit}_hyperparameters")()}
    own = cls._init_defaults
    out = {}
    for name in cls._init_params:
        if name in own:
            out[name] = own[name]
        elif name in core:
            out[name] = core[name]
        elif name in PYTHON_DEFAULTS:
            out[name] = PYTHON_DEFAULTS[name]
        else:
            raise TypeError(
                f"{cls.__name__}: parameter {name!r} has no default (not declared by "
                f"{cls._core_fit}, not in _constructor.PYTHON_DEFAULTS, not in _init_defaults)"
            )
    return out


def build_init(cls):
    """``cls.__init__`` with the parameters ``cls._init_params`` and their :func:`defaults`; it
    stores each argument as the attribute of its name (scikit-learn's contract)."""
    names = list(cls._init_params)
    if len(set(names)) != len(names) or not all(
        n.isidentifier() and not keyword.iskeyword(n) for n in names
    ):
        raise TypeError(f"{cls.__name__}._init_params must be distinct identifiers, got {names}")
    values = defaults(cls)
    namespace = {}
    exec(f"def __init__(self, {', '.join(names)}):\n    self._store(locals())\n", namespace)
    init = namespace["__init__"]
    init.__defaults__ = tuple(values.values())
    init.__module__ = cls.__module__
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init
