//! The model file's header: magic, format version, payload length and
//! checksum (see [`super::model_format`] for the layout).

/// First bytes of every arbor model.
pub const MAGIC: &[u8; 8] = b"ARBORMDL";
/// The format version this build writes (it reads this one and versions 1 to 4).
pub const FORMAT_VERSION: u32 = 5;
/// Bytes before the payload: magic, version, payload length and checksum.
pub(crate) const HEADER_LEN: usize = 28;

/// Payload length and checksum of model bytes, read from the header alone:
/// a cheap key under which a decoded model can be cached.
pub fn fingerprint(bytes: &[u8]) -> Option<(u64, u64)> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return None;
    }
    let len = u64::from_le_bytes(bytes[12..20].try_into().ok()?);
    let checksum = u64::from_le_bytes(bytes[20..28].try_into().ok()?);
    Some((len, checksum))
}
