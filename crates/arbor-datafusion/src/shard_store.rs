//! The shards of level-wise training a process keeps between level jobs
//! (see [`crate::resident_shards`]): one per training and partition, held
//! in memory under an explicit budget.
//!
//! A shard is a cache, never the only copy: a partition whose shard is
//! missing (never built here, evicted, or the process restarted) is read
//! and binned again, and gives the same bytes. So the store may drop any
//! shard at any time: the least recently used go first when a new one
//! needs room, and a shard unused for [`IDLE`] goes at the next access
//! (its training has ended, or moved its partition elsewhere).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use arbor_ensemble::LevelShard;

/// A shard unused this long is dropped: level jobs of one training follow
/// one another within seconds.
pub const IDLE: Duration = Duration::from_secs(120);

/// Which shard: a training ([`arbor_ensemble::LevelState::shard_key`]),
/// the input plan's fingerprint and the files the partition reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShardKey {
    /// The training's shard key.
    pub training: u64,
    /// A fingerprint of the plan the partition is read from.
    pub input: u64,
    /// A fingerprint of the partition's files: their paths, byte ranges,
    /// sizes and modification times (a task numbers its partitions from 0,
    /// so the number names nothing across tasks).
    pub files: u64,
}

/// A kept shard and when it was last read.
struct Kept {
    shard: Arc<LevelShard>,
    bytes: usize,
    used: Instant,
}

/// The shards a process keeps, under a budget of bytes.
pub struct ShardStore {
    budget: AtomicUsize,
    kept: Mutex<HashMap<ShardKey, Kept>>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    largest: AtomicUsize,
    peak: AtomicUsize,
}

/// What a store has done, for logs and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShardStats {
    /// Level jobs that read a kept shard.
    pub hits: u64,
    /// Level jobs that read and binned their partition.
    pub misses: u64,
    /// Shards dropped for room or idleness.
    pub evictions: u64,
    /// Shards kept now.
    pub shards: usize,
    /// Their bytes.
    pub bytes: usize,
    /// The bytes of the largest shard offered to the store (kept or not).
    pub largest: usize,
    /// The most bytes the store has held at once.
    pub peak: usize,
}

/// The process's shard store.
pub fn shard_store() -> &'static ShardStore {
    static STORE: LazyLock<ShardStore> = LazyLock::new(|| ShardStore::new(default_budget()));
    &STORE
}

/// A quarter of the memory this process may use (its cgroup's limit, else the machine's).
fn default_budget() -> usize {
    let (memory, _) = arbor_ensemble::memory_limit();
    usize::try_from(memory / 4).unwrap_or(usize::MAX)
}

