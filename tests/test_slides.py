"""Folders of slides with their patients: the synthetic CLAM folder, label groups, patch
coordinates, patient-level cross-validation, out-of-fold predictions with bootstrap intervals,
and heatmaps (GeoJSON for QuPath, PNG)."""

import csv
import json
import math

import milsvm
import numpy as np
import pytest
import scipy.stats
from conftest import cli_ok
from hypothesis import assume, given
from hypothesis import strategies as st
from milsvm import datasets
from milsvm._bootstrap import (
    bootstrap_interval,
    resample_weights,
    weighted_auc,
    weighted_balanced_accuracy,
)
from milsvm._crossval import cross_validate
from milsvm._heatmap import write_heatmaps
from milsvm.cli import main
from milsvm.model_selection import (
    RepeatedStratifiedGroupKFold,
    inner_splits,
    needs_grouping,
    outer_splits,
)
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

h5py = pytest.importorskip("h5py")

LINEAR = ["--model", "MISVM", "-p", "kernel='linear'", "-p", "C=1.0", "-p", "max_iter=5"]


def _cv(slides, *args):
    """`milsvm cv` over the slide folder with the small linear model; returns the exit status."""
    return main(["cv", slides.features_dir, "--labels", slides.labels, *LINEAR, *args])


@pytest.fixture(scope="module")
def slides(tmp_path_factory):
    """A small synthetic CLAM folder: 24 cases of 1-3 slides."""
    root = tmp_path_factory.mktemp("clam")
    return datasets.make_slide_folder(
        root, n_cases=24, n_features=6, n_patches=(30, 60), random_state=3
    )


# --------------------------------------------------------------------------------------------
# make_slide_folder
# --------------------------------------------------------------------------------------------


def test_slide_folder_layout(slides):
    with open(slides.labels, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["case_id", "slide_id", "label"]
    assert [r[1] for r in rows[1:]] == slides.slides
    cases = [r[0] for r in rows[1:]]
    assert len(set(cases)) == 24 and len(cases) > 24  # several slides per case
    for slide in slides.slides[:5]:
        with h5py.File(f"{slides.features_dir}/{slide}.h5") as f:
            X, xy = f["features"][()], f["coords"][()]
            assert X.dtype == np.float32 and X.shape[1] == 6 and xy.shape == (len(X), 2)
            assert f["coords"].attrs["patch_size"] == 256 and f["coords"].attrs["patch_level"] == 0
            assert np.all(xy % 256 == 0)
            np.testing.assert_array_equal(f["tumour"][()].astype(bool), slides.tumour[slide])


def test_slide_folder_tumour_is_a_cluster_and_labels_follow_it(slides):
    for slide, y in zip(slides.slides, slides.y):
        mask = slides.tumour[slide]
        assert bool(mask.any()) == bool(y)
        if mask.sum() > 2:
            with h5py.File(f"{slides.features_dir}/{slide}.h5") as f:
                xy = f["coords"][()].astype(float)
            spread = np.linalg.norm(xy[mask] - xy[mask].mean(axis=0), axis=1).max()
            whole = np.linalg.norm(xy - xy.mean(axis=0), axis=1).max()
            assert spread < whole  # a disc of the tissue, not scattered over it
    # a case's label is the max of its slides': some positive case may hold a negative slide
    case_y = {}
    for c, y in zip(slides.cases, slides.y):
        case_y[c] = max(case_y.get(c, 0), y)
    assert 0 < sum(case_y.values()) < len(case_y)


def test_slide_folder_is_reproducible(tmp_path):
    a = datasets.make_slide_folder(
        tmp_path / "a", n_cases=4, n_features=3, n_patches=20, random_state=7
    )
    b = datasets.make_slide_folder(
        tmp_path / "b", n_cases=4, n_features=3, n_patches=20, random_state=7
    )
    assert a.slides == b.slides
    for slide in a.slides:
        with (
            h5py.File(f"{a.features_dir}/{slide}.h5") as fa,
            h5py.File(f"{b.features_dir}/{slide}.h5") as fb,
        ):
            assert fa["features"][()].tobytes() == fb["features"][()].tobytes()


def test_slide_folder_refuses_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="n_cases"):
        datasets.make_slide_folder(tmp_path, n_cases=1)
    with pytest.raises(ValueError, match="slides_per_case"):
        datasets.make_slide_folder(tmp_path, slides_per_case=(3, 1))
    with pytest.raises(ValueError, match="format"):
        datasets.make_slide_folder(tmp_path, format="pt")


