//! Memory that training asks for in amounts the input or the options decide
//! (rows, trees, rounds): checked against a limit before it is asked for,
//! so a request too large is an error naming what it was for and the
//! figure, never an abort or the operating system's out-of-memory kill.
//!
//! The limit is the one the caller sets ([`set_memory_limit`]: `arbor
//! --memory-limit`, DataFusion's memory pool), else the machine's: the
//! memory cgroup's limit when there is one, else physical memory.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::{ArborError, Result};

/// The caller's limit in bytes (0: none set).
static LIMIT: AtomicU64 = AtomicU64::new(0);

/// Sets the bytes training may use in this process (`None`: the machine's).
pub fn set_memory_limit(bytes: Option<u64>) {
    LIMIT.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

thread_local! {
    /// A limit for what this thread runs inside [`with_memory_limit`].
    static SCOPED: Cell<Option<(u64, &'static str)>> = const { Cell::new(None) };
}

/// Runs `f` with `bytes` (named by `source` in errors) as the limit for the
/// checks made on this thread, whatever the process's limit: a SQL session
/// trains within its own memory pool so.
pub fn with_memory_limit<R>(bytes: u64, source: &'static str, f: impl FnOnce() -> R) -> R {
    let outer = SCOPED.replace(Some((bytes, source)));
    struct Restore(Option<(u64, &'static str)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPED.set(self.0);
        }
    }
    let _restore = Restore(outer);
    f()
}

/// The bytes training may use, and where that figure comes from.
pub fn memory_limit() -> (u64, &'static str) {
    if let Some(scoped) = SCOPED.get() {
        return scoped;
    }
    match LIMIT.load(Ordering::Relaxed) {
        0 => machine_memory(),
        set => (set, "the memory limit set"),
    }
}

/// The machine's memory: its cgroup's limit, else physical memory.
fn machine_memory() -> (u64, &'static str) {
    static MACHINE: OnceLock<(u64, &'static str)> = OnceLock::new();
    *MACHINE.get_or_init(|| {
        let cgroup = cgroup_limit();
        let physical = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .map(|kb| kb * 1024)
        });
        match (cgroup, physical) {
            (Some(c), Some(p)) if c < p => (c, "the memory cgroup's limit"),
            (_, Some(p)) => (p, "the machine's memory"),
            (Some(c), None) => (c, "the memory cgroup's limit"),
            (None, None) => (u64::MAX, "no limit known"),
        }
    })
}

/// The memory limit of this process's cgroup (v2's `memory.max`, v1's
/// `memory.limit_in_bytes`), read at the process's own place in the
/// hierarchy, then at the root; `None` when there is none.
fn cgroup_limit() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok().and_then(|s| s.trim().parse::<u64>().ok());
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let limit = match controllers {
            "" => read(&format!("/sys/fs/cgroup{path}/memory.max")),
            c if c.split(',').any(|c| c == "memory") => {
                read(&format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"))
            }
            _ => None,
        };
        if limit.is_some() {
            return limit;
        }
    }
    read("/sys/fs/cgroup/memory.max").or_else(|| read("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
}

/// Hands the allocator's free pages back to the kernel (glibc's
/// `malloc_trim`): after binning, the chunks the reading threads freed sit
/// in their arenas below live blocks, where the trim threshold never
/// reaches them, and would count in training's resident memory. Elsewhere
/// than glibc, does nothing.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the kernel; it is
    // safe to call at any time from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// An error unless `bytes` for `what` fit the limit.
pub(crate) fn check(bytes: u128, what: &str) -> Result<()> {
    let (limit, source) = memory_limit();
    if bytes <= u128::from(limit) {
        return Ok(());
    }
    Err(ArborError::OutOfMemory {
        what: what.to_owned(),
        needed: readable(bytes),
        limit: format!("{source} is {}", readable(u128::from(limit))),
        hint: "use less (fewer rows, trees or rounds) or allow more (arbor --memory-limit, \
               SET datafusion.runtime.memory_limit)"
            .to_owned(),
    })
}

/// An error unless `n` values of `width` bytes for `what` fit the limit.
pub(crate) fn reserve_check(n: usize, width: usize, what: &str) -> Result<()> {
    check(n as u128 * width as u128, what)
}

/// An empty vector with room for `n` values, checked against the limit and
/// allocated without aborting on failure.
pub(crate) fn vec_with_capacity<T>(n: usize, what: &str) -> Result<Vec<T>> {
    let width = std::mem::size_of::<T>();
    reserve_check(n, width, what)?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| ArborError::OutOfMemory {
        what: what.to_owned(),
        needed: readable(n as u128 * width as u128),
        limit: "the allocator refused it".to_owned(),
        hint: "use less (fewer rows, trees or rounds) or free memory".to_owned(),
    })?;
    Ok(v)
}

/// Bytes as a person reads them: "72.0 GB", "512.0 MB".
pub(crate) fn readable(bytes: u128) -> String {
    const UNITS: [&str; 5] = ["bytes", "KB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(readable(512), "512 bytes");
        assert_eq!(readable(72_000_000_000), "72.0 GB");
        assert_eq!(readable(1_500_000), "1.5 MB");
    }

    /// A request past the limit is an error naming what it was for and both figures.
    #[test]
    fn a_request_past_the_limit_names_the_figures() {
        let err = check(u128::from(u64::MAX) + 1, "the trees of n_trees=1000000000").unwrap_err().to_string();
        assert!(err.starts_with("the trees of n_trees=1000000000 needs 18446744.1 TB but "), "{err}");
        assert!(vec_with_capacity::<u64>(usize::MAX / 16, "the labels").is_err());
    }
}
