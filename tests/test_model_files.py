"""Model files and the compiled model of every estimator: save / load / pickle give the same
decision values exactly, the serving path equals the batch path, loading rejects every
inconsistency with one ValueError naming the field, and the Rust example program
(``examples/score_bags.rs``, no Python) reproduces Python's decision values to 1e-12 relative
from a MILL file and from a CSV file.
"""

import json
import pickle
from pathlib import Path

import milsvm
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import cargo_example, marked_bags, require_cargo
from sklearn.exceptions import NotFittedError

#: (id, estimator factory, multi-class) with parameters fast on the small sets below.
KINDS = [
    ("SparseMI", lambda: milsvm.SparseMI(n_xv=3, C=10.0, max_iter=3, random_state=0), True),
    ("RSVM", lambda: milsvm.RSVM(n_xv=3, C=10.0, random_state=0), True),
    ("MIKernel", lambda: milsvm.MIKernel(C=10.0), True),
    ("ReducedSet", lambda: milsvm.ReducedSet(n_xv=3, C=10.0, random_state=0), True),
    ("NSK", lambda: milsvm.NSK(C=10.0), True),
    ("NSK-l2", lambda: milsvm.NSK(C=10.0, norm="l2"), True),
    ("NSK-linear", lambda: milsvm.NSK(C=1.0, kernel="linear"), False),
    ("sMIL", lambda: milsvm.sMIL(C=10.0), True),
    ("ALSVM", lambda: milsvm.ALSVM(C=10.0, max_iter=5), True),
    ("AWSVM", lambda: milsvm.AWSVM(C=10.0, max_iter=5), False),
    ("ALPSVM", lambda: milsvm.ALPSVM(C=10.0, max_iter=5), False),
    ("miSVM", lambda: milsvm.miSVM(C=10.0, max_iter=5), False),
    ("MISVM", lambda: milsvm.MISVM(C=10.0, max_iter=5), True),
    ("MISVM-reduced", lambda: milsvm.MISVM(C=10.0, max_iter=5, n_xv=4, random_state=0), False),
    ("SVMCC", lambda: milsvm.SVMCC(C=10.0, max_iter=5), True),
    ("SVMCC-rbf", lambda: milsvm.SVMCC(C=10.0, kernel="rbf", max_iter=5), False),
    ("OneClassMISVM", lambda: milsvm.OneClassMISVM(max_iter=3), False),
    ("stMIL", lambda: milsvm.stMIL(C=10.0, max_iter=5), True),
    ("stMIL-linear", lambda: milsvm.stMIL(C=1.0, kernel="linear", max_iter=5), False),
    ("MissSVM", lambda: milsvm.MissSVM(C=10.0, max_iter=5), True),
    ("MissSVM-linear", lambda: milsvm.MissSVM(C=1.0, kernel="linear", max_iter=5), False),
    ("SIL", lambda: milsvm.SIL(C=10.0), True),
    ("SIL-linear", lambda: milsvm.SIL(C=1.0, kernel="linear"), False),
    ("STK", lambda: milsvm.STK(C=10.0), True),
    ("STK-linear", lambda: milsvm.STK(C=1.0, kernel="linear"), False),
    ("MILES", lambda: milsvm.MILES(C=10.0), True),
    ("MILES-kmeans", lambda: milsvm.MILES(C=10.0, n_concepts=6, random_state=0), False),
    ("MILES-linear", lambda: milsvm.MILES(C=1.0, kernel="linear"), False),
    ("sbMIL", lambda: milsvm.sbMIL(C=10.0, eta=0.5), True),
    ("sAwMIL", lambda: milsvm.sAwMIL(C=1.0, eta=0.5), True),
    ("sAwMIL-rbf", lambda: milsvm.sAwMIL(C=10.0, kernel="rbf", eta=0.3), False),
]