# --------------------------------------------------------------------------------------------
# Groups in the label file
# --------------------------------------------------------------------------------------------


def test_label_groups(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("case_id,slide_id,label\nA,s1,1\nA,s2,0\nB,s3,0\n")
    labels, groups = datasets.read_labels(path, return_groups=True)
    assert labels == {"s1": 1, "s2": 0, "s3": 0} and groups == {"s1": "A", "s2": "A", "s3": "B"}
    assert datasets.read_labels(path) == labels  # the default return is unchanged
    _, by_slide = datasets.read_labels(path, group_by="SLIDE_ID", return_groups=True)
    assert by_slide == {"s1": "s1", "s2": "s2", "s3": "s3"}
    plain = tmp_path / "plain.csv"
    plain.write_text("s1,1\ns2,0\n")
    assert datasets.read_labels(plain, return_groups=True) == ({"s1": 1, "s2": 0}, None)


@pytest.mark.parametrize(
    "text, group_by, message",
    [
        (
            "case_id,slide_id,label\nA,s1,1\n,s2,0\n",
            None,
            r"line 3: empty 'case_id' value for bag 's2'",
        ),
        (
            "case_id,slide_id,label\nA,s1,1\n",
            "patient",
            r"no column 'patient' to group by \(the columns are "
            r"'case_id', 'slide_id', 'label'\)",
        ),
        ("s1,1\n", "case_id", r"no header"),
    ],
)
def test_label_group_refusals(tmp_path, text, group_by, message):
    path = tmp_path / "labels.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        datasets.read_labels(path, group_by=group_by, return_groups=True)
    assert "labels.csv" in str(info.value)


def test_loaders_return_groups_and_coords(slides):
    bags, y, names, groups, coords = datasets.load_h5_folder(
        slides.features_dir,
        slides.labels,
        return_bag_names=True,
        return_groups=True,
        return_coords=True,
    )
    assert names == slides.slides and list(groups) == slides.cases
    assert all(
        c.patch_size == 256 and c.patch_level == 0 and c.level0_size() == 256.0 for c in coords
    )
    assert all(c.xy.dtype == np.int64 and len(c.xy) == len(b) for c, b in zip(coords, bags))
    two = datasets.load_h5_folder(slides.features_dir, slides.labels)
    assert len(two) == 2  # (bags, y) stays the default


def test_npy_sidecar_coords(tmp_path):
    made = datasets.make_slide_folder(
        tmp_path, n_cases=3, n_features=3, n_patches=20, format="npy", random_state=1
    )
    data = datasets.load_slide_folder(made.features_dir, made.labels)
    assert data.format == "npy" and data.has_coords()
    assert data.coords[0].patch_size == 256 and data.coords[0].downsample == 1.0
    assert len(data.bags) == len(made.slides)  # the sidecar folders hold no bags


def _h5(path, X, xy=None, **attrs):
    with h5py.File(path, "w") as f:
        f.create_dataset("features", data=X)
        if xy is not None:
            d = f.create_dataset("coords", data=xy)
            for k, v in attrs.items():
                d.attrs[k] = v


@pytest.mark.parametrize(
    "xy, message",
    [
        (np.zeros((3, 2)), r"3 coords rows, but the features have 4 rows"),
        (np.array([[0, 0], [1, 2], [np.nan, 0], [3, 3]]), r"coords row 2 has a non-finite value"),
        (np.array([[0, 0], [1.5, 2], [0, 0], [3, 3]]), r"coords row 1 is not integer"),
        (np.zeros((4, 3)), r"N x 2"),
    ],
)
def test_bad_coords_name_the_file(tmp_path, xy, message):
    folder = tmp_path / "f"
    folder.mkdir()
    _h5(folder / "s1.h5", np.ones((4, 2), np.float32), xy, patch_size=256)
    with pytest.raises(ValueError, match=message) as info:
        datasets.load_h5_folder(folder, {"s1": 1}, return_coords=True)
    assert "s1.h5" in str(info.value)


def test_bag_by_case(slides):
    data = datasets.load_slide_folder(slides.features_dir, slides.labels, bag_by="case_id")
    assert data.names == list(dict.fromkeys(slides.cases)) and len(data.bags) == 24
    first = [k for k, c in enumerate(slides.cases) if c == data.names[0]]
    assert len(data.bags[0]) == sum(len(slides.tumour[slides.slides[k]]) for k in first)
    assert list(dict.fromkeys(data.coords[0].slide)) == [slides.slides[k] for k in first]
    assert data.y[0] == max(slides.y[k] for k in first)


# --------------------------------------------------------------------------------------------
# Grouped splits
# --------------------------------------------------------------------------------------------


def _assert_disjoint(groups, a, b):
    assert not set(groups[a]) & set(groups[b])


def test_no_case_on_both_sides_of_any_split(slides):
    data = datasets.load_slide_folder(slides.features_dir, slides.labels)
    groups = data.groups
    assert needs_grouping(groups)
    result = cross_validate(
        milsvm.MISVM,
        {"kernel": "linear", "max_iter": 3},
        milsvm.as_bags(data.bags),
        data.y,
        folds=3,
        repeats=2,
        seed=1,
        grid={"C": [0.1, 1.0]},
        inner_folds=2,
        groups=groups,
    )
    assert len(result.splits) == 6 and len(result.inner) == 6
    for (train, test), inner in zip(result.splits, result.inner):
        assert sorted(np.r_[train, test]) == list(range(len(data.y)))
        _assert_disjoint(groups, train, test)
        for itrain, itest in inner:
            assert set(itrain) | set(itest) == set(train)
            _assert_disjoint(groups, itrain, itest)
    # the same folds from Python, through milsvm.model_selection
    again = outer_splits(data.y, groups, folds=3, repeats=2, seed=1)
    for (a, b), (c, d) in zip(result.splits, again):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    train = again[0][0]
    for (a, _), (c, _) in zip(
        result.inner[0], inner_splits(data.y[train], groups[train], inner_folds=2, seed=1)
    ):
        np.testing.assert_array_equal(a, train[c])
    # the repeats shuffle differently
    assert not all(np.array_equal(a[1], b[1]) for a, b in zip(again[:3], again[3:]))
    assert RepeatedStratifiedGroupKFold(3, 2).get_n_splits() == 6


@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(1, 4)), min_size=12, max_size=30),
    st.integers(0, 99),
)
def test_grouped_splits_never_share_a_patient(cases, seed):
    # cases: (label, number of slides) per patient; at least three patients of each label
    labels = [lab for lab, _ in cases]
    assume(labels.count(0) >= 3 and labels.count(1) >= 3)
    y = np.array([lab for lab, n in cases for _ in range(n)])
    groups = np.array([f"p{k}" for k, (_, n) in enumerate(cases) for _ in range(n)], dtype=object)
    for train, test in outer_splits(y, groups, folds=3, repeats=2, seed=seed):
        _assert_disjoint(groups, train, test)
        try:
            inner = inner_splits(y[train], groups[train], inner_folds=2, seed=seed)
        except ValueError:
            continue  # a training part with one patient of a class: refused, with the count
        for a, b in inner:
            _assert_disjoint(groups[train], a, b)


