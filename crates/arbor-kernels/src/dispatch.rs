//! The runtime CPU dispatch seam.
//!
//! Kernels implement [`pulp::WithSimd`]; [`run`] compiles them once per
//! instruction-set [`SimdLevel`] and calls the one chosen at run time:
//! - by default the best SIMD level the CPU offers ([`SimdLevel::best`]);
//! - or the SIMD level the `ARBOR_SIMD` environment variable forces (`scalar`,
//!   `avx2`, `avx512`, `neon` or `auto`), read once per process;
//! - or, on one thread, the SIMD level [`with_simd_level`] forces, so tests and benches
//!   compare every SIMD level on the same input in one process.
//!
//! Every SIMD level computes the same results bit for bit: kernels add in the
//! same order at every width, so models do not depend on the CPU.
//!
//! [`prefetch`] is the one CPU hint kernels use outside a SIMD level: a cache
//! prefetch, which changes timing only, never results.

use std::cell::Cell;
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

/// An instruction-set level kernels can run at (scalar, AVX2, AVX-512, NEON): a
/// SIMD level, not a tree level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// Portable code, no target features beyond the build's baseline.
    Scalar,
    /// x86-64-v3: AVX2, FMA, BMI2 (pulp's `V3`).
    Avx2,
    /// x86-64-v4: AVX-512 F/BW/CD/DQ/VL (pulp's `V4`).
    Avx512,
    /// arm64 NEON (pulp's `Neon`).
    Neon,
}

impl SimdLevel {
    /// Every SIMD level, from the most portable.
    pub const ALL: [SimdLevel; 4] = [SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512, SimdLevel::Neon];

    /// The name `ARBOR_SIMD` takes for this SIMD level.
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Scalar => "scalar",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
            SimdLevel::Neon => "neon",
        }
    }

    /// Whether this CPU (and this build) can run the SIMD level.
    pub fn is_available(self) -> bool {
        match self {
            SimdLevel::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2 => pulp::x86::V3::try_new().is_some(),
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => pulp::x86::V4::try_new().is_some(),
            #[cfg(target_arch = "aarch64")]
            SimdLevel::Neon => pulp::aarch64::Neon::try_new().is_some(),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The best SIMD level this CPU runs.
    pub fn best() -> SimdLevel {
        *SimdLevel::ALL.iter().rev().find(|l| l.is_available()).unwrap_or(&SimdLevel::Scalar)
    }

    /// The SIMD levels this CPU runs, from the most portable.
    pub fn available() -> Vec<SimdLevel> {
        SimdLevel::ALL.into_iter().filter(|l| l.is_available()).collect()
    }
}

impl fmt::Display for SimdLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A SIMD level that cannot be used: an unknown name, or one this CPU lacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimdLevelError {
    /// The name is not a SIMD level.
    Unknown(String),
    /// The CPU (or this build) cannot run the SIMD level.
    Unavailable(SimdLevel),
}

impl fmt::Display for SimdLevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = || SimdLevel::available().iter().map(|l| l.name()).collect::<Vec<_>>().join(", ");
        match self {
            SimdLevelError::Unknown(name) => {
                write!(f, "ARBOR_SIMD={name:?} is not a SIMD level; expected one of scalar, avx2, avx512, neon, auto")
            }
            SimdLevelError::Unavailable(level) => {
                write!(f, "ARBOR_SIMD={level}: this CPU does not support it; available: {}", names())
            }
        }
    }
}

impl std::error::Error for SimdLevelError {}

impl FromStr for SimdLevel {
    type Err = SimdLevelError;

    /// Parses a SIMD level name (`auto` is the best available SIMD level).
    fn from_str(name: &str) -> Result<SimdLevel, SimdLevelError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Ok(SimdLevel::best()),
            "scalar" => Ok(SimdLevel::Scalar),
            "avx2" => Ok(SimdLevel::Avx2),
            "avx512" => Ok(SimdLevel::Avx512),
            "neon" => Ok(SimdLevel::Neon),
            _ => Err(SimdLevelError::Unknown(name.to_owned())),
        }
    }
}

/// The SIMD level `ARBOR_SIMD` asks for (the best available when it is unset), or
/// why it cannot be used. Programs call this at start-up to report a bad value.
pub fn from_env() -> Result<SimdLevel, SimdLevelError> {
    let level = match std::env::var("ARBOR_SIMD") {
        Ok(name) => name.parse::<SimdLevel>()?,
        Err(_) => SimdLevel::best(),
    };
    if level.is_available() {
        Ok(level)
    } else {
        Err(SimdLevelError::Unavailable(level))
    }
}

/// The SIMD level of this process, read from `ARBOR_SIMD` once; a value
/// [`from_env`] rejects falls back to the best available SIMD level.
pub fn process_simd_level() -> SimdLevel {
    static SIMD_LEVEL: OnceLock<SimdLevel> = OnceLock::new();
    *SIMD_LEVEL.get_or_init(|| from_env().unwrap_or_else(|_| SimdLevel::best()))
}

