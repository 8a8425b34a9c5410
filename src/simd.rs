//! Loops compiled for the CPU's vector units, chosen at run time.
//!
//! The crate is built for the baseline `x86_64` instruction set, so that one wheel runs
//! everywhere. A hot loop written as plain Rust is compiled again with AVX-512F and with AVX2
//! enabled, and the widest form the CPU runs is called ([`compiled_forms!`]). The forms run
//! the same operations lane by lane (Rust never fuses a multiply and an add on its own), so
//! they give the bits of the portable loop; each user's tests check it.

/// Defines a function that calls `lanes` (an `#[inline(always)]` function with the same
/// signature) compiled with AVX-512F, or with AVX2, where the CPU has it (checked at run time),
/// else as built; and the two compiled forms, named as given, for the tests to call directly.
///
/// ```ignore
/// compiled_forms! {
///     /// doc of the dispatching function
///     fn exp_in_place(xs: &mut [f64])
///         = exp_in_place_lanes, avx512: exp_in_place_avx512, avx2: exp_in_place_avx2;
/// }
/// ```
macro_rules! compiled_forms {
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident $(<$t:ident: $bound:path>)?
            ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?
            = $lanes:ident, avx512: $avx512:ident, avx2: $avx2:ident;
    ) => {
        $(#[$attr])*
        $vis fn $name $(<$t: $bound>)? ($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports AVX-512F, checked just above.
                    return unsafe { $avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2, checked just above.
                    return unsafe { $avx2($($arg),*) };
                }
            }
            $lanes($($arg),*)
        }

        #[doc = concat!("[`", stringify!($name), "`] compiled for AVX-512F.")]
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        unsafe fn $avx512 $(<$t: $bound>)? ($($arg: $ty),*) $(-> $ret)? {
            $lanes($($arg),*)
        }

        #[doc = concat!("[`", stringify!($name), "`] compiled for AVX2.")]
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn $avx2 $(<$t: $bound>)? ($($arg: $ty),*) $(-> $ret)? {
            $lanes($($arg),*)
        }
    };
}

pub(crate) use compiled_forms;
