//! The fixed header: a plain layout of big-endian integers, read and written with
//! byte slices (only the body goes through postcard).

use crate::message::NodeId;

use super::error::WireError;
use super::ids::{ClusterId, Incarnation, KeyId};

/// The first four bytes of every frame.
pub const MAGIC: [u8; 4] = *b"BULY";
/// The format version this codec writes and reads.
pub const VERSION: u8 = 3;
/// The header's length in bytes.
pub const HEADER_LEN: usize = 52;
/// The authentication tag's length in bytes (a full HMAC-SHA256).
pub const TAG_LEN: usize = 32;
/// The smallest frame: a header, a one-byte body and a tag.
pub const MIN_FRAME_LEN: usize = HEADER_LEN + 1 + TAG_LEN;
/// The largest frame the format can describe (the body length is a `u16`).
pub const MAX_FRAME_LEN: usize = HEADER_LEN + u16::MAX as usize + TAG_LEN;
/// The codec's default limit: the largest UDP payload over IPv4, so every frame it
/// accepts fits one datagram.
pub const DEFAULT_MAX_FRAME_LEN: usize = 65_507;

/// Where the body length sits, for [`frame_len`].
const BODY_LEN_AT: usize = 6;
/// The bytes [`frame_len`] needs: magic, version, reserved, body length.
const PRELUDE_LEN: usize = 8;

/// A frame header, as written (every field authenticated by the tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) body_len: u16,
    pub(crate) cluster: ClusterId,
    pub(crate) key: KeyId,
    pub(crate) sender: NodeId,
    pub(crate) recipient: NodeId,
    pub(crate) incarnation: Incarnation,
    pub(crate) sequence: u64,
}

impl Header {
    pub(crate) fn write(&self) -> [u8; HEADER_LEN] {
        let mut out = [0; HEADER_LEN];
        let mut w = Writer(&mut out);
        w.put(&MAGIC);
        w.put(&[VERSION, 0]);
        w.put(&self.body_len.to_be_bytes());
        w.put(&self.cluster.0.to_be_bytes());
        w.put(&self.key.0.to_be_bytes());
        w.put(&self.sender.0.to_be_bytes());
        w.put(&self.recipient.0.to_be_bytes());
        w.put(&self.incarnation.0.to_be_bytes());
        w.put(&self.sequence.to_be_bytes());
        debug_assert!(w.0.is_empty(), "the header layout adds up to HEADER_LEN");
        out
    }

    /// Reads a header, checking only what needs no configuration: magic, version,
    /// and the reserved byte.
    pub(crate) fn parse(bytes: &[u8; HEADER_LEN]) -> Result<Header, WireError> {
        let mut r = Reader(bytes);
        if r.take::<4>() != Some(MAGIC) {
            return Err(WireError::BadMagic);
        }
        let [version, reserved] = r.take::<2>().ok_or(WireError::Truncated)?;
        // Version 1 defines no flags: a set reserved byte is a format it does not know.
        if version != VERSION || reserved != 0 {
            return Err(WireError::UnsupportedVersion(version));
        }
        let body_len = u16::from_be_bytes(r.take().ok_or(WireError::Truncated)?);
        let cluster = ClusterId(r.u64()?);
        let key = KeyId(u32::from_be_bytes(r.take().ok_or(WireError::Truncated)?));
        let sender = NodeId(r.u64()?);
        let recipient = NodeId(r.u64()?);
        let incarnation = Incarnation(r.u64()?);
        let sequence = r.u64()?;
        Ok(Header {
            body_len,
            cluster,
            key,
            sender,
            recipient,
            incarnation,
            sequence,
        })
    }

    /// The whole frame's length according to this header.
    pub(crate) fn frame_len(&self) -> usize {
        HEADER_LEN + usize::from(self.body_len) + TAG_LEN
    }
}

/// Where the stream-level framing ends: a transport that carries frames over a byte
/// stream (TCP, a serial line) reads the first 8 bytes of a frame and learns how
/// many bytes the whole frame takes (never more than [`MAX_FRAME_LEN`]; compare
/// it with [`Codec::max_frame_len`](super::Codec::max_frame_len) before buffering).
/// Datagram transports do not need it.
///
/// ```
/// use bully_core::wire::{frame_len, WireError};
///
/// let prelude = [b'B', b'U', b'L', b'Y', 3, 0, 0x00, 0x03];
/// assert_eq!(frame_len(&prelude), Ok(52 + 3 + 32));
/// assert_eq!(frame_len(&prelude[..5]), Err(WireError::Truncated));
/// assert_eq!(frame_len(b"GET / HTTP/1.1"), Err(WireError::BadMagic));
/// ```
pub fn frame_len(prelude: &[u8]) -> Result<usize, WireError> {
    let Some((prelude, _)) = prelude.split_first_chunk::<PRELUDE_LEN>() else {
        return Err(WireError::Truncated);
    };
    let mut r = Reader(prelude);
    if r.take::<4>() != Some(MAGIC) {
        return Err(WireError::BadMagic);
    }
    let [version, reserved] = r.take::<2>().ok_or(WireError::Truncated)?;
    if version != VERSION || reserved != 0 {
        return Err(WireError::UnsupportedVersion(version));
    }
    debug_assert_eq!(PRELUDE_LEN - r.0.len(), BODY_LEN_AT);
    let body_len = u16::from_be_bytes(r.take().ok_or(WireError::Truncated)?);
    Ok(HEADER_LEN + usize::from(body_len) + TAG_LEN)
}

/// Patches the body length into a header already written at the start of `frame`.
pub(crate) fn set_body_len(frame: &mut [u8], body_len: u16) {
    if let Some(slot) = frame.get_mut(BODY_LEN_AT..BODY_LEN_AT + 2) {
        slot.copy_from_slice(&body_len.to_be_bytes());
    }
}

/// A cursor that cannot read out of bounds: every read is a checked split.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        self.take()
            .map(u64::from_be_bytes)
            .ok_or(WireError::Truncated)
    }
}

struct Writer<'a>(&'a mut [u8]);

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        let buf = core::mem::take(&mut self.0);
        let (head, rest) = buf.split_at_mut(bytes.len());
        head.copy_from_slice(bytes);
        self.0 = rest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back_as_written_at_the_documented_offsets() {
        let header = Header {
            body_len: 0x0102,
            cluster: ClusterId(0x1112_1314_1516_1718),
            key: KeyId(0x2122_2324),
            sender: NodeId(0x3132_3334_3536_3738),
            recipient: NodeId(0x4142_4344_4546_4748),
            incarnation: Incarnation(0x5152_5354_5556_5758),
            sequence: 0x6162_6364_6566_6768,
        };
        let bytes = header.write();
        assert_eq!(&bytes[0..4], b"BULY");
        assert_eq!(bytes[4], VERSION);
        assert_eq!(bytes[5], 0);
        assert_eq!(&bytes[6..8], &[0x01, 0x02]);
        assert_eq!(bytes[8], 0x11);
        assert_eq!(bytes[16], 0x21);
        assert_eq!(bytes[20], 0x31);
        assert_eq!(bytes[28], 0x41);
        assert_eq!(bytes[36], 0x51);
        assert_eq!(bytes[44], 0x61);
        assert_eq!(bytes[51], 0x68);
        assert_eq!(Header::parse(&bytes), Ok(header));
        assert_eq!(frame_len(&bytes), Ok(HEADER_LEN + 0x0102 + TAG_LEN));
    }
}
