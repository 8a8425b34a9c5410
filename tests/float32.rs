//! Single-precision instances (`Instances::Dense32`): every family fits and predicts on them
//! with the same bits as on the same values stored as `f64` (the data stays `f32`, the
//! arithmetic runs in `f64`), whatever the thread count.

mod common;

use common::{rng, TestResult};
use milsvm::bags::{DenseF32, Instances};
use milsvm::model::{BagView, Predictor, Workspace};
use milsvm::{
    AnnealingParams, Bags, BasisSize, CccpParams, Gamma, KernelKind, MiKernelParams, MilesParams,
    Model, NskParams, OneClassParams, ReducedSetParams, SilParams, SmilParams, SparseMiParams,
    StkParams, SvmCcParams, TwoStageParams,
};
use ndarray::Array2;
use rand::Rng;

/// Bags of `d` features, the values rounded to `f32`: the `f32` set and its exact `f64` twin.
/// Positive bags (odd index) hold an instance shifted by `+2` in every feature.
fn twin_bags(seed: u64, n_bags: usize, d: usize) -> (Bags, Bags, Vec<usize>) {
    let mut r = rng(seed);
    let mut ptr = vec![0];
    let mut rows: Vec<f32> = Vec::new();
    let mut labels = Vec::new();
    for i in 0..n_bags {
        let n = r.random_range(1..6);
        for p in 0..n {
            for _ in 0..d {
                let shift = if i % 2 == 1 && p == 0 { 2.0 } else { 0.0 };
                rows.push((r.random::<f64>() * 1.7 - 0.4 + shift) as f32);
            }
        }
        ptr.push(ptr[i] + n);
        labels.push(i % 2);
    }
    let n = ptr[n_bags];
    let x32 = DenseF32::from_vec(n, d, rows.clone()).expect("shape");
    let x64 = Array2::from_shape_vec((n, d), rows.iter().map(|&v| f64::from(v)).collect())
        .expect("shape");
    (
        Bags::new(Instances::Dense32(x32), ptr.clone()).expect("valid bags"),
        Bags::new(Instances::from(x64), ptr).expect("valid bags"),
        labels,
    )
}

/// Both models equal, and their scores on both forms of the data equal bit for bit.
fn same_model(name: &str, a: &Model, b: &Model, b32: &Bags, b64: &Bags) -> TestResult {
    // equal but for the recorded training dtype
    assert_eq!(b.input_dtype, milsvm::model::Dtype::Float64, "{name}");
    let mut a_as_b = a.clone();
    a_as_b.input_dtype = b.input_dtype;
    assert_eq!(&a_as_b, b, "{name}: the models differ");
    let s32 = a.decision_function(b32)?;
    let s64 = b.decision_function(b64)?;
    assert_eq!(s32, s64, "{name}: scores of f32 and f64 bags differ");
    if a.bag_features == milsvm::model::BagFeatures::Instances {
        let i32 = a.instance_decision_function(b32.instances())?;
        let i64 = b.instance_decision_function(b64.instances())?;
        assert_eq!(i32, i64, "{name}: instance scores differ");
    }
    Ok(())
}

macro_rules! check_family {
    ($name:expr, $params:expr, $b32:expr, $b64:expr, $labels:expr) => {{
        let p = $params;
        let f32_fit = p.fit(&$b32, &$labels)?;
        let f64_fit = p.fit(&$b64, &$labels)?;
        same_model($name, &f32_fit.model, &f64_fit.model, &$b32, &$b64)?;
    }};
}

