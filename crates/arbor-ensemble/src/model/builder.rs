//! Building a model by hand (`docs/algorithms.md`, "Model builder"):
//! create trees, add split and leaf nodes under their parents, and get a
//! [`Model`] that predicts, saves and loads like a trained one. Importers of
//! other libraries' models are built on it.
//!
//! ```
//! use arbor_ensemble::{BuilderFeature, Classes, ModelBuilder, Side, SplitTest, TreeBuilder};
//!
//! let features = vec![BuilderFeature::numeric("x")];
//! let mut builder = ModelBuilder::classification("label", Classes::Int(vec![0, 1]), features).unwrap();
//! let mut tree = TreeBuilder::new();
//! let root = tree.add_split(None, 0, SplitTest::LessOrEqual(0.5), true).unwrap();
//! tree.add_leaf(Some((root, Side::Left)), &[0.9, 0.1]).unwrap();
//! tree.add_leaf(Some((root, Side::Right)), &[0.2, 0.8]).unwrap();
//! builder.add_tree(tree).unwrap();
//! let model = builder.build().unwrap();
//! let p = model.score_columns(&[vec![0.0, 1.0]], 2).unwrap();
//! assert_eq!(p.class_index(), vec![0, 1]);
//! ```

use arbor_quantize::{BinMapper, FeatureType};

use crate::data::label::{Classes, LabelInfo};
use crate::model::feature::Feature;
use crate::model::node_cover::NodeCover;
use crate::model::tree::{Node, SplitTest, Tree};
use crate::model::trees::Trees;
use crate::model::{Boosting, Model};
use crate::{Algorithm, ArborError, Loss, Result, Task, Voting};

/// A feature of a hand-built model.
#[derive(Clone, Debug, PartialEq)]
pub struct BuilderFeature {
    name: String,
    categories: Option<Vec<String>>,
}

impl BuilderFeature {
    /// A numeric feature (any numeric or boolean column at prediction).
    pub fn numeric(name: impl Into<String>) -> BuilderFeature {
        BuilderFeature { name: name.into(), categories: None }
    }

    /// A categorical feature over string `categories`; category `i` is bit
    /// `i + 1` of an [`SplitTest::InCategories`] test (bit 0 is unused).
    pub fn categorical(name: impl Into<String>, categories: Vec<String>) -> BuilderFeature {
        BuilderFeature { name: name.into(), categories: Some(categories) }
    }
}

/// Which child of a split node a new node becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Where rows that pass the test go.
    Left,
    /// Where the others go.
    Right,
}

/// A node of a [`TreeBuilder`], returned when it is added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeId(usize);

#[derive(Clone, Debug)]
enum Draft {
    Split { feature: usize, test: SplitTest, default_left: bool, children: [Option<usize>; 2] },
    Leaf { values: Vec<f64> },
}

/// One tree under construction: nodes are added below their parent, in any order.
#[derive(Clone, Debug, Default)]
pub struct TreeBuilder {
    nodes: Vec<Draft>,
    /// Each node's cover, when given.
    covers: Vec<Option<f32>>,
}

fn builder_error(message: String) -> ArborError {
    ArborError::Model(format!("model builder: {message}"))
}

impl TreeBuilder {
    /// An empty tree.
    pub fn new() -> TreeBuilder {
        TreeBuilder::default()
    }

    /// Adds a split node testing `feature` (its index in the model's
    /// features); rows with a missing value go left when `default_left`.
    /// `parent` is `None` for the root.
    pub fn add_split(
        &mut self,
        parent: Option<(NodeId, Side)>,
        feature: usize,
        test: SplitTest,
        default_left: bool,
    ) -> Result<NodeId> {
        if test.threshold().is_some_and(f64::is_nan) {
            return Err(builder_error(format!("split on feature {feature} has a NaN threshold")));
        }
        self.add(parent, Draft::Split { feature, test, default_left, children: [None, None] })
    }

    /// Adds a leaf: the class probabilities (forest classification) or one
    /// value (regression, or a boosted tree's raw score).
    pub fn add_leaf(&mut self, parent: Option<(NodeId, Side)>, values: &[f64]) -> Result<NodeId> {
        if let Some(v) = values.iter().find(|v| !v.is_finite()) {
            return Err(builder_error(format!("leaf value {v} is not finite")));
        }
        self.add(parent, Draft::Leaf { values: values.to_vec() })
    }