def test_ungrouped_splits_are_the_stratified_ones():
    from sklearn.model_selection import RepeatedStratifiedKFold

    y = np.array([0, 1] * 10)
    ours = outer_splits(y, None, folds=5, repeats=2, seed=4)
    theirs = list(
        RepeatedStratifiedKFold(n_splits=5, n_repeats=2, random_state=4).split(np.zeros(20), y)
    )
    for (_, b), (_, d) in zip(ours, theirs):
        np.testing.assert_array_equal(b, d)


def test_too_few_patients_for_the_folds():
    y = np.array([0, 0, 1, 1, 1])
    with pytest.raises(ValueError, match="class 0 has only 1 patients"):
        outer_splits(y, np.array(["a", "a", "b", "c", "d"]), folds=2)


# --------------------------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------------------------


def test_weighted_auc_is_the_auc_of_the_resample():
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=40), 1)  # ties
    y = rng.random(40) < 0.4
    weights = resample_weights(y, 30, rng)
    got = weighted_auc(scores, y, weights)
    for w, value in zip(weights, got):
        idx = np.repeat(np.arange(40), w.astype(int))
        assert value == pytest.approx(roc_auc_score(y[idx], scores[idx]), abs=1e-12)
    assert weighted_auc(scores, y, np.ones(40))[0] == pytest.approx(
        roc_auc_score(y, scores), abs=1e-12
    )


