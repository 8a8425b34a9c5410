//! The MILL and CSV readers (`milsvm::data`): small files written here and read back from a
//! path and from a `BufRead`, dense and sparse MILL, CSV with and without a header, every
//! refusal (one `InvalidData` naming the file and the line), and no panic on garbage (random
//! inputs and the fuzzing regression files). `tests/test_rust_readers.py` checks the same
//! readers against the Python ones, message for message.

mod common;

use std::path::PathBuf;

use common::TestResult;
use milsvm::data::{read_mil_csv, read_mil_csv_from, read_mill, read_mill_from, Dataset};
use milsvm::{Error, Instances};
use ndarray::array;
use rand::Rng;

/// A file holding `content`, in Cargo's scratch directory for integration tests.
fn write(name: &str, content: impl AsRef<[u8]>) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("data_readers");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, content).expect("write");
    path
}

/// Reads `content` from a file named `name` (`.csv`: CSV, else MILL), and checks that reading
/// the same bytes through `BufRead` gives the same result (with the same name in messages).
fn read(name: &str, content: &str, n_features: Option<usize>) -> milsvm::Result<Dataset> {
    let path = write(name, content);
    let shown = path.display().to_string();
    let (from_path, from_reader) = if name.ends_with(".csv") {
        (
            read_mil_csv(&path),
            read_mil_csv_from(content.as_bytes(), &shown),
        )
    } else {
        (
            read_mill(&path, n_features),
            read_mill_from(content.as_bytes(), &shown, n_features),
        )
    };
    assert_eq!(from_path, from_reader, "{name}: path and reader differ");
    from_path
}

#[test]
fn dense_mill() -> TestResult {
    let data = read(
        "dense.data",
        "i1,b1,1,0.5,1.5\r\ni2, b1 ,1,2,0\n\n\u{feff}i3,b2,0, -1e3 ,\t+.5\n",
        None,
    )?;
    assert_eq!(data.bag_names, ["b1", "b2"]);
    assert_eq!(data.labels, [1, 0]);
    assert_eq!(data.bags.bag_ptr(), [0, 2, 3]);
    assert!(!data.bags.is_sparse());
    assert_eq!(
        data.bags.instances(),
        &Instances::from(array![[0.5, 1.5], [2.0, 0.0], [-1000.0, 0.5]])
    );
    // the number of features may be given, and is then checked
    assert_eq!(
        read("dense.data", "i,b,1,1,2\n", Some(2))?
            .bags
            .n_features(),
        2
    );
    // labels as written: signs, floats with integer values, the 64-bit range
    let data = read(
        "labels.data",
        "i,a,-1,1\ni,b,+1.0,1\ni,c,1e3,1\ni,d,-9223372036854775808,1\ni,e,9223372036854775807,1\n",
        None,
    )?;
    assert_eq!(data.labels, [-1, 1, 1000, i64::MIN, i64::MAX]);
    Ok(())
}

#[test]
fn sparse_mill() -> TestResult {
    let data = read(
        "sparse.data",
        "i1,b1,1,3:0.5,1:1.5\ni2,b1,1\ni3,b2,0, 2 : 0 ,7:-2e-3,\t4:1\n",
        None,
    )?;
    assert_eq!(data.bag_names, ["b1", "b2"]);
    assert_eq!(data.labels, [1, 0]);
    let Instances::Sparse(x) = data.bags.instances() else {
        panic!("a sparse file gives CSR instances");
    };
    // sorted column indices, explicit zeros dropped, n_features = the largest index
    assert_eq!(x.n_cols(), 7);
    assert_eq!(x.indptr(), [0, 2, 2, 4]);
    assert_eq!(x.indices(), [0, 2, 3, 6]);
    assert_eq!(x.data(), [1.5, 0.5, 1.0, -2e-3]);
    // a given n_features widens the matrix and allows an all-zero file
    assert_eq!(
        read("sparse.data", "i,b,1,2:1\n", Some(10))?
            .bags
            .n_features(),
        10
    );
    let zeros = read("zeros.data", "i,b,1\ni,c,0,\n", Some(3))?;
    assert_eq!(zeros.bags.n_instances(), 2);
    assert!(zeros.bags.is_sparse());
    Ok(())
}

