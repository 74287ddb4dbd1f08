//! Leaf pattern tables: TreeSHAP with the path work done once per tree
//! instead of once per row (the idea of Fast TreeSHAP v2, Yang 2021).
//!
//! What a leaf adds to a row's contributions depends on the row only
//! through which of the distinct features on the leaf's path the row
//! agrees with (takes every branch of), a pattern of `d` bits for `d`
//! features. A tree of shallow leaves has few patterns, so each leaf's
//! contributions for every pattern are computed ahead, with the same path
//! arithmetic as the walk ([`super::tree_shap`]); a row then walks the tree
//! once, carrying its pattern, and at each leaf adds `d` values from the
//! table: `d` additions per leaf where the walk does about `d²` operations.
//! A tree gets tables when they fit [`MAX_TABLE_VALUES`] and building them
//! costs less than walking the rows to explain.

use rayon::prelude::*;

use crate::explain::tree_shap::{extend, unwound_sum, ShapTree, Step, LEAF};

/// The most table values one tree may hold (64 MiB of f64; one tree's
/// tables exist at a time).
const MAX_TABLE_VALUES: usize = 1 << 23;
/// The most distinct features a leaf's path may test for tables to be built.
const MAX_PATH_FEATURES: usize = 20;

/// One leaf's table.
#[derive(Debug)]
struct PatternLeaf {
    /// The distinct features on the leaf's path, in the order they first appear.
    features: Vec<u32>,
    /// Where its values start: `2^d` patterns of `d` features of `width` values.
    offset: usize,
}

/// A tree's leaf tables.
#[derive(Debug)]
pub(crate) struct LeafPatterns {
    /// Per node, the index of its leaf table (leaves only).
    slot: Vec<u32>,
    leaves: Vec<PatternLeaf>,
    /// Per leaf, pattern and feature, the `width` contributions the leaf adds.
    values: Vec<f64>,
}

impl LeafPatterns {
    /// The tables of `tree` when they fit and cost less than explaining
    /// `n_rows` rows by walking the paths; `None` otherwise.
    pub(crate) fn new(tree: &ShapTree, n_rows: usize) -> Option<LeafPatterns> {
        // Each leaf's distinct features with their shares of the training weight.
        let mut paths: Vec<(usize, Vec<(u32, f64)>)> = Vec::new();
        let mut stack = vec![(0usize, Vec::new())];
        while let Some((node, path)) = stack.pop() {
            let n = tree.nodes[node];
            if n.feature == LEAF {
                paths.push((node, path));
                continue;
            }
            if path.len() >= MAX_PATH_FEATURES {
                return None;
            }
            for (child, share) in [(n.left, n.left_share), (n.right, n.right_share)] {
                let mut path = path.clone();
                match path.iter_mut().find(|(f, _)| *f == n.feature) {
                    Some((_, zero)) => *zero *= share,
                    None => path.push((n.feature, share)),
                }
                stack.push((child as usize, path));
            }
        }
        let width = tree.width;
        let table: usize = paths.iter().map(|(_, p)| (p.len() << p.len()) * width).sum();
        let squares = |p: &Vec<(u32, f64)>| (p.len() + 1) * (p.len() + 1);
        let build: usize = paths.iter().map(|(_, p)| squares(p) << p.len()).sum();
        let walk: usize = paths.iter().map(|(_, p)| squares(p)).sum::<usize>().saturating_mul(n_rows);
        if table > MAX_TABLE_VALUES || build > walk {
            return None;
        }
        let longest = paths.iter().map(|(_, p)| p.len()).max().unwrap_or(0);
        let inverse = super::tree_shap::reciprocals(longest + 2);
        let mut slot = vec![u32::MAX; tree.nodes.len()];
        let mut leaves = Vec::with_capacity(paths.len());
        let mut values = vec![0.0; table];
        // Each leaf's part of the table, filled in parallel.
        let mut parts = Vec::with_capacity(paths.len());
        let (mut rest, mut offset) = (values.as_mut_slice(), 0);
        for (node, path) in &paths {
            let size = (path.len() << path.len()) * width;
            let (part, tail) = rest.split_at_mut(size);
            rest = tail;
            slot[*node] = leaves.len() as u32;
            leaves.push(PatternLeaf { features: path.iter().map(|&(f, _)| f).collect(), offset });
            offset += size;
            let leaf = tree.nodes[*node].left as usize;
            parts.push((path, &tree.values[leaf..leaf + width], part));
        }
        parts.into_par_iter().for_each(|(path, leaf_values, part)| fill(path, leaf_values, part, &inverse));
        Some(LeafPatterns { slot, leaves, values })
    }

