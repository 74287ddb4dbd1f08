//! Round trips and corruptions of the tree columns, both formats.

use arbor_quantize::{BinMapper, FeatureType};

use crate::format::columns::SPLIT;
use crate::format::encode::encode;
use crate::format::payload::Payload;
use crate::format::read::read;
use crate::model::feature::Feature;
use crate::model::tree::{Node, SplitTest, Tree};
use crate::model::trees::Trees;

/// A tree with every kind of split, leaves two values wide.
pub(crate) fn tree() -> Tree {
    Tree {
        nodes: vec![
            Node::Split { feature: 2, test: SplitTest::LessOrEqual(1.5), default_left: true, left: 1, right: 2 },
            Node::Split {
                feature: 0,
                test: SplitTest::InCategories(vec![0b1010, 1 << 63]),
                default_left: false,
                left: 3,
                right: 4,
            },
            Node::Split {
                feature: 1,
                test: SplitTest::ZeroAsMissing { threshold: -0.25, zero_left: true },
                default_left: false,
                left: 5,
                right: 6,
            },
            Node::Leaf { value: 0 },
            Node::Leaf { value: 2 },
            Node::Leaf { value: 4 },
            Node::Leaf { value: 6 },
        ],
        values: vec![0.5, 0.5, 1.0, 0.0, 0.25, 0.75, f64::MIN_POSITIVE, 1.0],
    }
}

/// Three numeric features (a numeric feature may hold category codes).
fn features() -> Vec<Feature> {
    (0..3)
        .map(|i| Feature {
            name: format!("x{i}"),
            data_type: "Float64".into(),
            kind: FeatureType::Numeric,
            mapper: BinMapper::Numeric { edges: vec![0.0] },
        })
        .collect()
}

/// The encoding of `trees`, leaves two values wide.
fn encoded(trees: &[Tree]) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode(trees, 2, &mut bytes);
    bytes
}

/// Reads `bytes`, which must hold the trees exactly.
fn decode(bytes: &[u8]) -> Result<Trees, String> {
    let mut payload = Payload::unframed(bytes, bytes.len() as u64);
    let trees = read(&mut payload, 3, &features(), 2)?;
    match payload.remaining() {
        0 => Ok(trees),
        extra => Err(format!("{extra} unexpected bytes")),
    }
}

#[test]
fn every_kind_of_node_round_trips() {
    let trees = vec![tree(), Tree { nodes: vec![Node::Leaf { value: 0 }], values: vec![3.0, 3.0] }];
    let bytes = encoded(&trees);
    let decoded = decode(&bytes).unwrap();
    assert!(decoded.lists_if_built().is_none(), "adjacent siblings decode into the flat layout");
    assert_eq!(decoded.flat()[0].depth, 2);
    assert_eq!(*decoded, trees);
}

#[test]
fn trees_with_siblings_apart_decode_into_node_lists() {
    // the root's children swapped: right before left
    let mut apart = tree();
    apart.nodes[0] =
        Node::Split { feature: 2, test: SplitTest::LessOrEqual(1.5), default_left: true, left: 2, right: 1 };
    let bytes = encoded(&[apart.clone()]);
    let decoded = decode(&bytes).unwrap();
    assert!(decoded.lists_if_built().is_some());
    assert_eq!(*decoded, [apart]);
}

#[test]
fn flat_trees_are_checked_as_they_decode() {
    let corrupt = |edit: &dyn Fn(&mut Tree)| {
        let mut t = tree();
        edit(&mut t);
        let bytes = encoded(&[t]);
        decode(&bytes).unwrap_err()
    };
    let e = corrupt(&|t| {
        t.nodes[0] =
            Node::Split { feature: 7, test: SplitTest::LessOrEqual(1.5), default_left: true, left: 1, right: 2 }
    });
    assert!(e.contains("tests feature 7, but the model has 3"), "{e}");
    let e = corrupt(&|t| t.nodes[6] = Node::Leaf { value: 7 });
    assert!(e.contains("leaf 6 points past"), "{e}");
    let e = corrupt(&|t| {
        t.nodes[2] =
            Node::Split { feature: 1, test: SplitTest::LessOrEqual(f64::NAN), default_left: false, left: 5, right: 6 }
    });
    assert!(e.contains("NaN threshold"), "{e}");
    let e = corrupt(&|t| {
        t.nodes[2] =
            Node::Split { feature: 1, test: SplitTest::LessOrEqual(0.0), default_left: false, left: 3, right: 4 }
    });
    assert!(e.contains("2 parents"), "{e}");
    let e = corrupt(&|t| {
        t.nodes[2] =
            Node::Split { feature: 1, test: SplitTest::LessOrEqual(0.0), default_left: false, left: 1, right: 2 }
    });
    assert!(e.contains("invalid child"), "{e}");
}

