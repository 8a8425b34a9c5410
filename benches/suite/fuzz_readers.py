"""Fuzz milsvm's file readers: MILL text, UCI MUSK text, Andrews .mat, model JSON (and CSV).

Usage::

    PYTHONPATH=python nice -n 10 python benches/serving.py fuzz --seconds 150
    python benches/serving.py fuzz --targets mill,model --seconds 30 --seed 1

For every target the fuzzer starts from *seeds* (small slices of the real benchmark files in
``shared/data/``, or model files saved by fitted estimators), applies 1-4 structure-aware
mutations per input and runs the reader on the result in a worker process, with a per-input
timeout and an address-space limit. An input's outcome is one of:

- **rejected** -- the reader raised ``ValueError`` or ``TypeError``: the clean outcome for
  garbage;
- **accepted** -- the reader returned, and the result passed the checks: well-formed data
  (at least one bag, every bag with at least one instance, float64 values, all finite, one
  feature dimension, one integer label per bag) that also agrees with an independent parse of
  the input (text formats: every instance line and every value, parsed with a strict number
  grammar); for model files, the loaded estimator also scores a probe bag to finite values;
- **finding** -- anything else: another exception type, a crash of the worker (segfault,
  abort, Rust panic), a hang (timeout), or silently wrong data.

Findings are written to ``benches/results/fuzz_findings/<target>/`` (or ``--findings-dir``;
the input file and a ``.txt`` with the traceback), at most ``--keep`` inputs per distinct
finding. The summary
(executions and findings per target) is printed at the end.

Mutations (text formats): swapped / dropped / duplicated fields, truncated lines, wrong column
counts, huge and tiny numbers, NaN / inf tokens, unicode digits and spaces, NUL and control
bytes, invalid UTF-8, BOMs, CRLF and lone CR line ends, moved / duplicated / deleted lines
(non-contiguous bags), bags without features, labels out of range, sparse index errors
(0, negative, duplicated, huge, non-integer), dense/sparse mixes, byte-level flips and cuts.
.mat files: variables of wrong shape, type (strings, cells, structs, complex, bool, int),
length and sparsity, NaN / inf, missing variables, v4 / compressed files, truncated and
garbled bytes. Model JSON: fields removed and retyped, inconsistent array shapes, NaN /
inf, huge numbers and arrays, wrong version / format, unknown estimator / kernel / pooling,
wrong ``classes`` length, deep nesting, truncated and garbled bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import multiprocessing as mp
import os
import random
import re
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder, then benches/ (_common, _protocol)
from _common import REPO, RESULTS, add_out, add_seed, benchmark_parser, data_dir  # noqa: E402

ROOT = REPO
DATA = data_dir()
OUT = RESULTS / "fuzz_findings"


class Finding(Exception):
    """Raised by a check when the reader accepted an input but returned wrong data."""

    def __init__(self, kind, detail):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


# ============================================================================================
# Independent checks of a reader's output
# ============================================================================================

# A number as the formats write it: ASCII digits, optional sign, fraction and exponent, after
# str.strip() (the readers strip lines and fields with it, which also removes Unicode spaces
# and the separators \x1c-\x1f). Anything else ("1_0", "0x1", "nan", unicode digits, "1e",
# a control character inside the token) must be rejected.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")


def _number(token):
    """The value of a well-formed finite number token, or None."""
    token = token.strip()
    if not _NUMBER.match(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def _check_dataset(bags, y, *, binary=False):
    """Structural checks every loader's output must pass (returns n_features)."""
    import scipy.sparse as sp

    if not isinstance(bags, list) or not bags:
        raise Finding("bad-output", f"bags is {type(bags).__name__} of length {len(bags)}")
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != len(bags) or y.dtype != np.int64:
        raise Finding("bad-labels", f"y shape {y.shape} dtype {y.dtype} for {len(bags)} bags")
    if binary and not np.isin(y, (0, 1)).all():
        raise Finding("bad-labels", f"binary loader returned labels {np.unique(y)}")
    n_features = None
    for i, bag in enumerate(bags):
        if bag.ndim != 2 or bag.shape[0] < 1 or bag.shape[1] < 1:
            raise Finding("empty-or-misshapen-bag", f"bag {i} has shape {bag.shape}")
        if bag.dtype != np.float64:
            raise Finding("bad-dtype", f"bag {i} has dtype {bag.dtype}")
        values = bag.data if sp.issparse(bag) else bag
        if sp.issparse(bag) and (bag.format != "csr" or not bag.has_sorted_indices):
            raise Finding(
                "bad-sparse",
                f"bag {i}: format {bag.format}, sorted indices {bag.has_sorted_indices}",
            )
        if not np.all(np.isfinite(values)):
            raise Finding("non-finite-values", f"bag {i} has NaN or infinite values")
        if n_features is None:
            n_features = bag.shape[1]
        elif bag.shape[1] != n_features:
            raise Finding(
                "ragged-features", f"bag {i} has {bag.shape[1]} features, bag 0 {n_features}"
            )
    return n_features


def _data_lines(data):
    """The non-blank stripped lines of a text input, as the formats define them.

    Undecodable bytes become U+FFFD, as the readers document (they are then rejected as
    numbers, or kept inside names).
    """
    text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    # Universal newlines, as Python's text files read them: LF, CRLF and a lone CR.
    return [line.strip() for line in re.split(r"\r\n|\r|\n", text) if line.strip()]