def make_bags(seed, n_bags=16, d=3, n_classes=2):
    """:func:`marked_bags` with string labels (up to three classes)."""
    bags, y = marked_bags(seed, n_bags, d, n_classes)
    return bags, np.array(["neg", "pos", "third"])[y] if n_classes <= 3 else y


def fitted(kind, n_classes=2):
    name, make, _ = next(k for k in KINDS if k[0] == kind)
    bags, y = make_bags(0, n_classes=n_classes)
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return make().fit(bags, y), bags, y


def cases():
    for name, _, multi in KINDS:
        yield pytest.param(name, 2, id=name)
        if multi:
            yield pytest.param(name, 3, id=f"{name}-3class")


@pytest.mark.parametrize("kind, n_classes", list(cases()))
def test_save_load_pickle_serving_give_the_same_values(kind, n_classes, tmp_path):
    est, bags, y = fitted(kind, n_classes)
    ref = est.decision_function(bags)
    path = tmp_path / "m.json"
    est.save(path)
    back = milsvm.load(path)
    assert type(back) is type(est)
    np.testing.assert_array_equal(back.classes_, est.classes_)
    np.testing.assert_array_equal(back.decision_function(bags), ref)
    np.testing.assert_array_equal(back.predict(bags), est.predict(bags))
    assert back.get_params() == est.get_params()
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.decision_function(bags), ref)
    # the serving path: one bag at a time, the batch values bit for bit (a large dense basis is
    # scored with the bits of the batch path's matrix products); to rounding only for MILES with
    # a large basis, whose batch path takes the bag-wise maxima from a faer product
    for bag, want in zip(bags, ref):
        if est.model_.n_xv <= 32 or est.model_.pooling != "xv_max":
            np.testing.assert_array_equal(est.decision_function_bag(bag), want)
        else:
            np.testing.assert_allclose(est.decision_function_bag(bag), want, rtol=1e-12, atol=1e-14)
    doc = json.loads(path.read_text())
    assert (
        doc["format"] == "milsvm-model"
        and doc["version"] == 7
        and doc["estimator"] == type(est).__name__
    )
    assert doc["classes"] == est.classes_.tolist()


def test_public_arrays_are_read_only_views_of_the_compiled_model():
    est, bags, y = fitted("SparseMI")
    for arr in (est.xv_, est.coef_, est.model_.intercept):
        assert not arr.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 1.0
    assert np.shares_memory(est.xv_, est.model_.xv)
    assert (
        isinstance(est.model_, milsvm.Model)
        and est.model_.n_xv == 3
        and est.model_.pooling == "mean"
    )


def test_sparse_basis_is_saved_sparse(tmp_path):
    rng = np.random.default_rng(3)
    y = np.arange(20) % 2
    bags = []
    for label in y:
        bag = sp.random(3, 60, density=0.1, random_state=rng, format="csr")
        if label:
            bag = sp.vstack(
                [bag, sp.csr_matrix(([4.0, 4.0], ([0, 0], [0, 1])), shape=(1, 60))]
            ).tocsr()
        bags.append(bag)
    est = milsvm.SparseMI(n_xv=3, n_basis=8, C=10.0, max_iter=3, random_state=0).fit(bags, y)
    assert sp.issparse(est.xv_) and est.model_.is_sparse
    est.save(tmp_path / "s.json")
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["xv"]["layout"] == "csr"
    back = milsvm.load(tmp_path / "s.json")
    assert sp.issparse(back.xv_)
    np.testing.assert_array_equal(back.decision_function(bags), est.decision_function(bags))


