//! The runtime CPU dispatch seam.
//!
//! Kernels implement [`pulp::WithSimd`]; [`run`] compiles them once per
//! instruction-set [`Level`] and calls the one chosen at run time:
//! - by default the best level the CPU offers ([`Level::best`]);
//! - or the level the `ARBOR_SIMD` environment variable forces (`scalar`,
//!   `avx2`, `avx512`, `neon` or `auto`), read once per process;
//! - or, on one thread, the level [`with_level`] forces, so tests and benches
//!   compare every level on the same input in one process.
//!
//! Every level computes the same results bit for bit: kernels add in the
//! same order at every width, so models do not depend on the CPU.
//!
//! [`prefetch`] is the one CPU hint kernels use outside a level: a cache
//! prefetch, which changes timing only, never results.

use std::cell::Cell;
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

/// An instruction-set level kernels can run at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Portable code, no target features beyond the build's baseline.
    Scalar,
    /// x86-64-v3: AVX2, FMA, BMI2 (pulp's `V3`).
    Avx2,
    /// x86-64-v4: AVX-512 F/BW/CD/DQ/VL (pulp's `V4`).
    Avx512,
    /// arm64 NEON (pulp's `Neon`).
    Neon,
}

impl Level {
    /// Every level, from the most portable.
    pub const ALL: [Level; 4] = [Level::Scalar, Level::Avx2, Level::Avx512, Level::Neon];

    /// The name `ARBOR_SIMD` takes for this level.
    pub fn name(self) -> &'static str {
        match self {
            Level::Scalar => "scalar",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
            Level::Neon => "neon",
        }
    }

    /// Whether this CPU (and this build) can run the level.
    pub fn is_available(self) -> bool {
        match self {
            Level::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => pulp::x86::V3::try_new().is_some(),
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => pulp::x86::V4::try_new().is_some(),
            #[cfg(target_arch = "aarch64")]
            Level::Neon => pulp::aarch64::Neon::try_new().is_some(),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The best level this CPU runs.
    pub fn best() -> Level {
        *Level::ALL.iter().rev().find(|l| l.is_available()).unwrap_or(&Level::Scalar)
    }

    /// The levels this CPU runs, from the most portable.
    pub fn available() -> Vec<Level> {
        Level::ALL.into_iter().filter(|l| l.is_available()).collect()
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A level that cannot be used: an unknown name, or one this CPU lacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LevelError {
    /// The name is not a level.
    Unknown(String),
    /// The CPU (or this build) cannot run the level.
    Unavailable(Level),
}

impl fmt::Display for LevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = || Level::available().iter().map(|l| l.name()).collect::<Vec<_>>().join(", ");
        match self {
            LevelError::Unknown(name) => {
                write!(f, "ARBOR_SIMD={name:?} is not a SIMD level; expected one of scalar, avx2, avx512, neon, auto")
            }
            LevelError::Unavailable(level) => {
                write!(f, "ARBOR_SIMD={level}: this CPU does not support it; available: {}", names())
            }
        }
    }
}

impl std::error::Error for LevelError {}

impl FromStr for Level {
    type Err = LevelError;

    /// Parses a level name (`auto` is the best available level).
    fn from_str(name: &str) -> Result<Level, LevelError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Ok(Level::best()),
            "scalar" => Ok(Level::Scalar),
            "avx2" => Ok(Level::Avx2),
            "avx512" => Ok(Level::Avx512),
            "neon" => Ok(Level::Neon),
            _ => Err(LevelError::Unknown(name.to_owned())),
        }
    }
}

/// The level `ARBOR_SIMD` asks for (the best available when it is unset), or
/// why it cannot be used. Programs call this at start-up to report a bad value.
pub fn from_env() -> Result<Level, LevelError> {
    let level = match std::env::var("ARBOR_SIMD") {
        Ok(name) => name.parse::<Level>()?,
        Err(_) => Level::best(),
    };
    if level.is_available() {
        Ok(level)
    } else {
        Err(LevelError::Unavailable(level))
    }
}

