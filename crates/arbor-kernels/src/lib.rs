//! Histogram, split-scan and partition kernels for arbor's tree training, and
//! the batched tree traversal of prediction.
//!
//! Every hot loop of training lives here, behind one runtime-dispatch seam
//! ([`dispatch`]): kernels are [`pulp::WithSimd`] values, so `pulp::Arch`
//! compiles them for each instruction set and picks the best one the CPU has.
//! The crate knows bins, rows and statistics, not trees.
//!
//! ```
//! use arbor_kernels::{best_split, build_histogram, Criterion, SplitConstraints, SplitRule, Target};
//! use arbor_quantize::BinColumn;
//!
//! // four rows in bins 1,1,2,2 with classes 0,0,1,1: the split "bin <= 1" is pure
//! let bins = BinColumn::U8(vec![1, 1, 2, 2]);
//! let target = Target::Classes { labels: &[0, 0, 1, 1], n_classes: 2 };
//! let weights = [1.0; 4];
//! let mut hist = vec![0.0; 3 * target.stride()];
//! build_histogram(&bins, &[0, 1, 2, 3], &weights, &weights, &target, &mut hist);
//! let split = best_split(&hist, target.stride(), Criterion::Gini, &SplitConstraints::default(), false).unwrap();
//! assert!(matches!(split.rule, SplitRule::Threshold { bin: 1, .. }));
//! assert_eq!(split.gain, 2.0); // Δ(Gini) · W = 0.5 · 4
//! ```

mod count_histogram;
pub mod dispatch;
#[cfg(target_arch = "x86_64")]
mod gather_levels;
#[cfg(target_arch = "x86_64")]
mod gather_walk;
mod histogram;
mod logistic;
mod partition;
mod random_split;
mod ranked_traversal;
mod row_histogram;
mod row_records;
mod split;
mod threshold_rank;
mod traversal;
pub mod value_records;

pub use count_histogram::{count_key, count_keys, keys_fit, CountKey, RecordSums, MAX_COUNT_CLASSES};
pub use histogram::{build_histogram, build_histogram_packed, CompactHistogram, Target};
pub use logistic::{exp, logistic_derivatives, logistic_derivatives_into, sigmoid};
pub use partition::{partition_row_bins, partition_rows};
pub use random_split::{random_split, NodeRows, RandomSplit};
pub use ranked_traversal::{ranked_leaves_block, RankNode, RankedTree};
pub use row_histogram::{build_row_histograms, RowBins, RowStats};
pub use row_records::{partition_records, record_bin_range, records_constant, RowRecords, MAX_RECORD_WIDTH};
pub use split::{
    best_split, best_split_above, child_size, count_weight, node_score, occupied_bins, Criterion, SplitCandidate,
    SplitConstraints, SplitRule, Stats, UNCHARGED_DEGREES,
};
pub use threshold_rank::{threshold_rank, threshold_ranks};
pub use traversal::{leaves_block, FlatNode, TreeNodes, LEVEL_BY_LEVEL_MAX_DEPTH, TRAVERSAL_BLOCK};
pub use value_records::{
    build_value_histogram_records, value_records_variance_until, variance_until, ValueRecordSums, VALUE_TAIL,
};