#[test]
fn every_family_fits_f32_bags_as_their_f64_twins() -> TestResult {
    for (seed, d) in [(1, 3), (2, 11)] {
        let (b32, b64, y) = twin_bags(seed, 24, d);
        let lin = KernelKind::Linear;
        check_family!(
            "SparseMI",
            SparseMiParams::new().n_xv(3).max_iter(4),
            b32,
            b64,
            y
        );
        check_family!("RS", ReducedSetParams::new().n_xv(3), b32, b64, y);
        check_family!("NSK", NskParams::new(), b32, b64, y);
        check_family!("NSK linear", NskParams::new().kernel(lin), b32, b64, y);
        check_family!("sMIL", SmilParams::new(), b32, b64, y);
        check_family!(
            "ALSVM",
            AnnealingParams::al().max_iter(Some(5)),
            b32,
            b64,
            y
        );
        check_family!("miSVM", AnnealingParams::mi_svm(), b32, b64, y);
        check_family!(
            "MISVM linear",
            AnnealingParams::big_mi_svm().kernel(lin),
            b32,
            b64,
            y
        );
        check_family!(
            "ALSVM linear",
            AnnealingParams::al().kernel(lin),
            b32,
            b64,
            y
        );
        check_family!(
            "miSVM n_xv",
            AnnealingParams::mi_svm().n_xv(BasisSize::Vectors(4)),
            b32,
            b64,
            y
        );
        check_family!("SVMCC", SvmCcParams::new(), b32, b64, y);
        check_family!(
            "SVMCC rbf",
            SvmCcParams::new().kernel(KernelKind::Rbf),
            b32,
            b64,
            y
        );
        check_family!("OneClass", OneClassParams::new(), b32, b64, y);
        check_family!("SIL", SilParams::new(), b32, b64, y);
        check_family!("STK", StkParams::new(), b32, b64, y);
        check_family!("MILES", MilesParams::new(), b32, b64, y);
        check_family!("MILES linear", MilesParams::new().kernel(lin), b32, b64, y);
        let (a, b) = (
            TwoStageParams::sbmil().fit(&b32, &y)?,
            TwoStageParams::sbmil().fit(&b64, &y)?,
        );
        same_model("sbMIL", &a.svm.model, &b.svm.model, &b32, &b64)?;
        let (a, b) = (
            TwoStageParams::sawmil().fit(&b32, &y)?,
            TwoStageParams::sawmil().fit(&b64, &y)?,
        );
        same_model("sAwMIL", &a.svm.model, &b.svm.model, &b32, &b64)?;
        check_family!("stMIL", CccpParams::stmil(), b32, b64, y);
        check_family!("MissSVM", CccpParams::misssvm(), b32, b64, y);
        check_family!(
            "SparseMI median",
            SparseMiParams::new()
                .n_xv(2)
                .max_iter(2)
                .gamma(Gamma::Median),
            b32,
            b64,
            y
        );
        // MI-Kernel keeps the training bags: compare its expansion model and its scores.
        let (a, b) = (
            MiKernelParams::new().fit(&b32, &y)?,
            MiKernelParams::new().fit(&b64, &y)?,
        );
        same_model(
            "MIKernel",
            &a.model.to_model()?,
            &b.model.to_model()?,
            &b32,
            &b64,
        )?;
        assert_eq!(
            a.model.decision_function(&b32)?,
            b.model.decision_function(&b64)?
        );
    }
    Ok(())
}

#[test]
fn f32_bags_score_as_f64_bags_in_the_predictor() -> TestResult {
    let (b32, b64, y) = twin_bags(5, 30, 13);
    let fit = SparseMiParams::new().n_xv(4).max_iter(3).fit(&b64, &y)?;
    let predictor = Predictor::new(&fit.model)?;
    let mut ws = Workspace::default();
    let (mut a, mut b) = ([0.0], [0.0]);
    let (Instances::Dense32(x32), Instances::Dense(x64)) = (b32.instances(), b64.instances())
    else {
        unreachable!("twin_bags makes dense sets")
    };
    let d = 13;
    for i in 0..b32.n_bags() {
        let r = b32.bag_range(i);
        let v32 = BagView::dense32(&x32.as_slice()[r.start * d..r.end * d], d)?;
        let flat = x64.as_slice();
        let v64 = BagView::dense(&flat[r.start * d..r.end * d], d)?;
        predictor.score_bag(v32, &mut ws, &mut a)?;
        predictor.score_bag(v64, &mut ws, &mut b)?;
        assert_eq!(a[0].to_bits(), b[0].to_bits(), "bag {i}");
    }
    assert_eq!(
        predictor.decision_function(&b32)?,
        predictor.decision_function(&b64)?
    );
    Ok(())
}

#[test]
fn non_finite_f32_values_are_refused_naming_the_bag() {
    let mut v = vec![0.5f32; 12];
    v[7] = f32::NAN;
    let x = DenseF32::from_vec(4, 3, v).expect("shape");
    let err = Bags::new(Instances::Dense32(x), vec![0, 1, 3, 4]).unwrap_err();
    assert!(err.to_string().contains("bag 1"), "{err}");
}

