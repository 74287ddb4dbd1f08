//! The order a tree's nodes split in: depth-first (subtrees grown apart in
//! parallel, then adopted) or best-first.

use rand::Rng;

use super::{Buffers, Evaluated, Grower, Growing, Pending};
use crate::model::tree::Node;

impl<'a, 't, R: Rng + Send> Grower<'a, 't, R> {
    /// Depth-first (`docs/algorithms.md`, "Tree building strategies"): split each node as it is reached, left
    /// subtree first. Subtrees grown apart in parallel are numbered as if grown
    /// in this order, so the tree does not depend on the threads.
    pub(super) fn depth_first(&mut self, root: Pending) {
        let mut stack = vec![root];
        while let Some(p) = stack.pop() {
            let e = self.evaluate(p);
            match e.best {
                Some((f, split)) => {
                    let rows = e.pending.end - e.pending.start;
                    let (left, right) = self.split(e.pending, f, split, e.hist);
                    if self.data.all_features && rows >= self.data.settings.fork_min_rows {
                        self.grow_apart(left, right);
                    } else {
                        stack.push(right);
                        stack.push(left);
                    }
                }
                None => self.leaf(&e.pending),
            }
        }
    }

    /// Grows the subtrees under two sibling nodes in parallel, each in a
    /// grower of its own over its part of the rows, then adopts the left
    /// one's nodes, then the right's.
    pub(super) fn grow_apart(&mut self, left: Pending, right: Pending) {
        let rows = std::mem::take(&mut self.rows);
        let scratch = std::mem::take(&mut self.scratch);
        let (l_rows, r_rows) = rows[left.start..right.end].split_at_mut(left.end - left.start);
        let (l_scratch, r_scratch) = scratch[left.start..right.end].split_at_mut(left.end - left.start);
        let (mut l, mut r) = (self.subtree(l_rows, l_scratch), self.subtree(r_rows, r_scratch));
        let (l_at, r_at) = ((left.node, left.start), (right.node, right.start));
        rayon::join(|| l.depth_first(left.rebased()), || r.depth_first(right.rebased()));
        self.adopt(l, l_at);
        self.adopt(r, r_at);
        self.rows = rows;
        self.scratch = scratch;
    }

    /// An empty grower for a subtree over `rows`.
    pub(super) fn subtree<'s>(&self, rows: &'s mut [u32], scratch: &'s mut [u32]) -> Grower<'s, 't, R>
    where
        'a: 's,
    {
        Grower {
            data: self.data,
            buffers: Buffers::new(self.buffers.layout.clone()),
            tree: Growing::new(),
            rng: None,
            records: None,
            scratch,
            rows,
        }
    }

    /// Takes a subtree's nodes, values, leaves and gains in: its root becomes
    /// node `node`, its rows start at `start`, its other nodes follow this
    /// grower's.
    pub(super) fn adopt(&mut self, sub: Grower<'_, 't, R>, (node, start): (usize, usize)) {
        let base = self.tree.nodes.len() as u32 - 1;
        let value_base = self.tree.values.len() as u32;
        let index = |i: u32| if i == 0 { node as u32 } else { base + i };
        for (i, n) in sub.tree.nodes.into_iter().enumerate() {
            let n = match n {
                Node::Leaf { value } => Node::Leaf { value: value + value_base },
                Node::Split { feature, test, default_left, left, right } => {
                    Node::Split { feature, test, default_left, left: index(left), right: index(right) }
                }
            };
            if i == 0 {
                self.tree.nodes[node] = n;
            } else {
                self.tree.nodes.push(n);
            }
        }
        self.tree.values.extend(sub.tree.values);
        self.tree.cover[node] = sub.tree.cover[0];
        self.tree.cover.extend_from_slice(&sub.tree.cover[1..]);
        let shift = |r: std::ops::Range<usize>| r.start + start..r.end + start;
        self.tree
            .leaves
            .extend(sub.tree.leaves.into_iter().map(|(offset, r)| (offset + value_base as usize, shift(r))));
        self.tree.gains.extend(sub.tree.gains);
    }

    /// Best-first (`docs/algorithms.md`, "Tree building strategies"): always split the waiting node whose
    /// split improves impurity most (`Δi·|D_t|`), until `max_leaves` leaves.
    pub(super) fn best_first(&mut self, root: Pending, max_leaves: usize) {
        // Waiting nodes drop their histograms: thousands of them could each
        // hold every feature's; their children build their own instead.
        let evaluate = |grower: &mut Self, p: Pending| Evaluated { hist: None, ..grower.evaluate(p) };
        let mut waiting = vec![evaluate(self, root)];
        while waiting.len() < max_leaves {
            // The largest gain; on a tie, the node created first (the lower index).
            let mut pick: Option<(usize, f64, usize)> = None;
            for (i, e) in waiting.iter().enumerate() {
                if let Some((_, split)) = &e.best {
                    let node = e.pending.node;
                    let merit = split.merit();
                    if pick.is_none_or(|(_, best, first)| merit > best || merit == best && node < first) {
                        pick = Some((i, merit, node));
                    }
                }
            }
            let Some((i, _, _)) = pick else { break };
            let e = waiting.swap_remove(i);
            let (f, split) = e.best.expect("picked for its split");
            let (left, right) = self.split(e.pending, f, split, e.hist);
            let left = evaluate(self, left);
            let right = evaluate(self, right);
            waiting.push(left);
            waiting.push(right);
        }
        waiting.sort_by_key(|e| e.pending.node);
        for e in waiting {
            self.leaf(&e.pending);
        }
    }
}