    fn add(&mut self, parent: Option<(NodeId, Side)>, draft: Draft) -> Result<NodeId> {
        let id = self.nodes.len();
        match parent {
            None if !self.nodes.is_empty() => {
                return Err(builder_error("the tree has a root already; give the new node a parent".into()))
            }
            None => {}
            Some((NodeId(p), side)) => match self.nodes.get_mut(p) {
                Some(Draft::Split { children, .. }) => {
                    let slot = &mut children[side as usize];
                    if slot.is_some() {
                        return Err(builder_error(format!("node {p} has a {side:?} child already")));
                    }
                    *slot = Some(id);
                }
                Some(Draft::Leaf { .. }) => {
                    return Err(builder_error(format!("node {p} is a leaf: it has no children")))
                }
                None => return Err(builder_error(format!("node {p} does not exist"))),
            },
        }
        self.nodes.push(draft);
        self.covers.push(None);
        Ok(NodeId(id))
    }

    /// Sets a node's cover: the training weight that reached it (a row
    /// count, or a sum of hessians), which explanations weigh branches by.
    /// A model has covers when every node of every tree was given one.
    pub fn cover(&mut self, node: NodeId, cover: f64) -> Result<()> {
        if !cover.is_finite() || cover < 0.0 {
            return Err(builder_error(format!("node {} has a cover of {cover}", node.0)));
        }
        let slot =
            self.covers.get_mut(node.0).ok_or_else(|| builder_error(format!("node {} does not exist", node.0)))?;
        *slot = Some(cover as f32);
        Ok(())
    }

    /// One tree whose leaves hold the leaves of `trees` side by side, each
    /// value times `scale`: how a forest written one tree per class (an
    /// exported arbor forest) comes back as one tree of class shares. The
    /// trees must have the same splits, added in the same order.
    pub fn side_by_side(trees: &[TreeBuilder], scale: f64) -> Result<TreeBuilder> {
        let Some(first) = trees.first() else {
            return Err(builder_error("no trees to put side by side".into()));
        };
        let mut out = first.clone();
        for (i, node) in out.nodes.iter_mut().enumerate() {
            match node {
                Draft::Leaf { values } => {
                    values.clear();
                    for tree in trees {
                        let Some(Draft::Leaf { values: other }) = tree.nodes.get(i) else {
                            return Err(builder_error(format!("the trees differ at node {i}: one has a leaf")));
                        };
                        values.extend(other.iter().map(|v| v * scale));
                    }
                }
                Draft::Split { feature, test, default_left, children } => {
                    let same = |d: &Draft| {
                        matches!(d, Draft::Split { feature: f, test: t, default_left: l, children: c }
                            if f == feature && t == test && l == default_left && c == children)
                    };
                    if let Some(j) = trees.iter().position(|t| !t.nodes.get(i).is_some_and(same)) {
                        return Err(builder_error(format!("trees 0 and {j} differ at node {i}")));
                    }
                }
            }
        }
        if let Some(j) = trees.iter().position(|t| t.nodes.len() != out.nodes.len()) {
            return Err(builder_error(format!("trees 0 and {j} have different sizes")));
        }
        Ok(out)
    }

    /// The finished tree, nodes renumbered so children follow their parent,
    /// with its covers in the new order when every node has one.
    fn finish(self, n_features: usize, leaf_width: usize) -> Result<(Tree, Option<Vec<f32>>)> {
        if self.nodes.is_empty() {
            return Err(builder_error("a tree needs at least one node".into()));
        }
        let mut nodes = Vec::with_capacity(self.nodes.len());
        let mut values = Vec::new();
        // (draft index, slot in `nodes`), breadth first.
        let mut queue = std::collections::VecDeque::from([(0usize, 0usize)]);
        nodes.push(Node::Leaf { value: 0 });
        let mut order = Vec::with_capacity(self.nodes.len());
        while let Some((d, slot)) = queue.pop_front() {
            order.push(d);
            nodes[slot] = match &self.nodes[d] {
                Draft::Leaf { values: v } => {
                    if v.len() != leaf_width {
                        return Err(builder_error(format!(
                            "leaf (node {d}) has {} values; this model's leaves hold {leaf_width}",
                            v.len()
                        )));
                    }
                    values.extend_from_slice(v);
                    Node::Leaf { value: (values.len() - leaf_width) as u32 }
                }
                Draft::Split { feature, test, default_left, children } => {
                    if *feature >= n_features {
                        return Err(builder_error(format!(
                            "split node {d} tests feature {feature}, but the model has {n_features} features"
                        )));
                    }
                    let [Some(l), Some(r)] = *children else {
                        return Err(builder_error(format!("split node {d} needs two children")));
                    };
                    let left = nodes.len();
                    nodes.push(Node::Leaf { value: 0 });
                    nodes.push(Node::Leaf { value: 0 });
                    queue.push_back((l, left));
                    queue.push_back((r, left + 1));
                    Node::Split {
                        feature: *feature as u32,
                        test: test.clone(),
                        default_left: *default_left,
                        left: left as u32,
                        right: left as u32 + 1,
                    }
                }
            };
        }
        let covers = order.iter().map(|&d| self.covers[d]).collect();
        Ok((Tree { nodes, values }, covers))
    }
}

