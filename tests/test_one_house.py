"""What every estimator shares, checked on every estimator of the registry: parameters that the
core declares (names, defaults), ``class_weight`` and ``gamma="median"`` on every two-class
estimator, instance scores that pool back to the bag scores, one meaning of ``max_iter``, the
registry as the one list of estimators."""

import ast
import inspect
import re
import warnings

import milsvm
import numpy as np
import pytest
from conftest import easy_bags, fit_quietly, make_fast, three_class_bags
from milsvm import _constructor, _core, _registry
from milsvm._base import MILClassifier
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

ALL = list(_registry.ESTIMATORS.values())
TWO_CLASS = [c for c in ALL if c._multiclass]
#: The estimators with instance scores (STK scores a bag by its min/max statistics: none).
WITH_INSTANCE_SCORES = [c for c in ALL if hasattr(make_fast(c), "instance_decision_function")]
make = make_fast


def test_the_registry_is_the_one_list():
    names = list(_registry.ESTIMATORS)
    assert names == [
        "SparseMI",
        "RSVM",
        "MIKernel",
        "ReducedSet",
        "NSK",
        "sMIL",
        "ALSVM",
        "AWSVM",
        "ALPSVM",
        "miSVM",
        "MISVM",
        "SVMCC",
        "stMIL",
        "MissSVM",
        "OneClassMISVM",
        "SIL",
        "STK",
        "MILES",
        "sbMIL",
        "sAwMIL",
    ]
    assert set(names) <= set(milsvm.__all__)
    assert all(getattr(milsvm, n) is _registry.ESTIMATORS[n] for n in names)
    with pytest.raises(_registry.UnknownEstimator, match="did you mean SparseMI"):
        _registry.resolve("SparseMl")


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_parameter_is_declared_by_the_core_with_the_same_default(cls):
    specs = {
        name: default for name, default, _ in getattr(_core, f"{cls._core_fit}_hyperparameters")()
    }
    fixed = cls._core_fixed
    assert set(fixed) <= set(specs), (
        f"{cls.__name__}._core_fixed names no parameter of {cls._core_fit}"
    )
    # the parameters the class declares Python's own, and random_state, which reaches the core
    # as seed (MILClassifier._core_params)
    python_only = set(cls._python_only) | {"random_state"}
    for name, param in inspect.signature(cls).parameters.items():
        if name in python_only:
            continue
        assert name in specs, f"{cls.__name__}.{name} is not a parameter of {cls._core_fit}"
        if name in fixed:
            continue
        # a default of the class's own is declared as such (_init_defaults), nowhere else
        expected = cls._init_defaults.get(name, specs[name])
        assert param.default == expected, (
            f"{cls.__name__}.{name}: {param.default!r} != {expected!r}"
        )
    for name, default in cls._init_defaults.items():
        assert name in specs and default != specs[name], (
            f"{cls.__name__}._init_defaults[{name!r}] repeats the core's default or names no "
            f"parameter of {cls._core_fit}"
        )
    assert "seed" not in specs or "random_state" in inspect.signature(cls).parameters


@pytest.mark.parametrize("cls", TWO_CLASS, ids=lambda c: c.__name__)
def test_class_weight_on_every_two_class_estimator(cls):
    bags, y = easy_bags(3, n_bags=24)
    plain = fit_quietly(make(cls, C=1.0), bags, y).decision_function(bags)
    weighted = [
        fit_quietly(make(cls, C=1.0, class_weight=w), bags, y).decision_function(bags)
        for w in ({0: 20.0}, {1: 0.01})
    ]
    assert any(not np.allclose(plain, s) for s in weighted), "class_weight had no effect"
    same = fit_quietly(make(cls, C=1.0, class_weight={0: 1.0, 1: 1.0}), bags, y).decision_function(
        bags
    )
    np.testing.assert_array_equal(same, plain)
    with pytest.raises(ValueError, match="class_weight names labels that are not in y"):
        make(cls, class_weight={7: 2.0}).fit(bags, y)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_gamma_median_on_every_estimator(cls):
    bags, y = easy_bags(4)
    est = fit_quietly(make(cls, gamma="median"), bags, y)
    X = np.concatenate(
        bags if cls is not milsvm.OneClassMISVM else [b for b, label in zip(bags, y) if label == 1]
    )
    if cls is milsvm.STK:  # the kernel sees the bags' min/max statistic vectors
        X = np.array([np.concatenate([b.min(axis=0), b.max(axis=0)]) for b in bags])
    assert est.gamma_ == pytest.approx(
        _core.kernel_width(np.ascontiguousarray(X), "median"), rel=1e-12
    )
    with pytest.raises(ValueError, match="gamma must be 'scale', 'median' or a finite number > 0"):
        make(cls, gamma="auto").fit(bags, y)