def test_weighted_balanced_accuracy_is_that_of_the_resample():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 50)
    pred = np.where(rng.random(50) < 0.7, y, rng.integers(0, 3, 50))
    weights = resample_weights(y, 20, rng)
    for w, value in zip(weights, weighted_balanced_accuracy(y, pred, weights)):
        idx = np.repeat(np.arange(50), w.astype(int))
        assert value == pytest.approx(balanced_accuracy_score(y[idx], pred[idx]), abs=1e-12)


def test_resampling_is_stratified():
    rng = np.random.default_rng(2)
    strata = np.array([0] * 7 + [1] * 3)
    w = resample_weights(strata, 50, rng)
    assert np.all(w[:, :7].sum(axis=1) == 7) and np.all(w[:, 7:].sum(axis=1) == 3)


def test_interval_agrees_with_scipy_percentile_bootstrap():
    rng = np.random.default_rng(3)
    pos, neg = rng.normal(0.8, 1.0, 60), rng.normal(0.0, 1.0, 90)
    scores, y = np.r_[pos, neg], np.r_[np.ones(60, bool), np.zeros(90, bool)]
    ours = bootstrap_interval(
        lambda w: weighted_auc(scores, y, w), y, n_resamples=20000, rng=np.random.default_rng(4)
    )

    def auc(p, n, axis=-1):
        return np.mean(p[..., :, None] > n[..., None, :], axis=(-2, -1)) + 0.5 * np.mean(
            p[..., :, None] == n[..., None, :], axis=(-2, -1)
        )

    theirs = scipy.stats.bootstrap(
        (pos, neg),
        auc,
        n_resamples=20000,
        method="percentile",
        vectorized=True,
        batch=500,
        random_state=5,
    )
    assert ours["value"] == pytest.approx(roc_auc_score(y, scores))
    assert ours["low"] == pytest.approx(theirs.confidence_interval.low, abs=0.01)
    assert ours["high"] == pytest.approx(theirs.confidence_interval.high, abs=0.01)


def test_grouped_bootstrap_draws_whole_patients():
    rng = np.random.default_rng(5)
    unit_of_bag = np.array([0, 0, 1, 2, 2, 2])
    seen = []
    bootstrap_interval(
        lambda w: seen.append(w) or np.ones(len(w)),
        np.array([0, 1, 1]),
        unit_of_bag,
        n_resamples=100,
        rng=rng,
    )
    w = seen[-1]
    assert np.all(w[:, 0] == w[:, 1]) and np.all(w[:, 3] == w[:, 4]) and np.all(w[:, 4] == w[:, 5])
    assert np.all(w[:, 0] == 1)  # the only patient of its stratum


# --------------------------------------------------------------------------------------------
# milsvm cv on a slide folder
# --------------------------------------------------------------------------------------------


