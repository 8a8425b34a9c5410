"""The command line: ``milsvm demo`` (the README's main job), ``models``, ``cv``, ``fit`` and
``predict``, run as ``python -m milsvm`` in subprocesses (exit codes, one-line errors without
traceback, progress bar, optional dependencies missing) and in-process through ``main`` where
only the output matters (every estimator, fit/predict round trips), to keep the file fast.
"""

import json
import math
import os
import re
import subprocess
import sys

import milsvm
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from conftest import cli_cv_json, cli_ok
from milsvm import cli
from milsvm.cli import main
from sklearn.pipeline import make_pipeline

ALL = list(cli.ESTIMATORS)

#: Fast parameters for the tiny data sets below.
FAST = {
    "SparseMI": {"n_xv": 2, "max_iter": 3, "C": 10},
    "RSVM": {"n_xv": 2, "C": 10},
    "MIKernel": {"C": 10},
    "ReducedSet": {"n_xv": 2, "n_restarts": 1, "inner_max_iter": 5},
    "NSK": {"C": 10},
    "sMIL": {"C": 10},
    "ALSVM": {"C": 10, "max_iter": 5},
    "AWSVM": {"C": 10, "max_iter": 5},
    "ALPSVM": {"C": 10, "max_iter": 5},
    "miSVM": {"C": 10, "max_iter": 5},
    "MISVM": {"C": 10, "max_iter": 5},
    "SVMCC": {"C": 10, "max_iter": 5},
    "stMIL": {"C": 10, "max_iter": 5},
    "MissSVM": {"C": 10, "max_iter": 5},
    "SIL": {"C": 10},
    "STK": {"C": 10},
    "MILES": {"C": 10},
    "OneClassMISVM": {"max_iter": 3},
    "sbMIL": {"C": 10, "eta": 0.5},
    "sAwMIL": {"C": 10, "eta": 0.5},
}


def pflags(params):
    return [a for k, v in params.items() for a in ("-p", f"{k}={v!r}")]


def toy_lines(n_bags=12, seed=0, classes=2):
    """Bags of three 2-D instances; a bag of class c > 0 holds one instance near a class centre."""
    rng = np.random.default_rng(seed)
    centres = [(0.0, 0.0), (3.0, -3.0), (-3.0, 3.0)]
    rows = []
    for b in range(n_bags):
        c = b % classes
        for i in range(3):
            x = rng.normal(scale=0.5, size=2) + (centres[c] if (c and i == 0) else 0.0)
            rows.append((f"i{b}_{i}", f"bag{b}", c, [float(v) for v in x]))
    return rows


@pytest.fixture
def toy_mill_file(tmp_path):
    """Twelve binary bags in MILL format."""
    path = tmp_path / "toy.data"
    path.write_text("".join(f"{i},{b},{c},{x[0]:.17g},{x[1]:.17g}\n" for i, b, c, x in toy_lines()))
    return path


@pytest.fixture
def three_class_file(tmp_path):
    path = tmp_path / "three.data"
    path.write_text(
        "".join(f"{i},{b},{c},{x[0]:.17g},{x[1]:.17g}\n" for i, b, c, x in toy_lines(18, 1, 3))
    )
    return path


