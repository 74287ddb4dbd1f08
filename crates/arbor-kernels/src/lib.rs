//! Histogram, split-scan and partition kernels for arbor's tree training, and
//! the batched tree traversal of prediction.
//!
//! Every hot loop of training lives here, behind one runtime-dispatch seam
//! ([`dispatch`]): kernels are [`pulp::WithSimd`] values, so `pulp::Arch`
//! compiles them for each instruction set and picks the best one the CPU has.
//! The crate knows bins, rows and statistics, not trees.
//!
//! ```
//! use arbor_kernels::{best_split, build_histogram, Criterion, HistogramTarget, SplitConstraints, SplitRule};
//! use arbor_quantize::BinColumn;
//!
//! // four rows in bins 1,1,2,2 with classes 0,0,1,1: the split "bin <= 1" is pure
//! let bins = BinColumn::U8(vec![1, 1, 2, 2]);
//! let target = HistogramTarget::Classes { labels: &[0, 0, 1, 1], n_classes: 2 };
//! let weights = [1.0; 4];
//! let mut hist = vec![0.0; 3 * target.stride()];
//! build_histogram(&bins, &[0, 1, 2, 3], &weights, &weights, &target, &mut hist);
//! let split = best_split(&hist, target.stride(), Criterion::Gini, &SplitConstraints::default(), false).unwrap();
//! assert!(matches!(split.rule, SplitRule::Threshold { bin: 1, .. }));
//! assert_eq!(split.gain, 2.0); // Δ(Gini) · W = 0.5 · 4
//! ```

pub mod dispatch;
mod histogram;
mod logistic;
mod partition;
mod records;
mod split;
mod traverse;

pub use histogram::column::{build_histogram, build_histogram_packed};
pub use histogram::compact::CompactHistogram;
pub use histogram::count::{count_keys, keys_fit, RecordSums};
pub use histogram::quantized::{build_row_histograms_quantized, QuantizedScales, QuantizedStats};
pub use histogram::row::{build_row_histograms, RowBins};
pub use histogram::target::{HistogramTarget, RowStats};
pub use histogram::value::{build_value_histogram_records, ValueRecordSums};
pub use logistic::{exp, logistic_derivatives, logistic_derivatives_into, sigmoid};
pub use partition::records::partition_records;
pub use partition::rows::{partition_row_bins, partition_rows};
pub use records::bin_range::{record_bin_range, records_constant};
pub use records::byte_layout::{RowRecords, MAX_RECORD_WIDTH, VALUE_TAIL};
pub use records::count_key::{count_key, CountKey, MAX_COUNT_CLASSES};
pub use records::variance::{value_records_variance_until, variance_until};
pub use split::absolute_error::{MedianScan, MedianSplit};
pub use split::best::{best_split, best_split_above, best_split_plain, occupied_bins};
pub use split::candidate::{SplitCandidate, SplitConstraints, Stats, UNCHARGED_DEGREES};
pub use split::criterion::{child_size, count_weight, node_score, Criterion};
pub use split::monotone::{node_value, Monotone};
pub use split::random::{random_split, NodeRows, RandomSplit};
pub use split::rule::SplitRule;
pub use traverse::flat::leaves_block;
pub use traverse::nodes::{FlatNode, RankNode, RankedTree, TreeNodes, LEVEL_BY_LEVEL_MAX_DEPTH, TRAVERSAL_BLOCK};
pub use traverse::quick_scorer::QuickScorer;
pub use traverse::ranked::ranked_leaves_block;
pub use traverse::threshold_rank::{threshold_rank, threshold_ranks};
