//! A piece's rows grouped by the node each waits in, for one tree still
//! growing. A level then sums each node's rows as one run, so the node's
//! histograms stay in cache while its rows are added, and it never visits
//! the rows of a leaf or of a node whose sums are derived from its
//! sibling's. Kept in a shard between levels and advanced as the tree
//! grows: each row moves down from the node it waited in, not from the
//! root.

use crate::model::tree::{Node, Tree};

/// One growing tree's rows, grouped by the node they wait in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeRows {
    /// Row indices, node after node; within a node, in row order.
    order: Vec<u32>,
    /// `(node, start, end)`: node `node`'s rows are `order[start..end]`.
    runs: Vec<(u32, u32, u32)>,
}

impl NodeRows {
    /// `n_rows` rows, all at the root.
    pub(crate) fn new(n_rows: usize) -> NodeRows {
        NodeRows { order: (0..n_rows as u32).collect(), runs: vec![(0, 0, n_rows as u32)] }
    }

    /// Bytes held on the heap.
    pub(crate) fn heap_size(&self) -> usize {
        self.order.capacity() * 4 + self.runs.capacity() * 12
    }

    /// Regroups the rows of every node `tree` has split since, by the node
    /// each reaches now (`reach(node, row)`: the walk down from `node`).
    pub(crate) fn advance(&mut self, tree: &Tree, reach: impl Fn(usize, u32) -> usize) {
        let mut runs = Vec::with_capacity(self.runs.len() * 2);
        let (mut to, mut held) = (Vec::new(), Vec::new());
        for &(node, start, end) in &self.runs {
            if !matches!(tree.nodes[node as usize], Node::Split { .. }) {
                runs.push((node, start, end));
                continue;
            }
            let rows = &mut self.order[start as usize..end as usize];
            to.clear();
            to.extend(rows.iter().map(|&r| reach(node as usize, r) as u32));
            let mut nodes = to.clone();
            nodes.sort_unstable();
            nodes.dedup();
            held.clear();
            held.extend_from_slice(rows);
            let mut at = 0;
            for &child in &nodes {
                let from = at;
                for (&r, &t) in held.iter().zip(&to) {
                    if t == child {
                        rows[at] = r;
                        at += 1;
                    }
                }
                runs.push((child, start + from as u32, start + at as u32));
            }
        }
        self.runs = runs;
    }

    /// Each node's rows: `(node, rows)`, node by node.
    pub(crate) fn runs(&self) -> impl Iterator<Item = (usize, &[u32])> {
        self.runs.iter().map(|&(node, start, end)| (node as usize, &self.order[start as usize..end as usize]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tree::SplitTest;

    /// A tree splitting the root on x <= 5, then the left child on x <= 2.
    fn tree(levels: usize) -> Tree {
        let split = |threshold: f64, left: u32| Node::Split {
            feature: 0,
            test: SplitTest::LessOrEqual(threshold),
            default_left: true,
            left,
            right: left + 1,
        };
        let leaf = || Node::Leaf { value: 0 };
        let nodes = match levels {
            0 => vec![leaf()],
            1 => vec![split(5.0, 1), leaf(), leaf()],
            _ => vec![split(5.0, 1), split(2.0, 3), leaf(), leaf(), leaf()],
        };
        Tree { nodes, values: vec![0.0] }
    }

    /// Rows advanced level by level, or two levels at once, wait in the
    /// nodes a walk from the root reaches, each node's in row order.
    #[test]
    fn rows_advance_to_the_nodes_a_walk_from_the_root_reaches() {
        let x: Vec<f64> = (0..10).map(|i| ((i * 7) % 10) as f64).collect();
        let walk = |t: &Tree, start: usize, r: u32| t.node_reached_from(start, |_| x[r as usize]);
        let expected = |t: &Tree| {
            let mut by_node: Vec<(usize, Vec<u32>)> = Vec::new();
            for r in 0..10u32 {
                let node = walk(t, 0, r);
                match by_node.iter_mut().find(|(n, _)| *n == node) {
                    Some((_, rows)) => rows.push(r),
                    None => by_node.push((node, vec![r])),
                }
            }
            by_node.sort();
            by_node
        };
        let got = |rows: &NodeRows| {
            let mut runs: Vec<(usize, Vec<u32>)> =
                rows.runs().filter(|(_, r)| !r.is_empty()).map(|(n, r)| (n, r.to_vec())).collect();
            runs.sort();
            runs
        };
        let mut stepwise = NodeRows::new(10);
        for levels in 0..3 {
            let t = tree(levels);
            stepwise.advance(&t, |node, r| walk(&t, node, r));
            assert_eq!(got(&stepwise), expected(&t), "level {levels}");
        }
        let mut at_once = NodeRows::new(10);
        let t = tree(2);
        at_once.advance(&t, |node, r| walk(&t, node, r));
        assert_eq!(got(&at_once), expected(&t));
    }
}