def _compare_rows(bags, rows, bag_keys, labels, y, *, sparse_rows):
    """Compare the loaded bags / labels with an independent parse (rows in file order)."""
    import scipy.sparse as sp

    groups = []
    for key, label in zip(bag_keys, labels):
        if groups and groups[-1][0] == key:
            groups[-1][2] += 1
            if groups[-1][1] != label:
                raise Finding("accepted-inconsistent-labels", f"bag {key!r}")
        else:
            groups.append([key, label, 1])
    if [g[0] for g in groups] != list(dict.fromkeys(g[0] for g in groups)):
        raise Finding("accepted-non-contiguous-bag", "a bag name reappears after another bag")
    if len(groups) != len(bags):
        raise Finding("wrong-bag-count", f"{len(bags)} bags loaded, {len(groups)} in the file")
    if [g[1] for g in groups] != [int(v) for v in y]:
        raise Finding("wrong-labels", "loaded labels differ from the file's")
    r = 0
    for i, (bag, group) in enumerate(zip(bags, groups)):
        if bag.shape[0] != group[2]:
            raise Finding("wrong-bag-size", f"bag {i}: {bag.shape[0]} rows, {group[2]} lines")
        for k in range(group[2]):
            row = rows[r + k]
            if sparse_rows:
                # Compare the nonzeros (a sparse file may declare a huge feature index).
                got = bag.getrow(k) if sp.issparse(bag) else sp.csr_matrix(bag[k : k + 1])
                got_items = dict(zip((got.indices + 1).tolist(), got.data.tolist()))
                want = {j: v for j, v in row.items() if v != 0.0}
                if got_items != want or max(want, default=0) > bag.shape[1]:
                    raise Finding("wrong-value", f"bag {i} row {k} differs from the file's line")
            else:
                dense = bag.toarray() if sp.issparse(bag) else bag
                expected = np.asarray(row)
                if expected.shape != dense[k].shape or not np.array_equal(expected, dense[k]):
                    raise Finding("wrong-value", f"bag {i} row {k} differs from the file's line")
        r += group[2]


def _reference_mill(data):
    """Strict parse of a MILL file: (bag_names, labels, rows, sparse) or None if malformed."""
    lines = _data_lines(data)
    if not lines:
        return None
    names, labels, rests = [], [], []
    for line in lines:
        parts = line.split(",", 3)
        if len(parts) < 3 or not parts[1].strip():
            return None
        label = _number(parts[2])
        if label is None or not float(label).is_integer():
            return None
        names.append(parts[1].strip())
        labels.append(int(label))
        rests.append(parts[3].strip() if len(parts) == 4 else "")
    first = next((r for r in rests if r), None)
    if first is None:
        return None
    sparse = ":" in first
    rows = []
    for rest in rests:
        if sparse:
            row = {}
            for token in rest.split(",") if rest else []:
                parts = token.split(":")
                if len(parts) != 2 or not _INTEGER.match(parts[0].strip()):
                    return None
                j, v = int(parts[0]), _number(parts[1])
                if v is None or j < 1 or j in row:
                    return None
                row[j] = v
            rows.append(row)
        else:
            values = [_number(t) for t in rest.split(",")] if rest else [None]
            if any(v is None for v in values):
                return None
            rows.append(values)
    if not sparse and len({len(r) for r in rows}) != 1:
        return None
    return names, labels, rows, sparse


def _reference_musk_uci(data):
    """Strict parse of a UCI MUSK file: (molecules, classes, rows) or None if malformed."""
    lines = _data_lines(data)
    if not lines:
        return None
    names, labels, rows = [], [], []
    for line in lines:
        fields = line.split(",")
        if len(fields) < 4 or not fields[0].strip():
            return None
        cls = _number(fields[-1])
        values = [_number(t) for t in fields[2:-1]]
        if cls not in (0.0, 1.0) or any(v is None for v in values):
            return None
        names.append(fields[0].strip())
        labels.append(int(cls))
        rows.append(values)
    if len({len(r) for r in rows}) != 1:
        return None
    return names, labels, rows


# ============================================================================================
# Targets: the reader call and its checks (run in the worker)
# ============================================================================================


def _check_text_reader(name, path, data, reference, *, binary=False):
    """A text reader's checks: `milsvm.datasets.<name>` either rejects the input or returns a
    well-formed data set that equals the strict parse `reference(data)` (keys, labels, rows, and
    for MILL whether the rows are sparse; None where the strict parse rejects the input)."""
    from milsvm import datasets

    try:
        bags, y = getattr(datasets, name)(path)
    except (ValueError, TypeError):
        return "rejected"
    _check_dataset(bags, y, binary=binary)
    ref = reference(data)
    if ref is None:
        raise Finding(
            "accepted-malformed", f"{name} accepted what the strict parse rejects: {data[:400]!r}"
        )
    keys, labels, rows = ref[:3]
    _compare_rows(bags, rows, keys, labels, y, sparse_rows=len(ref) > 3 and ref[3])
    return "accepted"


def check_mill(path, data):
    return _check_text_reader("load_mill", path, data, _reference_mill)


def check_musk_uci(path, data):
    return _check_text_reader("load_musk_uci", path, data, _reference_musk_uci, binary=True)


def check_mat(path, data):
    from milsvm.datasets import load_andrews_mat

    try:
        bags, y = load_andrews_mat(path)
    except (ValueError, TypeError):
        return "rejected"
    _check_dataset(bags, y, binary=True)
    # The instances must all be there, grouped by bag id.
    import scipy.io

    mat = scipy.io.loadmat(io.BytesIO(data))
    n_rows = mat["features"].shape[0]
    if sum(b.shape[0] for b in bags) != n_rows:
        raise Finding(
            "wrong-instance-count",
            f"{sum(b.shape[0] for b in bags)} instances loaded, 'features' has {n_rows} rows",
        )
    ids = np.asarray(
        mat["bag_ids"].toarray() if hasattr(mat["bag_ids"], "toarray") else mat["bag_ids"],
        dtype=float,
    ).ravel()
    if len(np.unique(ids)) != len(bags):
        raise Finding("wrong-bag-count", f"{len(bags)} bags, {len(np.unique(ids))} bag ids")
    return "accepted"


def _reference_mil_csv(data):
    """Strict parse of the ``mil`` CSV layout: (bag keys, labels, rows) in file order, or None.

    The documented rules: an optional header (first field not an integer and no number from
    the third field on) naming the label and bag-id columns in either order; then
    ``label,bag_id,features...`` (or ``bag_id,label,...``); fields may be double-quoted.
    """
    import csv

    lines = _data_lines(data)
    if not lines:
        return None
    try:
        rows = [
            [f.strip() for f in next(csv.reader([line], skipinitialspace=True))] for line in lines
        ]
    except csv.Error:
        return None
    first = rows[0]
    bag_first = False

    def is_int_label(text):
        v = _number(text)
        return v is not None and float(v).is_integer()

    if (
        len(first) >= 3
        and not is_int_label(first[0])
        and not any(_number(f) is not None for f in first[2:])
    ):
        a, b = first[0].lower(), first[1].lower()
        bags = {"bag", "bags", "bag_id", "bagid", "bag id", "bag-id", "bag_name", "bag name"}
        labels = {"label", "labels", "bag_label", "bag label", "y", "class", "target"}
        if a in bags and b in labels:
            bag_first = True
        elif not (a in labels and b in bags):
            return None
        rows = rows[1:]
    if not rows:
        return None
    keys, labels, values = [], [], []
    for fields in rows:
        if len(fields) < 3:
            return None
        bag, label = (fields[0], fields[1]) if bag_first else (fields[1], fields[0])
        if not bag or not is_int_label(label):
            return None
        vals = [_number(f) for f in fields[2:]]
        if any(v is None for v in vals):
            return None
        keys.append(bag)
        labels.append(int(float(label)))
        values.append(vals)
    if len({len(v) for v in values}) != 1:
        return None
    # Bags need not be contiguous: group by id in order of first appearance.
    order = sorted(range(len(keys)), key=lambda k: (list(dict.fromkeys(keys)).index(keys[k]), k))
    return [keys[k] for k in order], [labels[k] for k in order], [values[k] for k in order]