#[test]
fn csv_with_and_without_header() -> TestResult {
    // no header; the lines of a bag need not be contiguous
    let data = read(
        "plain.csv",
        "1,a,1,2\n0,b,3,4\n1,a,5,6\n\n0,c,7,8\r\n0,b,9,10\n",
        None,
    )?;
    assert_eq!(data.bag_names, ["a", "b", "c"]);
    assert_eq!(data.labels, [1, 0, 0]);
    assert_eq!(data.bags.bag_ptr(), [0, 2, 4, 5]);
    assert_eq!(
        data.bags.instances(),
        &Instances::from(array![
            [1.0, 2.0],
            [5.0, 6.0],
            [3.0, 4.0],
            [9.0, 10.0],
            [7.0, 8.0]
        ])
    );
    // a header, label first
    let data = read("header.csv", "label,bag_id,f1\n1,a,1\n-1,b,2\n", None)?;
    assert_eq!(
        (data.labels, data.bag_names),
        (vec![1, -1], vec!["a".into(), "b".into()])
    );
    // a header, bag id first, names in any case
    let data = read(
        "bag_first.csv",
        "Bag_ID,Label,x\nq,1,1\nr,0,2\nq,1,3\n",
        None,
    )?;
    assert_eq!(
        (data.labels, data.bag_names),
        (vec![1, 0], vec!["q".into(), "r".into()])
    );
    assert_eq!(data.bags.bag_ptr(), [0, 2, 3]);
    // numbers from the third field on: data, not a header
    let data = read("numeric.csv", "0,1,2\n1,a,3\n", None)?;
    assert_eq!(data.bag_names, ["1", "a"]);
    // quoted fields, "" inside quotes, integer labels written as floats, ids compared as text
    let data = read(
        "quoted.csv",
        "1.0,\"bag 1\",1\n-1,\"bag, 2\",2\n1,\"say \"\"hi\"\"\", \"3\" \n0,01,4\n0,1,5\n",
        None,
    )?;
    assert_eq!(data.bag_names, ["bag 1", "bag, 2", "say \"hi\"", "01", "1"]);
    assert_eq!(data.labels, [1, -1, 1, 0, 0]);
    Ok(())
}

#[test]
fn class_indices_number_the_sorted_labels() -> TestResult {
    let data = read(
        "classes.data",
        "i,a,5,1\ni,b,-1,1\ni,c,5,1\ni,d,2,1\n",
        None,
    )?;
    assert_eq!(data.class_indices(), (vec![-1, 2, 5], vec![2, 0, 2, 1]));
    Ok(())
}

/// Every refusal: (file name, content, line or 0 for a file-level error, the message), one list
/// for the Rust and the Python readers' tests (`tests/test_datasets.py` reads it too).
#[test]
fn every_refusal_names_the_file_and_the_line() {
    let refused: Vec<(String, String, usize, String)> =
        serde_json::from_str(include_str!("data/reader_refusals.json")).expect("the refusals");
    for (name, content, line, message) in refused {
        let path = write(&name, &content);
        let want = if line == 0 {
            format!("{}: {message}", path.display())
        } else {
            format!("{}, line {line}: {message}", path.display())
        };
        match read(&name, &content, None) {
            Err(Error::InvalidData(got)) => assert_eq!(got, want, "{name}"),
            other => panic!("{name}: expected InvalidData, got {other:?}"),
        }
    }
}

#[test]
fn refusals_of_n_features_and_of_a_long_csv_field() {
    let refused = |r: milsvm::Result<Dataset>| match r {
        Err(Error::InvalidData(m)) => m,
        other => panic!("expected InvalidData, got {other:?}"),
    };
    let m = refused(read("above.data", "i,a,1,4:1\n", Some(3)));
    assert!(
        m.ends_with("line 1: feature index 4 exceeds n_features=3"),
        "{m}"
    );
    let m = refused(read("mismatch.data", "i,a,1,1,2\n", Some(3)));
    assert!(
        m.ends_with("line 1: 2 feature values, but n_features=3 was requested"),
        "{m}"
    );
    assert!(matches!(
        read_mill_from(&b"i,a,1,1\n"[..], "x", Some(0)),
        Err(Error::InvalidParameter(_))
    ));
    // Python's csv module refuses a field of more than 131072 characters
    let long = format!("1,a,\"{}\"\n", "1".repeat(131_073));
    let m = refused(read("long.csv", &long, None));
    assert!(
        m.ends_with("line 1: not a CSV line (field larger than field limit (131072))"),
        "{m}"
    );
    let fits = format!("1,a,{}\n", "1".repeat(131_072));
    let m = refused(read("fits.csv", &fits, None));
    assert!(
        m.ends_with("is not finite (inf); NaN and infinite values are not allowed"),
        "{m}"
    );
}

