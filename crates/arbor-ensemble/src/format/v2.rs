//! The format 2 section layout, read only: five counts, then plain arrays
//! with no tables (see [`super::columns`]).

use crate::format::columns::{count_flags, f64_at, u32s, u64_at, Columns, Indices, Reader};

impl<'a> Columns<'a> {
    /// A format 2 section.
    pub(crate) fn read_v2(section: &'a [u8]) -> Result<Columns<'a>, String> {
        let mut reader = Reader(section);
        let mut counts = [0usize; 5];
        for count in &mut counts {
            *count = reader.u32()? as usize;
        }
        let [n, n_thresholds, n_sets, n_set_words, n_values] = counts;
        let flags = reader.take(n)?;
        let (n_splits, n_categories) = count_flags(flags)?;
        let columns = Columns {
            flags,
            words: Indices::new(reader.array(n, 4)?, 4),
            children: Indices::new(reader.array(n_splits, 8)?, 4),
            pairs: true,
            set_lens: u32s(reader.array(n_sets, 4)?).collect(),
            distinct: reader.array(n_thresholds, 8)?.chunks_exact(8).map(f64_at).collect(),
            threshold_at: None,
            set_words: reader.array(n_set_words, 8)?.chunks_exact(8).map(u64_at).collect(),
            groups: reader.array(n_values, 8)?.chunks_exact(8).map(f64_at).collect(),
            group: 1,
            group_at: None,
        };
        reader.finish("after the leaf values")?;
        if n_splits - n_categories != n_thresholds {
            return Err("more or fewer thresholds than its nodes use".into());
        }
        columns.check_sets(n_sets, n_categories)?;
        Ok(columns)
    }
}
