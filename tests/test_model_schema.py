"""``schema/model.schema.json`` (JSON Schema 2020-12) describes the model file: the files every
estimator saves (with and without probabilities, a probability ensemble, a scaler pipeline, a CSR
basis, several classes) validate against it, as do the version-3 fixtures and version-1 and 2
documents; documents the reader refuses for their fields are refused by the schema too; and its
enumerations are the core's.
"""

import copy
import json
import re
from pathlib import Path

import milsvm
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SMALL_FITS, marked_bags, quiet_fit
from milsvm import _registry
from sklearn.pipeline import make_pipeline

jsonschema = pytest.importorskip("jsonschema")

REPO = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO / "schema" / "model.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

FAST = SMALL_FITS


def saved(est, tmp_path):
    path = tmp_path / "m.json"
    milsvm.save(est, path)
    return json.loads(path.read_text())


def assert_valid(doc):
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message[:300]}" for e in errors[:5])


def test_every_estimator_is_covered():
    assert set(FAST) == set(_registry.ESTIMATORS)


def test_the_schema_is_a_valid_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("name", sorted(FAST))
@pytest.mark.parametrize("probability", [False, True, "ensemble"])
def test_every_estimators_file_is_valid(name, probability, tmp_path):
    bags, y = marked_bags(0, n_bags=24)
    est = quiet_fit(_registry.ESTIMATORS[name](**FAST[name], probability=probability), bags, y)
    doc = saved(est, tmp_path)
    assert_valid(doc)
    assert (doc["calibration"] is not None) == (probability is True)
    assert bool(doc["ensemble"]) == (probability == "ensemble")


@pytest.mark.parametrize("name", ["MIKernel", "STK", "MILES", "NSK"])
def test_pipelines_multiclass_and_float32_files_are_valid(name, tmp_path):
    bags, y = marked_bags(0, n_bags=30, n_classes=3)
    bags = [b.astype(np.float32) for b in bags]
    pipe = quiet_fit(
        make_pipeline(
            milsvm.BagStandardScaler(), _registry.ESTIMATORS[name](**FAST[name], probability=True)
        ),
        bags,
        y,
    )
    doc = saved(pipe, tmp_path)
    assert doc["scaler"] is not None and doc["n_classes"] == 3 and doc["input_dtype"] == "float32"
    assert_valid(doc)


def test_a_csr_basis_is_valid(tmp_path):
    rng = np.random.default_rng(3)
    y = np.arange(20) % 2
    bags = [sp.random(3, 40, density=0.1, random_state=rng, format="csr") for _ in y]
    bags = [
        sp.vstack([b, sp.csr_matrix(([4.0], ([0], [0])), shape=(1, 40))]).tocsr() if label else b
        for b, label in zip(bags, y)
    ]
    est = quiet_fit(milsvm.SparseMI(n_xv=3, n_basis=8, C=10.0, max_iter=3, random_state=0), bags, y)
    doc = saved(est, tmp_path)
    assert doc["xv"]["layout"] == "csr"
    assert_valid(doc)


def test_older_versions_still_read_are_valid():
    fixtures = sorted((REPO / "tests" / "data" / "models_v3").glob("*.json"))
    assert fixtures
    for path in fixtures:
        doc = json.loads(path.read_text())
        assert doc["version"] == 3
        assert_valid(doc)
    v2 = {
        "format": "milsvm-model",
        "version": 2,
        "model": {
            "kernel": {"name": "rbf", "gamma": 0.5},
            "xv": {"v": 1, "dim": [3, 2], "data": [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]},
            "coef": {"v": 1, "dim": [1, 3], "data": [0.5, -1.0, 2.0]},
            "intercept": {"v": 1, "dim": [1], "data": [0.25]},
            "n_classes": 2,
            "pooling": "max",
        },
        "estimator": "miSVM",
        "params": {"C": 1.0},
        "classes": [0, 1],
        "n_iter": 4,
        "objective_history": [3.0, 2.0],
    }
    assert_valid(v2)
    milsvm.Model.from_json(json.dumps(v2))  # the reader agrees
    v1 = copy.deepcopy(v2)
    v1["version"] = 1
    del v1["model"]["pooling"]
    assert_valid(v1)
    milsvm.Model.from_json(json.dumps(v1))


def good_document(tmp_path):
    bags, y = marked_bags(0, n_bags=24)
    return saved(quiet_fit(milsvm.NSK(C=10.0, probability="ensemble"), bags, y), tmp_path)


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(version=8),
        lambda d: d.update(format="x"),
        lambda d: d.update(pooling="median"),
        lambda d: d.update(version=5, pooling="xv_max"),
        lambda d: d.update(kernel={"name": "poly"}),
        lambda d: d.update(kernel={"name": "rbf", "gamma": 0.0}),
        lambda d: d.update(bag_features="mean"),
        lambda d: d.update(input_dtype="float16"),
        lambda d: d.update(n_classes=1),
        lambda d: d.pop("coef"),
        lambda d: d["coef"].update(shape=[1]),
        lambda d: d["xv"].update(layout="coo"),
        lambda d: d.update(classes=[[0], 1]),
        lambda d: d.update(scaler={"mean": [0.0]}),
        lambda d: d["ensemble"][0].pop("calibration"),
    ],
    ids=[
        "newer-version",
        "format",
        "pooling",
        "xv_max-before-v6",
        "kernel",
        "gamma",
        "bag_features",
        "dtype",
        "n_classes",
        "no-coef",
        "coef-shape",
        "layout",
        "classes",
        "scaler",
        "member",
    ],
)
def test_documents_the_reader_refuses_are_refused(edit, tmp_path):
    doc = good_document(tmp_path)
    assert_valid(doc)
    edit(doc)
    assert not VALIDATOR.is_valid(doc)
    with pytest.raises(ValueError):
        milsvm.Model.from_json(json.dumps(doc))


def test_an_unknown_field_is_refused(tmp_path):
    """The reader ignores a field it does not know; the schema refuses it, so that a writer's
    misspelt field shows."""
    doc = good_document(tmp_path)
    doc["calibraton"] = None
    assert not VALIDATOR.is_valid(doc)
    milsvm.Model.from_json(json.dumps(doc))


def core_names(path, enum):
    """The spellings of a `choices!` enum in the core's source (lines `Variant = "name",`)."""
    text = (REPO / "src" / "model" / path).read_text()
    body = re.search(rf"pub enum {enum} \{{(.*?)\n\}}", text, re.S).group(1)
    return re.findall(r'^\s*[A-Z]\w* = "([a-z0-9_]+)",$', body, re.M)


def test_the_enumerations_are_the_cores():
    defs = SCHEMA["$defs"]
    assert defs["pooling"]["enum"] == core_names("mod.rs", "Pooling")
    assert [v for v in defs["input_dtype"]["enum"] if v] == core_names("mod.rs", "Dtype")
    assert [v for v in defs["bag_features"]["enum"] if v] == core_names(
        "bag_features.rs", "BagFeatures"
    )
