"""Model selection and reports on the command line (issue 19, items 4 and 5): balanced accuracy
and the majority-class rate in ``milsvm cv``; ``-p`` / ``--grid`` values checked by the
estimator before any fit (``MILClassifier._check_params``, the core's ``check_X``); ``--report``
checked first; "did you mean" for model names; ``milsvm models NAME`` with valid values and
suggested ranges; ``--grid auto``; the report's fold names, majority line, objective names and
chosen grid points. Every run is in-process on tiny data with two or three folds."""

import inspect
import re

import milsvm
import numpy as np
import pytest
from conftest import cli_cv_json
from milsvm import _core, _registry, cli
from milsvm._base import MILClassifier
from milsvm.cli import main

ALL = list(_registry.ESTIMATORS.values())


def write_toy(path, n_neg=12, n_pos=6, seed=0):
    """Bags of three 2-D instances in MILL format; a positive bag holds one instance near (3,
    -3)."""
    rng = np.random.default_rng(seed)
    lines = []
    for b in range(n_neg + n_pos):
        label = int(b >= n_neg)
        for i in range(3):
            x = rng.normal(scale=0.5, size=2) + ((3.0, -3.0) if (label and i == 0) else 0.0)
            lines.append(f"i{b}_{i},bag{b},{label},{x[0]:.17g},{x[1]:.17g}\n")
    path.write_text("".join(lines))
    return path


def _quiet_cv(toy, *args):
    """``milsvm cv -q`` on the toy file with ``args``; returns the exit status."""
    return main(["cv", str(toy), "-q", *args])


@pytest.fixture
def toy(tmp_path):
    """18 bags: 12 negative, 6 positive (majority rate 2/3)."""
    return write_toy(tmp_path / "toy.data")


@pytest.fixture
def no_fit(monkeypatch):
    """Any fit is a test failure: the checks must come first."""

    def refuse(self, bags, y):
        raise AssertionError(f"{type(self).__name__}.fit ran")

    monkeypatch.setattr(MILClassifier, "fit", refuse)


def status_and_error(args, capsys):
    try:
        status = main([str(a) for a in args])
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    return status, err


# --------------------------------------------------------------------------------------------
# balanced accuracy and the majority-class rate
# --------------------------------------------------------------------------------------------


def test_cv_prints_and_writes_balanced_accuracy_and_majority_rate(toy, tmp_path, capsys):
    from sklearn.metrics import balanced_accuracy_score

    out = tmp_path / "r.json"
    doc = cli_cv_json(toy, out, "-m", "NSK", "-p", "C=10", "--folds", "3", "--repeats", "2")
    stdout = capsys.readouterr().out
    folds, s = doc["fold_results"], doc["summary"]
    balanced = np.array([f["balanced_accuracy"] for f in folds])
    assert s["balanced_accuracy_mean"] == pytest.approx(balanced.mean(), abs=1e-15)
    assert s["balanced_accuracy_std"] == pytest.approx(balanced.std(), abs=1e-15)
    assert s["majority_rate"] == pytest.approx(12 / 18)
    lines = stdout.splitlines()
    accuracy = next(k for k, line in enumerate(lines) if line.startswith("accuracy: "))
    assert lines[accuracy + 1] == (
        f"balanced accuracy: {100 * s['balanced_accuracy_mean']:.2f} % "
        f"(std over folds {100 * s['balanced_accuracy_std']:.2f})"
    )
    assert lines[accuracy + 2] == (
        "majority class: 66.67 % of the bags (the accuracy of always predicting class 0)"
    )
    assert lines[accuracy + 3].startswith("AUC: ")
    # per fold: scikit-learn's balanced accuracy of the fold's predictions
    from milsvm._crossval import cross_validate

    bags, y = milsvm.datasets.load_mill(toy)
    result = cross_validate(
        milsvm.NSK, {"C": 10}, milsvm.as_bags(bags), y, folds=3, keep_first_model=True
    )
    assert result.majority_rate == pytest.approx(2 / 3)
    model = result.first_model
    from sklearn.model_selection import StratifiedKFold

    _, test = next(StratifiedKFold(3, shuffle=True, random_state=0).split(np.zeros(len(y)), y))
    predicted = model.predict(milsvm.as_bags(bags)[test])
    assert result.folds[0]["balanced_accuracy"] == pytest.approx(
        balanced_accuracy_score(y[test], predicted)
    )