#[test]
fn f32_fits_do_not_depend_on_the_thread_count() -> TestResult {
    let (b32, _, y) = twin_bags(9, 40, 9);
    let fit = |n: usize| -> milsvm::Result<Model> {
        Ok(AnnealingParams::mi_svm()
            .kernel(KernelKind::Linear)
            .n_jobs(Some(n))
            .fit(&b32, &y)?
            .model)
    };
    assert_eq!(fit(1)?, fit(2)?);
    let sm = |n: usize| -> milsvm::Result<Model> {
        Ok(SparseMiParams::new()
            .n_xv(3)
            .max_iter(3)
            .n_jobs(Some(n))
            .fit(&b32, &y)?
            .model)
    };
    assert_eq!(sm(1)?, sm(2)?);
    Ok(())
}

#[test]
fn large_f32_sets_take_the_blocked_and_parallel_paths_with_the_same_bits() -> TestResult {
    use milsvm::bags::Rows;
    use milsvm::kernel::{kernel_bag_means, Basis, Kernel};
    use milsvm::smo::{GramRows, InstanceGram};
    // 5000 instances: several GEMM blocks, parallel kernel rows (>= 4096 points), k-means
    // bounds; 17 features: SIMD lanes and a remainder.
    let (b32, b64, _) = twin_bags(11, 1700, 17);
    let (x32, x64) = (b32.instances(), b64.instances());
    assert!(x32.n_rows() > 4096, "{}", x32.n_rows());
    assert_eq!(x32.sq_norms(), x64.sq_norms());
    assert_eq!(x32.mean_var(), x64.mean_var());
    let z = x64.dense_rows(&[3, 500, 4000]);
    assert_eq!(
        x32.cross_gram(&Instances::from(z.clone())),
        x64.cross_gram(&Instances::from(z.clone()))
    );
    let basis = Basis::direct(z);
    let kernel = Kernel::Rbf { gamma: 0.2 };
    let (n32, n64) = (x32.sq_norms(), x64.sq_norms());
    assert_eq!(
        kernel_bag_means(kernel, Rows::from(x32), &n32, b32.bag_ptr(), &basis),
        kernel_bag_means(kernel, Rows::from(x64), &n64, b64.bag_ptr(), &basis)
    );
    let (g32, g64) = (
        InstanceGram::new(kernel, Rows::from(x32))?,
        InstanceGram::new(kernel, Rows::from(x64))?,
    );
    assert_eq!(g32.diagonal(), g64.diagonal());
    let n = g32.n_points();
    let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
    g32.fill_row(4321, &mut a);
    g64.fill_row(4321, &mut b);
    assert_eq!(a, b);
    let (mut a2, mut b2) = (vec![0.0; n], vec![0.0; n]);
    g32.fill_rows(&[7, 4321], &mut [a.as_mut_slice(), a2.as_mut_slice()]);
    g64.fill_rows(&[7, 4321], &mut [b.as_mut_slice(), b2.as_mut_slice()]);
    assert_eq!((a, a2), (b, b2));
    assert_eq!(
        milsvm::basis::kmeans(x32, 40, 20, 3),
        milsvm::basis::kmeans(x64, 40, 20, 3)
    );
    Ok(())
}

#[test]
fn borrowed_f32_instances_are_not_copied_by_a_fit() -> TestResult {
    use std::sync::Arc;
    let (b32, _, y) = twin_bags(4, 20, 5);
    let Instances::Dense32(x) = b32.instances() else {
        unreachable!("twin_bags makes dense sets")
    };
    let owner: Arc<Vec<f32>> = Arc::new(x.as_slice().to_vec());
    // SAFETY: `owner` holds the n x d values and is never written.
    let shared =
        unsafe { DenseF32::from_shared(owner.as_ptr(), x.n_rows(), x.n_cols(), owner.clone()) }?;
    assert!(shared.is_borrowed());
    let bags = Bags::new(Instances::Dense32(shared), b32.bag_ptr().to_vec())?;
    let fit = AnnealingParams::mi_svm()
        .kernel(KernelKind::Linear)
        .fit(&bags, &y)?;
    assert_eq!(
        fit.model,
        AnnealingParams::mi_svm()
            .kernel(KernelKind::Linear)
            .fit(&b32, &y)?
            .model
    );
    drop(bags);
    assert_eq!(
        Arc::strong_count(&owner),
        1,
        "the fit must release the buffer"
    );
    Ok(())
}