def check_csv(path, data):
    return _check_text_reader("load_mil_csv", path, data, _reference_mil_csv)


def check_model(path, data):
    import milsvm

    try:
        est = milsvm.load(path)
    except (ValueError, TypeError):
        return "rejected"
    # Accepted: the model must be usable and consistent.
    try:
        classes = np.asarray(est.classes_)
        d = int(est.n_features_in_)
        if d < 1:
            raise Finding("accepted-inconsistent", f"n_features_in_={d}")
        if d > 10**6:
            return "accepted"  # consistent but too wide to probe cheaply
        rng = np.random.default_rng(0)
        probe = [rng.normal(size=(3, d)), rng.normal(size=(1, d))]
        scores = np.asarray(est.decision_function(probe))
        labels = np.asarray(est.predict(probe))
    except Finding:
        raise
    except ValueError as exc:
        if "not finite" not in str(exc):
            raise Finding(
                "loaded-model-unusable:ValueError",
                "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
            ) from None
        return "accepted"  # finite values whose scores overflow: a clear refusal at use
    except BaseException as exc:  # noqa: BLE001 - every failure of a loaded model is a finding
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise Finding(
            f"loaded-model-unusable:{type(exc).__name__}",
            "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        ) from None
    if scores.shape[0] != 2 or not np.all(np.isfinite(scores)):
        raise Finding("loaded-model-bad-scores", f"scores {scores!r}")
    if len(classes) < 2 or not np.isin(labels, classes).all():
        raise Finding("loaded-model-bad-classes", f"classes {classes!r}, predictions {labels!r}")
    if scores.ndim == 2 and scores.shape[1] != len(classes):
        raise Finding(
            "loaded-model-bad-classes",
            f"{scores.shape[1]} score columns for {len(classes)} classes",
        )
    return "accepted"


CHECKS = {
    "mill": (check_mill, ".data"),
    "musk_uci": (check_musk_uci, ".data"),
    "mat": (check_mat, ".mat"),
    "model": (check_model, ".json"),
    "csv": (check_csv, ".csv"),
}


# ============================================================================================
# Worker process
# ============================================================================================


def _worker(conn, mem_limit_bytes, tmp_root=None):
    """Run inputs sent by the parent; answer (outcome, kind, detail)."""
    if mem_limit_bytes:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (mem_limit_bytes, mem_limit_bytes))
        except (ImportError, ValueError, OSError):
            pass
    import milsvm  # noqa: F401  - import once, before the clock of the first input starts
    import milsvm.datasets  # noqa: F401

    tmp = tempfile.mkdtemp(prefix="milsvm-fuzz-", dir=tmp_root)
    while True:
        msg = conn.recv()
        if msg is None:
            break
        target, data = msg
        check, suffix = CHECKS[target]
        path = os.path.join(tmp, "input" + suffix)
        with open(path, "wb") as fh:
            fh.write(data)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                outcome = check(path, data)
            # A reader that warns (e.g. "casting complex values to real discards the imaginary
            # part") has returned something other than what the file says.
            if outcome == "accepted" and caught:
                w = caught[0]
                raise Finding(
                    f"warning:{w.category.__name__}@{Path(w.filename).name}:{w.lineno}",
                    str(w.message),
                )
            conn.send((outcome, None, None))
        except Finding as f:
            conn.send(("finding", f.kind, f.detail))
        except BaseException as exc:  # noqa: BLE001 - the point of the fuzzer
            if isinstance(exc, KeyboardInterrupt):
                raise
            tb = traceback.extract_tb(exc.__traceback__)
            where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
            conn.send(
                (
                    "finding",
                    f"exception:{type(exc).__name__}@{where}",
                    "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
                )
            )


class Runner:
    """A worker process with a per-input timeout; restarted after a crash or a hang."""

    def __init__(self, timeout, mem_limit_bytes, tmp_root=None):
        self.timeout = timeout
        self.mem_limit = mem_limit_bytes
        self.tmp_root = tmp_root
        self.ctx = mp.get_context("spawn")
        self.proc = None
        self._start()

    def _start(self):
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(
            target=_worker, args=(child, self.mem_limit, self.tmp_root), daemon=True
        )
        self.proc.start()
        child.close()

    def _restart(self):
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()
        self._start()

    def run(self, target, data):
        """Return (outcome, kind, detail) for one input."""
        try:
            self.conn.send((target, data))
        except (BrokenPipeError, OSError):
            self._restart()
            self.conn.send((target, data))
        # The first input of a fresh worker also pays its imports: allow extra time.
        if self.conn.poll(self.timeout):
            try:
                return self.conn.recv()
            except EOFError:
                pass
            code = self.proc.join(5) or self.proc.exitcode
            self._restart()
            return ("finding", f"crash:exitcode={code}", "the worker process died")
        self._restart()
        return ("finding", "hang", f"no answer within {self.timeout} s")

    def close(self):
        try:
            self.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


# ============================================================================================
# Mutations
# ============================================================================================

WEIRD_NUMBERS = [
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "-Infinity",
    "1e309",
    "-1e309",
    "1e-400",
    "1e308",
    "-1.7976931348623157e308",
    "4.9e-324",
    "9" * 400,
    "-" + "9" * 40,
    "0x10",
    "1_000",
    "1e",
    "e5",
    ".",
    "+",
    "-",
    "--1",
    "+-1",
    "1.2.3",
    "1e5.5",
    " ",
    "",
    "\t",
    "0",
    "-0",
    "+0.0",
    "١٢",
    "１",
    "½",
    "\u00a01",
    "1\u2028",
    "1\x00",
    "\x00",
    "\x1c1",
    "1\x0b",
    "NULL",
    "None",
    "true",
    "'1'",
    '"1"',
    "[1]",
    "1;2",
    "1 2",
    "1e+",
    "0b1",
    "1j",
    "∞",
    "\ufeff1",
    "1\r",
    "\r",
    "2",
    "-1",
    "1.0",
    "0.",
    "1.",
    "3",
    "1e0",
    "+1",
    "10000000000000000000000",
    "-2147483649",
]

