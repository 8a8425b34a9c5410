"""The Rust crate's readers (``milsvm::data``, run through ``examples/read_data.rs``, no Python)
against the Python readers (``milsvm.datasets.load_mill``, ``load_mil_csv``) on the same files:
hand-written files of every rule, the real data sets, the bundled MUSK1 written as MILL and as
CSV, the fuzzing regression input, and seeded random mutations of valid files. On every file
both accept (the same bags bit for bit, dense or CSR, the same labels and bag names) or both
refuse with the same message.
"""

import json
import random
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from conftest import READER_TOKENS, REPO, cargo_example, require_cargo
from milsvm import datasets

SHARED = REPO.parent / "shared" / "data"
FUZZ = Path(__file__).resolve().parent / "data" / "fuzz"

# (file name, content): every rule of the two formats, accepted and refused.
HAND_WRITTEN = [
    # MILL, dense
    ("dense.data", "i1,b1,1,0.5,1.5\ni2,b1,1,2,0\n\ni3,b2,0, -1e3 ,\t+.5\n"),
    ("dense_crlf_cr.data", b"i1,b1,1,1,2\r\ni2,b1,1,3,4\ri3,b2,0,5,6\r\n"),
    ("dense_bom_spaces.data", "\ufeff i1 , b 1 , 1.0 ,1,2\n\x1ci2,b 1,+1,3,4\u2003\n"),
    ("dense_labels.data", "i,a,-9223372036854775808,1\ni,b,9223372036854775807,2\ni,c,1e3,3\n"),
    ("names.data", 'i,"q",1,1\ni,it\'s,0,2\ni,tab\there,0,3\ni,é\u00a0x,1,4\n'),
    ("invalid_utf8.data", b"i1,b\xff\xfe,1,1\ni2,b\xed\xa0\x80,0,2\ni3,c\xf0\x9f\x98,0,3\n"),
    ("nul.data", b"i1,b\x00,1,1\n"),
    ("exotic_numbers.data", "i,b,1,1.,.5,-0.0,1E-2,00012,INFINITY\n"),
    ("nan.data", "i,b,1,1,2\ni,b,1,NaN,2\n"),
    ("overflow.data", "i,b,1,1e308,1e309\n"),
    ("not_a_number.data", "i,b,1,1,2\ni,b,1,1,x\n"),
    ("control_in_value.data", "i,b,1,1,2\ni,b,1,1,\x1c2\n"),
    ("unicode_digit.data", "i,b,1,1,\uff12\n"),
    ("underscore.data", "i,b,1,1_0,2\n"),
    ("empty_value.data", "i,b,1,1,,2\n"),
    ("trailing_comma.data", "i,b,1,1,2,\n"),
    ("ragged.data", "i,b,1,1,2\ni,b,1,1,2,3\n"),
    ("no_features_dense.data", "i,b,1,1,2\ni,b,1\n"),
    ("no_features_at_all.data", "i,b,1\ni,c,0,\n"),
    ("too_few_fields.data", "i,b,1,2\ni,b\n"),
    ("empty_bag_name.data", "i, ,1,2\n"),
    ("label_not_int.data", "i,b,1.5,2\n"),
    ("label_word.data", "i,b,'one',2\n"),
    ("label_nan.data", "i,b,nan,2\n"),
    ("label_huge.data", "i,b,99999999999999999999,2\n"),
    ("label_huge_float.data", "i,b,1e19,2\n"),
    ("label_many_digits.data", "i,b," + "1" * 5000 + ",2\n"),
    ("label_many_zeros.data", "i,b," + "0" * 5000 + ",2\n"),
    ("label_differs.data", "i,b,1,2\ni,b,0,3\n"),
    ("bag_reappears.data", "i,a,1,2\ni,b,0,3\ni,a,1,4\n"),
    ("empty.data", "\n \n\t\n"),
    ("empty_file.data", ""),
    ("mixed_dense_then_sparse.data", "i,b,1,1,2\ni,b,1,1:2,3\n"),
    # MILL, sparse
    ("sparse.data", "i1,b1,1,3:0.5,1:1.5\ni2,b1,1\ni3,b2,0,2:0,7:-2e-3\n"),
    ("sparse_spaces.data", "i,b,1, 3 : 0.5 ,\t1:+1\n"),
    ("sparse_all_zero_row.data", "i,b,1,\ni,b,1,2:1\n"),
    ("sparse_then_dense.data", "i,b,1,1:2\ni,b,1,1.5\n"),
    ("sparse_no_colon.data", "i,b,1,1:2,5\n"),
    ("sparse_two_colons.data", "i,b,1,1:2:3\n"),
    ("sparse_bad_index.data", "i,b,1,1.5:2\n"),
    ("sparse_bad_value.data", "i,b,1,1:x\n"),
    ("sparse_index_zero.data", "i,b,1,0:1\n"),
    ("sparse_index_negative.data", "i,b,1,2:1\ni,b,1,-3:1\n"),
    ("sparse_index_huge.data", "i,b,1,1:1\ni,b,1,99999999999999999999:1\n"),
    ("sparse_index_min.data", "i,b,1,-9223372036854775808:1\ni,b,1,9223372036854775808:1\n"),
    ("sparse_index_min_alone.data", "i,b,1,-9223372036854775808:1\n"),
    ("sparse_index_many_digits.data", "i,b,1," + "1" * 4301 + ":1\n"),
    ("sparse_value_nan.data", "i,b,1,1:1\ni,b,1,2:nan\n"),
    ("sparse_value_inf.data", "i,b,1,1:-inf\n"),
    ("sparse_duplicate.data", "i,b,1,1:1\ni,b,1,5:1,3:1,5:2,3:1\n"),
    ("sparse_unicode.data", "i,b,1,1:1,2:\u00e9\n"),
    ("sparse_underscore.data", "i,b,1,1:1,2_0:1\n"),
    ("sparse_order_of_errors.data", "i,b,1,0:1\ni,b,1,2:nan\ni,b,1,99999999999999999999:1\n"),
    # CSV
    ("plain.csv", "1,a,1,2\n0,b,3,4\n1,a,5,6\n\n0,c,7,8\r\n0,b,9,10\n"),
    ("header.csv", "label,bag_id,f1,f2\n1,a,1,2\n-1,b,3,4\n"),
    ("header_bag_first.csv", "Bag_ID,Label,x,y\na,1,1,2\nb,0,3,4\na,1,5,6\n"),
    ("header_names.csv", 'Y,"Bag Name",a,b\n1,a,1,2\n'),
    ("header_numeric.csv", "0,1,2,3\n1,a,1,2\n"),
    ("header_bad.csv", "foo,bar,f1\n1,a,1\n"),
    ("header_only.csv", "label,bag,f1\n\n"),
    ("quoted.csv", '1.0,"bag 1",1,2\n-1,"bag, 2",3,4\n1,"bag ""3""", "5" ,6\n'),
    ("quote_open.csv", '1,"a,1,2\n'),
    ("quote_inside.csv", '1,a"b",1,2\n1,"a"b,3,4\n'),
    ("spaces.csv", " 1 , a b ,  1 ,\t2\t\n"),
    ("csv_nan.csv", "1,a,1,2\n1,a,nan,2\n"),
    ("csv_inf.csv", "1,a,1,2\n1,a,-inf,2\n"),
    ("csv_empty_feature.csv", "1,a,1,2\n1,a,,2\n"),
    ("csv_comma_feature.csv", '1,a,"1,5",2\n'),
    ("csv_ragged.csv", "1,a,1,2\n1,a,1,2,3\n"),
    ("csv_short.csv", "1,a,1,2\n1,a,1\n"),
    ("csv_word.csv", "1,a,1,2\n1,a,one,2\n"),
    ("csv_label_differs.csv", "1,a,1,2\n0,b,1,2\n0,a,1,2\n"),
    ("csv_label_word.csv", "1,a,1,2\nyes,b,1,2\n"),
    ("csv_label_float.csv", "1,a,1,2\n1.5,b,1,2\n"),
    ("csv_label_huge.csv", "1,a,1,2\n1e30,b,1,2\n"),
    ("csv_empty_bag.csv", "1,a,1,2\n1,,1,2\n"),
    ("csv_two_fields.csv", "1,a,1,2\n1,a\n"),
    ("csv_empty.csv", " \n"),
    ("csv_bag_ids_as_text.csv", "1,1,1\n1,1.0,2\n0,01,3\n"),
    ("csv_field_limit.csv", "1,a," + "1" * 131072 + "\n"),
    ("csv_field_too_long.csv", "1,a," + "1" * 131073 + "\n"),
    ("csv_quoted_too_long.csv", '1,a,"' + "1" * 131073 + '"\n'),
    ("csv_nul.csv", b"1,a\x00,1\n"),
    ("csv_upper.CSV", "LABEL,BAG,F\n1,a,1\n"),
]


