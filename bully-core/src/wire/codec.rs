//! The sans-IO codec: messages to authenticated frames and back.

use crate::ConfigError;
use crate::message::{Message, NodeId, Transmit};

use super::auth::Auth;
use super::error::{SetupError, WireError};
use super::frame::{
    self, DEFAULT_MAX_FRAME_LEN, HEADER_LEN, Header, MAX_FRAME_LEN, MIN_FRAME_LEN, TAG_LEN,
};
use super::ids::{ClusterId, Incarnation};
use super::replay::{Check, ReplayWindow};
use super::stats::WireStats;

/// Turns one node's messages into frames and its peers' frames back into messages,
/// refusing anything forged, replayed, misaddressed or malformed.
///
/// It does no I/O: hand [`encode`](Codec::encode)'s bytes to your transport, and
/// what your transport received to [`decode`](Codec::decode). One codec per node,
/// for every peer: it numbers the frames this node sends and remembers, per sender,
/// which frames it has accepted.
///
/// See the [module docs](super) for the frame layout and an example.
#[derive(Clone, Debug)]
pub struct Codec {
    cluster: ClusterId,
    id: NodeId,
    incarnation: Incarnation,
    /// `None` once every sequence number of this incarnation was used.
    next_sequence: Option<u64>,
    auth: Auth,
    max_frame_len: usize,
    /// Sorted, so lookups are binary searches and nothing iterates a hash map.
    members: Vec<NodeId>,
    /// One per member, same order; `None` until a frame from it is accepted.
    windows: Vec<Option<ReplayWindow>>,
    stats: WireStats,
}