# --------------------------------------------------------------------------------------------
# values checked before any fit
# --------------------------------------------------------------------------------------------

REFUSED = [
    (["-p", "C=abc"], ["-p C='abc'", "C must be a real number, got 'abc'"]),
    (["-p", "C=-1"], ["-p C=-1", "C must be a finite number > 0, got -1"]),
    (["-p", "n_xv=0"], ["-p n_xv=0", "n_xv must be an integer >= 1"]),
    (["-p", "gamma=auto"], ["gamma must be 'scale', 'median' or a finite number > 0"]),
    (["-p", "gamma=0.1*scale"], ["-p gamma='0.1*scale'", "gamma must be"]),  # k*scale: grids only
    (["-p", "init=kmean"], ["-p init='kmean'", "init must be one of 'random', 'kmeans', 'svm'"]),
    (["-p", "probability=maybe"], ['probability must be True, False or "ensemble"']),
    (["-p", "verbose=1.5"], ["verbose must be an integer"]),
    (["-p", "class_weight={0: 1, 1: -2}"], ["class_weight must hold finite class weights > 0"]),
    (["-p", "random_state=abc"], ["-p random_state='abc'"]),
    (["--grid", "C=1,-1"], ["--grid C=-1:", "C must be a finite number > 0, got -1"]),
    (["--grid", "C=1,10", "n_xv=2,0"], ["--grid n_xv=0:", "n_xv must be an integer >= 1"]),
    (
        ["--grid", "gamma=scale,0*scale"],
        ["--grid gamma=0*scale", "multiple of scale must be a finite number > 0"],
    ),
    (
        ["--grid", "kernel=rbf,poly"],
        ["--grid kernel=poly", "kernel must be one of 'rbf', 'linear'"],
    ),
    (["-m", "ALSVM", "-p", "decay=1"], ["-p decay=1", "decay must be a finite number > 1"]),
    (["-m", "ALPSVM", "--grid", "p_star=0.5,2"], ["--grid p_star=2", "p_star must lie in [0, 1]"]),
    (["-m", "OneClassMISVM", "-p", "nu=0"], ["-p nu=0", "nu must lie in (0, 1]"]),
    (["-m", "NSK", "-p", "norm=l3"], ["-p norm='l3'", "norm must be one of"]),
]