/// A comb of `splits` splits on feature `f % 3`: each split's left child
/// is a leaf, its right child the next split; thresholds cycle through
/// `distinct` values, leaf outputs through `outputs` pairs.
fn comb(splits: usize, distinct: usize, outputs: usize) -> Tree {
    let mut nodes = Vec::with_capacity(2 * splits + 1);
    let mut values = Vec::new();
    for s in 0..splits {
        let at = nodes.len() as u32;
        let test = SplitTest::LessOrEqual((s % distinct) as f64 * 0.25);
        nodes.push(Node::Split {
            feature: (s % 3) as u32,
            test,
            default_left: s % 2 == 0,
            left: at + 1,
            right: at + 2,
        });
        nodes.push(Node::Leaf { value: values.len() as u32 });
        values.extend([(s % outputs) as f64, 1.0 / (1 + s % outputs) as f64]);
    }
    nodes.push(Node::Leaf { value: values.len() as u32 });
    values.extend([-1.0, -2.0]);
    Tree { nodes, values }
}

/// The layout bytes of the first tree of `bytes`: its 7 counts and 5 widths.
fn layout(bytes: &[u8]) -> ([u32; 7], [u8; 5]) {
    let counts = std::array::from_fn(|i| u32::from_le_bytes(bytes[16 + 4 * i..20 + 4 * i].try_into().unwrap()));
    (counts, bytes[44..49].try_into().unwrap())
}

#[test]
fn repeated_thresholds_and_outputs_are_stored_once() {
    let tree = comb(1000, 7, 5);
    let bytes = encoded(std::slice::from_ref(&tree));
    let (counts, widths) = layout(&bytes);
    assert_eq!(counts, [2001, 0, 0, 7, 2002, 2, 6], "7 thresholds, 5 leaf pairs and the last leaf's");
    assert_eq!(widths, [2, 2, 1, 1, 1], "2001 nodes need 2-byte words and children");
    let decoded = decode(&bytes).unwrap();
    assert!(decoded.lists_if_built().is_none());
    assert_eq!(*decoded, [tree]);
}

#[test]
fn large_trees_take_wide_indices() {
    // 70 000 splits: children past 65 535, as many distinct thresholds and outputs
    let tree = comb(70_000, 70_000, 70_000);
    let bytes = encoded(std::slice::from_ref(&tree));
    let (counts, widths) = layout(&bytes);
    assert_eq!(counts[3], 70_000);
    assert_eq!(widths, [4, 4, 4, 4, 1]);
    assert_eq!(*decode(&bytes).unwrap(), [tree]);
}

#[test]
fn leaves_off_the_leaf_width_store_values_one_by_one() {
    // the first leaf's output starts at 1, not a multiple of the width 2
    let mut t = tree();
    t.values.insert(0, 9.0);
    for node in &mut t.nodes {
        if let Node::Leaf { value } = node {
            *value += 1;
        }
    }
    let bytes = encoded(std::slice::from_ref(&t));
    assert_eq!(layout(&bytes).0[5], 1, "values in runs of 1");
    assert_eq!(*decode(&bytes).unwrap(), [t]);
}

#[test]
fn indices_past_their_tables_are_errors() {
    let tree = comb(10, 3, 2);
    let bytes = encoded(std::slice::from_ref(&tree));
    // the last byte is the last value run's index, the one before it the one before
    let mut bad = bytes.clone();
    *bad.last_mut().unwrap() = 9;
    assert!(decode(&bad).unwrap_err().contains("leaf values 9 of 3"), "{:?}", decode(&bad));
    // a threshold index: the comb's 10 of them end before 3 distinct pairs of
    // leaf outputs (48 bytes) and 11 value indices
    let mut bad = bytes;
    let at = bad.len() - 11 - 48 - 1;
    bad[at] = 5;
    assert!(decode(&bad).unwrap_err().contains("threshold 5 of 3"), "{:?}", decode(&bad));
}

#[test]
fn every_truncation_and_extension_is_an_error() {
    let mut bytes = encoded(&[tree()]);
    for len in 0..bytes.len() {
        assert!(decode(&bytes[..len]).is_err(), "{len} of {} bytes decoded", bytes.len());
    }
    bytes.push(0);
    assert!(decode(&bytes).unwrap_err().contains("unexpected bytes"));
}

#[test]
fn unknown_flags_and_miscounted_arrays_are_errors() {
    let bytes = encoded(&[tree()]);
    let flags_at = 16 + 33;
    let mut bad = bytes.clone();
    bad[flags_at] |= 1 << 7;
    assert!(decode(&bad).unwrap_err().contains("unknown flags"), "{:?}", decode(&bad));
    // a leaf turned into a split wants children the section does not have
    let mut bad = bytes.clone();
    bad[flags_at + 3] = SPLIT;
    assert!(decode(&bad).is_err());
    // one distinct threshold fewer announced than the nodes use
    let mut bad = bytes.clone();
    bad[16 + 12] -= 1;
    assert!(decode(&bad).is_err());
    // an index width that is not 1, 2 or 4 bytes
    let mut bad = bytes.clone();
    bad[16 + 28] = 3;
    assert!(decode(&bad).unwrap_err().contains("3 bytes wide"));
    // leaf values in runs of a width other than 1 or the leaves', or of none
    for run in [3, 0] {
        let mut bad = bytes.clone();
        bad[16 + 20] = run;
        assert!(decode(&bad).unwrap_err().contains(&format!("in runs of {run}")));
    }
}
