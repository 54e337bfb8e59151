//! The wire format: one authenticated frame per message, safe to decode from any
//! host on the network.
//!
//! Nodes talk over networks where anyone can send anything: without this module a
//! forged `Coordinator` from a made-up high id would take over the cluster. A
//! [`Codec`] turns a node's messages into frames and refuses every frame that is
//! not intact, authentic, addressed to it, from a member, and new.
//!
//! # Frame layout
//!
//! A fixed header of big-endian integers, the body, then the tag. The body is the
//! [`Message`](crate::Message) encoded by [postcard] (through its serde derive);
//! the header is a plain layout, so it can be checked before any decoding.
//!
//! | Offset    | Size | Field              | Contents                                               |
//! |-----------|------|--------------------|--------------------------------------------------------|
//! | 0         | 4    | magic              | `BULY` ([`MAGIC`])                                     |
//! | 4         | 1    | version            | `3` ([`VERSION`])                                      |
//! | 5         | 1    | reserved           | `0` (a non-zero value is an unknown format)            |
//! | 6         | 2    | body length *n*    | `u16`                                                  |
//! | 8         | 8    | cluster id         | [`ClusterId`]                                          |
//! | 16        | 4    | key id             | [`KeyId`]; `0` = unauthenticated ([`Auth::None`])      |
//! | 20        | 8    | sender id          | [`NodeId`](crate::NodeId)                              |
//! | 28        | 8    | recipient id       | [`NodeId`](crate::NodeId)                              |
//! | 36        | 8    | sender incarnation | [`Incarnation`], grows at each restart                 |
//! | 44        | 8    | sequence number    | per sender and incarnation, from 0                     |
//! | 52        | *n*  | body               | postcard-encoded [`Message`](crate::Message)           |
//! | 52 + *n*  | 32   | tag                | HMAC-SHA256 over bytes `0 .. 52 + n` with the key named at offset 16 |
//!
//! [`HEADER_LEN`] is 52 and [`TAG_LEN`] 32, so a frame is 84 bytes plus its body;
//! a heartbeat takes 87 (while its term and round are below 128). The recipient is in the header (beyond what a sender id
//! alone gives) so that a frame captured on its way to one node cannot be
//! redirected to another: an `Answer` or `Takeover` means something only to the
//! node it was sent to.
//!
//! The body's encoding follows the declaration of [`Message`](crate::Message):
//! postcard writes a variant as its index and integers as varints. So new message
//! kinds must be appended (older peers refuse them as malformed), and reordering
//! variants or fields, or adding a field to a variant, is a new [`VERSION`]
//! (version 2: `Resign` names its successor; version 3: `Coordinator` numbers
//! its ask, which a vote names). A known-answer test pins the bytes.
//!
//! # What a receiver checks, in order
//!
//! 1. The length, against [`Codec::max_frame_len`], before reading anything.
//! 2. Magic, version, and that the frame is exactly as long as its header says.
//! 3. Cluster, recipient (this node), sender (a member other than this node).
//! 4. The tag, with the current or previous key as the key id says, compared in
//!    constant time. Nothing reads the body before this.
//! 5. Replay: per sender, an [RFC 6479] sliding window of [`REPLAY_WINDOW`]
//!    sequence numbers. Frames reordered within it are each accepted once; older
//!    ones are refused; a higher incarnation (the sender restarted) starts a new
//!    window and a lower one is refused.
//! 6. The body: exactly one message, ring lists no longer than the membership.
//!    Nothing allocates more than the frame's own bytes can fill.
//!
//! Each refusal is a [`WireError`], counted in [`WireStats`]. A refused frame
//! changes nothing else.
//!
//! A receiver keeps its replay windows in memory only: after it restarts, it would
//! accept once more a frame it accepted before, from a sender's current
//! incarnation. The node's own term checks (fencing) are the defence there.
//!
//! # Example
//!
//! ```
//! use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId, WireError};
//! use bully_core::{Message, NodeId, Term};
//!
//! let members = [NodeId(1), NodeId(2), NodeId(3)];
//! let cluster = ClusterId(0x5eed);
//! // In production: 32 random bytes from a secret store, the same on every member.
//! let secret = b"an example secret of 32 bytes!!!";
//! let auth = || Key::new(KeyId(1), secret).map(Auth::hmac);
//!
//! let mut sender = Codec::new(cluster, NodeId(3), Incarnation(1), members, auth()?)?;
//! let mut receiver = Codec::new(cluster, NodeId(1), Incarnation(1), members, auth()?)?;
//!
//! // Encode and authenticate...
//! let mut frame = Vec::new();
//! sender.encode(NodeId(1), &Message::Coordinator { term: Term(4), round: 0 }, &mut frame)?;
//! assert_eq!(frame.len(), 87);
//!
//! // ...verify and decode.
//! let (from, message) = receiver.decode(&frame)?;
//! assert_eq!(from, NodeId(3));
//! assert_eq!(message, Message::Coordinator { term: Term(4), round: 0 });
//!
//! // The same frame again is a replay; a tampered one is a forgery.
//! assert!(matches!(receiver.decode(&frame), Err(WireError::Replayed { .. })));
//! frame[60] ^= 1;
//! assert_eq!(receiver.decode(&frame), Err(WireError::BadTag));
//! assert_eq!(receiver.stats().rejected(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [RFC 6479]: https://www.rfc-editor.org/rfc/rfc6479
//! [postcard]: https://docs.rs/postcard

mod auth;
mod codec;
mod error;
mod frame;
mod ids;
mod replay;
mod stats;

pub use auth::{Auth, Key, MIN_KEY_LEN};
pub use codec::Codec;
pub use error::{SetupError, WireError};
pub use frame::{
    DEFAULT_MAX_FRAME_LEN, HEADER_LEN, MAGIC, MAX_FRAME_LEN, MIN_FRAME_LEN, TAG_LEN, VERSION,
    frame_len,
};
pub use ids::{ClusterId, Incarnation, KeyId};
pub use replay::REPLAY_WINDOW;
pub use stats::WireStats;