def _write(path, content):
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def _random_file(rng, csv):
    """A valid MILL or CSV file (dense or sparse MILL) with 0-3 random mutations."""
    sparse = not csv and rng.random() < 0.4
    d = rng.randint(1, 3)
    lines = []
    if csv and rng.random() < 0.4:
        lines.append(
            rng.choice([["label", "bag_id"], ["bag_id", "label"], ["Y", "bag"], ["foo", "bar"]])
            + [f"f{j}" for j in range(d)]
        )
    for b in range(rng.randint(1, 3)):
        label = rng.choice(["0", "1", "-1", "1.0", "2"])
        for i in range(rng.randint(1, 3)):
            if sparse:
                cols = sorted(rng.sample(range(1, 6), rng.randint(0, 3)))
                feats = [f"{j}:{rng.choice(['0.5', '0', '-1e-3', '2'])}" for j in cols]
            else:
                feats = [rng.choice(["0.5", "1", "-2", "0", "1e-3", "-0.0"]) for _ in range(d)]
            lines.append(([label, f"b{b}"] if csv else [f"i{i}", f"b{b}", label]) + feats)
    tokens = [
        *READER_TOKENS,
        "-1",
        "2:0",
        "1:1e400",
        "9223372036854775808:1",
        '"',
        '"a,b"',
        '"x',
        "1.0",
        " 2 ",
        "label",
        "bag",
    ]
    for _ in range(rng.randint(0, 3)):
        if not lines:
            break
        k = rng.randrange(len(lines))
        op = rng.randrange(6)
        if op == 0:
            lines[k][rng.randrange(len(lines[k]))] = rng.choice(tokens)
        elif op == 1 and len(lines[k]) > 1:
            del lines[k][rng.randrange(len(lines[k]))]
        elif op == 2:
            lines[k].insert(rng.randrange(len(lines[k]) + 1), rng.choice(tokens))
        elif op == 3:
            lines.insert(rng.randrange(len(lines) + 1), list(lines[k]))
        elif op == 4:
            del lines[k]
        else:
            lines.insert(rng.randrange(len(lines) + 1), [rng.choice(["", " ", "\t"])])
    nl = rng.choice(["\n", "\r\n", "\r"])
    data = (nl.join(",".join(line) for line in lines) + rng.choice(["", nl])).encode("utf-8")
    if rng.random() < 0.1:
        data = b"\xef\xbb\xbf" + data
    if rng.random() < 0.1 and data:
        at = rng.randrange(len(data))
        data = data[:at] + rng.choice([b"\xff", b"\xc3", b"\x00", b"\r", b'"']) + data[at:]
    return data