WEIRD_NAMES = [
    "",
    " ",
    "é",
    "名字",
    "\x00",
    "a\tb",
    "\u202e",
    "x" * 5000,
    "🎉",
    "\ud7ff",
    "\x7f",
    "\r",
    "bag\\n",
    "'",
    '"',
    '"a,b"',
    '""',
    '"1"',
    '"',
    "label",
    "bag_id",
    "y",
    "x" * 200000,
]


def _pick(rng, seq):
    return seq[rng.randrange(len(seq))]


def _weird_token(rng):
    if rng.random() < 0.8:
        return _pick(rng, WEIRD_NUMBERS)
    return _pick(rng, WEIRD_NAMES)


def _mutate_lines(rng, lines, *, sparse_ok=True):
    """One structure-aware mutation of a list of comma-separated lines (in place)."""
    if not lines:
        lines.append(_weird_token(rng))
        return
    i = rng.randrange(len(lines))
    fields = lines[i].split(",")
    op = rng.randrange(22)
    if op == 0:  # replace a field with a weird token
        fields[rng.randrange(len(fields))] = _weird_token(rng)
    elif op == 1:  # swap two fields
        a, b = rng.randrange(len(fields)), rng.randrange(len(fields))
        fields[a], fields[b] = fields[b], fields[a]
    elif op == 2:  # drop a field (wrong column count)
        if len(fields) > 1:
            del fields[rng.randrange(len(fields))]
    elif op == 3:  # duplicate a field
        j = rng.randrange(len(fields))
        fields.insert(j, fields[j])
    elif op == 4:  # truncate the line
        lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        return
    elif op == 5:  # delete a line
        del lines[i]
        return
    elif op == 6:  # duplicate a line somewhere else
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
        return
    elif op == 7:  # move a line (non-contiguous bags)
        line = lines.pop(i)
        lines.insert(rng.randrange(len(lines) + 1), line)
        return
    elif op == 8:  # blank / whitespace lines
        lines.insert(i, _pick(rng, ["", " ", "\t", "\r", "\x0c", "\u2028", "\u00a0", ","]))
        return
    elif op == 9:  # keep only the name fields (no features)
        fields = fields[: rng.randrange(1, 4)]
    elif op == 10:  # change the label / bag name field
        j = rng.randrange(min(3, len(fields)))
        fields[j] = _pick(
            rng,
            [
                "2",
                "-1",
                "1.5",
                "1e0",
                "",
                "true",
                "+1",
                "0.",
                "1.",
                "99999999999999999999",
                "nan",
                "x",
            ]
            + WEIRD_NAMES,
        )
    elif op == 11:  # append extra fields
        fields += [_weird_token(rng) for _ in range(rng.randrange(1, 4))]
    elif op == 12 and sparse_ok:  # sparse index trouble
        j = rng.randrange(len(fields))
        fields[j] = _pick(
            rng,
            [
                "0:1",
                "-1:1",
                "1:1",
                "1.0:1",
                "1e3:2",
                ":",
                "1:",
                ":1",
                "1:2:3",
                "18446744073709551616:1",
                "9223372036854775807:1",
                "100000000000:1",
                "1:nan",
                "1:inf",
                "a:1",
                "1 :1",
                "١:1",
            ],
        )
    elif op == 13 and sparse_ok:  # dense/sparse mix: convert a field or line to the other form
        if ":" in lines[i]:
            fields = [f.split(":")[-1] for f in fields]
        else:
            fields = fields[:3] + [f"{k + 1}:{v}" for k, v in enumerate(fields[3:])]
    elif op == 14:  # scale a numeric field to a huge / tiny value
        j = rng.randrange(len(fields))
        fields[j] = fields[j] + _pick(rng, ["e308", "e-320", "e400", "0" * 400, "e9999999999"])
    elif op == 15:  # line ends
        lines[i] = lines[i] + _pick(rng, ["\r", "\r\r", "\r\n", "\n\r", "\x85", "\x1e"])
        return
    elif op == 16:  # rename the bag of this line only (a new bag / an earlier bag)
        if len(fields) > 1:
            j = rng.randrange(len(lines))
            other = lines[j].split(",")
            fields[1] = other[1] if len(other) > 1 else "new-bag"
    elif op == 17:  # many lines: a larger bag
        lines[i:i] = [lines[i]] * rng.randrange(1, 50)
        return
    elif op == 18:  # whitespace around fields
        j = rng.randrange(len(fields))
        fields[j] = _pick(rng, [" ", "\t", "  "]) + fields[j] + _pick(rng, ["", " ", "\t"])
    elif op == 19:  # separator trouble
        lines[i] = lines[i].replace(",", _pick(rng, [";", " ", ",,", "\t", ", "]), 1)
        return
    elif op == 20:  # very long line
        fields += fields[3:] * rng.randrange(1, 20)
    else:  # delete everything after a line
        del lines[i + 1 :]
        return
    lines[i] = ",".join(fields)


def _mutate_bytes(rng, data):
    """One byte-level mutation."""
    data = bytearray(data)
    op = rng.randrange(8)
    if not data:
        return bytes([rng.randrange(256) for _ in range(rng.randrange(1, 16))])
    p = rng.randrange(len(data))
    if op == 0:
        data[p] ^= 1 << rng.randrange(8)
    elif op == 1:
        data[p] = _pick(rng, [0, 0xFF, 0x80, 0xC3, 0xED, 0x0D, 0x0A, 0x2C, 0x3A, 0x22])
    elif op == 2:
        del data[p : p + rng.randrange(1, 64)]
    elif op == 3:
        data[p:p] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
    elif op == 4:
        data = data[:p]
    elif op == 5:
        data[p:p] = _pick(
            rng, [b"\xef\xbb\xbf", b"\xff\xfe", b"\xed\xa0\x80", b"\xc3", b"\x00", b"\r\n", b"\r"]
        )
    elif op == 6:
        q = rng.randrange(len(data))
        data[p:p] = data[q : q + rng.randrange(1, 256)]
    else:
        data = data.replace(b"\n", b"\r\n")
    return bytes(data)


