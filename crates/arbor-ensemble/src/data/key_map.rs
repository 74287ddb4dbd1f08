//! Hash maps keyed by the bits of floats: the distinct thresholds of a
//! forest when its trees are ranked or encoded, the distinct leaf outputs
//! of a tree when it is encoded.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes 64-bit words with one multiplication each: the keys are known and
/// not adversarial, and a model has millions of splits and leaves to look up.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.write_u64(u64::from(b)));
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_u64(&mut self, key: u64) {
        // The mantissa's low bits are often all zero: fold the high half in
        // first, and the product's high half back down at the end. A single
        // key hashes the same whatever came before it in a fresh hasher.
        self.0 = (self.0.rotate_left(29) ^ key ^ key >> 32).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0 ^ self.0 >> 32
    }
}

/// Builds [`KeyHasher`]s for a map.
pub(crate) type KeyHash = BuildHasherDefault<KeyHasher>;

/// A map keyed by one 64-bit word (a float's bits).
pub(crate) type KeyMap<V> = HashMap<u64, V, KeyHash>;