def _python(path, n_features=None):
    """``("ok", bags, y, names)`` or ``("error", message)`` from the Python reader."""
    try:
        if path.suffix.lower() == ".csv":
            bags, y, names = datasets.load_mil_csv(path, return_bag_names=True)
        else:
            bags, y, names = datasets.load_mill(path, n_features, return_bag_names=True)
    except ValueError as exc:
        return ("error", str(exc))
    return ("ok", bags, y, names)


def _mismatch(path, rust, python):
    """Why the Rust result ``rust`` (a JSON object of read_data) differs from ``python``, or
    None."""
    if python[0] == "error":
        want = "invalid data: " + python[1]
        if rust.get("error") != want:
            return f"Python refuses with {want!r}, Rust gives {rust.get('error', 'data')!r}"
        return None
    if "error" in rust:
        return f"Python accepts, Rust refuses: {rust['error']!r}"
    _, bags, y, names = python
    if rust["bag_names"] != names or rust["labels"] != y.tolist():
        return (
            f"names / labels differ: {rust['bag_names']} {rust['labels']} != {names} {y.tolist()}"
        )
    if rust["bag_ptr"] != np.concatenate([[0], np.cumsum([b.shape[0] for b in bags])]).tolist():
        return "bag sizes differ"
    if rust["n_features"] != bags[0].shape[1] or rust["sparse"] != sp.issparse(bags[0]):
        return f"shape or kind differs: {rust['n_features']} {rust['sparse']} vs {bags[0].shape}"
    bits = lambda values: np.asarray(values, dtype=np.float64).view(np.uint64)  # noqa: E731
    if rust["sparse"]:
        x = sp.vstack(bags, format="csr")
        if (
            rust["indptr"] != x.indptr.tolist()
            or rust["indices"] != x.indices.tolist()
            or not np.array_equal(bits(rust["data"]), bits(x.data))
        ):
            return "sparse values differ"
    elif not np.array_equal(bits(rust["dense"]), bits(np.vstack(bags).ravel())):
        return "dense values differ"
    return None