/// Builds a [`Model`] tree by tree; [`ModelBuilder::build`] checks it whole.
#[derive(Clone, Debug)]
pub struct ModelBuilder {
    model: Model,
    /// Each tree's covers, when its every node has one.
    covers: Vec<Option<Vec<f32>>>,
}

impl ModelBuilder {
    /// A classification forest over `classes` (its leaves hold one probability per class).
    pub fn classification(label: &str, classes: Classes, features: Vec<BuilderFeature>) -> Result<ModelBuilder> {
        let data_type = match classes {
            Classes::Int(_) => "Int64",
            Classes::UInt(_) => "UInt64",
            Classes::Bool(_) => "Boolean",
            Classes::Str(_) => "Utf8",
        };
        if classes.is_empty() {
            return Err(builder_error("a classification model needs at least one class, got none".to_owned()));
        }
        let label = LabelInfo { name: label.to_owned(), data_type: data_type.into(), classes: Some(classes) };
        ModelBuilder::new(Task::Classification, label, features)
    }

    /// A regression forest (its leaves hold one value).
    pub fn regression(label: &str, features: Vec<BuilderFeature>) -> Result<ModelBuilder> {
        let label = LabelInfo { name: label.to_owned(), data_type: "Float64".into(), classes: None };
        ModelBuilder::new(Task::Regression, label, features)
    }

    fn new(task: Task, label: LabelInfo, features: Vec<BuilderFeature>) -> Result<ModelBuilder> {
        if features.is_empty() {
            return Err(builder_error("a model needs at least one feature".into()));
        }
        let features = features
            .into_iter()
            .map(|f| {
                let (data_type, kind, mapper) = match f.categories {
                    None => ("Float64", FeatureType::Numeric, BinMapper::Numeric { edges: Vec::new() }),
                    Some(c) => ("Utf8", FeatureType::Categorical, BinMapper::categorical(c)),
                };
                Feature { name: f.name, data_type: data_type.into(), kind, mapper }
            })
            .collect();
        let model = Model {
            task,
            algorithm: Algorithm::RandomForest,
            label,
            features,
            trees: Trees::default(),
            voting: Voting::Weighted,
            importance: None,
            oob_error: None,
            params: vec![("task".into(), task.name().into()), ("built_by".into(), "model builder".into())],
            training_rows: 0,
            skipped_null_labels: 0,
            boosting: None,
            cover: None,
        };
        Ok(ModelBuilder { model, covers: Vec::new() })
    }

    /// Classification forests: how the trees vote (weighted by default).
    pub fn voting(mut self, voting: Voting) -> ModelBuilder {
        self.model.voting = voting;
        self
    }

    /// Makes the model boosted: trees hold raw scores, summed from
    /// `base_score` (one per output) and turned into predictions by `loss`'s
    /// link. With softmax, tree `t` scores class `t % classes`.
    pub fn boosting(mut self, loss: Loss, base_score: Vec<f64>) -> ModelBuilder {
        self.model.algorithm = Algorithm::GradientBoosting;
        self.model.boosting = Some(Boosting { loss, outputs: base_score.len(), base_score, early_stopping: None });
        self
    }

    /// Records a parameter shown by `inspect`, such as where the model came from.
    pub fn param(mut self, key: impl Into<String>, value: impl Into<String>) -> ModelBuilder {
        self.model.params.push((key.into(), value.into()));
        self
    }

    /// Adds a finished tree, checking it (every split has two children,
    /// feature indices in range, leaves of the model's width); returns its index.
    pub fn add_tree(&mut self, tree: TreeBuilder) -> Result<usize> {
        let (tree, covers) = tree.finish(self.model.features.len(), self.model.leaf_width())?;
        self.model.trees.push(tree);
        self.covers.push(covers);
        Ok(self.model.trees.len() - 1)
    }

