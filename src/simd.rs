//! Code for the host's vector instructions: `widest_fns!`, which compiles
//! a function's body for AVX-512, AVX2 with FMA, or the baseline and picks
//! one at run time, and `row_folds`, hand-written AVX-512 kernels for the
//! largest and smallest element of rows and for sums and products of rows
//! of eight. Knows slices of `f64` and the scalar kernels, nothing of
//! arrays or tapes.

pub(crate) mod row_folds;

/// Defines functions that call a body compiled for the widest SIMD the
/// host has (AVX-512, AVX2 with FMA, or the baseline), chosen at run
/// time: `widest_fns! { fn name(a: A, b: B) -> R = body; }` makes `name`
/// call `body(a, b)` (an `#[inline(always)]` function, so it is compiled
/// anew in each version). Every version does the same IEEE operations in
/// the same order, so the same bits.
macro_rules! widest_fns {
    ($($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? = $body:path;)*) => {$(
        $(#[$doc])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the host has AVX-512F, checked just above.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") && $crate::scalar::host_fuses() {
                    // SAFETY: the host has AVX2 and FMA, checked just above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    )*};
}
pub(crate) use widest_fns;
