//! One tree as Graphviz DOT, for people: split nodes show the feature name
//! and test, edges say where passing rows and missing values go, leaves show
//! their values with class names.

use std::fmt::Write;

use arbor_quantize::BinMapper;

use crate::model::tree::{Node, SplitTest};
use crate::model::Model;
use crate::{ArborError, Result};

/// Escapes text for a double-quoted DOT string.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

impl Model {
    /// Tree `index` as a Graphviz `digraph` (render with `dot -Tsvg`).
    pub fn tree_dot(&self, index: usize) -> Result<String> {
        let tree = self.trees.get(index).ok_or_else(|| {
            ArborError::Data(format!(
                "tree {index} does not exist: the model has {} trees, numbered from 0",
                self.trees.len()
            ))
        })?;
        let mut out = String::new();
        let _ = writeln!(out, "digraph tree_{index} {{");
        let _ = writeln!(out, "  node [shape=box, style=rounded, fontname=\"Helvetica\"];");
        let _ = writeln!(out, "  edge [fontname=\"Helvetica\"];");
        for (i, node) in tree.nodes.iter().enumerate() {
            match node {
                Node::Split { feature, test, default_left, left, right } => {
                    let feature = &self.features[*feature as usize];
                    let label = format!("{} {}", feature.name, self.test_text(test, &feature.mapper));
                    let _ = writeln!(out, "  n{i} [label=\"{}\"];", escape(&label));
                    let (yes, no) = if *default_left { ("yes, missing", "no") } else { ("yes", "no, missing") };
                    let _ = writeln!(out, "  n{i} -> n{left} [label=\"{yes}\"];");
                    let _ = writeln!(out, "  n{i} -> n{right} [label=\"{no}\"];");
                }
                Node::Leaf { value } => {
                    let values = &tree.values[*value as usize..*value as usize + self.leaf_width()];
                    let label = self.leaf_text(index, values);
                    let _ = writeln!(
                        out,
                        "  n{i} [label=\"{}\", shape=ellipse, style=filled, fillcolor=\"#eeeeee\"];",
                        escape(&label)
                    );
                }
            }
        }
        out.push_str("}\n");
        Ok(out)
    }

    /// The test of a split as text: `<= 2.5`, `in {AA, UA}`, `in codes {0, 3}`.
    pub(crate) fn test_text(&self, test: &SplitTest, mapper: &BinMapper) -> String {
        match test {
            SplitTest::LessOrEqual(t) => format!("<= {t}"),
            SplitTest::ZeroAsMissing { threshold, zero_left } => {
                format!("<= {threshold} (zero goes {})", if *zero_left { "left" } else { "right" })
            }
            SplitTest::InCategories(words) => {
                let members = words
                    .iter()
                    .enumerate()
                    .flat_map(|(w, word)| (0..64).filter(move |b| word >> b & 1 == 1).map(move |b| w * 64 + b));
                match mapper {
                    BinMapper::Categorical { categories, .. } => {
                        let names: Vec<&str> =
                            members.filter_map(|bin| categories.get(bin.wrapping_sub(1))).map(String::as_str).collect();
                        format!("in {{{}}}", names.join(", "))
                    }
                    BinMapper::Numeric { .. } => {
                        let codes: Vec<String> = members.map(|c| c.to_string()).collect();
                        format!("in codes {{{}}}", codes.join(", "))
                    }
                }
            }
        }
    }

    /// A leaf's output: the value, the class distribution, or a boosted raw score.
    fn leaf_text(&self, tree: usize, values: &[f64]) -> String {
        let classes = self.class_names();
        match &self.boosting {
            Some(b) if b.outputs > 1 => {
                let class = classes.get(tree % b.outputs).map_or("?", String::as_str);
                format!("{}\n(score of class {class})", values[0])
            }
            Some(_) => format!("{}\n(raw score)", values[0]),
            None if classes.is_empty() => format!("{}", values[0]),
            None => classes.iter().zip(values).map(|(c, p)| format!("{c}: {p:.4}")).collect::<Vec<_>>().join("\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{BuilderFeature, Classes, ModelBuilder, Side, SplitTest, TreeBuilder};

    #[test]
    fn a_tree_renders_with_names_tests_and_leaves() {
        let features = vec![
            BuilderFeature::numeric("dep \"delay\""),
            BuilderFeature::categorical("carrier", vec!["AA".into(), "UA".into(), "WN".into()]),
        ];
        let classes = Classes::Str(vec!["late".into(), "on time".into()]);
        let mut builder = ModelBuilder::classification("label", classes, features).unwrap();
        let mut tree = TreeBuilder::new();
        let root = tree.add_split(None, 0, SplitTest::LessOrEqual(23.5), true).unwrap();
        let cat = tree.add_split(Some((root, Side::Right)), 1, SplitTest::InCategories(vec![0b1010]), false).unwrap();
        tree.add_leaf(Some((root, Side::Left)), &[0.25, 0.75]).unwrap();
        tree.add_leaf(Some((cat, Side::Left)), &[1.0, 0.0]).unwrap();
        tree.add_leaf(Some((cat, Side::Right)), &[0.5, 0.5]).unwrap();
        builder.add_tree(tree).unwrap();
        let model = builder.build().unwrap();
        let dot = model.tree_dot(0).unwrap();
        assert!(dot.starts_with("digraph tree_0 {"), "{dot}");
        assert!(dot.contains(r#"n0 [label="dep \"delay\" <= 23.5"];"#), "{dot}");
        assert!(dot.contains(r#"n0 -> n1 [label="yes, missing"];"#), "{dot}");
        assert!(dot.contains(r#"[label="carrier in {AA, WN}"];"#), "{dot}");
        assert!(dot.contains(r#"label="late: 0.2500\non time: 0.7500""#), "{dot}");
        assert!(dot.contains(r#"[label="no, missing"];"#), "{dot}");
        let e = model.tree_dot(1).unwrap_err().to_string();
        assert!(e.contains("tree 1 does not exist") && e.contains("1 trees"), "{e}");
    }
}