def _edited(tmp_path, edit):
    est, bags, y = fitted("SparseMI")
    path = tmp_path / "m.json"
    est.save(path)
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d.update(classes=[0]), "classes"),
        (lambda d: d.update(classes=[0, 1, 2]), "classes"),
        (lambda d: d.update(n_classes=3), "n_classes"),
        (lambda d: d.update(version=99), "version"),
        (lambda d: d.update(format="x"), "format"),
        (lambda d: d.update(pooling="median"), "pooling"),
        (lambda d: d.update(pooling="max"), "pooling"),  # a SparseMI model pools by the mean
        (lambda d: d.update(kernel={"name": "poly"}), "kernel"),
        (lambda d: d.update(estimator="Nope"), "estimator"),
        (lambda d: d["coef"].update(shape=[1, 2]), "coef"),
        (lambda d: d["xv"]["data"].pop(), "xv"),
        (lambda d: d.update(intercept=[0.0, 1.0]), "intercept"),
        (lambda d: d.pop("coef"), "coef"),
    ],
)
def test_load_rejects_every_inconsistency_naming_the_field(tmp_path, edit, field):
    path = _edited(tmp_path, edit)
    with pytest.raises(ValueError, match=field):
        milsvm.load(path)


def test_load_rejects_non_finite_numbers_and_garbage(tmp_path):
    """A model file cannot carry a non-finite number: ``json`` writes NaN as a bare ``NaN``
    token, which is not JSON, and a literal that overflows f64 (``1e999``) is refused by
    serde_json ("number out of range"), in every numeric field. So the finite-value checks of
    ``Model::check`` are reached here through the constructor the estimators build their models
    with (``milsvm.Model``), each message naming its field (a CSR basis is refused before, by
    its row check); and a kernel width <= 0 written in a file reaches ``Model::check`` through
    ``load``."""
    path = _edited(tmp_path, lambda d: d["coef"]["data"].__setitem__(0, float("nan")))
    with pytest.raises(ValueError, match="not valid JSON"):
        milsvm.load(path)
    sentinel = 0.123456789012345  # written as is by json, then replaced by an overflowing literal
    for edit in (
        lambda d: d["xv"]["data"].__setitem__(0, sentinel),
        lambda d: d["coef"]["data"].__setitem__(0, -sentinel),
        lambda d: d["intercept"].__setitem__(0, sentinel),
        lambda d: d["kernel"].update(gamma=sentinel),
    ):
        path = _edited(tmp_path, edit)
        text = path.read_text()
        assert text.count(repr(sentinel)) == 1
        path.write_text(text.replace(repr(sentinel), "1e999"))
        with pytest.raises(ValueError, match="not valid JSON: number out of range"):
            milsvm.load(path)
    for gamma in (0.0, -1.0):
        path = _edited(tmp_path, lambda d: d["kernel"].update(gamma=gamma))
        with pytest.raises(ValueError, match="kernel: the width gamma must be finite and > 0"):
            milsvm.load(path)

    model = fitted("SparseMI")[0].model_
    parts = {"xv": model.xv, "coef": model.coef, "intercept": model.intercept}
    messages = {
        "xv": "xv: the basis holds a non-finite value",
        "coef": "coef: a coefficient is not finite",
        "intercept": "intercept: a bias is not finite",
    }
    for field, message in messages.items():
        for bad in (np.nan, np.inf, -np.inf):
            arrays = {k: np.array(v) for k, v in parts.items()}
            arrays[field].flat[-1] = bad
            with pytest.raises(ValueError, match=message):
                milsvm.Model(
                    arrays["xv"], arrays["coef"], arrays["intercept"], "rbf", model.gamma, 2
                )
    csr = sp.csr_matrix(model.xv)
    data = csr.data.copy()
    data[-1] = np.nan
    sparse_xv = (data, csr.indices.astype(np.int64), csr.indptr.astype(np.int64), csr.shape[1])
    # a CSR basis is refused earlier, when its rows are built (naming the row)
    with pytest.raises(ValueError, match="instance [0-9]+ has a non-finite value"):
        milsvm.Model(sparse_xv, model.coef, model.intercept, "rbf", model.gamma, 2)
    # the unchanged parts build a model (so each refusal above is the non-finite value's)
    milsvm.Model(
        np.array(model.xv), np.array(model.coef), np.array(model.intercept), "rbf", model.gamma, 2
    )
    milsvm.Model((csr.data, *sparse_xv[1:]), model.coef, model.intercept, "rbf", model.gamma, 2)

    path.write_text("{not json")
    with pytest.raises(ValueError, match="JSON"):
        milsvm.load(path)
    with pytest.raises(FileNotFoundError):
        milsvm.load(tmp_path / "missing.json")


