//! The key of one node of one tree of a forest in training: what a small
//! node's records carry, what the finishing jobs group by, and what the
//! grafted subtrees answer to.

use std::fmt;

/// Node `node` of tree `tree`, packed into one `u64` (tree in the high 32
/// bits, node in the low 32) so that keys sort by tree, then node, and
/// travel through SQL as one unsigned integer column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeKey(u64);

impl NodeKey {
    /// The key of node `node` of tree `tree`.
    pub fn new(tree: usize, node: u32) -> NodeKey {
        NodeKey(((tree as u64) << 32) | u64::from(node))
    }

    /// The key whose packed form is `bits` (as [`NodeKey::bits`] gave it).
    pub fn from_bits(bits: u64) -> NodeKey {
        NodeKey(bits)
    }

    /// The packed form, for a column or a hash.
    pub fn bits(self) -> u64 {
        self.0
    }

    /// The tree's index in the forest.
    pub fn tree(self) -> usize {
        (self.0 >> 32) as usize
    }

    /// The node's index in its tree.
    pub fn node(self) -> u32 {
        self.0 as u32
    }
}

impl fmt::Display for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {} of tree {}", self.node(), self.tree())
    }
}

#[cfg(test)]
mod tests {
    use super::NodeKey;

    #[test]
    fn a_key_gives_back_its_tree_and_node_and_sorts_by_tree_first() {
        let key = NodeKey::new(7, u32::MAX);
        assert_eq!((key.tree(), key.node()), (7, u32::MAX));
        assert_eq!(NodeKey::from_bits(key.bits()), key);
        assert!(NodeKey::new(1, 0) > NodeKey::new(0, u32::MAX));
        assert_eq!(key.to_string(), format!("node {} of tree 7", u32::MAX));
    }
}