def run(*args, env=None):
    """``python -m milsvm ARGS`` in a subprocess (PYTHONPATH inherited)."""
    return subprocess.run(
        [sys.executable, "-m", "milsvm", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def run_many(cases, env=None):
    """Run several commands concurrently; returns their CompletedProcess-like results."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "milsvm", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for args in cases
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def assert_one_error_line(proc, code, *fragments):
    lines = proc.stderr.splitlines()
    assert proc.returncode == code, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("milsvm: error: "), lines[0]
    assert "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def blocked_env(tmp_path, *modules):
    """An environment where importing ``modules`` raises ImportError (as if not installed)."""
    block = tmp_path / "blocked"
    for name in modules:
        (block / name).mkdir(parents=True)
        (block / name / "__init__.py").write_text(
            f"raise ImportError('{name} is blocked for this test')\n"
        )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(block), env.get("PYTHONPATH")]))
    return env


# --------------------------------------------------------------------------------------------
# demo, help, models
# --------------------------------------------------------------------------------------------


def test_demo_prints_accuracy_xvs_and_time(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "SparseMI(n_xv=10, C=10.0, random_state=0) on MUSK1 (bundled): 92 bags, "
        "10-fold CV, features standardised per training fold"
    )
    acc = float(re.search(r"accuracy: ([\d.]+) %", out).group(1))
    assert 80.0 <= acc <= 100.0
    assert "expansion vectors: 10" in out
    assert re.search(r"fit time: [\d.]+ ms per fold", out)


def help_text(capsys, *args):
    with pytest.raises(SystemExit) as info:
        main([*args, "--help"])
    assert info.value.code == 0
    return capsys.readouterr().out


def test_help_documents_every_option(capsys):
    top = help_text(capsys)
    for command in ("demo", "models", "cv", "fit", "predict", "exit status"):
        assert command in top
    cv = help_text(capsys, "cv")
    for option in (
        "--model",
        "--param",
        "--grid",
        "--inner-folds",
        "--folds",
        "--repeats",
        "--seed",
        "--n-jobs",
        "--scheduler",
        "--output",
        "--report",
        "--no-scale",
        "--format",
        "--quiet",
        "--debug",
    ):
        assert option in cv, option
    for key in (
        "milsvm-cv/1",
        "fold_results",
        "accuracy_mean",
        "auc_std",
        "inner_accuracy",
        "fit_time",
        "search_time",
        "balanced_accuracy",
        "balanced_accuracy_mean",
        "balanced_accuracy_std",
        "majority_rate",
        "--grid auto",
    ):
        assert key in cv, key
    fit = help_text(capsys, "fit")
    for option in ("--model", "--param", "--seed", "--output", "--format"):
        assert option in fit
    pred = help_text(capsys, "predict")
    assert "bag_name<TAB>score<TAB>label" in pred and "--output" in pred
    assert "--n-xv" in help_text(capsys, "demo") and "NAME" in help_text(capsys, "models")


def test_python_m_milsvm_and_milsvm_cli():
    for module in ("milsvm", "milsvm.cli"):
        out = subprocess.run(
            [sys.executable, "-m", module, "--help"], capture_output=True, text=True
        )
        assert out.returncode == 0 and "demo" in out.stdout and out.stderr == ""


def test_models_lists_every_estimator_and_parameters(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()] == ALL
    assert main(["models", "alsvm"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ALSVM: ") and "  C=1.0" in out and "  max_iter=200" in out


# --------------------------------------------------------------------------------------------
# names and values
# --------------------------------------------------------------------------------------------


def test_every_estimator_of_the_package_has_a_name():
    from sklearn.base import ClassifierMixin

    classes = {
        n
        for n in milsvm.__all__
        if isinstance(getattr(milsvm, n), type) and issubclass(getattr(milsvm, n), ClassifierMixin)
    }
    assert set(ALL) == classes


@pytest.mark.parametrize(
    "name, expected",
    [
        ("SparseMI", "SparseMI"),
        ("sparsemi", "SparseMI"),
        ("SPARSEMI", "SparseMI"),
        ("miSVM", "miSVM"),
        ("MISVM", "MISVM"),
        ("oneclassmisvm", "OneClassMISVM"),
        ("smil", "sMIL"),
    ],
)
def test_name_resolution(name, expected):
    assert cli.resolve_estimator(name).__name__ == expected


@pytest.mark.parametrize("name", ["misvm", "MiSvm", "Misvm", "MIsvm"])
def test_misvm_in_another_case_is_ambiguous(name):
    with pytest.raises(cli.UsageError, match=r"ambiguous: miSVM is .*; MISVM is "):
        cli.resolve_estimator(name)


def test_unknown_name_lists_all_names():
    with pytest.raises(cli.UsageError) as info:
        cli.resolve_estimator("svm")
    assert all(name in str(info.value) for name in ALL)


@pytest.mark.parametrize(
    "text, value",
    [
        ("10", 10),
        ("-3", -3),
        ("0.5", 0.5),
        ("1e-3", 1e-3),
        ("None", None),
        ("none", None),
        ("true", True),
        ("False", False),
        ("rbf", "rbf"),
        ("'10'", "10"),
        ("{0: 1, 1: 5}", {0: 1, 1: 5}),
        ("scale", "scale"),
    ],
)
def test_parse_value(text, value):
    assert cli.parse_value(text) == value and type(cli.parse_value(text)) is type(value)


def test_parse_value_nan_and_inf():
    assert math.isnan(cli.parse_value("nan")) and cli.parse_value("inf") == math.inf


def test_parse_grid_splits_outside_brackets():
    grid = cli.parse_grid(milsvm.NSK, ["class_weight={0: 1, 1: 2},balanced,None", "C=0.1,1"])
    assert grid == {"class_weight": [{0: 1, 1: 2}, "balanced", None], "C": [0.1, 1]}
    with pytest.raises(cli.UsageError, match="given twice"):
        cli.parse_grid(milsvm.NSK, ["C=1", "C=2"])
    with pytest.raises(cli.UsageError, match="did you mean 'gamma'"):
        cli.parse_grid(milsvm.NSK, ["gama=1,2"])


def test_parse_params_last_wins_and_unknown_names():
    assert cli.parse_params(milsvm.RSVM, ["C=1", "C=2", "gamma=scale"]) == {
        "C": 2,
        "gamma": "scale",
    }
    with pytest.raises(cli.UsageError, match="RSVM has no parameter 'nu'"):
        cli.parse_params(milsvm.RSVM, ["nu=0.5"])
    with pytest.raises(cli.UsageError, match="is not KEY=VALUE"):
        cli.parse_params(milsvm.RSVM, ["C"])


# --------------------------------------------------------------------------------------------
# errors: one line, no traceback, exit status
# --------------------------------------------------------------------------------------------


def error_cases(data, tmp_path):
    """(arguments, exit status, fragments of the error line); the first ones run in subprocesses."""
    bad = tmp_path / "bad.data"
    bad.write_text("i1,b1,1,1.0,2.0\ni2,b1,1,oops,2.0\n")
    not_model = tmp_path / "not_model.json"
    not_model.write_text('{"hello": 1}')
    return [
        (["cv", data, "--model", "foo"], 2, ["unknown model 'foo'", "SparseMI", "OneClassMISVM"]),
        (["cv", data, "--model", "misvm"], 2, ["ambiguous", "miSVM", "MISVM"]),
        (["cv", tmp_path / "absent.data"], 1, ["absent.data", "does not exist"]),
        (["cv", bad, "--folds", "2"], 1, [f"{bad}, line 2", "'oops' is not a number"]),
        (
            ["cv", data, "--folds", "2", "-p", "C=-1"],
            2,
            ["-p C=-1", "C must be a finite number > 0, got -1"],
        ),
        (["cv", data, "--grid", "C"], 2, ["--grid", "'C' is not KEY=V1,V2"]),
        (["fit", data], 2, ["-o/--output"]),
        (["predict", not_model, data], 1, ["not a milsvm model file"]),
        # in-process from here
        (
            ["fit", data, "-p", "C=abc", "-o", tmp_path / "m.json"],
            2,
            ["-p C='abc'", "C must be a real number"],
        ),
        (
            ["cv", data, "-p", "nxv=3"],
            2,
            ["SparseMI has no parameter 'nxv'", "did you mean 'n_xv'"],
        ),
        (["cv", data, "-p", "C"], 2, ["'C' is not KEY=VALUE"]),
        (["cv", data, "--grid", "C=1,,2"], 2, ["empty value"]),
        (["cv", data, "--grid", "nu=1,2"], 2, ["--grid: SparseMI has no parameter 'nu'"]),
        (["cv", data, "--grid", "C=1,2", "-p", "C=3"], 2, ["C given both by -p and by --grid"]),
        (["cv", data, "--folds", "1"], 2, ["--folds", "at least 2"]),
        (
            ["cv", data, "--folds", "7"],
            1,
            ["7 folds, but class 0 has only 6 bags (use at most 6 folds)"],
        ),
        (
            ["cv", data, "--folds", "3", "--grid", "C=1,2", "--inner-folds", "5"],
            1,
            ["5 inner folds, but a training part holds only 4 bags of a class"],
        ),
        (["cv", data, "--n-jobs", "0"], 2, ["--n-jobs"]),
        (["cv", data, "--format", "xls"], 2, ["invalid choice: 'xls'"]),
        (["cv", data, "--bogus"], 2, ["unrecognized arguments: --bogus"]),
        (["cv", tmp_path], 1, ["holds no .npy or .h5 files"]),
        (
            ["cv", data, "-o", tmp_path / "no" / "r.json", "--folds", "2"],
            1,
            ["--output: cannot write", "does not exist"],
        ),
        (["fit", data, "-o", tmp_path], 1, ["--output", "is a directory"]),
        (["predict", tmp_path / "absent.json", data], 1, ["model file", "does not exist"]),
        (["models", "foo"], 2, ["unknown model 'foo'"]),
    ]


N_SUBPROCESS_CASES = 5


def test_errors_are_one_line_without_traceback(toy_mill_file, tmp_path):
    cases = error_cases(toy_mill_file, tmp_path)[:N_SUBPROCESS_CASES]
    for (_, code, fragments), proc in zip(cases, run_many([c[0] for c in cases])):
        assert_one_error_line(proc, code, *fragments)


def test_errors_in_process(toy_mill_file, tmp_path, capsys):
    for args, code, fragments in error_cases(toy_mill_file, tmp_path)[N_SUBPROCESS_CASES:]:
        try:
            status = main([str(a) for a in args])
        except SystemExit as exc:
            status = exc.code
        captured = capsys.readouterr()
        proc = subprocess.CompletedProcess(args, status, captured.out, captured.err)
        assert_one_error_line(proc, code, *fragments)


def test_debug_raises_instead_of_one_line(toy_mill_file):
    from milsvm._crossval import FitError

    with pytest.raises(FitError, match="n_xv"):  # too many for the data: found by the fit
        main(["cv", str(toy_mill_file), "--folds", "2", "-p", "n_xv=100", "--debug"])
    with pytest.raises(cli.UsageError, match="C must be"):
        main(["cv", str(toy_mill_file), "--folds", "2", "-p", "C=-1", "--debug"])


# --------------------------------------------------------------------------------------------
# cv
# --------------------------------------------------------------------------------------------


def test_cv_json_schema_grid_and_repeats(toy_mill_file, tmp_path):
    out = tmp_path / "result.json"
    args = [
        "cv",
        str(toy_mill_file),
        "--model",
        "rsvm",
        "-p",
        "n_xv=2",
        "--grid",
        "C=0.1,10",
        "gamma=scale,0.5",
        "--folds",
        "3",
        "--repeats",
        "2",
        "--seed",
        "7",
        "--inner-folds",
        "2",
        "-o",
        str(out),
    ]
    proc = run(*args)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert set(doc) == {
        "schema",
        "milsvm_version",
        "command",
        "data",
        "estimator",
        "params",
        "grid",
        "inner_folds",
        "scale",
        "folds",
        "repeats",
        "seed",
        "n_jobs",
        "scoring",
        "grouping",
        "fold_results",
        "summary",
        "evaluation",
        "predictions",
    }
    assert doc["schema"] == "milsvm-cv/1" and doc["milsvm_version"] == milsvm.__version__
    assert doc["scoring"] == "accuracy" and doc["grouping"] == {
        "column": None,
        "grouped": False,
        "n_groups": None,
    }
    ev = doc["evaluation"]
    assert (
        [r["repeat"] for r in ev["bags"]] == [0, 1]
        and ev["resampled"] == "bags"
        and ev["patients"] is None
    )
    assert len(doc["predictions"]) == 24 and set(doc["predictions"][0]) == {
        "repeat",
        "fold",
        "bag",
        "group",
        "label",
        "score",
    }
    assert doc["command"] == ["milsvm", *args]
    assert doc["data"] == {
        "path": str(toy_mill_file),
        "format": "mill",
        "n_bags": 12,
        "n_instances": 36,
        "n_features": 2,
        "classes": [0, 1],
    }
    assert doc["estimator"] == "RSVM" and doc["params"] == {"n_xv": 2, "random_state": 7}
    assert doc["grid"] == {"C": [0.1, 10], "gamma": ["scale", 0.5]} and doc["inner_folds"] == 2
    assert (doc["scale"], doc["folds"], doc["repeats"], doc["seed"], doc["n_jobs"]) == (
        True,
        3,
        2,
        7,
        1,
    )
    folds = doc["fold_results"]
    assert [(f["repeat"], f["fold"]) for f in folds] == [(r, k) for r in range(2) for k in range(3)]
    for f in folds:
        assert set(f) == {
            "repeat",
            "fold",
            "n_train",
            "n_test",
            "accuracy",
            "balanced_accuracy",
            "auc",
            "fit_time",
            "search_time",
            "params",
            "inner_accuracy",
            "inner_score",
            "n_xv",
            "warnings",
        }
        assert f["n_train"] + f["n_test"] == 12 and f["n_test"] == 4
        assert (
            0 <= f["accuracy"] <= 1
            and 0 <= f["auc"] <= 1
            and f["fit_time"] >= 0
            and f["search_time"] > 0
        )
        assert f["params"]["C"] in (0.1, 10) and f["params"]["gamma"] in ("scale", 0.5)
        assert 0 <= f["inner_accuracy"] <= 1 and f["n_xv"] == 2 and isinstance(f["warnings"], list)
    acc = np.array([f["accuracy"] for f in folds])
    auc = np.array([f["auc"] for f in folds])
    balanced = np.array([f["balanced_accuracy"] for f in folds])
    s = doc["summary"]
    assert set(s) == {
        "accuracy_mean",
        "accuracy_std",
        "balanced_accuracy_mean",
        "balanced_accuracy_std",
        "majority_rate",
        "auc_mean",
        "auc_std",
        "fit_time_mean",
        "fit_time_total",
        "search_time_total",
        "repeat_accuracy_means",
    }
    assert s["accuracy_mean"] == pytest.approx(acc.mean()) and s["accuracy_std"] == pytest.approx(
        acc.std()
    )
    assert s["balanced_accuracy_mean"] == pytest.approx(balanced.mean())
    assert s["balanced_accuracy_std"] == pytest.approx(balanced.std())
    assert s["majority_rate"] == 0.5  # 6 bags of each class
    assert s["auc_mean"] == pytest.approx(auc.mean()) and s["auc_std"] == pytest.approx(auc.std())
    assert s["repeat_accuracy_means"] == pytest.approx([acc[:3].mean(), acc[3:].mean()])
    assert s["fit_time_total"] == pytest.approx(sum(f["fit_time"] for f in folds))
    assert s["search_time_total"] == pytest.approx(sum(f["search_time"] for f in folds))
    assert (
        f"accuracy: {100 * s['accuracy_mean']:.2f} % (std over folds {100 * s['accuracy_std']:.2f})"
        in proc.stdout
    )
    assert f"AUC: {s['auc_mean']:.4f}" in proc.stdout
    assert f"balanced accuracy: {100 * s['balanced_accuracy_mean']:.2f} %" in proc.stdout
    assert "majority class: 50.00 % of the bags" in proc.stdout
    assert "chosen parameters: " in proc.stdout
    assert proc.stderr == f"milsvm: results written to {out}\n"  # no progress bar on a pipe


def test_cv_same_results_whatever_n_jobs(toy_mill_file, tmp_path, capsys):
    docs = []
    for n_jobs in ("1", "2"):
        out = tmp_path / f"r{n_jobs}.json"
        docs.append(
            cli_cv_json(
                toy_mill_file,
                out,
                "--model",
                "MISVM",
                "--grid",
                "C=0.1,10",
                "--folds",
                "3",
                "--inner-folds",
                "2",
                "--repeats",
                "2",
                "--n-jobs",
                n_jobs,
            )
        )
    strip = [
        [{k: v for k, v in f.items() if not k.endswith("_time")} for f in d["fold_results"]]
        for d in docs
    ]
    assert strip[0] == strip[1]
    assert docs[1]["n_jobs"] == 2


def test_inner_grid_search_chooses_as_gridsearchcv(toy_mill_file):
    from milsvm._crossval import cross_validate, make_model
    from sklearn.model_selection import GridSearchCV, RepeatedStratifiedKFold, StratifiedKFold

    bags, y = milsvm.datasets.load_mill(toy_mill_file)
    bags = milsvm.as_bags(bags)
    grid = {"C": [0.01, 1.0, 100.0], "gamma": [0.1, 2.0]}
    result = cross_validate(milsvm.MISVM, {}, bags, y, folds=3, seed=3, grid=grid, inner_folds=3)
    splits = RepeatedStratifiedKFold(n_splits=3, n_repeats=1, random_state=3).split(
        np.zeros(len(y)), y
    )
    for fold, (train, _) in zip(result.folds, splits):
        search = GridSearchCV(
            make_model(milsvm.MISVM, {}, True),
            {f"model__{k}": v for k, v in grid.items()},
            cv=StratifiedKFold(3, shuffle=True, random_state=3),
        )
        search.fit(bags[train], y[train])
        assert fold["params"] == {k[len("model__") :]: v for k, v in search.best_params_.items()}
        assert fold["inner_accuracy"] == pytest.approx(search.best_score_)


def test_cv_three_classes_has_no_auc(three_class_file, tmp_path, capsys):
    out = tmp_path / "r.json"
    doc = cli_cv_json(three_class_file, out, "--model", "sparsemi", "-p", "n_xv=3", "--folds", "3")
    stdout = capsys.readouterr().out
    assert "3 classes" in stdout and "AUC" not in stdout
    assert doc["summary"]["auc_mean"] is None and all(f["auc"] is None for f in doc["fold_results"])


def test_no_scale(toy_mill_file, tmp_path, capsys):
    out = tmp_path / "r.json"
    doc = cli_cv_json(toy_mill_file, out, "--model", "nsk", "--folds", "2", "--no-scale")
    assert "features used as they are" in capsys.readouterr().out
    assert doc["scale"] is False


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", ALL)
def test_every_estimator_cross_validates(name, toy_mill_file, tmp_path, capsys):
    """``cv`` reports what the protocol it states gives: the folds of scikit-learn's
    ``StratifiedKFold(2, shuffle=True, random_state=seed)`` (seed 0, the default), a pipeline of
    ``BagStandardScaler`` and the estimator with the -p parameters (and ``random_state=seed``
    where it has one) fitted on each training part, refitted here without milsvm's CV code:
    every fold's accuracy, AUC and number of expansion (support) vectors equal the recomputed
    ones, and the summary is their mean.
    Every discriminative estimator also separates the toy (a class-1 bag holds one instance
    far from the others): mean accuracy >= 0.75, chance being 0.5. OneClassMISVM is exempt: it
    models the instances of positive bags, which on this toy are mostly the negative bags'
    background, so it is not expected to separate them."""
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline

    out = tmp_path / "r.json"
    spelled = name if name in ("miSVM", "MISVM") else name.lower()
    doc = cli_cv_json(toy_mill_file, out, "--model", spelled, *pflags(FAST[name]), "--folds", "2")
    assert doc["estimator"] == name and len(doc["fold_results"]) == 2
    assert 0.0 <= doc["summary"]["accuracy_mean"] <= 1.0

    cls = getattr(milsvm, name)
    params = dict(FAST[name])
    if "random_state" in cls().get_params():
        params["random_state"] = 0
    assert doc["params"] == params and doc["seed"] == 0 and doc["scale"] is True
    bags, y = milsvm.datasets.load_mill(toy_mill_file)
    splits = StratifiedKFold(2, shuffle=True, random_state=0).split(np.zeros(len(y)), y)
    accuracies = []
    for fold, (train, test) in zip(doc["fold_results"], splits):
        model = make_pipeline(milsvm.BagStandardScaler(), cls(**params))
        model.fit([bags[i] for i in train], y[train])
        test_bags = [bags[i] for i in test]
        predicted = model.predict(test_bags)
        accuracy = float(np.mean(predicted == y[test]))
        assert (fold["n_train"], fold["n_test"]) == (len(train), len(test))
        assert fold["accuracy"] == accuracy
        assert fold["balanced_accuracy"] == pytest.approx(
            balanced_accuracy_score(y[test], predicted), abs=1e-15
        )
        auc = roc_auc_score(y[test] == model.classes_[1], model.decision_function(test_bags))
        assert fold["auc"] == pytest.approx(auc, abs=1e-12)
        xv = getattr(model[-1], "xv_", None)  # the support-vector counts differ between folds
        assert fold["n_xv"] == (None if xv is None else xv.shape[0])
        accuracies.append(accuracy)
    assert doc["summary"]["accuracy_mean"] == pytest.approx(np.mean(accuracies), abs=1e-15)
    if name != "OneClassMISVM":
        assert doc["summary"]["accuracy_mean"] >= 0.75


# --------------------------------------------------------------------------------------------
# fit and predict
# --------------------------------------------------------------------------------------------


def read_predictions(path):
    rows = [line.split("\t") for line in path.read_text().splitlines()]
    assert all(len(r) == 3 for r in rows)
    return [r[0] for r in rows], np.array([float(r[1]) for r in rows]), [r[2] for r in rows]


FIT_CASES = [pytest.param(name, FAST[name]) for name in ALL] + [
    pytest.param("NSK", {"norm": "l2", "C": 10}, id="NSK-l2")
]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name, params", FIT_CASES)
def test_fit_then_predict_reproduces_the_estimator(name, params, toy_mill_file, tmp_path, capsys):
    model, preds = tmp_path / "model.json", tmp_path / "pred.tsv"
    cli_ok("fit", toy_mill_file, "--model", name, *pflags(params), "--seed", "3", "-o", model)
    assert main(["predict", str(model), str(toy_mill_file), "-o", str(preds), "-q"]) == 0
    names, scores, labels = read_predictions(preds)

    bags, y, bag_names = milsvm.datasets.load_mill(toy_mill_file, return_bag_names=True)
    cls = getattr(milsvm, name)
    extra = {"random_state": 3} if "random_state" in cls().get_params() else {}
    # what cv scores: standardised on the training instances, then the estimator
    est = make_pipeline(milsvm.BagStandardScaler(), cls(**params, **extra)).fit(bags, y)
    assert names == bag_names
    np.testing.assert_allclose(scores, est.decision_function(bags), rtol=1e-10, atol=1e-12)
    assert labels == [str(v) for v in est.predict(bags)]
    loaded = milsvm.load(model)
    assert [type(step).__name__ for step in loaded] == ["BagStandardScaler", cls.__name__]
    np.testing.assert_array_equal(loaded[0].mean_, est[0].mean_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fit_no_scale_saves_the_raw_estimator_and_predict_writes_instance_lines(
    toy_mill_file, tmp_path, capsys
):
    model, preds, inst = tmp_path / "model.json", tmp_path / "pred.tsv", tmp_path / "inst.tsv"
    cli_ok("fit", toy_mill_file, "--model", "MISVM", "-p", "C=10", "--no-scale", "-o", model)
    assert "(raw features (--no-scale))" in capsys.readouterr().out
    cli_ok("predict", model, toy_mill_file, "-o", preds, "--instances", inst, "-q")
    bags, y, bag_names = milsvm.datasets.load_mill(toy_mill_file, return_bag_names=True)
    est = milsvm.MISVM(C=10).fit(bags, y)
    loaded = milsvm.load(model)
    assert isinstance(loaded, milsvm.MISVM)
    np.testing.assert_allclose(read_predictions(preds)[1], est.decision_function(bags), rtol=1e-12)
    rows = [line.split("\t") for line in inst.read_text().splitlines()]
    assert all(len(r) == 4 for r in rows) and len(rows) == sum(len(b) for b in bags)
    want = est.instance_decision_function(bags)
    labels = est.predict_instances(bags)
    k = 0
    for name, scores, lab in zip(bag_names, want, labels):
        for p, (s, label) in enumerate(zip(scores, lab)):
            assert rows[k][:2] == [name, str(p)] and rows[k][3] == str(label)
            assert float(rows[k][2]) == pytest.approx(s, rel=1e-12)
            k += 1
    # the bag's score is the max of its instance lines (MISVM pools by the max)
    first = [float(r[2]) for r in rows if r[0] == bag_names[0]]
    assert max(first) == pytest.approx(read_predictions(preds)[1][0], rel=1e-12)


def test_predict_instances_of_a_model_without_instance_scores_is_refused_before_any_work(
    toy_mill_file, tmp_path, capsys
):
    model, inst = tmp_path / "stk.json", tmp_path / "inst.tsv"
    assert (
        main(["fit", str(toy_mill_file), "--model", "STK", "-p", "C=10", "-o", str(model), "-q"])
        == 0
    )
    capsys.readouterr()
    assert main(["predict", str(model), str(toy_mill_file), "--instances", str(inst), "-q"]) == 1
    err = capsys.readouterr().err
    assert "--instances: STK has no instance scores" in err and not inst.exists()
    assert main(["predict", str(model), str(toy_mill_file), "-q"]) == 0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_predict_subprocess_writes_name_score_label_lines(toy_mill_file, tmp_path, capsys):
    model = tmp_path / "m.json"
    cli_ok("fit", toy_mill_file, *"--model ALSVM -p C=10 -p max_iter=5 -q".split(), "-o", model)
    assert re.match(
        r"fitted ALSVM\(C=10, max_iter=5, random_state=0\) on 12 bags \(standardised "
        r"features\) in [\d.]+ s; "
        r"training accuracy [\d.]+ %; saved to ",
        capsys.readouterr().out,
    )
    proc = run("predict", model, toy_mill_file)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 12
    for k, line in enumerate(lines):
        name, score, label = line.split("\t")
        assert name == f"bag{k}" and label == str(int(float(score) > 0))
    assert re.fullmatch(r"milsvm: accuracy against the file's labels: [\d.]+ %\n", proc.stderr)


def test_predict_multiclass_prints_the_score_of_the_predicted_class(
    three_class_file, tmp_path, capsys
):
    model, preds = tmp_path / "m.json", tmp_path / "p.tsv"
    assert main(["fit", str(three_class_file), "-p", "n_xv=3", "-o", str(model)]) == 0
    assert main(["predict", str(model), str(three_class_file), "-o", str(preds)]) == 0
    _, scores, labels = read_predictions(preds)
    est = milsvm.load(model)
    bags, _ = milsvm.datasets.load_mill(three_class_file)
    all_scores = est.decision_function(bags)
    np.testing.assert_allclose(scores, all_scores.max(axis=1), rtol=1e-10)
    assert labels == [str(c) for c in est.classes_[all_scores.argmax(axis=1)]]


def test_predict_with_the_wrong_number_of_features_is_one_line(toy_mill_file, tmp_path, capsys):
    model, wide = tmp_path / "m.json", tmp_path / "wide.data"
    wide.write_text("i1,b1,1,1,2,3\ni2,b2,0,4,5,6\n")
    assert main(["fit", str(toy_mill_file), "-p", "n_xv=2", "-o", str(model)]) == 0
    capsys.readouterr()
    assert main(["predict", str(model), str(wide)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("milsvm: error: ") and err.count("\n") == 1 and "3" in err and "2" in err


# --------------------------------------------------------------------------------------------
# data formats
# --------------------------------------------------------------------------------------------


@pytest.fixture
def toy_formats(tmp_path):
    """The toy bags in the four formats, as {format: path}."""
    rows = toy_lines()
    paths = {
        "mill": tmp_path / "toy.data",
        "musk": tmp_path / "clean_toy.data",
        "csv": tmp_path / "toy.csv",
        "mat": tmp_path / "toy.mat",
    }
    paths["mill"].write_text(
        "".join(f"{i},{b},{c},{x[0]:.17g},{x[1]:.17g}\n" for i, b, c, x in rows)
    )
    paths["musk"].write_text(
        "".join(f"{b},{i},{x[0]:.17g},{x[1]:.17g},{c}.\n" for i, b, c, x in rows)
    )
    paths["csv"].write_text(
        "label,bag_id,f1,f2\n"
        + "".join(f"{c},{b},{x[0]:.17g},{x[1]:.17g}\n" for i, b, c, x in rows)
    )
    scipy.io.savemat(
        paths["mat"],
        {
            "features": sp.csr_matrix(np.array([x for *_, x in rows])),
            "labels": np.array([[2 * c - 1 for _, _, c, _ in rows]]),
            "bag_ids": np.array([[int(b[3:]) + 1 for _, b, _, _ in rows]]),
        },
    )
    return paths


def test_format_detection(toy_formats, tmp_path):
    for fmt, path in toy_formats.items():
        assert cli.detect_format(path) == fmt
    sparse = tmp_path / "sparse.data"
    sparse.write_text("i1,b1,1,1:0.5,3:1.\n")
    assert cli.detect_format(sparse) == "mill"


def test_every_format_gives_the_same_predictions(toy_formats, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert (
        main(["fit", str(toy_formats["mill"]), "--model", "rsvm", "-p", "n_xv=3", "-o", str(model)])
        == 0
    )
    outputs = {}
    for fmt, path in toy_formats.items():
        out = tmp_path / f"{fmt}.tsv"
        assert main(["predict", str(model), str(path), "-o", str(out)]) == 0
        outputs[fmt] = read_predictions(out)
    reference = outputs["mill"]
    for _names, scores, labels in outputs.values():
        np.testing.assert_allclose(scores, reference[1], rtol=1e-12)
        assert labels == reference[2]
    assert outputs["mat"][0] == [str(k) for k in range(1, 13)] and outputs["csv"][0] == reference[0]


def test_format_can_be_forced(toy_formats, tmp_path, capsys):
    renamed = tmp_path / "toy_csv.txt"
    renamed.write_text(toy_formats["csv"].read_text())
    assert main(["cv", str(renamed), "--format", "csv", "--folds", "2", "-p", "n_xv=2", "-q"]) == 0
    assert (
        main(["cv", str(renamed), "--folds", "2", "-q"]) == 1
    )  # read as MILL: the header is not data
    assert "line 1" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# progress bar, quiet, report, optional dependencies
# --------------------------------------------------------------------------------------------


def run_on_terminal(args):
    """Run with stderr on a pseudo-terminal (100 columns); returns (exit code, stderr text)."""
    pty = pytest.importorskip("pty")
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "milsvm", *map(str, args)], stdout=subprocess.DEVNULL, stderr=slave
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_progress_bar_on_a_terminal_only_and_not_with_quiet(toy_mill_file):
    args = ["cv", toy_mill_file, "--folds", "3", "--grid", "C=1,10", "-p", "n_xv=2"]
    code, err = run_on_terminal(args)
    assert (
        code == 0 and "cv SparseMI" in err and "/21" in err
    )  # 3 folds x (2 candidates x 3 inner + 1)
    code, err = run_on_terminal([*args, "--quiet"])
    assert (
        code == 0 and err == ""
    )  # and no bar when stderr is a pipe: see test_cv_json_schema_grid_and_repeats


def test_report_markdown_and_plots(toy_mill_file, tmp_path, capsys):
    report = tmp_path / "report"
    cli_ok(
        "cv", toy_mill_file, "--folds", "3", "--grid", "C=1,10", "-p", "n_xv=2", "--report", report
    )
    text = (report / "report.md").read_text()
    for fragment in (
        "# milsvm cross-validation report",
        "## Results",
        "## Folds",
        "| r1 f3 | 8 | 4 |",
        "grid search",
        "SparseMI(n_xv=2, random_state=0)",
        "balanced accuracy",
        "majority class",
    ):
        assert fragment in text
    pytest.importorskip("matplotlib")
    for png in ("accuracy.png", "objective.png", "decision_regions.png", "roc.png", "pr.png"):
        assert (report / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({png})" in text
    assert "report.md and report.html with 5 plot(s)" in capsys.readouterr().err


def test_report_without_objective_history_or_2d(three_class_file, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    report = tmp_path / "report"
    cli_ok("cv", three_class_file, "--model", "nsk", "--folds", "3", "-q", "--report", report)
    assert sorted(p.name for p in report.iterdir()) == [
        "accuracy.png",
        "decision_regions.png",
        "report.html",
        "report.md",
    ]
    assert "NSK records no objective history" in (report / "report.md").read_text()


def test_report_without_matplotlib_says_how_to_get_the_plots(toy_mill_file, tmp_path):
    report = tmp_path / "report"
    proc = run(
        "cv",
        toy_mill_file,
        "--folds",
        "2",
        "-p",
        "n_xv=2",
        "--report",
        report,
        env=blocked_env(tmp_path, "matplotlib"),
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "pip install milsvm[plot]" in lines[0]
    assert sorted(p.name for p in report.iterdir()) == ["report.html", "report.md"]
    assert "pip install milsvm[plot]" in (report / "report.md").read_text()


def test_scheduler_without_dask_is_one_line(toy_mill_file, tmp_path):
    proc = run(
        "cv",
        toy_mill_file,
        "--folds",
        "2",
        "--scheduler",
        "tcp://127.0.0.1:8786",
        env=blocked_env(tmp_path, "dask", "distributed"),
    )
    assert_one_error_line(proc, 1, "pip install milsvm[dask]")