def test_serving_path_errors():
    est, bags, y = fitted("SparseMI")
    with pytest.raises(ValueError, match="features"):
        est.decision_function_bag(np.ones((2, 4)))
    with pytest.raises(ValueError, match="non-finite"):
        est.decision_function_bag(np.array([[0.0, np.nan, 1.0]]))
    with pytest.raises(ValueError, match="2-D"):
        est.decision_function_bag(np.ones(3))
    with pytest.raises(ValueError, match="a bag must hold a positive multiple of 3 values, got 0"):
        est.decision_function_bag(np.ones((0, 3)))
    # non-contiguous and integer input are accepted
    bag = np.asfortranarray(bags[0])
    assert est.decision_function_bag(bag) == est.decision_function([bags[0]])[0]
    assert np.isfinite(est.decision_function_bag([[1, 2, 3]]))
    with pytest.raises(NotFittedError):
        milsvm.SparseMI().decision_function_bag(bags[0])


def _write_mill(path, bags):
    with open(path, "w") as fh:
        for i, bag in enumerate(bags):
            dense = bag.toarray() if sp.issparse(bag) else bag
            for p, row in enumerate(dense):
                if sp.issparse(bag):
                    feats = (
                        ",".join(f"{j + 1}:{v!r}" for j, v in enumerate(row) if v != 0) or "1:0.0"
                    )
                else:
                    feats = ",".join(repr(float(v)) for v in row)
                fh.write(f"b{i}_{p},bag{i},0,{feats}\n")


def _write_mil_csv(path, bags):
    """The dense ``bags`` in the ``mil`` package's CSV layout (label, bag id, features)."""
    with open(path, "w") as fh:
        fh.write("label,bag_id," + ",".join(f"f{j}" for j in range(bags[0].shape[1])) + "\n")
        for i, bag in enumerate(bags):
            for row in bag:
                fh.write(f"0,bag{i}," + ",".join(repr(float(v)) for v in row) + "\n")


@pytest.mark.parametrize("kind, n_classes", list(cases()))
def test_rust_example_reproduces_python_decision_values(kind, n_classes, tmp_path):
    """Models of every kind trained in Python, saved, loaded in Rust by examples/score_bags.rs:
    the same decision values to 1e-12 relative and the same labels. Its lines are
    ``bag<TAB>score(s)<TAB>label`` (the column order of ``milsvm predict``), and the same bags
    written as a ``mil``-package CSV file give the same lines."""
    require_cargo()
    est, bags, y = fitted(kind, n_classes)
    model, data, csv = tmp_path / "m.json", tmp_path / "d.data", tmp_path / "d.csv"
    est.save(model)
    _write_mill(data, bags)
    _write_mil_csv(csv, bags)

    def score_bags(path):
        run = cargo_example("score_bags", model, path)
        assert run.returncode == 0, run.stderr
        return run.stdout

    out = score_bags(data)
    assert score_bags(csv) == out
    lines = [line.split("\t") for line in out.strip().splitlines()]
    assert [f[0] for f in lines] == [f"bag{i}" for i in range(len(bags))]
    assert {len(f) for f in lines} == {2 + est.model_.coef.shape[0]}
    rust = np.array([[float(v) for v in f[1:-1]] for f in lines])
    # Python's one-bag path runs the same kernel: the same values to 1e-12 relative
    one = np.array([np.atleast_1d(est.decision_function_bag(b)) for b in bags])
    np.testing.assert_allclose(rust, one, rtol=1e-12, atol=0)
    # Python's batch path (a GEMM for a large basis): 1e-12 relative to the scale of the terms
    ref = np.atleast_2d(est.decision_function(bags).T).T.reshape(len(bags), -1)
    scale = np.abs(est.model_.intercept).max() + np.abs(est.model_.coef).sum(axis=1).max()
    np.testing.assert_allclose(rust, ref, rtol=1e-12, atol=1e-12 * scale)
    assert [f[-1] for f in lines] == [str(c) for c in est.predict(bags)]


