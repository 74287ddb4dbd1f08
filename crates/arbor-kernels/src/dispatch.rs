//! The runtime CPU dispatch seam.
//!
//! Kernels implement [`pulp::WithSimd`]; [`run`] hands them to the
//! instruction-set level chosen once per process: the best the CPU offers, or
//! the one forced by the `ARBOR_SIMD` environment variable (`scalar` or
//! `auto`), so tests and benches can compare levels on the same input.

use std::sync::OnceLock;

/// The instruction-set level kernels run at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Portable scalar code.
    Scalar,
    /// The best level `pulp` detects on this CPU (AVX2/FMA on x86-64 v3, NEON on arm64).
    Auto,
}

/// The level of this process: `ARBOR_SIMD=scalar` forces scalar code.
pub fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| match std::env::var("ARBOR_SIMD").as_deref() {
        Ok("scalar") => Level::Scalar,
        _ => Level::Auto,
    })
}

/// Runs a kernel at the process's level.
#[inline]
pub fn run<K: pulp::WithSimd>(kernel: K) -> K::Output {
    match level() {
        Level::Scalar => kernel.with_simd(pulp::Scalar::new()),
        Level::Auto => pulp::Arch::new().dispatch(kernel),
    }
}