#[test]
fn a_missing_file_is_invalid_data_naming_it() {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-such-file.data");
    for result in [read_mill(&path, None), read_mil_csv(&path)] {
        match result {
            Err(Error::InvalidData(m)) => {
                assert!(m.starts_with(&format!("{}: cannot read the file", path.display())))
            }
            other => panic!("expected InvalidData, got {other:?}"),
        }
    }
}

/// A well-formed result: one label and name per bag, every value finite (checked by `Bags`).
fn check_dataset(data: &Dataset) {
    assert!(data.bags.n_bags() >= 1 && data.bags.n_features() >= 1);
    assert_eq!(data.labels.len(), data.bags.n_bags());
    assert_eq!(data.bag_names.len(), data.bags.n_bags());
    assert!(data.bag_names.iter().all(|n| !n.is_empty()));
}

#[test]
fn garbage_never_panics() {
    // the tokens shared with the Python fuzz tests, then this test's own
    let mut tokens: Vec<String> =
        serde_json::from_str(include_str!("data/reader_tokens.json")).expect("a list of strings");
    tokens.extend(
        [
            "\"",
            "\"a,b\"",
            "-9223372036854775808:1",
            "label",
            "bag_id",
            "\r",
            "\n",
            "\u{feff}",
        ]
        .map(String::from),
    );
    let mut rng = common::rng(7);
    for _ in 0..3000 {
        let bytes: Vec<u8> = if rng.random::<f64>() < 0.3 {
            (0..rng.random_range(0..200))
                .map(|_| rng.random())
                .collect()
        } else {
            let mut text = String::new();
            for _ in 0..rng.random_range(0..6) {
                let fields: Vec<&str> = (0..rng.random_range(0..7))
                    .map(|_| tokens[rng.random_range(0..tokens.len())].as_str())
                    .collect();
                text.push_str(&fields.join(","));
                text.push_str(["\n", "\r\n", "\r"][rng.random_range(0..3)]);
            }
            text.into_bytes()
        };
        let n_features = [None, Some(1), Some(5)][rng.random_range(0..3)];
        if let Ok(data) = read_mill_from(&bytes[..], "garbage.data", n_features) {
            check_dataset(&data);
        }
        if let Ok(data) = read_mil_csv_from(&bytes[..], "garbage.csv") {
            check_dataset(&data);
        }
    }
}

#[test]
fn the_fuzzing_regression_files_do_not_panic() -> TestResult {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz");
    let mut n = 0;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        for result in [read_mill(&path, None), read_mil_csv(&path)] {
            match result {
                Ok(data) => check_dataset(&data),
                Err(Error::InvalidData(m)) => assert!(m.starts_with(&path.display().to_string())),
                Err(e) => panic!("{}: {e}", path.display()),
            }
        }
        n += 1;
    }
    assert!(n >= 10);
    // the CSV regression input: a label beyond 64 bits, refused naming line 3
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz/csv_label_overflow.csv");
    match read_mil_csv(&path) {
        Err(Error::InvalidData(m)) => assert!(m.contains(", line 3: the label '-1000"), "{m}"),
        other => panic!("expected InvalidData, got {other:?}"),
    }
    Ok(())
}

#[test]
fn the_shared_benchmark_files_read() -> TestResult {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    let musk1 = shared.join("musk1/musk1.data");
    if musk1.is_file() {
        let data = read_mill(&musk1, None)?;
        assert_eq!(
            (
                data.bags.n_bags(),
                data.bags.n_instances(),
                data.bags.n_features()
            ),
            (92, 476, 166)
        );
        assert_eq!(data.labels.iter().filter(|&&l| l == 1).count(), 47);
    }
    let tst1 = shared.join("tst1/tst1.data");
    if tst1.is_file() {
        let data = read_mill(&tst1, None)?;
        assert!(data.bags.is_sparse());
        assert_eq!((data.bags.n_bags(), data.bags.n_instances()), (400, 3224));
        assert_eq!(data.bags.n_features(), 66552);
    }
    Ok(())
}