@pytest.mark.parametrize("n_classes", [2, 3])
def test_rust_example_applies_the_pipeline_and_the_sigmoid(n_classes, tmp_path):
    """A pipeline (scaler + estimator with ``probability=True``) saved as one file: the Rust
    example standardises the raw bags and prints the probabilities of ``predict_proba``."""
    from sklearn.pipeline import make_pipeline

    require_cargo()
    bags, y = make_bags(5, n_bags=30, n_classes=n_classes)
    bags = [b * 7.0 + 2.0 for b in bags]  # far from standardised: the scaler matters
    pipe = make_pipeline(milsvm.BagStandardScaler(), milsvm.NSK(C=10.0, probability=True)).fit(
        bags, y
    )
    model, data = tmp_path / "m.json", tmp_path / "d.data"
    milsvm.save(pipe, model)
    _write_mill(data, bags)
    run = cargo_example("score_bags", "--proba", model, data)
    assert run.returncode == 0, run.stderr
    lines = [line.split("\t") for line in run.stdout.strip().splitlines()]
    n_out = 1 if n_classes == 2 else n_classes
    scores = np.array([[float(v) for v in f[1 : 1 + n_out]] for f in lines])
    proba = np.array([[float(v) for v in f[2 + n_out :]] for f in lines])
    want = np.atleast_2d(pipe.decision_function(bags).T).T.reshape(len(bags), -1)
    np.testing.assert_allclose(scores, want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(proba, pipe.predict_proba(bags), rtol=1e-12, atol=1e-15)
    assert [f[1 + n_out] for f in lines] == [str(c) for c in pipe.predict(bags)]


FIXTURES = Path(__file__).resolve().parent / "data" / "models_v3"


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_models_written_before_still_load(name):
    """Model files written by milsvm 0.1.0 before the one-house refactor (format 3, one per
    estimator) load as the same estimator and give the scores they gave when they were written."""
    ref = np.load(FIXTURES / "expected_scores.npz")
    est = milsvm.load(FIXTURES / f"{name}.json")
    assert type(est).__name__ == name.split("_")[0]
    X = ref[f"{name}/X"]
    if ref[f"{name}/sparse"]:
        X = sp.csr_matrix(X)
    ptr = ref[f"{name}/bag_ptr"]
    bags = milsvm.Bags.from_instances(X, np.diff(ptr))
    np.testing.assert_array_equal(est.decision_function(bags), ref[f"{name}/scores"])


# --------------------------------------------------------------------------------------------
# A pipeline of BagStandardScaler and an estimator: one model file
# --------------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("kind", ["SparseMI", "NSK-l2", "MISVM", "SVMCC", "STK", "MILES"])
def test_a_saved_pipeline_loads_as_the_same_pipeline_and_the_core_applies_it(
    kind, sparse, tmp_path
):
    from sklearn.pipeline import make_pipeline

    _, make, _ = next(k for k in KINDS if k[0] == kind)
    bags, y = make_bags(2)
    if sparse:
        bags = [sp.csr_matrix(np.where(np.abs(b) > 0.5, b, 0.0)) for b in bags]
    pipe = make_pipeline(milsvm.BagStandardScaler(), make()).fit(bags, y)
    path = tmp_path / "pipe.json"
    milsvm.save(pipe, path)
    back = milsvm.load(path)
    assert [type(s).__name__ for s in back] == ["BagStandardScaler", type(pipe[-1]).__name__]
    assert back[-1].model_.scaler is None  # the pipeline standardises, the estimator does not again
    np.testing.assert_array_equal(back[0].mean_, pipe[0].mean_)
    np.testing.assert_array_equal(back[0].scale_, pipe[0].scale_)
    np.testing.assert_array_equal(back.decision_function(bags), pipe.decision_function(bags))
    assert list(back.predict(bags)) == list(pipe.predict(bags))
    # the Rust core alone (the file's scaler, then the kernel) scores the raw bags
    core = milsvm.Model.load(path)
    raw = milsvm.as_bags(bags)
    want = pipe.decision_function(bags)
    got = core.decision_function(raw.core_instances(), raw.bag_ptr)[:, 0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    for k, bag in enumerate(bags[:3]):
        if not sparse:
            assert core.decision_function_bag(np.asarray(bag))[0] == pytest.approx(
                want[k], rel=1e-12, abs=1e-13
            )
    # saving the loaded pipeline again writes the same file
    milsvm.save(back, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == path.read_text()


def test_save_refuses_what_is_not_an_estimator_or_a_scaled_one(tmp_path):
    from sklearn.decomposition import PCA
    from sklearn.pipeline import make_pipeline

    est, bags, y = fitted("NSK")
    with pytest.raises(TypeError, match="milsvm.save takes a milsvm estimator or a Pipeline"):
        milsvm.save(make_pipeline(PCA(), est), tmp_path / "x.json")
    with pytest.raises(TypeError, match="milsvm.save takes"):
        milsvm.save("model", tmp_path / "x.json")
    with pytest.raises(NotFittedError):
        milsvm.save(make_pipeline(milsvm.BagStandardScaler(), milsvm.NSK()), tmp_path / "x.json")
    with pytest.raises(NotFittedError):
        milsvm.save(milsvm.NSK(), tmp_path / "x.json")
    milsvm.save(est, tmp_path / "plain.json")
    assert isinstance(milsvm.load(tmp_path / "plain.json"), milsvm.NSK)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d.update(scaler={"mean": [0.0], "scale": [1.0, 1.0, 1.0]}), "scaler"),
        (lambda d: d.update(scaler={"mean": [0.0] * 3, "scale": [1.0, 0.0, 1.0]}), "scaler"),
        (lambda d: d.update(scaler={"mean": [0.0] * 3}), "scaler"),
        (lambda d: d.update(calibration={"a": [-1.0, 1.0], "b": [0.0, 0.0]}), "calibration"),
        (lambda d: d.update(calibration={"a": [-1.0], "b": "x"}), "calibration"),
    ],
)
def test_load_refuses_a_bad_scaler_or_sigmoid_naming_the_field(tmp_path, edit, field):
    path = _edited(tmp_path, edit)
    with pytest.raises(ValueError, match=field):
        milsvm.load(path)


def test_load_names_the_field_of_a_non_finite_sigmoid_or_scale(tmp_path):
    from sklearn.pipeline import make_pipeline

    bags, y = make_bags(4, n_bags=20)
    pipe = make_pipeline(milsvm.BagStandardScaler(), milsvm.NSK(probability=True)).fit(bags, y)
    path = tmp_path / "p.json"
    milsvm.save(pipe, path)
    doc = json.loads(path.read_text())
    for field, key in (
        ("calibration", "a"),
        ("calibration", "b"),
        ("scaler", "scale"),
        ("scaler", "mean"),
    ):
        for bad in (float("nan"), float("inf")):
            edited = json.loads(json.dumps(doc))
            edited[field][key][0] = bad
            path.write_text(json.dumps(edited))  # json writes NaN / Infinity: not JSON
            with pytest.raises(ValueError, match=rf"field `{field}\.{key}`: not valid JSON"):
                milsvm.load(path)