impl ShardStore {
    /// An empty store that keeps at most `budget` bytes of shards.
    pub fn new(budget: usize) -> ShardStore {
        ShardStore {
            budget: AtomicUsize::new(budget),
            kept: Mutex::new(HashMap::new()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            largest: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// Sets the budget (0 keeps nothing: every level job reads its
    /// partition), dropping shards until those kept fit it.
    pub fn set_budget(&self, bytes: usize) {
        self.budget.store(bytes, Ordering::Relaxed);
        let mut kept = self.lock();
        self.make_room(&mut kept, 0);
    }

    /// The budget, in bytes.
    pub fn budget(&self) -> usize {
        self.budget.load(Ordering::Relaxed)
    }

    /// The shard kept under `key`, if there is one; counts a hit or a miss.
    pub fn get(&self, key: &ShardKey) -> Option<Arc<LevelShard>> {
        let mut kept = self.lock();
        self.drop_idle(&mut kept);
        let found = kept.get_mut(key).map(|k| {
            k.used = Instant::now();
            k.shard.clone()
        });
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Records that `key`'s shard grew (boosting's scores are kept in it)
    /// and drops others if the store no longer fits its budget.
    pub fn resized(&self, key: &ShardKey) {
        let mut kept = self.lock();
        let Some(k) = kept.get_mut(key) else { return };
        k.bytes = k.shard.heap_size();
        self.largest.fetch_max(k.bytes, Ordering::Relaxed);
        if k.bytes > self.budget() {
            kept.remove(key);
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
        self.make_room(&mut kept, 0);
        self.note_held(&kept);
    }

    /// Keeps `shard` under `key`, dropping the least recently used shards
    /// for room; a shard larger than the whole budget is not kept.
    pub fn insert(&self, key: ShardKey, shard: Arc<LevelShard>) -> bool {
        let bytes = shard.heap_size();
        self.largest.fetch_max(bytes, Ordering::Relaxed);
        if bytes > self.budget() {
            return false;
        }
        let mut kept = self.lock();
        self.drop_idle(&mut kept);
        kept.remove(&key);
        self.make_room(&mut kept, bytes);
        kept.insert(key, Kept { shard, bytes, used: Instant::now() });
        self.note_held(&kept);
        true
    }

    /// Raises the peak to the bytes `kept` holds now, and logs a new peak:
    /// what an executor's log tells of its shards' memory (the cluster
    /// benchmark reads the last such line). Shards grow after they are
    /// kept (boosting's scores and gradients), so a resize counts too.
    fn note_held(&self, kept: &HashMap<ShardKey, Kept>) {
        let held: usize = kept.values().map(|k| k.bytes).sum();
        if held > self.peak.fetch_max(held, Ordering::Relaxed) {
            tracing::info!(
                "shard store: {} shards, {held} bytes held, peak {held} bytes, budget {} bytes",
                kept.len(),
                self.budget()
            );
        }
    }

    /// Drops every shard of training `training` (its training ended).
    pub fn release(&self, training: u64) {
        self.lock().retain(|key, _| key.training != training);
    }

    /// Drops every shard.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// What the store has done and holds.
    pub fn stats(&self) -> ShardStats {
        let kept = self.lock();
        ShardStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            shards: kept.len(),
            bytes: kept.values().map(|k| k.bytes).sum(),
            largest: self.largest.load(Ordering::Relaxed),
            peak: self.peak.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ShardKey, Kept>> {
        // A panic while holding the map leaves it whole: every change is one call.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drops the least recently used shards until `more` bytes fit the budget.
    fn make_room(&self, kept: &mut HashMap<ShardKey, Kept>, more: usize) {
        let budget = self.budget();
        while !kept.is_empty() && kept.values().map(|k| k.bytes).sum::<usize>() + more > budget {
            let oldest = *kept.iter().min_by_key(|(_, k)| k.used).map(|(key, _)| key).expect("not empty");
            kept.remove(&oldest);
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Drops shards unused for [`IDLE`].
    fn drop_idle(&self, kept: &mut HashMap<ShardKey, Kept>) {
        let before = kept.len();
        kept.retain(|_, k| k.used.elapsed() < IDLE);
        self.evictions.fetch_add((before - kept.len()) as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arbor_ensemble::{LevelShard, LevelSummary, Message, NamedColumn, TrainParams, TrainingData};
    use arrow::array::{ArrayRef, Float64Array};

    use super::*;

    /// A forest's shard of `rows` rows.
    fn shard(rows: usize) -> Arc<LevelShard> {
        let x: ArrayRef = Arc::new(Float64Array::from_iter_values((0..rows).map(|i| i as f64)));
        let y: ArrayRef = Arc::new(Float64Array::from_iter_values((0..rows).map(|i| (i % 7) as f64)));
        let column = |name: &str, array: &ArrayRef| NamedColumn { name: name.into(), arrays: vec![array.clone()] };
        let data = TrainingData::from_columns_unsorted(
            column("y", &y),
            vec![column("x", &x)],
            arbor_ensemble::RowColumns::default(),
            None,
            |_| None,
        )
        .unwrap();
        let params = TrainParams::parse_options("n_trees=2").unwrap().check().unwrap();
        let Message::Grow(state) = Message::start(&params, LevelSummary::of(&data)).unwrap() else {
            panic!("a forest grows level by level")
        };
        Arc::new(state.shard(&data).unwrap())
    }

    fn key(training: u64, files: u64) -> ShardKey {
        ShardKey { training, input: 7, files }
    }

    /// The budget holds: the least recently used shard goes for a new
    /// one, a shard larger than the budget is not kept, a budget of 0
    /// keeps nothing, and a training's release drops its shards only; the
    /// peak is the most bytes held at once.
    #[test]
    fn the_budget_evicts_the_least_recently_used_and_keeps_nothing_larger() {
        let (small, large) = (shard(1_000), shard(20_000));
        let (s, l) = (small.heap_size(), large.heap_size());
        assert!(l > 2 * s, "shards grow with their rows: {s} and {l} bytes");
        let store = ShardStore::new(2 * s + s / 2);
        assert!(store.insert(key(1, 1), small.clone()));
        assert!(store.insert(key(1, 2), small.clone()));
        assert!(store.get(&key(1, 1)).is_some(), "read last, so kept");
        assert!(store.insert(key(1, 3), small.clone()));
        assert!(store.get(&key(1, 2)).is_none(), "the least recently used went for room");
        assert!(store.get(&key(1, 1)).is_some() && store.get(&key(1, 3)).is_some());
        assert!(!store.insert(key(1, 4), large), "larger than the whole budget: not kept");
        assert!(store.get(&key(1, 1)).is_some(), "and nothing was dropped for it");
        let stats = store.stats();
        assert_eq!((stats.shards, stats.bytes, stats.evictions), (2, 2 * s, 1));
        assert_eq!((stats.hits, stats.misses, stats.largest), (4, 1, l));
        assert_eq!(stats.peak, 2 * s, "never more than two small shards at once");
        store.insert(key(2, 1), small.clone());
        store.release(1);
        assert_eq!(store.stats().shards, 1, "training 2's shard stays");
        store.set_budget(0);
        assert_eq!(store.stats().shards, 0);
        assert!(!store.insert(key(3, 1), small));
    }
}
