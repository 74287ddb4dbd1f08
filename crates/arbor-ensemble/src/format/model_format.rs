//! The versioned binary model format.
//!
//! ```text
//! offset  size  field
//! 0       8     magic "ARBORMDL"
//! 8       4     format version (u32, little endian)
//! 12      8     payload length in bytes (u64, little endian)
//! 20      8     XXH3-64 checksum of the payload (u64, little endian)
//! 28      n     payload
//! ```
//!
//! The payload of version 5 is a u64 length, the model without its trees
//! (postcard-encoded, `trees` empty), then the trees in the columnar layout
//! of [`crate::format::columns`], then the node covers (see [`cover_section`]),
//! then the training curve (see [`curve_section`]). Version 4, the same
//! without the curve, version 3, also without the covers, version 2, also
//! with wider tree columns, and version 1, whose payload is the whole model
//! postcard-encoded, are still read; their models have no curve, and before
//! version 4 no covers.
//!
//! Decoding checks every field and the model's structure, so corrupt or
//! truncated bytes give an error, never a panic or a wrong prediction.
//! [`Model::read_from`] hashes as it reads, and its trees land directly in
//! the form prediction walks: the trees over ranks when the model allows
//! them (its tree sections are kept, to decode the flat layout and node
//! lists from if they are ever asked for, and to be written again as they
//! are), else the flat layout. [`Model::write_to`] streams a model's bytes
//! to a file without gathering them in memory first.

use std::io::{Read, Write};

use xxhash_rust::xxh3::Xxh3;

use crate::format::header::{FORMAT_VERSION, HEADER_LEN, MAGIC};
use crate::format::payload::Payload;
use crate::format::{cover_section, curve_section, read};
use crate::model::node_cover::NodeCover;
use crate::model::trees::{TreeBytes, Trees};
use crate::model::Model;
use crate::{ArborError, Result};

impl Model {
    /// Encodes the model. The same model always gives the same bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let encoding = self.encoding();
        let mut out = Vec::with_capacity(HEADER_LEN + encoding.payload_len as usize);
        out.extend_from_slice(&encoding.header);
        encoding.visit(|piece| out.extend_from_slice(piece));
        out
    }

    /// Writes the bytes of [`Model::to_bytes`] to `writer` without gathering
    /// them in memory first (a forest's trees go out as they are kept);
    /// returns how many bytes were written.
    pub fn write_to(&self, mut writer: impl Write) -> std::io::Result<u64> {
        let encoding = self.encoding();
        writer.write_all(&encoding.header)?;
        let mut result = Ok(());
        encoding.visit(|piece| {
            if result.is_ok() {
                result = writer.write_all(piece);
            }
        });
        result?;
        writer.flush()?;
        Ok(HEADER_LEN as u64 + encoding.payload_len)
    }

    /// The model's bytes as pieces, and the header that announces their
    /// length and checksum.
    fn encoding(&self) -> Encoding<'_> {
        // Everything but the trees, which follow in their columnar layout.
        let rest = Model {
            task: self.task,
            algorithm: self.algorithm,
            label: self.label.clone(),
            features: self.features.clone(),
            trees: Trees::default(),
            voting: self.voting,
            importance: self.importance.clone(),
            oob_error: self.oob_error,
            params: self.params.clone(),
            training_rows: self.training_rows,
            skipped_null_labels: self.skipped_null_labels,
            boosting: self.boosting.clone(),
            cover: None,
        };
        let rest = postcard::to_stdvec(&rest).expect("a model always serializes");
        let mut encoding = Encoding {
            header: [0; HEADER_LEN],
            payload_len: 0,
            rest_len: (rest.len() as u64).to_le_bytes(),
            rest,
            trees: self.trees.bytes(self.leaf_width()),
            cover: self.cover.as_ref(),
            cover_count: (self.cover.as_ref().map_or(0, |c| c.len()) as u64).to_le_bytes(),
            curve: curve_section::bytes(self.curve()),
        };
        let mut hasher = Xxh3::new();
        let mut len = 0;
        encoding.visit(|piece| {
            hasher.update(piece);
            len += piece.len() as u64;
        });
        encoding.payload_len = len;
        encoding.header[..8].copy_from_slice(MAGIC);
        encoding.header[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        encoding.header[12..20].copy_from_slice(&len.to_le_bytes());
        encoding.header[20..28].copy_from_slice(&hasher.digest().to_le_bytes());
        encoding
    }

    /// Decodes and validates model bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        Model::read_from(bytes)
    }

    /// Reads, decodes and validates a model from `reader` (a model file, say),
    /// hashing the bytes as they arrive: no second pass over the file.
    pub fn read_from(reader: impl Read) -> Result<Model> {
        let mut payload = Payload::open(reader)?;
        let decoded = decode(&mut payload);
        // A payload of the wrong length or checksum is reported as such, even
        // when its bytes also failed to decode.
        payload.finish()?;
        let model = decoded.map_err(|e| ArborError::Model(format!("corrupt payload: {e}")))?;
        model.validate().map_err(ArborError::Model)?;
        Ok(model)
    }
}

