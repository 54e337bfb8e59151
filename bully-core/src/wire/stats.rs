//! What a codec has sent, accepted and refused.

use super::error::WireError;

/// Counters a [`Codec`](super::Codec) keeps: frames encoded and accepted, and one
/// counter per class of refused frame (each [`WireError`] a peer can cause).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct WireStats {
    /// Frames encoded.
    pub encoded: u64,
    /// Frames decoded and accepted.
    pub accepted: u64,
    /// [`WireError::Truncated`].
    pub truncated: u64,
    /// [`WireError::TooLarge`].
    pub too_large: u64,
    /// [`WireError::BadMagic`].
    pub bad_magic: u64,
    /// [`WireError::UnsupportedVersion`].
    pub unsupported_version: u64,
    /// [`WireError::TrailingBytes`].
    pub trailing_bytes: u64,
    /// [`WireError::WrongCluster`].
    pub wrong_cluster: u64,
    /// [`WireError::WrongRecipient`].
    pub wrong_recipient: u64,
    /// [`WireError::UnknownKey`].
    pub unknown_key: u64,
    /// [`WireError::BadTag`].
    pub bad_tag: u64,
    /// [`WireError::Replayed`].
    pub replayed: u64,
    /// [`WireError::MalformedBody`].
    pub malformed_body: u64,
    /// [`WireError::NotMember`].
    pub not_member: u64,
}

impl WireStats {
    /// Every frame refused, whatever the reason.
    pub fn rejected(&self) -> u64 {
        [
            self.truncated,
            self.too_large,
            self.bad_magic,
            self.unsupported_version,
            self.trailing_bytes,
            self.wrong_cluster,
            self.wrong_recipient,
            self.unknown_key,
            self.bad_tag,
            self.replayed,
            self.malformed_body,
            self.not_member,
        ]
        .iter()
        .sum()
    }

    pub(crate) fn count_rejection(&mut self, error: &WireError) {
        let counter = match error {
            WireError::Truncated => &mut self.truncated,
            WireError::TooLarge { .. } => &mut self.too_large,
            WireError::BadMagic => &mut self.bad_magic,
            WireError::UnsupportedVersion(_) => &mut self.unsupported_version,
            WireError::TrailingBytes => &mut self.trailing_bytes,
            WireError::WrongCluster(_) => &mut self.wrong_cluster,
            WireError::WrongRecipient(_) => &mut self.wrong_recipient,
            WireError::UnknownKey(_) => &mut self.unknown_key,
            WireError::BadTag => &mut self.bad_tag,
            WireError::Replayed { .. } => &mut self.replayed,
            WireError::MalformedBody => &mut self.malformed_body,
            WireError::NotMember(_) => &mut self.not_member,
            // Only encoding produces it; decoding never does.
            WireError::SequenceExhausted => return,
        };
        *counter = counter.saturating_add(1);
    }
}