@pytest.mark.parametrize("extra, fragments", REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_refused_values_exit_2_before_the_data_is_read(extra, fragments, tmp_path, capsys, no_fit):
    """The data file does not exist: a refused value is reported first, so it was checked
    before the data was read (and before any fit: ``no_fit``)."""
    status, err = status_and_error(["cv", tmp_path / "absent.data", "--folds", "2", *extra], capsys)
    assert status == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("milsvm: error: ")
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    assert "np." not in err


def test_class_weight_labels_are_checked_against_the_data_before_any_fit(toy, capsys, no_fit):
    status, err = status_and_error(
        ["cv", toy, "--folds", "2", "-p", "class_weight={0: 1, 7: 2}"], capsys
    )
    assert (
        status == 2 and "class_weight names labels that are not in y: [7] (classes: [0, 1])" in err
    )
    status, err = status_and_error(
        ["cv", toy, "--folds", "2", "--grid", "class_weight=None,{5: 2}"], capsys
    )
    assert status == 2 and "--grid class_weight={5: 2}" in err


def test_fit_checks_its_values_too(toy, tmp_path, capsys, no_fit):
    status, err = status_and_error(["fit", toy, "-p", "C=0", "-o", tmp_path / "m.json"], capsys)
    assert status == 2 and "-p C=0: invalid parameter: C must be a finite number > 0, got 0" in err


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_check_params_accepts_the_defaults_and_refuses_as_fit_does(cls):
    """``_check_params`` runs the fit's own parsing and checks: the same exception type and
    message as ``fit``, for the defaults (none) and for refused values."""
    from conftest import easy_bags

    cls()._check_params()
    cls()._check_params(classes=np.array([0, 1]))
    bags, y = easy_bags(1, n_bags=12)
    bad = [
        {"n_jobs": "many"},
        {"kernel": "poly"},
        {"gamma": -1.0},
        {"inner_tol": -1.0},
        {"verbose": "x"},
        {"class_weight": {0: 1, 1: 0.0}}
        if "class_weight" in cls().get_params()
        else {"probability": 1},
    ]
    first = next(iter(inspect.signature(cls).parameters))  # C, nu or n_xv: a positive number each
    bad.append({first: -3})
    for params in bad:
        with pytest.raises((TypeError, ValueError)) as by_fit:
            cls(**params).fit(bags, y)
        with pytest.raises(by_fit.type) as by_check:
            cls(**params)._check_params()
        assert str(by_check.value) == str(by_fit.value), params


def test_core_check_functions_match_the_fits():
    names = {
        n[len("fit_") :]
        for n in dir(_core)
        if n.startswith("fit_")
        and not n.endswith("_hyperparameters")
        and not n.endswith("_path")
        and n != "fit_sigmoid"
    }
    assert names == {n[len("check_") :] for n in dir(_core) if n.startswith("check_")}
    # a C path (fit_X_path) takes the parameters of its fit, checked by check_X
    paths = {
        n[len("fit_") : -len("_path")]
        for n in dir(_core)
        if n.startswith("fit_") and n.endswith("_path")
    }
    assert paths and paths <= names
    assert _core.check_nsk({"C": 2.0, "norm": "l2"}) is None
    with pytest.raises(TypeError, match="C must be a real number, got 'abc'"):
        _core.check_nsk({"C": "abc"})
    with pytest.raises(ValueError, match='NskParams has no parameter "nu"'):
        _core.check_nsk({"nu": 0.5})


def test_messages_show_plain_values():
    from milsvm._crossval import FitError, cross_validate, describe

    assert (
        describe("X", {"C": np.float64(1.5), "n": np.int64(3), "w": {np.int64(0): np.float32(2)}})
        == "X(C=1.5, n=3, w={0: 2.0})"
    )
    from conftest import easy_bags

    bags, y = easy_bags(2, n_bags=12)
    with pytest.raises(ValueError, match=r"y holds a single class \(1\)"):
        milsvm.NSK().fit(bags, np.ones(12, dtype=np.int64))
    with pytest.raises(ValueError, match=r"too few bags of class 0: 3, 1: 3"):
        milsvm.NSK(probability=True).fit(bags[:6], y[:6])
    with pytest.raises(FitError) as info:
        cross_validate(milsvm.SparseMI, {"n_xv": np.int64(100)}, milsvm.as_bags(bags), y, folds=2)
    assert "SparseMI(n_xv=100)" in str(info.value) and "np." not in str(info.value)


# --------------------------------------------------------------------------------------------
# --report checked first; model names
# --------------------------------------------------------------------------------------------


def test_report_directory_is_checked_before_the_cv(toy, tmp_path, capsys, monkeypatch, no_fit):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    status, err = status_and_error(["cv", toy, "--folds", "2", "--report", a_file], capsys)
    assert status == 2 and "exists and is not a directory" in err
    status, err = status_and_error(
        ["cv", toy, "--folds", "2", "--report", a_file / "sub" / "dir"], capsys
    )
    assert status == 2 and "--report: cannot create" in err and "is not a directory" in err
    monkeypatch.setattr(
        cli.os, "access", lambda path, mode: False
    )  # as a user without write rights
    status, err = status_and_error(
        ["cv", toy, "--folds", "2", "--report", tmp_path / "new"], capsys
    )
    assert status == 2 and "cannot create" in err and "is not writable" in err
    status, err = status_and_error(["cv", toy, "--folds", "2", "--report", tmp_path], capsys)
    assert status == 2 and "is not writable" in err
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(
    "args, suggestion",
    [
        (["cv", "{toy}", "-m", "sparsmi"], "did you mean SparseMI"),
        (["cv", "{toy}", "--model", "AWSMV"], "did you mean AWSVM"),
        (["fit", "{toy}", "-m", "onclassmisvm", "-o", "m.json"], "did you mean OneClassMISVM"),
        (["models", "nks"], "did you mean NSK"),
        (["models", "svmc"], "did you mean SVMCC"),
    ],
)
def test_model_names_suggest_the_closest(args, suggestion, toy, capsys, no_fit):
    status, err = status_and_error([a.format(toy=toy) for a in args], capsys)
    assert status == 2 and suggestion in err and "choose one of SparseMI" in err


# --------------------------------------------------------------------------------------------
# milsvm models NAME
# --------------------------------------------------------------------------------------------


def models_output(name, capsys):
    assert main(["models", name]) == 0
    return capsys.readouterr().out


def test_models_gives_meaning_valid_values_suggested_ranges_and_the_auto_grid(capsys):
    out = models_output("misvm".upper(), capsys)
    block = out.split("\n  C=1.0\n", 1)[1].split("\n  kernel=", 1)[0]
    assert "Loss weight (> 0)." in block
    assert "valid: a finite number > 0" in block
    assert "suggested search: 0.1 ... 1000, log-spaced" in block
    assert "valid: 'scale', 'median' or a finite number > 0" in out
    assert "valid: None or in (0, 1)" in out  # inner_tol
    flat = " ".join(out.split())
    assert (
        "--grid auto searches C in [0.1, 1.0, 10.0, 100.0] and gamma in ['0.1*scale', 'scale', "
        "'10*scale']" in flat
    )
    one_class = " ".join(models_output("OneClassMISVM", capsys).split())
    assert "nu in [0.1, 0.25, 0.5, 0.75]" in one_class and "valid: in (0, 1]" in one_class
    svmcc = " ".join(models_output("SVMCC", capsys).split())
    assert "--grid auto searches C in [0.1, 1.0, 10.0, 100.0];" in svmcc  # linear kernel: no gamma


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_models_shows_every_declared_range(cls, capsys):
    out = models_output(cls.__name__, capsys)
    ranges = {name: rng for name, _, rng in getattr(_core, f"{cls._core_fit}_hyperparameters")()}
    for name, param in inspect.signature(cls).parameters.items():
        if ranges.get(name) and name not in ("gamma", "n_jobs"):
            block = re.split(
                r"\n  (?=\S)", out.split(f"\n  {name}={param.default!r}\n", 1)[1], maxsplit=1
            )[0]
            assert "valid: " in " ".join(block.split()), name


# --------------------------------------------------------------------------------------------
# --grid auto
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_default_grid_passes_its_estimators_check(cls):
    grid = cls._grid_for({})
    assert grid and all(len(v) >= 3 for v in grid.values())
    cli.check_values(cls, {}, grid)
    assert cli.parse_grid(cls, ["auto"]) == grid
    assert "gamma" not in cls._grid_for({"kernel": "linear"})
    if "kernel" in cls().get_params() and cls is not milsvm.ReducedSet:
        assert "gamma" in cls._grid_for({"kernel": "rbf"})


def test_grid_auto_conflicts_are_usage_errors(toy, capsys, no_fit):
    for args, fragment in [
        (
            ["--grid", "auto", "C=1,2"],
            "C given both by 'auto' and explicitly; 'auto' searches C in [0.1, 1.0",
        ),
        (
            ["-p", "C=3", "--grid", "auto"],
            "C given both by -p and by --grid auto, which searches C in",
        ),
        (["--grid", "auto", "auto"], "'auto' is given twice"),
        (["--grid", "automatic"], "'automatic' is not KEY=V1,V2,... or auto"),
    ]:
        status, err = status_and_error(["cv", toy, "--folds", "2", *args], capsys)
        assert status == 2 and fragment in err, (args, err)


def test_scale_multiples():
    assert cli.scale_multiple("0.1*scale") == 0.1 and cli.scale_multiple(" 10 * SCALE ") == 10.0
    assert cli.scale_multiple("scale") is None and cli.scale_multiple(0.1) is None
    assert cli.scale_multiple("x*scale") is None
    grid = cli.resolve_scale_multiples(
        {"C": [1], "gamma": ["0.1*scale", "scale", "3*scale", 0.5]}, 1 / 166
    )
    assert grid == {"C": [1], "gamma": [0.000602, "scale", 0.0181, 0.5]}


def test_cv_grid_auto_with_another_key(toy, tmp_path, capsys):
    """``--grid auto`` beside a grid item of another parameter: gamma's ``k*scale`` values are
    k times the "scale" width of the standardised instances (variance 1, two features: 1/2)."""
    out = tmp_path / "r.json"
    doc = cli_cv_json(
        toy, out, "-m", "NSK", "--grid", "auto", "norm=l1,l2", "--folds", "2", "--inner-folds", "2"
    )
    stdout = capsys.readouterr().out
    assert doc["grid"] == {
        "C": [0.1, 1.0, 10.0, 100.0],
        "gamma": [0.05, "scale", 5.0],
        "norm": ["l1", "l2"],
    }
    assert (
        "grid search: C in [0.1, 1.0, 10.0, 100.0]; gamma in [0.05, 'scale', 5.0]; norm in "
        "['l1', 'l2']" in stdout
    )
    assert all(f["params"]["gamma"] in (0.05, "scale", 5.0) for f in doc["fold_results"])
    bags, _ = milsvm.datasets.load_mill(toy)
    assert cli.scale_width(milsvm.as_bags(bags), True) == pytest.approx(0.5)
    X = np.concatenate(bags)
    assert cli.scale_width(milsvm.as_bags(bags), False) == pytest.approx(1 / (2 * X.var()))


# --------------------------------------------------------------------------------------------
# reports
# --------------------------------------------------------------------------------------------


def test_report_names_folds_majority_objective_and_chosen_points(toy, tmp_path, capsys):
    report = tmp_path / "report"
    assert (
        _quiet_cv(
            toy,
            "-m",
            "ALSVM",
            "-p",
            "max_iter=8",
            "--grid",
            "C=1,10",
            "--folds",
            "2",
            "--repeats",
            "2",
            "--inner-folds",
            "2",
            "--report",
            str(report),
        )
        == 0
    )
    text = (report / "report.md").read_text()
    assert "| fold | train bags | test bags | accuracy | balanced accuracy | AUC |" in text
    rows = re.findall(r"^\| (r\d f\d) \| .* \| (C=\d+) \| [\d.]+ \|$", text, flags=re.M)
    assert [r[0] for r in rows] == ["r1 f1", "r1 f2", "r2 f1", "r2 f2"]
    assert "- majority class: 66.67 % of the bags" in text and "- balanced accuracy" in text
    assert milsvm.ALSVM._objective_name in text and "against the temperature" in text
    assert f"of the fit of fold r1 f1 (chosen: {rows[0][1]})" in text
    pytest.importorskip("matplotlib")
    for png in ("accuracy.png", "objective.png", "decision_regions.png"):
        assert (report / png).stat().st_size > 0


def test_report_of_a_single_objective_value(toy, tmp_path, capsys):
    report = tmp_path / "report"
    assert (
        _quiet_cv(toy, "-m", "RSVM", "-p", "n_xv=2", "--folds", "2", "--report", str(report)) == 0
    )
    assert (
        "RSVM records a single objective value on fold r1 f1" in (report / "report.md").read_text()
    )
    assert not (report / "objective.png").exists()


@pytest.mark.parametrize("cls", [c for c in ALL if c._objective_name], ids=lambda c: c.__name__)
def test_objective_axis_per_estimator(cls):
    """The report plots the annealing estimators' objective against their temperatures, the
    others' against the step number their class declares."""
    import warnings

    from conftest import easy_bags
    from milsvm._report_plots import _histories, _objective_axis

    bags, y = easy_bags(3, n_bags=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cls(**({"max_iter": 5} if "max_iter" in cls().get_params() else {})).fit(bags, y)
    histories = _histories(est)
    xs, label, temperature = _objective_axis(est, histories)
    assert temperature == (cls._objective_step == "temperature")
    if temperature:
        np.testing.assert_array_equal(xs[0], est.temperatures_)
        assert np.all(np.diff(xs[0]) < 0) and "temperature" in label
    else:
        assert xs[0][0] == cls._objective_start and label.startswith(cls._objective_step)