/// The model in the payload, its bytes not yet known to be intact.
fn decode<R: Read>(payload: &mut Payload<R>) -> std::result::Result<Model, String> {
    let mut bytes = Vec::new();
    if payload.version() == 1 {
        payload.read_into(&mut bytes, payload.remaining())?;
        return postcard::from_bytes(&bytes).map_err(|e| e.to_string());
    }
    let len = payload.u64()?;
    payload.read_into(&mut bytes, len).map_err(|_| "the model's length runs past the payload".to_string())?;
    let mut model: Model = postcard::from_bytes(&bytes).map_err(|e| e.to_string())?;
    if !model.trees.is_empty() {
        return Err("trees inside the model's header".into());
    }
    // The features are checked before the trees that index them.
    model.validate_header()?;
    model.trees = read::read(payload, payload.version(), &model.features, model.leaf_width())?;
    if payload.version() >= 4 {
        model.cover = cover_section::read(payload)?;
    }
    if payload.version() >= 5 {
        let curve = curve_section::read(payload)?;
        let run = model.boosting.as_mut().and_then(|b| b.early_stopping.as_mut());
        match run {
            _ if curve.is_empty() => {}
            Some(run) if run.rounds_run == curve.len() => run.curve = curve,
            Some(run) => {
                return Err(format!(
                    "a training curve of {} rounds, but early stopping ran {}",
                    curve.len(),
                    run.rounds_run
                ))
            }
            None => {
                return Err(format!(
                    "a training curve of {} rounds in a model trained without early stopping",
                    curve.len()
                ))
            }
        }
    }
    match payload.remaining() {
        0 => Ok(model),
        extra => Err(format!("{extra} unexpected bytes after the last tree")),
    }
}

/// A model's bytes: the header, then the payload in pieces.
struct Encoding<'a> {
    header: [u8; HEADER_LEN],
    payload_len: u64,
    rest_len: [u8; 8],
    /// The model without its trees.
    rest: Vec<u8>,
    trees: TreeBytes<'a>,
    cover: Option<&'a NodeCover>,
    cover_count: [u8; 8],
    /// The training curve, its round count first.
    curve: Vec<u8>,
}

impl Encoding<'_> {
    /// Hands the payload's pieces to `f`, in order.
    fn visit(&self, mut f: impl FnMut(&[u8])) {
        f(&self.rest_len);
        f(&self.rest);
        self.trees.visit(&mut f);
        f(&self.cover_count);
        if let Some(cover) = self.cover {
            cover_section::visit(cover, &mut f);
        }
        f(&self.curve);
    }
}

#[cfg(test)]
mod tests {
    use crate::model::builder::{BuilderFeature, ModelBuilder, Side, TreeBuilder};
    use crate::model::tree::SplitTest;

    use super::*;

    /// Three stumps on one feature.
    fn model() -> Model {
        let mut builder = ModelBuilder::regression("y", vec![BuilderFeature::numeric("x")]).unwrap();
        for t in 0..3 {
            let mut tree = TreeBuilder::new();
            let root = tree.add_split(None, 0, SplitTest::LessOrEqual(t as f64), false).unwrap();
            tree.add_leaf(Some((root, Side::Left)), &[-1.0]).unwrap();
            tree.add_leaf(Some((root, Side::Right)), &[t as f64]).unwrap();
            builder.add_tree(tree).unwrap();
        }
        builder.build().unwrap()
    }

    #[test]
    fn built_trees_are_checked_as_decoded_ones_are() {
        let features = vec![BuilderFeature::categorical("c", vec!["a".into(), "b".into()])];
        let mut builder = ModelBuilder::regression("y", features).unwrap();
        let mut tree = TreeBuilder::new();
        let root = tree.add_split(None, 0, SplitTest::LessOrEqual(1.0), false).unwrap();
        tree.add_leaf(Some((root, Side::Left)), &[0.0]).unwrap();
        tree.add_leaf(Some((root, Side::Right)), &[1.0]).unwrap();
        builder.add_tree(tree).unwrap();
        let e = builder.build().unwrap_err().to_string();
        assert!(e.contains("tree 0: node 0: a split does not fit the type of its feature"), "{e}");
    }

    /// Hands out at most `step` bytes per read, as a pipe or socket may.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.1).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_model_read_in_small_pieces_is_the_model_written() {
        let m = model();
        let bytes = m.to_bytes();
        for step in [1, 3, 8, 1000] {
            let read = Model::read_from(Trickle(&bytes, step)).unwrap();
            assert!(read.trees.lists_if_built().is_none(), "read into the flat layout");
            assert_eq!(read.to_bytes(), bytes, "pieces of {step} bytes");
            assert_eq!(read, m);
        }
    }

    #[test]
    fn length_and_checksum_errors_come_before_decoding_errors() {
        let bytes = model().to_bytes();
        // the last tree's last leaf value, changed: only the checksum tells
        let mut bad = bytes.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        let e = Model::from_bytes(&bad).unwrap_err().to_string();
        assert!(e.contains("checksum"), "{e}");
        let e = Model::from_bytes(&bytes[..bytes.len() - 5]).unwrap_err().to_string();
        assert!(
            e.contains("truncated or padded") && e.contains(&format!("found {}", bytes.len() - 5 - HEADER_LEN)),
            "{e}"
        );
        let mut long = bytes.clone();
        long.extend_from_slice(&[0; 3]);
        let e = Model::from_bytes(&long).unwrap_err().to_string();
        assert!(e.contains("truncated or padded"), "{e}");
    }
}
