//! Why a frame was refused, and why a codec could not be set up.

use crate::ConfigError;
use crate::message::NodeId;

use super::ids::{ClusterId, Incarnation, KeyId};

/// A frame the codec refused to decode, or a message it could not encode.
///
/// Every decoding error is also counted in [`WireStats`](super::WireStats); none
/// changes the codec's state, so a peer's garbage costs the receiver a counter and
/// nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The frame ends before the header, body and tag it declares.
    #[error("truncated frame")]
    Truncated,
    /// The frame (or, when encoding, the frame a message would need) is longer than
    /// the codec's limit. Checked before anything else is read.
    #[error("frame of {len} bytes is longer than the limit of {max}")]
    TooLarge {
        /// The frame's length.
        len: usize,
        /// The codec's limit.
        max: usize,
    },
    /// The frame does not start with [`MAGIC`](super::MAGIC): not a bully frame.
    #[error("bad magic: not a bully frame")]
    BadMagic,
    /// The frame's format version (or a header flag this version leaves zero) is
    /// one this codec does not speak.
    #[error("unsupported format version {0}")]
    UnsupportedVersion(u8),
    /// There are bytes after the tag: the frame is longer than its header says.
    #[error("bytes after the end of the frame")]
    TrailingBytes,
    /// The frame belongs to another cluster.
    #[error("frame from cluster {0}")]
    WrongCluster(ClusterId),
    /// The frame was addressed to another node: it was redirected (or misrouted).
    #[error("frame addressed to node {0}")]
    WrongRecipient(NodeId),
    /// The frame was authenticated with a key this codec does not accept (or, under
    /// [`Auth::None`](super::Auth::None), with any key at all, and vice versa).
    #[error("unknown key id {0}")]
    UnknownKey(KeyId),
    /// The authentication tag does not match: forged or corrupted.
    #[error("bad authentication tag")]
    BadTag,
    /// This (incarnation, sequence) from this sender was already accepted, or is
    /// older than the replay window remembers.
    #[error("replayed frame from {sender} (incarnation {incarnation}, sequence {sequence})")]
    Replayed {
        /// The sender.
        sender: NodeId,
        /// The frame's incarnation.
        incarnation: Incarnation,
        /// The frame's sequence number.
        sequence: u64,
    },
    /// The body is authentic but is not a message this version understands, or
    /// breaks a limit (a ring list longer than the membership).
    #[error("malformed message body")]
    MalformedBody,
    /// The sender (when decoding) or recipient (when encoding) is not a peer: not
    /// in the member list, or this node itself.
    #[error("node {0} is not a peer")]
    NotMember(NodeId),
    /// Encoding only: this incarnation has used every sequence number. Restart with
    /// a higher [`Incarnation`].
    #[error("sequence numbers exhausted for this incarnation")]
    SequenceExhausted,
}

/// A [`Codec`](super::Codec) or [`Key`](super::Key) could not be set up.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The member list is invalid (empty, duplicated, or missing this node).
    #[error(transparent)]
    Members(#[from] ConfigError),
    /// A key's secret is shorter than [`MIN_KEY_LEN`](super::MIN_KEY_LEN).
    #[error("key secret of {len} bytes is shorter than the minimum of {min}")]
    KeyTooShort {
        /// The secret's length.
        len: usize,
        /// The minimum.
        min: usize,
    },
    /// Key id 0 marks unauthenticated frames and cannot name a key.
    #[error("key id 0 is reserved for unauthenticated frames")]
    ReservedKeyId,
    /// The current and previous keys have the same id, so a receiver could not tell
    /// which one a frame used.
    #[error("current and previous keys share id {0}")]
    DuplicateKeyId(KeyId),
    /// The frame size limit is outside [`MIN_FRAME_LEN`](super::MIN_FRAME_LEN) ..=
    /// [`MAX_FRAME_LEN`](super::MAX_FRAME_LEN).
    #[error("frame size limit {0} is out of range")]
    FrameLimit(usize),
    /// [`Codec::remove_member`](super::Codec::remove_member) named a node that is
    /// not a member.
    #[error("node {0} is not a member")]
    NotMember(NodeId),
}
