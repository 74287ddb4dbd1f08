//! Reading a model file's payload: in order, hashed as it goes, its
//! length and checksum checked against the header at the end.

use std::io::{Read, Write};

use xxhash_rust::xxh3::Xxh3;

use crate::format::header::{fingerprint, FORMAT_VERSION, HEADER_LEN, MAGIC};
use crate::{ArborError, Result};

/// The most a payload read reserves before its bytes arrive.
const MAX_RESERVE: u64 = 16 << 20;

/// The payload of a model file, read in order and hashed as it goes.
pub(crate) struct Payload<R> {
    reader: R,
    version: u32,
    /// The payload's length and checksum, as the header announces them.
    announced: u64,
    checksum: u64,
    /// Payload bytes read so far.
    read: u64,
    hasher: Xxh3,
}

impl<R: Read> Payload<R> {
    /// Reads and checks the header.
    pub(crate) fn open(mut reader: R) -> Result<Payload<R>> {
        let mut header = Vec::with_capacity(HEADER_LEN);
        (&mut reader).take(HEADER_LEN as u64).read_to_end(&mut header).map_err(read_error)?;
        let (announced, checksum) = fingerprint(&header).ok_or_else(|| {
            if header.len() >= MAGIC.len() && &header[..MAGIC.len()] != MAGIC {
                ArborError::Model("not an arbor model (the file does not start with ARBORMDL)".into())
            } else {
                ArborError::Model(format!(
                    "truncated: {} bytes, shorter than the {HEADER_LEN}-byte header",
                    header.len()
                ))
            }
        })?;
        let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
        if !(1..=FORMAT_VERSION).contains(&version) {
            return Err(ArborError::Model(format!(
                "format version {version} is not supported (this build reads versions 1 to {FORMAT_VERSION})"
            )));
        }
        Ok(Payload { reader, version, announced, checksum, read: 0, hasher: Xxh3::new() })
    }

    /// A payload of `len` bytes with no header around it, for tests.
    #[cfg(test)]
    pub(crate) fn unframed(reader: R, len: u64) -> Payload<R> {
        Payload { reader, version: FORMAT_VERSION, announced: len, checksum: 0, read: 0, hasher: Xxh3::new() }
    }

    /// The format version the header announces.
    pub(crate) fn version(&self) -> u32 {
        self.version
    }

    /// Payload bytes not read yet (as announced).
    pub(crate) fn remaining(&self) -> u64 {
        self.announced - self.read
    }

    /// Replaces `buf` with the next `len` payload bytes; an error when the
    /// payload, as announced or as found, ends first.
    pub(crate) fn read_into(&mut self, buf: &mut Vec<u8>, len: u64) -> std::result::Result<(), String> {
        if len > self.remaining() {
            return Err(format!("truncated: {len} bytes wanted, {} left", self.remaining()));
        }
        buf.clear();
        // Room for the bytes up front (a corrupt length reserves no more than
        // a large tree needs, then grows as bytes actually arrive).
        buf.reserve(len.min(MAX_RESERVE) as usize);
        let got = (&mut self.reader).take(len).read_to_end(buf).map_err(|e| e.to_string())?;
        self.hasher.update(buf);
        self.read += got as u64;
        if (got as u64) < len {
            return Err("the payload ends early".into());
        }
        Ok(())
    }

    /// The next little-endian u64 of the payload.
    pub(crate) fn u64(&mut self) -> std::result::Result<u64, String> {
        let mut buf = Vec::with_capacity(8);
        self.read_into(&mut buf, 8)?;
        Ok(u64::from_le_bytes(buf[..].try_into().expect("8 bytes")))
    }

    /// Reads the rest of the input; checks the payload's length and checksum.
    pub(crate) fn finish(mut self) -> Result<()> {
        let mut rest = HashingWriter(&mut self.hasher, 0);
        std::io::copy(&mut self.reader, &mut rest).map_err(read_error)?;
        let found = self.read + rest.1;
        if found != self.announced {
            return Err(ArborError::Model(format!(
                "truncated or padded: the header announces {} payload bytes, found {found}",
                self.announced
            )));
        }
        if self.hasher.digest() != self.checksum {
            return Err(ArborError::Model("corrupt: the payload does not match its checksum".into()));
        }
        Ok(())
    }
}

/// Hashes and counts what is written to it.
struct HashingWriter<'a>(&'a mut Xxh3, u64);

impl Write for HashingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        self.1 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A read failure, as a model error.
fn read_error(e: std::io::Error) -> ArborError {
    ArborError::Model(format!("cannot read the model: {e}"))
}