    /// The model, checked as a decoded model file is.
    pub fn build(mut self) -> Result<Model> {
        let m = &mut self.model;
        m.params.insert(1, ("algorithm".into(), m.algorithm.name().into()));
        m.cover = self.covers.into_iter().collect::<Option<Vec<_>>>().map(NodeCover::new);
        m.validate().map_err(builder_error)?;
        Ok(self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stump(left: f64, right: f64) -> TreeBuilder {
        let mut t = TreeBuilder::new();
        let root = t.add_split(None, 0, SplitTest::LessOrEqual(1.0), false).unwrap();
        t.add_leaf(Some((root, Side::Right)), &[right]).unwrap();
        t.add_leaf(Some((root, Side::Left)), &[left]).unwrap();
        t
    }

    #[test]
    fn structure_errors_are_named() {
        let mut t = TreeBuilder::new();
        let root = t.add_split(None, 0, SplitTest::LessOrEqual(1.0), false).unwrap();
        let e = t.add_leaf(None, &[1.0]).unwrap_err().to_string();
        assert!(e.contains("root already"), "{e}");
        let leaf = t.add_leaf(Some((root, Side::Left)), &[1.0]).unwrap();
        let e = t.add_leaf(Some((root, Side::Left)), &[1.0]).unwrap_err().to_string();
        assert!(e.contains("Left child already"), "{e}");
        let e = t.add_leaf(Some((leaf, Side::Left)), &[1.0]).unwrap_err().to_string();
        assert!(e.contains("is a leaf"), "{e}");
        let e = t.add_leaf(Some((NodeId(9), Side::Left)), &[1.0]).unwrap_err().to_string();
        assert!(e.contains("node 9 does not exist"), "{e}");

        let mut b = ModelBuilder::regression("y", vec![BuilderFeature::numeric("x")]).unwrap();
        let e = b.add_tree(t.clone()).unwrap_err().to_string();
        assert!(e.contains("needs two children"), "{e}");
        let mut wide = TreeBuilder::new();
        wide.add_split(None, 3, SplitTest::LessOrEqual(0.0), true).unwrap();
        let e = b.add_tree(wide).unwrap_err().to_string();
        assert!(e.contains("feature 3") && e.contains("1 features"), "{e}");
        let mut two = TreeBuilder::new();
        two.add_leaf(None, &[1.0, 2.0]).unwrap();
        let e = b.add_tree(two).unwrap_err().to_string();
        assert!(e.contains("2 values") && e.contains("hold 1"), "{e}");
        let e = b.clone().build().unwrap_err().to_string();
        assert!(e.contains("no trees"), "{e}");
    }

    #[test]
    fn a_built_model_predicts_saves_and_loads() {
        let mut b = ModelBuilder::regression("y", vec![BuilderFeature::numeric("x")]).unwrap();
        b.add_tree(stump(1.0, 3.0)).unwrap();
        b.add_tree(stump(2.0, 5.0)).unwrap();
        let model = b.build().unwrap();
        let p = model.score_columns(&[vec![0.5, 1.0, 7.0, f64::NAN]], 4).unwrap();
        assert_eq!(p.values, vec![1.5, 1.5, 4.0, 4.0], "mean of the trees; missing goes right");
        let again = Model::from_bytes(&model.to_bytes()).unwrap();
        assert_eq!(again, model);
    }

    #[test]
    fn a_boosted_softmax_model_sums_raw_scores_per_class() {
        let classes = Classes::Str(vec!["a".into(), "b".into()]);
        let features = vec![BuilderFeature::categorical("c", vec!["x".into(), "y".into()])];
        let mut b =
            ModelBuilder::classification("label", classes, features).unwrap().boosting(Loss::Softmax, vec![0.0, 0.0]);
        for class in 0..2 {
            let mut t = TreeBuilder::new();
            // category "x" is bin 1
            let root = t.add_split(None, 0, SplitTest::InCategories(vec![0b10]), false).unwrap();
            let (x, y) = if class == 0 { (2.0, -2.0) } else { (-2.0, 2.0) };
            t.add_leaf(Some((root, Side::Left)), &[x]).unwrap();
            t.add_leaf(Some((root, Side::Right)), &[y]).unwrap();
            b.add_tree(t).unwrap();
        }
        let model = b.build().unwrap();
        let p = model.score_columns(&[vec![1.0, 2.0]], 2).unwrap();
        assert_eq!(p.class_index(), vec![0, 1]);
        let expected = 1.0 / (1.0 + (-4.0f64).exp());
        assert!((p.values[0] - expected).abs() < 1e-12, "{:?}", p.values);
    }
}