    /// Adds the row `x`'s contributions through `tree` (whose tables these
    /// are) into `phi`, as [`ShapTree::explain`] does.
    pub(crate) fn explain(&self, tree: &ShapTree, x: &[f64], phi: &mut [f64], stride: usize) {
        let mut features = [0u32; MAX_PATH_FEATURES];
        let mut row = Row { tree, x, phi, stride };
        self.visit(&mut row, 0, 0, (&mut features, 0));
    }

    /// Visits `node` with the row's agreement so far: bit `i` of `pattern`
    /// set when the row took every branch on `features[i]`, of the `d`
    /// distinct features met.
    fn visit(
        &self,
        row: &mut Row<'_>,
        node: usize,
        pattern: usize,
        (features, d): (&mut [u32; MAX_PATH_FEATURES], usize),
    ) {
        let n = row.tree.nodes[node];
        if n.feature == LEAF {
            let leaf = &self.leaves[self.slot[node] as usize];
            let width = row.tree.width;
            let at = leaf.offset + pattern * d * width;
            let values = &self.values[at..at + d * width];
            for (&feature, values) in leaf.features.iter().zip(values.chunks_exact(width)) {
                for (k, v) in values.iter().enumerate() {
                    row.phi[k * row.stride + feature as usize] += v;
                }
            }
            return;
        }
        let (i, d, agreed) = match features[..d].iter().position(|&f| f == n.feature) {
            Some(i) => (i, d, pattern >> i & 1),
            None => {
                features[d] = n.feature;
                (d, d + 1, 1)
            }
        };
        let (hot, cold) = if row.tree.goes_left(&n, row.x) { (n.left, n.right) } else { (n.right, n.left) };
        let without = pattern & !(1 << i);
        self.visit(row, hot as usize, without | agreed << i, (features, d));
        self.visit(row, cold as usize, without, (features, d));
    }
}

/// Fills one leaf's table, `out`: for every pattern of agreement with the
/// distinct features of its `path` (feature, share of the training weight),
/// what the leaf (of `leaf_values`) adds to each feature's contributions.
fn fill(path: &[(u32, f64)], leaf_values: &[f64], out: &mut [f64], inverse: &[f64]) {
    let d = path.len();
    let width = leaf_values.len();
    let mut steps = vec![Step::default(); d + 1];
    for (pattern, out) in out.chunks_exact_mut((d * width).max(1)).enumerate() {
        let one = |i: usize| (pattern >> i & 1) as f64;
        // A feature neither the row nor any training weight takes there
        // zeroes every subset's weight: the leaf adds nothing.
        if path.iter().enumerate().any(|(i, &(_, zero))| zero == 0.0 && one(i) == 0.0) {
            continue;
        }
        extend(&mut steps[..1], 1.0, 1.0, LEAF, inverse);
        for (i, &(feature, zero)) in path.iter().enumerate() {
            extend(&mut steps[..i + 2], zero, one(i), feature, inverse);
        }
        for (i, &(_, zero)) in path.iter().enumerate() {
            let scale = unwound_sum(&steps, i + 1, inverse) * (one(i) - zero);
            for (k, v) in leaf_values.iter().enumerate() {
                out[i * width + k] = scale * v;
            }
        }
    }
}

/// The row a walk explains, and where its contributions go.
struct Row<'a> {
    tree: &'a ShapTree,
    x: &'a [f64],
    phi: &'a mut [f64],
    /// Values per output in `phi`.
    stride: usize,
}