impl Codec {
    /// A codec for node `id` of `cluster`, in its `incarnation` (see
    /// [`Incarnation`] for how to keep one), talking to `members` (which include
    /// `id`), with `auth`.
    ///
    /// Sequence numbers start at 0; the frame limit is [`DEFAULT_MAX_FRAME_LEN`].
    pub fn new(
        cluster: ClusterId,
        id: NodeId,
        incarnation: Incarnation,
        members: impl IntoIterator<Item = NodeId>,
        auth: Auth,
    ) -> Result<Codec, SetupError> {
        auth.validate()?;
        let mut members: Vec<NodeId> = members.into_iter().collect();
        if members.is_empty() {
            return Err(ConfigError::EmptyMembership.into());
        }
        members.sort_unstable();
        if let Some(pair) = members.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(ConfigError::DuplicateMember(pair[0]).into());
        }
        if members.binary_search(&id).is_err() {
            return Err(ConfigError::MissingSelf(id).into());
        }
        let windows = vec![None; members.len()];
        Ok(Codec {
            cluster,
            id,
            incarnation,
            next_sequence: Some(0),
            auth,
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            members,
            windows,
            stats: WireStats::default(),
        })
    }

    /// This node's id, written as the sender of every frame.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The cluster this codec belongs to.
    pub fn cluster(&self) -> ClusterId {
        self.cluster
    }

    /// This node's incarnation.
    pub fn incarnation(&self) -> Incarnation {
        self.incarnation
    }

    /// The sequence number the next frame will carry (`None` once exhausted).
    pub fn next_sequence(&self) -> Option<u64> {
        self.next_sequence
    }

    /// The members, ascending.
    pub fn members(&self) -> &[NodeId] {
        &self.members
    }

    /// The newest incarnation of `peer` this codec has accepted a frame from: it
    /// grows when the peer restarts.
    pub fn peer_incarnation(&self, peer: NodeId) -> Option<Incarnation> {
        let index = self.members.binary_search(&peer).ok()?;
        self.windows
            .get(index)?
            .as_ref()
            .map(ReplayWindow::incarnation)
    }

    /// Counters of frames encoded, accepted and refused.
    pub fn stats(&self) -> WireStats {
        self.stats
    }

    /// The largest frame this codec sends or accepts.
    pub fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }

    /// Changes the frame limit, within [`MIN_FRAME_LEN`] ..= [`MAX_FRAME_LEN`]:
    /// lower it to your path MTU to refuse what would be fragmented. Every member
    /// should use the same limit.
    pub fn set_max_frame_len(&mut self, len: usize) -> Result<(), SetupError> {
        if !(MIN_FRAME_LEN..=MAX_FRAME_LEN).contains(&len) {
            return Err(SetupError::FrameLimit(len));
        }
        self.max_frame_len = len;
        Ok(())
    }

    /// Adds a member at runtime: frames to it can be encoded, and its frames are
    /// accepted from now on (its replay window starts with its first frame). Pair it
    /// with [`Node::add_member`](crate::Node::add_member).
    ///
    /// Errors, changing nothing, if `id` is already a member.
    ///
    /// ```
    /// use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId, WireError};
    /// use bully_core::{Message, NodeId, Term};
    ///
    /// let auth = || Key::new(KeyId(1), b"an example secret of 32 bytes!!!").map(Auth::hmac);
    /// let mut codec = Codec::new(ClusterId(1), NodeId(1), Incarnation(1), [NodeId(1), NodeId(2)], auth()?)?;
    /// let heartbeat = Message::Heartbeat { term: Term(1), round: 0 };
    /// let mut frame = Vec::new();
    /// assert_eq!(codec.encode(NodeId(3), &heartbeat, &mut frame), Err(WireError::NotMember(NodeId(3))));
    /// codec.add_member(NodeId(3))?;
    /// codec.encode(NodeId(3), &heartbeat, &mut frame)?;
    /// codec.remove_member(NodeId(3))?;
    /// assert_eq!(codec.members(), &[NodeId(1), NodeId(2)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_member(&mut self, id: NodeId) -> Result<(), SetupError> {
        match self.members.binary_search(&id) {
            Ok(_) => Err(ConfigError::DuplicateMember(id).into()),
            Err(index) => {
                self.members.insert(index, id);
                self.windows.insert(index, None);
                Ok(())
            }
        }
    }

    /// Removes a member at runtime: nothing more is encoded for it, and its frames
    /// are refused as a non-member's ([`WireError::NotMember`]). Its replay window
    /// is forgotten: if it is added back, a frame it sent before its removal could
    /// be accepted once more (the node's term checks fence it, as after a restart
    /// of this node).
    ///
    /// Errors, changing nothing, if `id` is this node or not a member.
    pub fn remove_member(&mut self, id: NodeId) -> Result<(), SetupError> {
        if id == self.id {
            return Err(ConfigError::MissingSelf(id).into());
        }
        let index = self
            .members
            .binary_search(&id)
            .map_err(|_| SetupError::NotMember(id))?;
        self.members.remove(index);
        self.windows.remove(index);
        Ok(())
    }

    /// Replaces the keys (a rotation step, see [`Auth`]), keeping the replay
    /// windows and the sequence numbers.
    pub fn set_auth(&mut self, auth: Auth) -> Result<(), SetupError> {
        auth.validate()?;
        self.auth = auth;
        Ok(())
    }

    /// Encodes `message` for `to` into `out`, replacing what `out` held: one frame,
    /// header, body and tag. Reusing one buffer makes the steady state allocation
    /// free.
    ///
    /// Each successful call uses one sequence number; a failed one uses none.
    pub fn encode(
        &mut self,
        to: NodeId,
        message: &Message,
        out: &mut Vec<u8>,
    ) -> Result<(), WireError> {
        if to == self.id || self.members.binary_search(&to).is_err() {
            return Err(WireError::NotMember(to));
        }
        let sequence = self.next_sequence.ok_or(WireError::SequenceExhausted)?;
        let header = Header {
            // Patched in once the body is written.
            body_len: 0,
            cluster: self.cluster,
            key: self.auth.sending_key(),
            sender: self.id,
            recipient: to,
            incarnation: self.incarnation,
            sequence,
        };
        out.clear();
        out.extend_from_slice(&header.write());
        // postcard's Extend flavor takes the writer by value: lend it the buffer.
        *out = match postcard::to_extend(message, core::mem::take(out)) {
            Ok(buf) => buf,
            // A Message always serializes; should that ever change, report it as
            // the body it would have been rather than panic.
            Err(_) => return Err(WireError::MalformedBody),
        };
        let body_len = out.len().saturating_sub(HEADER_LEN);
        let len = HEADER_LEN + body_len + TAG_LEN;
        let body_len = match u16::try_from(body_len) {
            Ok(body_len) if len <= self.max_frame_len => body_len,
            _ => {
                out.clear();
                return Err(WireError::TooLarge {
                    len,
                    max: self.max_frame_len,
                });
            }
        };
        frame::set_body_len(out, body_len);
        let tag = self.auth.tag(out);
        out.extend_from_slice(&tag);
        self.next_sequence = sequence.checked_add(1);
        self.stats.encoded += 1;
        Ok(())
    }

    /// [`encode`](Codec::encode) for a [`Transmit`] drained from a
    /// [`Node`](crate::Node).
    pub fn encode_transmit(
        &mut self,
        transmit: &Transmit,
        out: &mut Vec<u8>,
    ) -> Result<(), WireError> {
        self.encode(transmit.to, &transmit.message, out)
    }

    /// Decodes a frame received from the network: the sender and its message, if
    /// the frame is intact, authentic, addressed to this node, from a member, and
    /// not seen before. Otherwise the reason, also counted in [`stats`](Self::stats);
    /// a refused frame changes nothing else.
    ///
    /// Checks run cheapest first, and nothing reads the body before the tag is
    /// verified: size, header, length, cluster, recipient, sender, tag, replay
    /// window, body.
    pub fn decode(&mut self, frame: &[u8]) -> Result<(NodeId, Message), WireError> {
        let result = self.decode_frame(frame);
        match &result {
            Ok(_) => self.stats.accepted += 1,
            Err(error) => self.stats.count_rejection(error),
        }
        result
    }

    fn decode_frame(&mut self, frame: &[u8]) -> Result<(NodeId, Message), WireError> {
        if frame.len() > self.max_frame_len {
            return Err(WireError::TooLarge {
                len: frame.len(),
                max: self.max_frame_len,
            });
        }
        let (header, _) = frame
            .split_first_chunk::<HEADER_LEN>()
            .ok_or(WireError::Truncated)?;
        let header = Header::parse(header)?;
        let declared = header.frame_len();
        if frame.len() < declared {
            return Err(WireError::Truncated);
        }
        if frame.len() > declared {
            return Err(WireError::TrailingBytes);
        }
        let (authenticated, tag) = frame
            .split_last_chunk::<TAG_LEN>()
            .ok_or(WireError::Truncated)?;
        let body = authenticated
            .get(HEADER_LEN..)
            .ok_or(WireError::Truncated)?;

        if header.cluster != self.cluster {
            return Err(WireError::WrongCluster(header.cluster));
        }
        if header.recipient != self.id {
            return Err(WireError::WrongRecipient(header.recipient));
        }
        let sender = header.sender;
        let index = match self.members.binary_search(&sender) {
            Ok(index) if sender != self.id => index,
            _ => return Err(WireError::NotMember(sender)),
        };
        self.auth.verify(header.key, authenticated, tag)?;

        let replayed = WireError::Replayed {
            sender,
            incarnation: header.incarnation,
            sequence: header.sequence,
        };
        let window = self
            .windows
            .get_mut(index)
            .ok_or(WireError::NotMember(sender))?;
        if let Some(window) = window {
            if window.check(header.incarnation, header.sequence) == Check::Replayed {
                return Err(replayed);
            }
        }
        let message = decode_body(body, self.members.len())?;
        match window {
            Some(window) => window.accept(header.incarnation, header.sequence),
            None => *window = Some(ReplayWindow::first(header.incarnation, header.sequence)),
        }
        Ok((sender, message))
    }
}