thread_local! {
    static FORCED: Cell<Option<SimdLevel>> = const { Cell::new(None) };
}

/// The SIMD level kernels run at on this thread: the one [`with_simd_level`] forces,
/// or the process's.
pub fn current() -> SimdLevel {
    FORCED.with(Cell::get).unwrap_or_else(process_simd_level)
}

/// Runs `f` with this thread's kernels at `level` (kernels that other
/// threads run for `f`, as rayon's do, keep the process's SIMD level).
pub fn with_simd_level<R>(level: SimdLevel, f: impl FnOnce() -> R) -> Result<R, SimdLevelError> {
    if !level.is_available() {
        return Err(SimdLevelError::Unavailable(level));
    }
    struct Restore(Option<SimdLevel>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FORCED.with(|c| c.replace(Some(level))));
    Ok(f())
}

/// Runs a kernel at the [`current`] SIMD level.
#[inline]
pub fn run<K: pulp::WithSimd>(kernel: K) -> K::Output {
    use pulp::Simd;
    match current() {
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 => match pulp::x86::V4::try_new() {
            Some(simd) => Simd::vectorize(simd, kernel),
            None => kernel.with_simd(pulp::Scalar::new()),
        },
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2 => match pulp::x86::V3::try_new() {
            Some(simd) => Simd::vectorize(simd, kernel),
            None => kernel.with_simd(pulp::Scalar::new()),
        },
        #[cfg(target_arch = "aarch64")]
        SimdLevel::Neon => match pulp::aarch64::Neon::try_new() {
            Some(simd) => Simd::vectorize(simd, kernel),
            None => kernel.with_simd(pulp::Scalar::new()),
        },
        _ => kernel.with_simd(pulp::Scalar::new()),
    }
}

/// The AVX-512 token when this thread's kernels run at [`SimdLevel::Avx512`]
/// and the CPU has it: for kernels written with AVX-512 instructions alone
/// (gathers, compresses), which other SIMD levels replace with scalar code.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn avx512() -> Option<pulp::x86::V4> {
    if current() == SimdLevel::Avx512 {
        pulp::x86::V4::try_new()
    } else {
        None
    }
}

/// The AVX2 token when this thread's kernels run at [`SimdLevel::Avx2`] and the
/// CPU has it: for kernels whose AVX2 form is written apart from the
/// AVX-512 one (gathers without mask registers or compresses).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn avx2() -> Option<pulp::x86::V3> {
    if current() == SimdLevel::Avx2 {
        pulp::x86::V3::try_new()
    } else {
        None
    }
}

/// How many places ahead in a node's rows the histogram kernels (and the
/// level-wise boosting pass) prefetch a row's values: far enough to hide a
/// miss to L3, near enough to stay cached.
pub const PREFETCH_ROWS: usize = 16;

/// The row `PREFETCH_ROWS` places after position `i` of `rows`, if any.
#[inline(always)]
pub fn row_ahead(rows: &[u32], i: usize) -> Option<usize> {
    rows.get(i + PREFETCH_ROWS).map(|&r| r as usize)
}

/// Asks the CPU to bring `values[at]`'s cache line into cache ahead of use,
/// for kernels whose rows are scattered over memory. Only a hint: it never
/// reads the value, so any `at` is fine; a no-op where unsupported.
#[inline(always)]
pub fn prefetch<T>(values: &[T], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(sse) = pulp::core_arch::x86::Sse::try_new() {
        sse._mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(values.as_ptr().wrapping_add(at).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (values, at);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_named_in_the_error() {
        for level in SimdLevel::ALL {
            assert_eq!(level.name().parse::<SimdLevel>(), Ok(level));
        }
        assert_eq!("AVX2".parse::<SimdLevel>(), Ok(SimdLevel::Avx2));
        assert_eq!("auto".parse::<SimdLevel>(), Ok(SimdLevel::best()));
        let err = "sse9".parse::<SimdLevel>().unwrap_err();
        assert!(err.to_string().contains("\"sse9\""), "{err}");
    }

    #[test]
    fn with_simd_level_forces_this_thread_only_and_restores() {
        let outer = current();
        with_simd_level(SimdLevel::Scalar, || {
            assert_eq!(current(), SimdLevel::Scalar);
            let other = std::thread::spawn(current).join().unwrap();
            assert_eq!(other, process_simd_level());
        })
        .unwrap();
        assert_eq!(current(), outer);
        assert!(SimdLevel::available().contains(&SimdLevel::Scalar));
        assert!(SimdLevel::best().is_available());
        for missing in SimdLevel::ALL.into_iter().filter(|l| !l.is_available()) {
            assert_eq!(with_simd_level(missing, || ()), Err(SimdLevelError::Unavailable(missing)));
        }
    }
}
