//! A Protocol Buffers writer, the little the ONNX export needs: varint,
//! length-delimited and packed fields appended to a message's bytes.
//! (Writing only, and a handful of field kinds: a code generator and its
//! runtime would be far more than these.)

/// One message's encoded fields, in the order they were written.
#[derive(Clone, Debug, Default)]
pub(crate) struct Message {
    bytes: Vec<u8>,
}

/// Wire types: varint, length-delimited.
const VARINT: u32 = 0;
const DELIMITED: u32 = 2;

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

impl Message {
    /// An empty message.
    pub fn new() -> Message {
        Message::default()
    }

    /// The encoded message.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    fn tag(&mut self, field: u32, wire: u32) {
        put_varint(&mut self.bytes, u64::from(field << 3 | wire));
    }

    /// An integer field (`int32`, `int64`, an enum): negative values take
    /// ten bytes, as the format's two's complement says.
    pub fn int(&mut self, field: u32, value: i64) -> &mut Message {
        self.tag(field, VARINT);
        put_varint(&mut self.bytes, value as u64);
        self
    }

    /// A `bytes` or `string` field.
    pub fn bytes(&mut self, field: u32, value: &[u8]) -> &mut Message {
        self.tag(field, DELIMITED);
        put_varint(&mut self.bytes, value.len() as u64);
        self.bytes.extend_from_slice(value);
        self
    }

    /// A `string` field.
    pub fn string(&mut self, field: u32, value: &str) -> &mut Message {
        self.bytes(field, value.as_bytes())
    }

    /// An embedded message field.
    pub fn message(&mut self, field: u32, value: &Message) -> &mut Message {
        self.bytes(field, &value.bytes)
    }

    /// A repeated integer field, packed.
    pub fn packed_ints(&mut self, field: u32, values: &[i64]) -> &mut Message {
        let mut packed = Vec::with_capacity(values.len());
        values.iter().for_each(|&v| put_varint(&mut packed, v as u64));
        self.bytes(field, &packed)
    }

    /// A repeated `float` field, packed.
    pub fn packed_floats(&mut self, field: u32, values: &[f32]) -> &mut Message {
        let packed: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.bytes(field, &packed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encodings the Protocol Buffers documentation gives as examples.
    #[test]
    fn fields_encode_as_the_format_documents() {
        assert_eq!(Message::new().int(1, 150).clone().into_bytes(), [0x08, 0x96, 0x01]);
        assert_eq!(Message::new().string(2, "testing").clone().into_bytes(), b"\x12\x07testing");
        assert_eq!(Message::new().int(1, -1).clone().into_bytes().len(), 11, "negative ints take ten bytes");
        assert_eq!(
            Message::new().packed_ints(4, &[3, 270, 86942]).clone().into_bytes(),
            [0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05]
        );
        assert_eq!(Message::new().packed_floats(2, &[1.0]).clone().into_bytes(), [0x12, 4, 0, 0, 0x80, 0x3f]);
    }
}