def test_cv_groups_by_case_and_writes_predictions(slides, tmp_path, capsys):
    out, preds = tmp_path / "cv.json", tmp_path / "oof.csv"
    assert (
        _cv(
            slides,
            "--folds",
            "3",
            "--repeats",
            "2",
            "--bootstrap",
            "200",
            "-o",
            str(out),
            "--predictions",
            str(preds),
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "splits grouped by case_id" in text and "24 patients" in text
    assert (
        "bags (repeat 1): AUC" in text and "95 % CI" in text and "patients (repeat 2): AUC" in text
    )
    assert "stratified bootstrap, percentile interval over patients" in text
    doc = json.loads(out.read_text())
    assert doc["grouping"] == {"column": "case_id", "grouped": True, "n_groups": 24}
    with open(preds, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["repeat", "fold", "bag", "group", "label", "score"]
    assert len(rows) == 2 * len(slides.slides) == len(doc["predictions"])
    assert [float(r["score"]) for r in rows] == [r["score"] for r in doc["predictions"]]
    case_of = dict(zip(slides.slides, slides.cases))
    assert all(r["group"] == case_of[r["bag"]] for r in rows)
    # no patient in two test folds of one repeat
    for rep in ("0", "1"):
        fold_of = {}
        for r in rows:
            if r["repeat"] == rep:
                assert fold_of.setdefault(r["group"], r["fold"]) == r["fold"]
    # the pooled AUC of the file's rows is the printed one
    ev = doc["evaluation"]
    r0 = [r for r in rows if r["repeat"] == "0"]
    auc = roc_auc_score([int(r["label"]) for r in r0], [float(r["score"]) for r in r0])
    assert ev["bags"][0]["auc"]["value"] == pytest.approx(auc)
    assert ev["resampled"] == "patients" and ev["n_resamples"] == 200
    assert ev["bags"][0]["auc"]["low"] <= auc <= ev["bags"][0]["auc"]["high"]
    # patients: the max of their slides' scores, the max of their labels
    pt = ev["patients"]
    assert pt["n_patients"] == 24 and pt["case_score"] == "max"
    mixed = {
        c
        for c in set(slides.cases)
        if len({y for cc, y in zip(slides.cases, slides.y) if cc == c}) > 1
    }
    assert pt["mixed_label_patients"] == len(mixed)
    scores = {}
    for r in r0:
        scores.setdefault(r["group"], []).append(float(r["score"]))
    case_y = {}
    for c, y in zip(slides.cases, slides.y):
        case_y[c] = max(case_y.get(c, 0), int(y))
    ids = sorted(scores)
    assert pt["repeats"][0]["auc"]["value"] == pytest.approx(
        roc_auc_score([case_y[c] for c in ids], [max(scores[c]) for c in ids])
    )


def test_cv_no_group_warns_and_bag_by_makes_cases(slides, capsys):
    assert _cv(slides, "--folds", "3", "--no-group", "--bootstrap", "100") == 0
    captured = capsys.readouterr()
    assert (
        "splits grouped" not in captured.out
        and "--no-group: the slides of one case_id" in captured.err
    )
    assert (
        _cv(
            slides,
            "--folds",
            "3",
            "--bag-by",
            "case_id",
            "--bootstrap",
            "100",
            "--case-score",
            "mean",
        )
        == 0
    )
    captured = capsys.readouterr()
    assert ": 24 bags, 3-fold CV" in captured.out and "splits grouped" not in captured.out
    assert "  bags: AUC" in captured.out and "patients:" not in captured.out  # one bag per patient


def test_cv_unknown_group_column_is_a_usage_error_before_any_work(slides, tmp_path, capsys):
    assert (
        main(["cv", str(tmp_path / "missing"), "--labels", slides.labels, "--group-by", "patient"])
        == 2
    )
    err = capsys.readouterr().err
    assert "--group-by: the label file" in err and "no column 'patient'" in err
    assert "case_id, slide_id, label" in err


def test_cv_unwritable_outputs_are_found_before_the_cv(slides, tmp_path, capsys):
    assert _cv(slides, "--predictions", str(tmp_path / "nowhere" / "p.csv")) == 1
    assert "--predictions: cannot write" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert _cv(slides, "--report", str(tmp_path / "file")) == 2


def test_cv_scoring_options(tmp_path, capsys):
    slides = datasets.make_slide_folder(
        tmp_path,
        n_cases=40,
        slides_per_case=1,
        n_features=4,
        n_patches=20,
        slide_tumour_rate=1.0,
        random_state=0,
    )
    args = [
        "cv",
        slides.features_dir,
        "--labels",
        slides.labels,
        "--model",
        "MISVM",
        "-p",
        "kernel='linear'",
        "-p",
        "max_iter=5",
        "--folds",
        "3",
        "--grid",
        "C=0.1,1",
        "--inner-folds",
        "2",
        "--bootstrap",
        "100",
    ]
    assert main([*args, "--scoring", "neg_log_loss"]) == 2
    assert "needs probabilities" in capsys.readouterr().err
    for scoring in ("roc_auc", "balanced_accuracy"):
        assert main([*args, "--scoring", scoring]) == 0
    assert main([*args, "--scoring", "neg_log_loss", "-p", "probability=True"]) == 0


def test_cv_predictions_with_probabilities_and_multiclass(tmp_path, capsys):
    rng = np.random.default_rng(0)
    folder = tmp_path / "npy"
    folder.mkdir()
    lines = ["case_id,slide_id,label"]
    for k in range(30):
        c = k % 3
        X = rng.normal(size=(5, 2)) + np.array([[0, 0], [3, 0], [0, 3]])[c]
        np.save(folder / f"s{k}.npy", X)
        lines.append(f"p{k // 2},s{k},{['a', 'b', 'c'][c]}")
    (tmp_path / "labels.csv").write_text("\n".join(lines) + "\n")
    preds = tmp_path / "oof.csv"
    flags = "--model NSK -p probability=True --folds 3 --no-group --bootstrap 100".split()
    cli_ok("cv", folder, "--labels", tmp_path / "labels.csv", *flags, "--predictions", preds, "-q")
    header = preds.read_text().splitlines()[0].split(",")
    assert header == [
        "repeat",
        "fold",
        "bag",
        "group",
        "label",
        "score_a",
        "score_b",
        "score_c",
        "proba_a",
        "proba_b",
        "proba_c",
    ]


def test_report_has_curves_patients_and_a_self_contained_html(slides, tmp_path):
    pytest.importorskip("matplotlib")
    report = tmp_path / "report"
    assert (
        _cv(
            slides,
            "-p",
            "probability=True",
            "--folds",
            "3",
            "--bootstrap",
            "100",
            "-q",
            "--report",
            str(report),
        )
        == 0
    )
    names = {p.name for p in report.iterdir()}
    assert {"report.md", "report.html", "roc.png", "pr.png", "calibration.png"} <= names
    text = (report / "report.md").read_text()
    assert (
        "## Pooled out-of-fold results" in text and "## Patients" in text and "| case_00 |" in text
    )
    html = (report / "report.html").read_text()
    assert html.count("data:image/png;base64,") == text.count("](")
    assert "<table>" in html and 'src="roc.png"' not in html


# --------------------------------------------------------------------------------------------
# Non-finite features name the file
# --------------------------------------------------------------------------------------------


@pytest.fixture
def nan_folder(tmp_path):
    folder = tmp_path / "h5"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for k in range(6):
        X = rng.normal(size=(4, 2)).astype(np.float32)
        if k == 4:
            X[2, 1] = np.nan
        _h5(folder / f"s{k}.h5", X, np.arange(8).reshape(4, 2) * 256, patch_size=256)
    labels = tmp_path / "labels.csv"
    labels.write_text("slide_id,label\n" + "".join(f"s{k},{k % 2}\n" for k in range(6)))
    return folder, labels


def test_non_finite_features_name_the_slide_file(nan_folder, tmp_path, capsys):
    folder, labels = nan_folder
    model = tmp_path / "m.json"
    X = [np.ones((2, 2)), np.zeros((2, 2))]
    milsvm.save(milsvm.MISVM(kernel="linear").fit(X, [0, 1]), model)
    for args in (
        ["cv", str(folder), "--labels", str(labels)],
        ["fit", str(folder), "--labels", str(labels), "-o", str(tmp_path / "out.json")],
        ["predict", str(model), str(folder)],
        ["heatmap", str(model), str(folder), "--out", str(tmp_path / "heat")],
    ):
        assert main(args) == 1
        err = capsys.readouterr().err
        assert "s4.h5: the features have a non-finite value (NaN or infinity) in row 2" in err, args
    assert not (tmp_path / "heat").exists() or not any((tmp_path / "heat").iterdir())


# --------------------------------------------------------------------------------------------
# Heatmaps and instance coordinates
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fitted(slides, tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "model.json"
    assert (
        main(
            ["fit", slides.features_dir, "--labels", slides.labels, *LINEAR, "-o", str(path), "-q"]
        )
        == 0
    )
    return path


def test_heatmap_writes_qupath_geojson_and_png(slides, fitted, tmp_path, capsys):
    out = tmp_path / "heat"
    cli_ok("heatmap", fitted, slides.features_dir, "--labels", slides.labels, "--out", out)
    assert f"heatmaps of {len(slides.slides)} slide(s)" in capsys.readouterr().out
    slide = slides.slides[0]
    doc = json.loads((out / f"{slide}.geojson").read_text())
    assert (out / f"{slide}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    model = milsvm.load(fitted)
    data = datasets.load_slide_folder(slides.features_dir, slides.labels)
    X, coords = data.bags[0], data.coords[0]
    explanation = model[-1].explain(model[:-1].transform([X]))[0]
    assert doc["type"] == "FeatureCollection" and len(doc["features"]) == len(X)
    for i, feature in enumerate(doc["features"][:20]):
        x, y = coords.xy[i]
        assert feature["geometry"] == {
            "type": "Polygon",
            "coordinates": [[[x, y], [x + 256, y], [x + 256, y + 256], [x, y + 256], [x, y]]],
        }
        props = feature["properties"]
        assert props["objectType"] == "detection"
        assert props["score"] == pytest.approx(explanation.instance_scores[i])
        assert props["share"] == pytest.approx(explanation.contributions[i])
        assert props["measurements"] == {"score": props["score"], "share": props["share"]}
        assert (
            props["classification"]["name"] in ("0", "1")
            and len(props["classification"]["color"]) == 3
        )


def test_heatmap_from_python_through_a_pipeline(slides, fitted, tmp_path):
    pytest.importorskip("matplotlib")
    data = datasets.load_slide_folder(slides.features_dir, slides.labels)
    model = milsvm.load(fitted)
    written = write_heatmaps(
        model, data.bags[:2], data.coords[:2], tmp_path, names=data.names[:2], labels=data.y[:2]
    )
    assert [p.name for p in written] == [
        f"{data.names[0]}.geojson",
        f"{data.names[0]}.png",
        f"{data.names[1]}.geojson",
        f"{data.names[1]}.png",
    ]
    # a case as one bag is written slide by slide
    cases = datasets.load_slide_folder(slides.features_dir, slides.labels, bag_by="case_id")
    written = write_heatmaps(
        model, cases.bags[:1], cases.coords[:1], tmp_path / "c", names=cases.names[:1], png=False
    )
    assert [p.stem for p in written] == cases.slides[0]


def test_heatmap_without_coords_names_the_file(tmp_path, fitted, capsys):
    folder = tmp_path / "f"
    folder.mkdir()
    _h5(folder / "s1.h5", np.ones((3, 6), np.float32))
    assert main(["heatmap", str(fitted), str(folder), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "s1.h5: no patch coordinates" in err
    _h5(
        folder / "s1.h5",
        np.ones((3, 6), np.float32),
        np.zeros((3, 2)),
        patch_size=256,
        patch_level=1,
    )
    assert main(["heatmap", str(fitted), str(folder), "--out", str(tmp_path / "o")]) == 1
    assert "patch_level 1 without a downsample attribute" in capsys.readouterr().err
    out = tmp_path / "o"
    cli_ok("heatmap", fitted, folder, "--out", out, *"--patch-size 512 --no-png --h5".split())
    doc = json.loads((tmp_path / "o" / "s1.geojson").read_text())
    assert doc["features"][0]["geometry"]["coordinates"][0][2] == [512, 512]
    with h5py.File(tmp_path / "o" / "s1.h5") as f:  # CLAM's block-map layout
        assert f["attention_scores"].shape == (3, 1) and f["coords"].shape == (3, 2)
        np.testing.assert_allclose(
            f["attention_scores"][:, 0],
            [p["properties"]["score"] for p in doc["features"]],
            rtol=1e-6,
        )
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["s1.geojson", "s1.h5"]


def test_predict_instances_adds_coordinates(slides, fitted, tmp_path):
    out = tmp_path / "inst.tsv"
    cli_ok("predict", fitted, slides.features_dir, "--instances", out, "-o", tmp_path / "bags.tsv")
    first = out.read_text().splitlines()[0].split("\t")
    with h5py.File(f"{slides.features_dir}/{slides.slides[0]}.h5") as f:
        x, y = f["coords"][0]
    assert first[0] == slides.slides[0] and first[1] == "0" and first[4:] == [str(x), str(y)]
    assert math.isfinite(float(first[2]))