class TextTarget:
    """Seeds and mutations of a comma-separated line format."""

    def __init__(self, seeds, *, sparse_ok):
        self.seeds = seeds
        self.sparse_ok = sparse_ok

    def generate(self, rng):
        seed = _pick(rng, self.seeds)
        if rng.random() < 0.15:
            data = seed.encode()
            for _ in range(rng.randrange(1, 4)):
                data = _mutate_bytes(rng, data)
            return data
        lines = seed.split("\n")
        for _ in range(rng.randrange(1, 5)):
            _mutate_lines(rng, lines, sparse_ok=self.sparse_ok)
        text = "\n".join(lines)
        if rng.random() < 0.1:
            text = text.replace("\n", "\r\n")
        if rng.random() < 0.05:
            text = "\ufeff" + text
        data = text.encode("utf-8", errors="surrogatepass")
        if rng.random() < 0.1:
            data = _mutate_bytes(rng, data)
        return data


def _read_head(path, n_lines):
    with open(path, encoding="utf-8") as fh:
        return [next(fh).rstrip("\n") for _ in range(n_lines)]


def _bag_slices(lines, bag_field, n_bags_list):
    """Seeds: the lines of the first few bags (bag name in field ``bag_field``)."""
    seeds = []
    for n_bags in n_bags_list:
        out, seen = [], []
        for line in lines:
            bag = line.split(",")[bag_field]
            if bag not in seen:
                if len(seen) == n_bags:
                    break
                seen.append(bag)
            out.append(line)
        seeds.append("\n".join(out) + "\n")
    return seeds


def mill_target():
    seeds = []
    for rel, n_lines, n_bags in [
        ("musk1/musk1.data", 12, [1, 2, 3]),
        ("elephant/elephant.data", 12, [2]),
        ("corel/corel2000.data", 12, [2, 3]),
        ("tst1/tst1.data", 20, [1, 3]),
        ("tst2/tst2.data", 12, [2]),
    ]:
        seeds += _bag_slices(_read_head(DATA / rel, n_lines), 1, n_bags)
    # Shrink the widest seeds (166/230 dense features) so that mutations hit features often.
    seeds += [
        "a,b1,1,1.5,2,3\nb,b1,1,0,-1,2e3\nc,b2,0,4,5,6\n",
        "a,b1,1,1:0.5,7:2\nb,b1,1,\nc,b2,0,3:1e-3\n",
    ]
    return TextTarget(seeds, sparse_ok=True)


def musk_uci_target():
    lines = _read_head(DATA / "musk1" / "clean1.data", 12)
    seeds = _bag_slices(lines, 0, [1, 2, 3])
    seeds.append("M1,c1,1,2,3,1.\nM1,c2,4,5,6,1.\nM2,c1,7,8,9,0.\n")
    return TextTarget(seeds, sparse_ok=False)


def csv_target():
    # MUSK1's first bags rewritten in the `mil` package layout (label,bag_id,features), with
    # and without a header, bag id first, bags interleaved, quoted fields.
    musk = []
    for line in _read_head(DATA / "musk1" / "musk1.data", 12):
        inst, bag, label, rest = line.split(",", 3)
        musk.append(f"{label},{bag},{rest}")
    width = musk[0].count(",") - 1
    header = "label,bag_id," + ",".join(f"f{j}" for j in range(width))
    seeds = [
        "\n".join(musk[:6]) + "\n",
        header + "\n" + "\n".join(musk[:8]) + "\n",
        "1,b1,0.5,2\n0,b2,-1,4\n1,b1,1,3\n0,b3,2,2\n",
        "bag_id,label,x,y\nb1,1,0.5,2\nb1,1,1,3\nb2,0,-1,4\n",
        'Label,"Bag ID",a,b\n1,"bag, one",1.5,"2"\n-1,b2, 3 ,4e1\n',
    ]
    return TextTarget(seeds, sparse_ok=False)


class MatTarget:
    """.mat inputs: valid files of random structure built with savemat, then garbled."""

    def __init__(self):
        import scipy.io
        import scipy.sparse as sp

        self.sp = sp
        self.savemat = scipy.io.savemat
        self.real = []
        for rel in ("tst1/trec_1_200x200_matlab.mat", "elephant/elephant_100x100_matlab.mat"):
            mat = scipy.io.loadmat(DATA / rel)
            ids = np.asarray(mat["bag_ids"]).ravel()
            keep = np.isin(ids, np.unique(ids)[[0, 1, -2, -1]])  # two positive, two negative
            feats = mat["features"].tocsr()[np.flatnonzero(keep)]
            feats = feats[:, np.unique(feats.indices)[:40]] if rel.startswith("tst1") else feats
            labels = mat["labels"]
            labels = labels.toarray() if sp.issparse(labels) else np.asarray(labels)
            self.real.append(
                {
                    "features": feats.tocsc(),
                    "labels": sp.csc_matrix(labels.ravel()[keep][None, :]),
                    "bag_ids": ids[keep][None, :].astype(float),
                }
            )

    def _variable(self, rng, n, kind):
        sp = self.sp
        r = rng.random()
        if kind == "features":
            if r < 0.2:
                return sp.csc_matrix(
                    np.round(
                        np.random.default_rng(rng.randrange(9)).normal(
                            size=(n, rng.randrange(1, 5))
                        ),
                        2,
                    )
                )
            if r < 0.4:
                return np.random.default_rng(rng.randrange(9)).normal(size=(n, rng.randrange(1, 5)))
        else:
            if r < 0.4:
                if kind == "labels":
                    vec = np.array([_pick(rng, [-1.0, 1.0, 0.0]) for _ in range(n)])
                else:
                    vec = np.sort(np.array([float(rng.randrange(1, 4)) for _ in range(n)]))
                return vec[None, :] if rng.random() < 0.5 else vec[:, None]
        return _pick(
            rng,
            [
                np.array([]),
                np.zeros((0, 3)),
                np.zeros((n, 0)),
                np.zeros((2, 2, 2)),
                np.array([[np.nan] * n]),
                np.array([[np.inf] * n]),
                np.full((1, n), 1e308),
                "text",
                np.array(["a", "b"]),
                {"field": np.ones(3)},
                np.array([1 + 2j] * n),
                np.ones((1, n), dtype=bool),
                np.ones((1, n), dtype=np.int8),
                np.ones((1, n), dtype=np.uint64) * (2**63),
                np.arange(n + 1.0)[None, :],
                np.ones((n, n)),
                np.array([[1.5] * n]),
                np.array([[2.0] * n]),
                sp.csc_matrix((1, n)),
                sp.csc_matrix((n, 1)),
                np.empty((1, n), dtype=object),
                np.array([[-(2**60)] * n], dtype=np.int64),
                np.array(7.0),
                7,
                [],
                np.ones((n, 3), dtype=np.float32),
                np.full((n, 2), -0.0),
            ],
        )

    def generate(self, rng):
        if rng.random() < 0.35:
            mat = dict(_pick(rng, self.real))
            n = mat["features"].shape[0]
        else:
            n = rng.randrange(1, 6)
            mat = {k: self._variable(rng, n, k) for k in ("features", "labels", "bag_ids")}
        for _ in range(rng.randrange(0, 3)):
            key = _pick(rng, ["features", "labels", "bag_ids"])
            op = rng.randrange(4)
            if op == 0:
                mat.pop(key, None)
            elif op == 1:
                mat[key] = self._variable(rng, n, key)
            elif op == 2:
                mat[_pick(rng, ["Features", "bag_id", "X", "features_"])] = mat.pop(key, 1.0)
            else:
                mat[key] = self._variable(rng, rng.randrange(0, 9), key)
        buf = io.BytesIO()
        try:
            self.savemat(
                buf,
                mat,
                format=_pick(rng, ["5", "5", "5", "4"]),
                do_compression=rng.random() < 0.3,
                oned_as=_pick(rng, ["row", "column"]),
            )
        except Exception:  # noqa: BLE001 - savemat cannot write this combination: try plainer
            buf = io.BytesIO()
            self.savemat(
                buf,
                {
                    "features": np.ones((2, 2)),
                    "labels": np.ones((1, 2)),
                    "bag_ids": np.ones((1, 2)),
                },
            )
        data = buf.getvalue()
        if rng.random() < 0.3:
            for _ in range(rng.randrange(1, 4)):
                data = _mutate_bytes(rng, data)
        return data


