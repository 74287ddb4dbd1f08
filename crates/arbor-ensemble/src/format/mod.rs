//! The model bytes: the versioned, checksummed file and the columnar
//! encodings of its trees.
//!
//! [`model_format`] writes and reads a whole model (header in [`header`],
//! payload read and hashed by [`payload`]). A model's trees are one section
//! each ([`tree_sections`] holds them in memory or spilled to disk), read as
//! [`columns`] whatever their version ([`v3`] written, [`v2`] still read),
//! written by [`encode`], decoded into node lists or the flat layout by
//! [`decode`] or straight into the trees over ranks by [`ranked_columns`];
//! [`encoded`] keeps a model's sections and decodes them on demand, and
//! [`read`] loads a payload's trees into the best form it can; the node
//! covers follow the trees ([`cover_section`]), the training curve follows
//! them ([`curve_section`]).

pub(crate) mod columns;
pub(crate) mod cover_section;
pub(crate) mod curve_section;
pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod encoded;
pub(crate) mod header;
pub(crate) mod model_format;
pub(crate) mod payload;
pub(crate) mod ranked_columns;
pub(crate) mod read;
pub(crate) mod tree_sections;
pub(crate) mod v2;
pub(crate) mod v3;

#[cfg(test)]
pub(crate) mod tests;