def test_rust_readers_equal_python_readers(tmp_path):
    require_cargo()
    files = [_write(tmp_path / name, content) for name, content in HAND_WRITTEN]
    files += [
        p
        for p in (
            SHARED / "musk1" / "musk1.data",
            SHARED / "tst1" / "tst1.data",
            SHARED / "corel" / "corel2000.data",
        )
        if p.is_file()
    ]
    files.append(FUZZ / "csv_label_overflow.csv")
    # the bundled MUSK1, as MILL and as mil-package CSV (with a header)
    bags, y, names = datasets.load_musk1(return_bag_names=True)
    mill, csv = [], ["label,bag_id," + ",".join(f"f{j}" for j in range(166))]
    for bag, label, name in zip(bags, y, names):
        for k, row in enumerate(bag):
            values = ",".join(repr(float(v)) for v in row)
            mill.append(f"{name}_{k},{name},{label},{values}")
            csv.append(f"{label},{name},{values}")
    files.append(_write(tmp_path / "musk1_bundled.data", "\n".join(mill) + "\n"))
    files.append(_write(tmp_path / "musk1_bundled.csv", "\n".join(csv) + "\n"))
    rng = random.Random(19)
    for k in range(400):
        files.append(
            _write(tmp_path / f"random{k}.{'csv' if k % 2 else 'data'}", _random_file(rng, k % 2))
        )
    # n_features given (MILL only): all-zero sparse files, an index above it, a dense mismatch
    with_d = [
        _write(tmp_path / name, text)
        for name, text in [
            ("d_all_zero.data", "i,b,1\ni,c,0,\n"),
            ("d_sparse.data", "i,b,1,2:1\ni,c,0,3:1\n"),
            ("d_above.data", "i,b,1,4:1\n"),
            ("d_dense_ok.data", "i,b,1,1,2,3\n"),
            ("d_dense_mismatch.data", "i,b,1,1,2\n"),
        ]
    ]

    def run(paths, *options):
        proc = cargo_example("read_data", "--json", *options, *paths)
        results = [json.loads(line) for line in proc.stdout.splitlines()]
        assert len(results) == len(paths), proc.stderr
        assert proc.returncode == int(any("error" in r for r in results)), proc.stderr
        return results

    problems = []
    n_accepted = 0
    for paths, options, d in [(files, (), None), (with_d, ("--n-features", "3"), 3)]:
        for path, rust in zip(paths, run(paths, *options)):
            assert rust["path"] == str(path)
            python = _python(path, d)
            n_accepted += python[0] == "ok"
            why = _mismatch(path, rust, python)
            if why:
                problems.append(f"{path.name}: {why}")
    assert not problems, "\n".join(problems[:20])
    # both outcomes are well represented
    assert 100 < n_accepted < len(files) + len(with_d) - 100
