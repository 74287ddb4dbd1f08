//! The format 3 section layout: counts, widths, then the arrays (see
//! [`super::columns`]).

use crate::format::columns::{check_indices, count_flags, f64_at, u32s, u64_at, Columns, Indices, Reader, SPLIT};

impl<'a> Columns<'a> {
    /// A format 3 section, whose trees have leaves `leaf_width` values wide.
    pub(crate) fn read(section: &'a [u8], leaf_width: usize) -> Result<Columns<'a>, String> {
        let mut reader = Reader(section);
        let mut counts = [0usize; 7];
        for count in &mut counts {
            *count = reader.u32()? as usize;
        }
        let [n, n_sets, n_set_words, n_thresholds, n_values, group, n_groups] = counts;
        let layout = reader.take(5)?;
        let widths = [layout[0], layout[1], layout[2], layout[3]].map(usize::from);
        if let Some(w) = widths.iter().find(|w| ![1, 2, 4].contains(*w)) {
            return Err(format!("an index {w} bytes wide"));
        }
        let per_split = usize::from(layout[4]);
        if per_split != 1 && per_split != 2 {
            return Err(format!("{per_split} children stored per split"));
        }
        // Expanded, the values may take at most what the tree's leaves use.
        if group == 0 || group != 1 && group != leaf_width || n_values % group != 0 {
            return Err(format!("{n_values} leaf values in runs of {group}, for leaves of {leaf_width}"));
        }
        let flags = reader.take(n)?;
        let (n_splits, n_categories) = count_flags(flags)?;
        let n_leaves = n - n_splits;
        if group > 1 && n_values > n_leaves * group {
            return Err(format!("{n_values} leaf values for {n_leaves} leaves"));
        }
        let words = Indices::new(reader.array(n, widths[0])?, widths[0]);
        let children = Indices::new(reader.array(n_splits * per_split, widths[1])?, widths[1]);
        let set_lens: Vec<u32> = u32s(reader.array(n_sets, 4)?).collect();
        let set_words = reader.array(n_set_words, 8)?.chunks_exact(8).map(u64_at).collect();
        let distinct: Vec<f64> = reader.array(n_thresholds, 8)?.chunks_exact(8).map(f64_at).collect();
        let threshold_at = Indices::new(reader.array(n_splits - n_categories, widths[2])?, widths[2]);
        check_indices(threshold_at, distinct.len(), "threshold")?;
        let groups: Vec<f64> = reader
            .array(n_groups.checked_mul(group).ok_or("a table length overflows")?, 8)?
            .chunks_exact(8)
            .map(f64_at)
            .collect();
        let group_at = Indices::new(reader.array(n_values / group, widths[3])?, widths[3]);
        check_indices(group_at, n_groups, "leaf values")?;
        reader.finish("after the leaf values")?;
        if group > 1 {
            // Leaves and splits alternate unpredictably: no branch per node.
            let last_run = words.iter().zip(flags).map(|(w, &f)| if f & SPLIT == 0 { w } else { 0 }).max();
            if u64::from(last_run.unwrap_or(0)) * group as u64 > u64::from(u32::MAX) {
                return Err("a leaf's value offset overflows".into());
            }
        }
        let columns = Columns {
            flags,
            words,
            children,
            pairs: per_split == 2,
            set_lens,
            set_words,
            distinct,
            threshold_at: Some(threshold_at),
            groups,
            group,
            group_at: Some(group_at),
        };
        columns.check_sets(n_sets, n_categories)?;
        Ok(columns)
    }
}
