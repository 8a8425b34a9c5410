"""The one registry of estimators.

Every concrete estimator class registers itself when its family module is imported (through
``MILClassifier.__init_subclass__``), in definition order. :func:`milsvm.load`, the command line
(``milsvm models``, ``--model NAME``) and ``milsvm.__all__`` read this registry; nothing else
lists the estimators.
"""

from __future__ import annotations

import difflib

__all__ = ["ESTIMATORS", "register", "resolve", "summary", "parameter_docs", "UnknownEstimator"]

#: Estimator classes by name, in registration order.
ESTIMATORS: dict[str, type] = {}


class UnknownEstimator(ValueError):
    """A name that is no estimator's, or that matches several case-insensitively."""


def register(cls):
    """Add ``cls`` under its class name (a second class of the same name is an error)."""
    name = cls.__name__
    if name in ESTIMATORS and ESTIMATORS[name] is not cls:
        raise RuntimeError(f"two estimators are called {name}: {ESTIMATORS[name]!r} and {cls!r}")
    ESTIMATORS[name] = cls
    return cls


def summary(cls):
    """The one-line description of an estimator: the first line of its docstring."""
    doc = (cls.__doc__ or "").strip()
    return " ".join(doc.split("\n\n", 1)[0].split()) if doc else cls.__name__


def parameter_docs(cls):
    """``{name: description}`` from the ``Parameters`` section of the estimator's docstring
    (numpydoc: ``name : type, default=...`` then indented lines; ``a, b : ...`` lines name
    several)."""
    import inspect

    doc = inspect.cleandoc(cls.__doc__ or "")
    lines = (
        doc.split("Parameters\n----------\n", 1)[-1].split("\n\n")[0].splitlines()
        if "Parameters" in doc
        else []
    )
    out, names = {}, []
    for line in lines:
        if line and not line.startswith(" "):
            names = [n.strip() for n in line.split(":", 1)[0].split(",") if n.strip()]
            for n in names:
                out[n] = ""
        elif names:
            for n in names:
                out[n] = (out[n] + " " + line.strip()).strip()
    return out


def resolve(name):
    """The estimator class called ``name``: an exact match, else a unique case-insensitive one.

    Raises
    ------
    UnknownEstimator
        For an unknown name (with the closest names, "did you mean ...", and the full list) or a
        name that matches several estimators case-insensitively (``misvm``: ``miSVM`` or
        ``MISVM``).
    """
    if name in ESTIMATORS:
        return ESTIMATORS[name]
    matches = [n for n in ESTIMATORS if n.lower() == name.lower()]
    if len(matches) == 1:
        return ESTIMATORS[matches[0]]
    if matches:
        options = "; ".join(f"{m} is the {summary(ESTIMATORS[m])}" for m in matches)
        raise UnknownEstimator(
            f"model name {name!r} is ambiguous: {options}; write the name in its exact case"
        )
    lowered = {n.lower(): n for n in ESTIMATORS}
    close = [
        lowered[c] for c in difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.6)
    ]
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise UnknownEstimator(
        f"unknown model {name!r}{hint} (choose one of {', '.join(ESTIMATORS)}, case-insensitive)"
    )
