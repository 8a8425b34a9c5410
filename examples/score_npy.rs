//! Scores bags saved as `.npy` files with a saved model, without Python and without HDF5: the
//! last step of the tutorial "From a CLAM folder to a paper's numbers and heatmaps"
//! (`docs/tutorials/clam-folder.md`).
//!
//! ```text
//! cargo run --release --example score_npy -- MODEL.json BAG.npy [BAG.npy ...]
//! ```
//!
//! `MODEL.json` is a model file written by milsvm (`milsvm fit`, `milsvm.save`, `est.save`).
//! Each `BAG.npy` is one bag: a 2-D array with one row per instance (a slide's patch
//! embeddings), of little-endian float32 or float64 values in C order, as `numpy.save` writes
//! them. Prints one line per file, tab-separated: the file's name without `.npy`, then the
//! bag's scores (one per output, each in the shortest form that reads back to the same `f64`):
//! the values of Python's `decision_function` for that bag, bit for bit. A model saved with its
//! scaler standardises the bag inside [`Predictor::score_bag`].

use std::error::Error;
use std::path::Path;
use std::process::ExitCode;

use milsvm::model::{BagView, Model, Predictor, Workspace};

/// The values of a `.npy` array, in the precision the file holds.
enum Values {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// Reads a `.npy` file (NumPy's format, versions 1 to 3) holding a 2-D little-endian float32 or
/// float64 array in C order: its values and its shape `(rows, columns)`.
fn read_npy(path: &Path) -> Result<(Values, usize, usize), Box<dyn Error>> {
    let bytes = std::fs::read(path)?;
    let bad = |what: &str| {
        format!(
            "{}: not a 2-D float32 or float64 .npy array ({what})",
            path.display()
        )
    };
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("no .npy magic").into());
    }
    // version 1 has a 2-byte header length, versions 2 and 3 a 4-byte one
    let (header_len, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => {
            let len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
            (usize::try_from(len)?, 12)
        }
        _ => return Err(bad("unknown format version").into()),
    };
    let header = bytes
        .get(start..start + header_len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| bad("header"))?;
    // the header is a Python dict literal: compare it without its spaces
    let header: String = header.chars().filter(|c| !c.is_whitespace()).collect();
    if !header.contains("'fortran_order':False") {
        return Err(bad("Fortran order").into());
    }
    let width = if header.contains("'descr':'<f4'") {
        4
    } else if header.contains("'descr':'<f8'") {
        8
    } else {
        return Err(bad("dtype").into());
    };
    let dims: Vec<usize> = header
        .split("'shape':(")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .ok_or_else(|| bad("shape"))?
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| bad("shape"))?;
    let [rows, cols] = dims[..] else {
        return Err(bad("not 2-D").into());
    };
    let data = &bytes[start + header_len..];
    if rows.checked_mul(cols).and_then(|n| n.checked_mul(width)) != Some(data.len()) {
        return Err(bad("data size").into());
    }
    let values = if width == 4 {
        let f = |c: &[u8]| f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        Values::F32(data.chunks_exact(4).map(f).collect())
    } else {
        let f = |c: &[u8]| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        Values::F64(data.chunks_exact(8).map(f).collect())
    };
    Ok((values, rows, cols))
}

fn run(model_path: &str, bag_paths: &[String]) -> Result<(), Box<dyn Error>> {
    let model = Model::load(model_path)?;
    // compiled once; `Send + Sync`, so threads may share it, each with its own Workspace
    let predictor = Predictor::new(&model)?;
    let mut ws = Workspace::default();
    let mut scores = vec![0.0; predictor.n_outputs()];
    for bag_path in bag_paths {
        let path = Path::new(bag_path);
        let (values, _, d) = read_npy(path)?;
        let view = match &values {
            Values::F32(x) => BagView::dense32(x, d)?,
            Values::F64(x) => BagView::dense(x, d)?,
        };
        predictor.score_bag(view, &mut ws, &mut scores)?;
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        let cols: Vec<String> = scores.iter().map(f64::to_string).collect();
        println!("{name}\t{}", cols.join("\t"));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: score_npy MODEL.json BAG.npy [BAG.npy ...]");
        return ExitCode::from(2);
    }
    match run(&args[1], &args[2..]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("score_npy: error: {e}");
            ExitCode::from(1)
        }
    }
}