/// The level of this process, read from `ARBOR_SIMD` once; a value
/// [`from_env`] rejects falls back to the best available level.
pub fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| from_env().unwrap_or_else(|_| Level::best()))
}

thread_local! {
    static FORCED: Cell<Option<Level>> = const { Cell::new(None) };
}

/// The level kernels run at on this thread: the one [`with_level`] forces,
/// or the process's.
pub fn current() -> Level {
    FORCED.with(Cell::get).unwrap_or_else(level)
}

/// Runs `f` with this thread's kernels at `level` (kernels that other
/// threads run for `f`, as rayon's do, keep the process's level).
pub fn with_level<R>(level: Level, f: impl FnOnce() -> R) -> Result<R, LevelError> {
    if !level.is_available() {
        return Err(LevelError::Unavailable(level));
    }
    struct Restore(Option<Level>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FORCED.with(|c| c.replace(Some(level))));
    Ok(f())
}

/// Runs a kernel at the [`current`] level.
#[inline]
pub fn run<K: pulp::WithSimd>(kernel: K) -> K::Output {
    use pulp::Simd;
    match current() {
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => match pulp::x86::V4::try_new() {
            Some(simd) => Simd::vectorize(simd, kernel),
            None => kernel.with_simd(pulp::Scalar::new()),
        },
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => match pulp::x86::V3::try_new() {
            Some(simd) => Simd::vectorize(simd, kernel),
            None => kernel.with_simd(pulp::Scalar::new()),
        },
        #[cfg(target_arch = "aarch64")]
        Level::Neon => match pulp::aarch64::Neon::try_new() {
            Some(simd) => Simd::vectorize(simd, kernel),
            None => kernel.with_simd(pulp::Scalar::new()),
        },
        _ => kernel.with_simd(pulp::Scalar::new()),
    }
}

/// The AVX-512 token when this thread's kernels run at [`Level::Avx512`]
/// and the CPU has it: for kernels written with AVX-512 instructions alone
/// (gathers, compresses), which other levels replace with scalar code.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn avx512() -> Option<pulp::x86::V4> {
    if current() == Level::Avx512 {
        pulp::x86::V4::try_new()
    } else {
        None
    }
}

/// The AVX2 token when this thread's kernels run at [`Level::Avx2`] and the
/// CPU has it: for kernels whose AVX2 form is written apart from the
/// AVX-512 one (gathers without mask registers or compresses).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn avx2() -> Option<pulp::x86::V3> {
    if current() == Level::Avx2 {
        pulp::x86::V3::try_new()
    } else {
        None
    }
}

/// How many places ahead in a node's rows the histogram kernels prefetch a
/// row's values: far enough to hide a miss to L3, near enough to stay cached.
pub(crate) const PREFETCH_ROWS: usize = 16;

/// The row `PREFETCH_ROWS` places after position `i` of `rows`, if any.
#[inline(always)]
pub(crate) fn row_ahead(rows: &[u32], i: usize) -> Option<usize> {
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
        for level in Level::ALL {
            assert_eq!(level.name().parse::<Level>(), Ok(level));
        }
        assert_eq!("AVX2".parse::<Level>(), Ok(Level::Avx2));
        assert_eq!("auto".parse::<Level>(), Ok(Level::best()));
        let err = "sse9".parse::<Level>().unwrap_err();
        assert!(err.to_string().contains("\"sse9\""), "{err}");
    }

    #[test]
    fn with_level_forces_this_thread_only_and_restores() {
        let outer = current();
        with_level(Level::Scalar, || {
            assert_eq!(current(), Level::Scalar);
            let other = std::thread::spawn(current).join().unwrap();
            assert_eq!(other, level());
        })
        .unwrap();
        assert_eq!(current(), outer);
        assert!(Level::available().contains(&Level::Scalar));
        assert!(Level::best().is_available());
        for missing in Level::ALL.into_iter().filter(|l| !l.is_available()) {
            assert_eq!(with_level(missing, || ()), Err(LevelError::Unavailable(missing)));
        }
    }
}