/// The body: exactly one postcard-encoded [`Message`], within the limits of this
/// membership.
///
/// Allocation is bounded by the bytes present, not by any length field: postcard
/// gives serde no size hint for a sequence longer than the bytes left, and each
/// element takes at least one byte, so a ring list preallocates at most one entry
/// per body byte.
fn decode_body(body: &[u8], members: usize) -> Result<Message, WireError> {
    let (message, rest) =
        postcard::take_from_bytes::<Message>(body).map_err(|_| WireError::MalformedBody)?;
    if !rest.is_empty() {
        return Err(WireError::MalformedBody);
    }
    match &message {
        Message::RingElection { active, .. } | Message::RingCoordinator { active, .. }
            if active.len() > members =>
        {
            Err(WireError::MalformedBody)
        }
        _ => Ok(message),
    }
}

#[cfg(test)]
mod tests {
    //! What no public call reaches in a test's time: the last sequence number.
    //! The rest of the format's tests are `tests/wire/`.

    use super::*;
    use crate::message::Term;

    #[test]
    fn the_last_sequence_number_is_usable_and_then_nothing_more_is_sent() {
        let members = [NodeId(1), NodeId(5)];
        let mut sender = Codec::new(ClusterId(7), NodeId(5), Incarnation(1), members, Auth::None)
            .expect("valid setup");
        sender.next_sequence = Some(u64::MAX);
        let heartbeat = Message::Heartbeat {
            term: Term(3),
            round: 1,
        };
        let mut frame = Vec::new();
        assert_eq!(
            sender.encode(NodeId(1), &heartbeat, &mut frame),
            Ok(()),
            "the last number is usable"
        );
        assert_eq!(sender.next_sequence(), None);
        assert_eq!(
            sender.encode(NodeId(1), &heartbeat, &mut frame),
            Err(WireError::SequenceExhausted)
        );
    }
}