@pytest.mark.parametrize("cls", WITH_INSTANCE_SCORES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("multiclass", [False, True])
def test_instance_scores_pool_back_to_the_bag_scores(cls, multiclass):
    if multiclass and not cls._multiclass:
        pytest.skip("binary only")
    bags, y = three_class_bags(n_bags=24) if multiclass else easy_bags(5)
    extra = {"norm": "l2"} if cls is milsvm.NSK else {}
    est = fit_quietly(make(cls, **extra), bags, y)
    scores = est.decision_function(bags)
    # MILES ("xv_max"): the instance scores are shares that sum to the bag score
    pool = {"max": np.max, "xv_max": np.sum}.get(est.model_.pooling, np.mean)
    pooled = np.array([pool(s, axis=0) for s in est.instance_decision_function(bags)])
    np.testing.assert_allclose(pooled, scores, rtol=1e-12, atol=1e-12)
    labels = est.predict_instances(bags)
    assert [len(a) for a in labels] == [len(b) for b in bags]


def test_only_stk_has_no_instance_scores():
    assert [c.__name__ for c in ALL if c not in WITH_INSTANCE_SCORES] == ["STK"]


def test_instance_scores_through_a_pipeline():
    from sklearn.pipeline import make_pipeline

    bags, y = easy_bags(6)
    pipe = make_pipeline(milsvm.BagStandardScaler(), milsvm.NSK(C=10.0)).fit(bags, y)
    inst = pipe[-1].instance_decision_function(pipe[:-1].transform(bags))
    np.testing.assert_allclose([s.mean() for s in inst], pipe.decision_function(bags), rtol=1e-12)


@pytest.mark.parametrize(
    "cls",
    [c for c in ALL if "max_iter" in inspect.signature(c).parameters],
    ids=lambda c: c.__name__,
)
def test_max_iter_caps_the_outer_loop(cls):
    bags, y = easy_bags(7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = make(cls, max_iter=1).fit(bags, y)
    assert est.n_iter_ <= 1
    stopped = [
        w
        for w in caught
        if issubclass(w.category, ConvergenceWarning) and "max_iter=1" in str(w.message)
    ]
    assert est.converged_ or stopped, "a capped outer loop must say so"


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_type_and_value_errors_name_the_parameter(cls):
    bags, y = easy_bags(8)
    with pytest.raises(TypeError, match="n_jobs must be None, -1 or an integer >= 1"):
        make(cls, n_jobs="many").fit(bags, y)
    with pytest.raises(ValueError, match="kernel must be one of 'rbf', 'linear', got 'poly'"):
        make(cls, kernel="poly").fit(bags, y)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_the_constructor_is_built_from_the_parameter_list(cls):
    """``__init__`` takes ``_init_params`` in order, positionally or by keyword, with the
    defaults read (``_constructor.defaults``), and stores each argument; ``clone`` and
    ``get_params`` see it."""
    params = inspect.signature(cls).parameters
    assert list(params) == list(cls._init_params)
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params.values())
    defaults = _constructor.defaults(cls)
    assert {n: p.default for n, p in params.items()} == defaults
    assert cls().get_params(deep=False) == defaults
    first = cls._init_params[0]
    value = 0.5 if isinstance(defaults[first], float) else defaults[first]
    est = cls(value)
    assert getattr(est, first) == value
    assert clone(est).get_params(deep=False) == est.get_params(deep=False)


def test_a_constructor_parameter_without_a_default_is_refused():
    with pytest.raises(TypeError, match="'no_such' has no default"):

        class _Unknown(MILClassifier):
            _core_fit = "fit_sil"
            _init_params = ("C", "no_such")

    with pytest.raises(TypeError, match="distinct identifiers"):

        class _Twice(MILClassifier):
            _core_fit = "fit_sil"
            _init_params = ("C", "C")


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_the_docstring_states_the_signature_defaults(cls):
    """Every ``name : type, default=value`` line of the ``Parameters`` section gives the default
    of the signature (which the test above checks against the core's declaration)."""
    doc = inspect.cleandoc(cls.__doc__)
    if "Parameters\n----------\n" not in doc:  # RSVM: "the parameters of :class:`SparseMI`"
        assert ":class:`" in doc, f"{cls.__name__} documents no parameters"
        return
    section = doc.split("Parameters\n----------\n", 1)[1].split("\n\n")[0]
    signature = inspect.signature(cls).parameters
    stated = 0
    for line in section.splitlines():
        head = re.match(r"^([\w, ]+) : .*, default=(.+)$", line)
        if not head:
            continue
        for name in (n.strip() for n in head.group(1).split(",")):
            assert name in signature, f"{cls.__name__} documents {name}, which is not a parameter"
            text = head.group(2).strip()
            default = signature[name].default
            try:
                stated_value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                stated_value = text
            assert stated_value == default and type(stated_value) is type(default), (
                f"{cls.__name__}.{name}: the docstring says default={text}, "
                f"the signature {default!r}"
            )
            stated += 1
    assert stated > 0


def test_the_type_stubs_match_the_compiled_core():
    """``_core.pyi`` declares exactly the public names of ``milsvm._core``, and every typed fit
    result declares the attributes the compiled class has."""
    import ast
    from pathlib import Path

    stub = ast.parse((Path(milsvm.__file__).parent / "_core.pyi").read_text())
    declared = {n.name: n for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared.update({n.target.id: n for n in stub.body if isinstance(n, ast.AnnAssign)})
    declared.update({t.id: n for n in stub.body if isinstance(n, ast.Assign) for t in n.targets})
    declared = {
        k: v
        for k, v in declared.items()
        if not k.startswith("_")
        and k not in ("CsrParts", "Instances", "Params", "Specs", "Progress")
    }
    public = {n for n in dir(_core) if not n.startswith("_")}
    assert set(declared) == public
    for name, node in declared.items():
        if isinstance(node, ast.ClassDef) and name.endswith("Fit"):
            attrs = {a.target.id for a in node.body if isinstance(a, ast.AnnAssign)}
            cls = getattr(_core, name)
            assert attrs == {a for a in dir(cls) if not a.startswith("_")}, name


def _declarations():
    """``scripts/gen_stub.py``'s reading of the Rust declarations: the core's records and the
    binding's classes (one parser for the stub and these tests)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "gen_stub.py"
    spec = importlib.util.spec_from_file_location("gen_stub", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Source(module.SOURCES)


def test_every_record_field_reaches_its_python_class():
    """Every record the core declares by ``record!`` has its Python class (its field list passed
    to ``fit_record!``), and that class holds exactly the record's fields (under the names of
    their ``#[py(name = ...)]``), each with the record's doc."""
    source = _declarations()
    assert set(source.records) == set(source.record_classes), "a record without its class"
    assert len(source.records) >= 7
    for fields_macro, fields in source.records.items():
        name = source.record_classes[fields_macro]
        cls = getattr(_core, name)
        exposed = {a for a in dir(cls) if not a.startswith("_")}
        assert {f for f, _ in fields} == exposed, name
        for f, _ in fields:
            assert (getattr(cls, f).__doc__ or "").strip(), f"{name}.{f} has no doc"


def _documented_attributes(cls):
    doc = inspect.cleandoc(cls.__doc__)
    if "Attributes\n----------\n" not in doc:
        return []
    section = doc.split("Attributes\n----------\n", 1)[1]
    names = []
    for head in re.findall(r"^(\w[\w, ]*) :", section, re.M):
        names += [n.strip() for n in head.split(",")]
    return names


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_documented_attribute_is_set_by_fit(cls):
    """Each attribute of the docstring's ``Attributes`` section exists on the fitted estimator."""
    names = _documented_attributes(cls)
    if not names:  # RSVM: "the attributes of :class:`SparseMI`"
        assert ":class:`" in cls.__doc__, f"{cls.__name__} documents no attributes"
        return
    est = fit_quietly(make(cls), *easy_bags())
    missing = [n for n in names if not hasattr(est, n)]
    assert not missing, f"{cls.__name__} documents {missing}, which fit does not set"


def test_attribute_docs_spliced_from_the_records_are_in_the_docstrings():
    """Each entry that ``_docs.field`` spliced names a field of a core result class, and its
    text, the field's doc, is in the docstring of an estimator that documents the attribute."""
    from milsvm import _docs

    assert len(_docs.FIELD_DOCS) >= 25
    docs = {c: " ".join(inspect.cleandoc(c.__doc__).split()) for c in ALL}
    for (record, field), (attribute, text) in _docs.FIELD_DOCS.items():
        assert hasattr(getattr(_core, record), field), f"{record}.{field} is not in the core"
        users = [c for c, d in docs.items() if f"{attribute} : " in d and text in d]
        assert users, f"{record}.{field}: no docstring holds its text as {attribute}"
