//! The key of one node of one tree of a forest in training: what a small
//! node's records carry, what the finishing jobs group by, and what the
//! grafted subtrees answer to.

use std::cmp::Ordering;
use std::fmt;

/// Node `node` of tree `tree`, packed into one `u64` so that it travels
/// through SQL as one unsigned integer column: the node in the low 32
/// bits, the tree in the next 24, and in the top 8 a route, which only
/// chooses the task a finishing job groups the node in
/// ([`NodeKey::routed`]). Keys sort by tree, then node, then route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeKey(u64);

impl NodeKey {
    /// Trees a key can name: level-wise forests grow no more.
    pub const MAX_TREES: usize = 1 << 24;

    /// Routes a key can take.
    pub const ROUTES: usize = 1 << 8;

    /// The key of node `node` of tree `tree` (below [`NodeKey::MAX_TREES`]),
    /// on route 0.
    pub fn new(tree: usize, node: u32) -> NodeKey {
        debug_assert!(tree < Self::MAX_TREES, "tree {tree} has no key");
        NodeKey((((tree as u64) & 0xFF_FFFF) << 32) | u64::from(node))
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
        ((self.0 >> 32) & 0xFF_FFFF) as usize
    }

    /// The node's index in its tree.
    pub fn node(self) -> u32 {
        self.0 as u32
    }

    /// The same node on route `route`: a different value to hash, so that
    /// the driver can choose which task of a finishing job grows it.
    pub fn routed(self, route: u8) -> NodeKey {
        NodeKey((self.0 & !(0xFF << 56)) | (u64::from(route) << 56))
    }

    /// The key's route ([`NodeKey::routed`]).
    pub fn route(self) -> u8 {
        (self.0 >> 56) as u8
    }
}

impl Ord for NodeKey {
    fn cmp(&self, other: &NodeKey) -> Ordering {
        let (mine, theirs) = (self.0 & !(0xFF << 56), other.0 & !(0xFF << 56));
        mine.cmp(&theirs).then(self.route().cmp(&other.route()))
    }
}

impl PartialOrd for NodeKey {
    fn partial_cmp(&self, other: &NodeKey) -> Option<Ordering> {
        Some(self.cmp(other))
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
        assert_eq!((key.tree(), key.node(), key.route()), (7, u32::MAX, 0));
        assert_eq!(NodeKey::from_bits(key.bits()), key);
        assert!(NodeKey::new(1, 0) > NodeKey::new(0, u32::MAX));
        assert_eq!(key.to_string(), format!("node {} of tree 7", u32::MAX));
        let last = NodeKey::new(NodeKey::MAX_TREES - 1, 3);
        assert_eq!((last.tree(), last.node()), (NodeKey::MAX_TREES - 1, 3));
    }

    #[test]
    fn a_route_changes_the_bits_but_not_the_node_or_its_order() {
        let key = NodeKey::new(5, 9);
        let routed = key.routed(200);
        assert_ne!(routed.bits(), key.bits());
        assert_eq!((routed.tree(), routed.node(), routed.route()), (5, 9, 200));
        assert_eq!(routed.routed(0), key);
        // A later node sorts later whatever the routes.
        assert!(NodeKey::new(5, 8).routed(255) < routed);
        assert!(NodeKey::new(4, 9).routed(255) < NodeKey::new(5, 0));
        assert!(key < routed);
    }
}