class ModelTarget:
    """Model JSON inputs: files saved by fitted estimators, mutated structurally.

    The mutations do not assume one file layout: arrays are found as objects with ``data``
    and ``dim`` (version 2) or ``shape`` (version 3) and as plain lists of numbers; names
    (kernel, pooling, layout, estimator) as string fields anywhere in the document.
    """

    def __init__(self):
        import milsvm
        import scipy.sparse as sp
        from milsvm.datasets import make_center_ring_bags, make_four_gaussians_bags

        bags, y = make_center_ring_bags(n_bags=12, bag_size=(2, 4), random_state=0)
        bags3, y3 = make_four_gaussians_bags(n_bags=12, bag_size=(2, 4), random_state=0)
        y3 = np.array(["red", "green", "blue"])[y3]
        rng = np.random.default_rng(0)
        sparse_bags = [
            sp.csr_matrix(rng.random((3, 30)) * (rng.random((3, 30)) < 0.2)) for _ in range(12)
        ]
        self.seeds = []
        seed_dir = tempfile.TemporaryDirectory(prefix="milsvm-fuzz-seeds-")
        tmp = seed_dir.name
        for name in milsvm.__all__:
            cls = getattr(milsvm, name)
            if not (isinstance(cls, type) and hasattr(cls, "save")):
                continue
            fits = [(cls(), bags, y)]
            if name == "SparseMI":
                fits += [
                    (cls(kernel="linear"), bags, y),
                    (cls(), bags3, y3),
                    (cls(n_basis=3), sparse_bags, y),
                ]  # sparse basis vectors
            for est, X, labels in fits:
                if "n_xv" in est.get_params():
                    est.set_params(n_xv=2)
                if "random_state" in est.get_params():
                    est.set_params(random_state=0)
                try:
                    est.fit(X, labels)
                    path = os.path.join(tmp, "m.json")
                    est.save(path)
                except (ValueError, TypeError, NotImplementedError):
                    continue  # this version cannot fit / save that configuration
                self.seeds.append(json.loads(Path(path).read_text()))
        seed_dir.cleanup()

    @staticmethod
    def _paths(doc, prefix=()):
        """Every (path, value) of a JSON document, depth first (short lists entered)."""
        out = [(prefix, doc)]
        if isinstance(doc, dict):
            for k, v in doc.items():
                out += ModelTarget._paths(v, prefix + (k,))
        elif isinstance(doc, list) and len(doc) <= 8:
            for i, v in enumerate(doc):
                out += ModelTarget._paths(v, prefix + (i,))
        return out

    @staticmethod
    def _get(doc, path):
        for k in path:
            doc = doc[k]
        return doc

    @staticmethod
    def _set(doc, path, value):
        for k in path[:-1]:
            doc = doc[k]
        doc[path[-1]] = value

    @staticmethod
    def _delete(doc, path):
        for k in path[:-1]:
            doc = doc[k]
        del doc[path[-1]]

    @staticmethod
    def _shape_key(node):
        return "dim" if "dim" in node else "shape"

    def _array_nodes(self, doc):
        """Paths of the array objects: ``{"data": [...], "dim"|"shape": [...], ...}``."""
        return [
            p
            for p, v in self._paths(doc)
            if isinstance(v, dict) and "data" in v and ("dim" in v or "shape" in v)
        ]

    def _number_lists(self, doc):
        """Paths of the lists of numbers (array data, intercepts, classes, histories)."""
        return [
            p
            for p, v in self._paths(doc)
            if p
            and isinstance(v, list)
            and v
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
        ]

    def _mutate(self, rng, doc):
        paths = [p for p, _ in self._paths(doc) if p]
        op = rng.randrange(15)
        if op == 0 and paths:  # remove a field
            self._delete(doc, _pick(rng, paths))
        elif op == 1 and paths:  # retype a field
            self._set(
                doc,
                _pick(rng, paths),
                _pick(
                    rng,
                    [
                        None,
                        True,
                        0,
                        -1,
                        1.5,
                        "x",
                        "",
                        [],
                        {},
                        [1, 2],
                        {"a": 1},
                        float("nan"),
                        float("inf"),
                        10**30,
                        -(10**30),
                        "rbf",
                        [[1.0]],
                        "1",
                        2**64,
                    ],
                ),
            )
        elif op == 2:  # array shape inconsistent with its data
            nodes = self._array_nodes(doc)
            if nodes:
                node = self._get(doc, _pick(rng, nodes))
                key = self._shape_key(node)
                dim = list(node[key])
                sub = rng.randrange(5)
                if sub == 0 and dim:
                    dim[rng.randrange(len(dim))] += _pick(rng, [-1, 1, 1000])
                elif sub == 1:
                    dim = _pick(
                        rng,
                        [
                            [],
                            [0],
                            [0, 0],
                            [1, 2, 3],
                            [2**32, 2**32],
                            [2**62, 4],
                            [-1, 2],
                            [2**64],
                            [1.5, 2],
                            ["2", 2],
                        ],
                    )
                elif sub == 2 and node["data"]:
                    node["data"] = node["data"][: rng.randrange(len(node["data"]))]
                elif sub == 3:
                    node["data"] = node["data"] + node["data"][:1] * rng.randrange(1, 4)
                else:
                    other = _pick(rng, [k for k in node if k not in ("data", key)] or ["v"])
                    node[other] = _pick(rng, [0, 2, "1", None, -1, "csr", "dense", "coo"])
                node[key] = dim
        elif op == 3:  # NaN / inf / huge / wrong-typed values inside a list of numbers
            lists = self._number_lists(doc)
            if lists:
                values = self._get(doc, _pick(rng, lists))
                values[rng.randrange(len(values))] = _pick(
                    rng,
                    [
                        float("nan"),
                        float("inf"),
                        -float("inf"),
                        1e308,
                        -1e308,
                        5e-324,
                        10**400,
                        2**63,
                        -(2**63) - 1,
                        "1.0",
                        None,
                        [1.0],
                        True,
                    ],
                )
        elif op == 4:  # huge but consistent arrays (memory and time)
            nodes = self._array_nodes(doc)
            if nodes:
                node = self._get(doc, _pick(rng, nodes))
                key = self._shape_key(node)
                dim = list(node[key])
                ints = all(isinstance(d, int) and not isinstance(d, bool) for d in dim)
                if dim and ints and 0 < math.prod(dim) * 5000 <= 5_000_000 and "indptr" not in node:
                    dim[0] = dim[0] * _pick(rng, [100, 5000])
                    node[key] = dim
                    data = node["data"] or [0.0]
                    node["data"] = (data * (math.prod(dim) // len(data) + 1))[: math.prod(dim)]
        elif op == 5:  # version / format
            key = _pick(rng, ["version", "format"])
            doc[key] = _pick(
                rng,
                [0, 1, 2, 3, 4, 999, -1, "2", "3", None, 2.0, 3.5, "milsvm-model", "other", 2**70],
            )
        elif op == 6:  # unknown names: kernel, pooling, layout, estimator ...
            strings = [
                p for p, v in self._paths(doc) if p and isinstance(v, str) and p[0] != "params"
            ]
            if strings:
                self._set(
                    doc,
                    _pick(rng, strings),
                    _pick(
                        rng,
                        [
                            "sigmoid",
                            "poly",
                            "RBF",
                            "",
                            "max",
                            "mean",
                            "min",
                            "normalized-mean",
                            "linear",
                            "rbf",
                            "csr",
                            "csc",
                            "dense",
                            "SparseMI",
                            "NSK",
                            "MIKernel",
                            "BaseEstimator",
                            "Model",
                            "milsvm-model",
                            "\u0000",
                            "é" * 3,
                        ],
                    ),
                )
        elif op == 7:  # wrong classes
            doc["classes"] = _pick(
                rng,
                [
                    [],
                    [0],
                    [0, 1, 2],
                    [1, 1],
                    [[0], [1]],
                    None,
                    "01",
                    [0.5, float("nan")],
                    [None, None],
                    ["a", 1],
                    list(range(1000)),
                    [{"a": 1}, 2],
                    0,
                ],
            )
        elif op == 8:  # n_classes, wherever it is
            where = [p for p, _ in self._paths(doc) if p and p[-1] == "n_classes"]
            if where:
                self._set(
                    doc, _pick(rng, where), _pick(rng, [0, 1, 3, 100, -2, 2**40, None, "2", 2.0])
                )
        elif op == 9:  # splice a field from another seed (wrong model for the estimator)
            other = _pick(rng, self.seeds)
            key = _pick(rng, list(other))
            doc[key] = json.loads(json.dumps(other[key]))
        elif op == 10:  # params for another estimator / bad values
            doc.setdefault("params", {})
            if isinstance(doc["params"], dict):
                doc["params"][
                    _pick(
                        rng,
                        [
                            "C",
                            "gamma",
                            "n_xv",
                            "n_jobs",
                            "kernel",
                            "bogus",
                            "class_weight",
                            "norm",
                            "tol",
                        ],
                    )
                ] = _pick(rng, [-1, 0, "x", None, float("nan"), 10**30, [1], {"1": 2}, "median"])
        elif op == 11:  # gamma and other scalars: out of range
            scalars = [
                p for p, v in self._paths(doc) if p and p[0] != "params" and isinstance(v, float)
            ]
            if scalars:
                self._set(
                    doc,
                    _pick(rng, scalars),
                    _pick(rng, [-1.0, 0.0, float("nan"), float("inf"), 1e308, 5e-324, -0.0]),
                )
        elif op == 12:  # extra fields
            node = (
                doc
                if rng.random() < 0.5
                else _pick(rng, [v for _, v in self._paths(doc) if isinstance(v, dict)])
            )
            node[_pick(rng, ["extra", "xv2", "__proto__", "", "indptr", "indices"])] = _pick(
                rng, [1, [], {}, [0, 5, 2]]
            )
        elif op == 13:  # sparse basis: corrupt index arrays
            lists = [p for p in self._number_lists(doc) if p[-1] in ("indptr", "indices")]
            if lists:
                values = self._get(doc, _pick(rng, lists))
                values[rng.randrange(len(values))] = _pick(rng, [-1, 10**6, 2**40, 0])
                if rng.random() < 0.3:
                    values.reverse()
        else:  # replace the document by a non-object
            return _pick(rng, [[], None, 1, "model", [doc]])
        return doc

    def generate(self, rng):
        doc = json.loads(json.dumps(_pick(rng, self.seeds)))
        r = rng.random()
        if r < 0.03:  # deep nesting
            depth = _pick(rng, [64, 200, 5000, 100000])
            return ("[" * depth + "]" * depth).encode()
        for _ in range(rng.randrange(1, 4)):
            try:
                doc = self._mutate(rng, doc)
            except (
                TypeError,
                KeyError,
                IndexError,
                ValueError,
                AttributeError,
                OverflowError,
                MemoryError,
            ):
                pass  # an earlier mutation changed the node's type: keep the document as it is
            if not isinstance(doc, dict):
                break
        text = json.dumps(doc, allow_nan=True)
        if rng.random() < 0.1:
            text = text.replace("Infinity", "1e999")
        data = text.encode()
        if rng.random() < 0.15:
            for _ in range(rng.randrange(1, 4)):
                data = _mutate_bytes(rng, data)
        return data


TARGETS = {
    "mill": mill_target,
    "musk_uci": musk_uci_target,
    "mat": MatTarget,
    "model": ModelTarget,
    "csv": csv_target,
}


# ============================================================================================
# Driver
# ============================================================================================


def _save_finding(target, kind, detail, data, counts, keep, out=OUT):
    key = hashlib.sha1(f"{target}|{kind}".encode()).hexdigest()[:10]
    counts[key] = counts.get(key, 0) + 1
    if counts[key] > keep:
        return
    folder = Path(out) / target
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{key}-{counts[key]}"
    (folder / (stem + CHECKS[target][1])).write_bytes(data)
    (folder / (stem + ".txt")).write_text(f"{target}\n{kind}\n\n{detail}\n")


def fuzz(target, seconds, seed, timeout, mem_limit, keep, log, out=OUT):
    """Fuzz one target for ``seconds``; return a summary dict."""
    rng = random.Random(f"{seed}-{target}")
    gen = TARGETS[target]()
    # The workers' input files live under one directory, removed at the end (a worker killed
    # after a crash or a hang cannot clean up after itself).
    tmp_root = tempfile.TemporaryDirectory(prefix="milsvm-fuzz-")
    runner = Runner(timeout, mem_limit, tmp_root.name)
    # Warm the worker up (imports) outside the timed loop.
    runner.timeout = max(timeout, 60)
    runner.run(target, b"")
    runner.timeout = timeout
    outcomes = {"accepted": 0, "rejected": 0, "finding": 0}
    kinds = {}
    saved = {}
    start = time.monotonic()
    next_report = start + 30
    execs = 0
    while time.monotonic() - start < seconds:
        data = gen.generate(rng)
        outcome, kind, detail = runner.run(target, data)
        execs += 1
        outcomes[outcome] += 1
        if outcome == "finding":
            kinds[kind] = kinds.get(kind, 0) + 1
            _save_finding(target, kind, detail, data, saved, keep, out)
        if time.monotonic() > next_report:
            log(f"  {target}: {execs} executions, {outcomes}")
            next_report += 30
    runner.close()
    tmp_root.cleanup()
    elapsed = time.monotonic() - start
    return {"target": target, "seconds": elapsed, "executions": execs, **outcomes, "kinds": kinds}


def main(argv=None):
    ap = benchmark_parser(__doc__)
    ap.add_argument(
        "--targets",
        default="mill,musk_uci,mat,model,csv",
        help="comma-separated targets (csv is skipped if load_mil_csv is absent)",
    )
    ap.add_argument("--seconds", type=float, default=150.0, help="fuzzing time per target")
    add_seed(ap)
    ap.add_argument("--timeout", type=float, default=10.0, help="per-input timeout (s)")
    ap.add_argument(
        "--mem-limit-mb", type=int, default=3072, help="address-space limit of the worker (0: none)"
    )
    ap.add_argument("--keep", type=int, default=3, help="inputs kept per distinct finding")
    ap.add_argument(
        "--findings-dir",
        type=Path,
        default=OUT,
        help="where the inputs of findings go (default: benches/results/fuzz_findings)",
    )
    add_out(ap, None, "also write the log and the summary to this file")
    args = ap.parse_args(argv)

    import milsvm
    import milsvm.datasets

    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    for t in targets:
        if t not in TARGETS:
            ap.error(f"unknown target {t!r} (choose from {', '.join(TARGETS)})")
    if "csv" in targets and not hasattr(milsvm.datasets, "load_mil_csv"):
        print("csv: skipped (milsvm.datasets.load_mil_csv does not exist in this checkout)")
        targets.remove("csv")

    lines = [
        "command: " + " ".join(["python", "benches/serving.py", "fuzz", *(argv or sys.argv[1:])]),
        f"started: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}",
        f"milsvm: {milsvm.__version__} from {Path(milsvm.__file__).parent}; "
        f"numpy {np.__version__}; scipy {__import__('scipy').__version__}; "
        f"python {sys.version.split()[0]}",
    ]

    def log(msg):
        print(msg, flush=True)
        lines.append(msg)

    results = []
    for t in targets:
        log(f"== {t}: {args.seconds:g} s")
        res = fuzz(
            t,
            args.seconds,
            args.seed,
            args.timeout,
            args.mem_limit_mb * 2**20,
            args.keep,
            log,
            args.findings_dir,
        )
        results.append(res)
        log(
            f"  {t}: {res['executions']} executions in {res['seconds']:.0f} s, "
            f"{res['accepted']} accepted, {res['rejected']} rejected, "
            f"{res['finding']} findings"
        )
        for kind, n in sorted(res["kinds"].items(), key=lambda kv: -kv[1]):
            log(f"    {n:6d}  {kind}")

    total_s = sum(r["seconds"] for r in results)
    log("\n== summary")
    log(
        f"{'target':10s} {'seconds':>8s} {'executions':>11s} {'accepted':>9s} "
        f"{'rejected':>9s} {'findings':>9s} {'distinct':>9s}"
    )
    for r in results:
        log(
            f"{r['target']:10s} {r['seconds']:8.0f} {r['executions']:11d} {r['accepted']:9d} "
            f"{r['rejected']:9d} {r['finding']:9d} {len(r['kinds']):9d}"
        )
    log(
        f"{'total':10s} {total_s:8.0f} {sum(r['executions'] for r in results):11d} "
        f"{sum(r['accepted'] for r in results):9d} {sum(r['rejected'] for r in results):9d} "
        f"{sum(r['finding'] for r in results):9d}"
    )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")
    return 1 if any(r["finding"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
