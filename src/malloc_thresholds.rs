//! Fixed glibc allocator thresholds for the `arbor` command line.
//!
//! glibc moves its mmap and trim thresholds up to the size of the largest
//! mmapped block a program frees. Training frees large blocks while it
//! prepares the table, then allocates and frees the same few megabytes for
//! every tree; whether those are reused or handed back to the kernel and
//! faulted in again (about 2.3 µs a page here) then depends on the size of
//! one buffer freed long before. Packing the canonical order's keys tighter
//! took the flights forest's system time from 0.19 s to 0.46 s that way.
//! Fixing the thresholds makes training's memory reuse independent of it.
//!
//! A cluster executor runs task after task, each allocating and freeing
//! blocks of 8 to 32 MiB (a partition's records, a node's rows, a shuffle's
//! buffers): under a single job's thresholds it gave them back and faulted
//! them in again, a fifth of its time on the benchmark's forest. It keeps
//! them instead ([`MemoryUse::Executor`]).

/// How a process uses memory, which sets its allocator thresholds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryUse {
    /// One command that trains, predicts or answers SQL, then exits: blocks
    /// from 8 MiB are mapped on their own and free memory past 16 MiB is
    /// given back, which keeps its peak near what it holds.
    OneJob,
    /// A cluster process that runs job after job: blocks up to 32 MiB
    /// (glibc's largest threshold) come from its heaps and up to 256 MiB of
    /// free memory is kept for the next task, which reuses it without
    /// faulting it in again.
    Executor,
}

impl MemoryUse {
    /// glibc's `M_MMAP_THRESHOLD` and `M_TRIM_THRESHOLD` for this use, in bytes.
    pub fn thresholds(self) -> (i32, i32) {
        match self {
            MemoryUse::OneJob => (8 << 20, 16 << 20),
            MemoryUse::Executor => (32 << 20, 256 << 20),
        }
    }
}

/// Sets glibc's mmap and trim thresholds for `usage` ([`MemoryUse::thresholds`]),
/// unless `MALLOC_MMAP_THRESHOLD_` or `MALLOC_TRIM_THRESHOLD_` chose
/// otherwise; returns whether it set them. Elsewhere than glibc, does nothing.
/// Call it before any thread starts.
pub fn fix_malloc_thresholds(usage: MemoryUse) -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() || std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_some()
        {
            return false;
        }
        let (mmap, trim) = usage.thresholds();
        // SAFETY: mallopt only sets allocator parameters; it is called before
        // any thread is started, and both values are in glibc's valid range.
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, mmap) == 1 && libc::mallopt(libc::M_TRIM_THRESHOLD, trim) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = usage;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::MemoryUse;

    /// glibc takes both uses' values (it refuses an mmap threshold above 32 MiB).
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_takes_the_thresholds() {
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() && std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_none()
        {
            assert!(super::fix_malloc_thresholds(MemoryUse::Executor));
            assert!(super::fix_malloc_thresholds(MemoryUse::OneJob));
        }
    }

    /// An executor keeps more than one job: a larger mmap threshold, within glibc's 32 MiB, and a larger trim.
    #[test]
    fn an_executor_keeps_more_than_one_job() {
        let (one_mmap, one_trim) = MemoryUse::OneJob.thresholds();
        let (mmap, trim) = MemoryUse::Executor.thresholds();
        assert!(mmap > one_mmap && mmap <= 32 << 20 && trim > one_trim, "{mmap} {trim}");
    }
}
