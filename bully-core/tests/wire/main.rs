//! The wire format against hostile input: every refusal class built by hand, every
//! flipped bit, random bytes, replays and restarts.

mod refusals;
mod replays;
mod rotation;
mod round_trip;
mod tampering;

use hmac::{Hmac, KeyInit, Mac};
use proptest::prelude::*;
use sha2::Sha256;

use bully_core::wire::*;
use bully_core::{ConfigError, Message, MessageKind, NodeId, Term};

const CLUSTER: ClusterId = ClusterId(0xb011_7ec0);
const MEMBERS: [NodeId; 5] = [NodeId(1), NodeId(2), NodeId(3), NodeId(5), NodeId(8)];
const SECRET: &[u8; 32] = b"the cluster's 32-byte secret key";
const OTHER_SECRET: &[u8; 32] = b"a different secret of 32 bytes!!";

/// How many random frames the fuzz-style properties try: `BULLY_WIRE_CASES` (CI
/// sets 100,000), 10,000 by default.
fn fuzz_cases() -> u32 {
    std::env::var("BULLY_WIRE_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(10_000)
}

fn key(id: u32, secret: &[u8]) -> Key {
    Key::new(KeyId(id), secret).expect("test keys are long enough")
}

fn hmac() -> Auth {
    Auth::hmac(key(1, SECRET))
}

fn codec_with(id: u64, incarnation: u64, auth: Auth) -> Codec {
    Codec::new(CLUSTER, NodeId(id), Incarnation(incarnation), MEMBERS, auth)
        .expect("valid test setup")
}

fn codec(id: u64) -> Codec {
    codec_with(id, 1, hmac())
}

/// One message of every kind, checked against `MessageKind::ALL` so a new kind
/// cannot be left out.
fn one_of_each_kind() -> Vec<Message> {
    let term = Term(42);
    let active = vec![NodeId(2), NodeId(3), NodeId(8)];
    let messages = vec![
        Message::Election { term },
        Message::Answer { term },
        Message::Coordinator { term, round: 0 },
        Message::Heartbeat { term, round: 7 },
        Message::Ack { term, round: 7 },
        Message::Resign {
            term,
            successor: None,
        },
        Message::Takeover { term },
        Message::RingElection {
            term,
            initiator: NodeId(2),
            active: active.clone(),
        },
        Message::RingCoordinator {
            term,
            leader: NodeId(8),
            initiator: NodeId(2),
            active,
        },
        Message::Probe { term },
        Message::ProbeReply {
            term,
            leader: Some(NodeId(8)),
            cut_off: true,
        },
    ];
    let kinds: Vec<MessageKind> = messages.iter().map(Message::kind).collect();
    assert_eq!(kinds, MessageKind::ALL, "one message per kind, in order");
    messages
}

fn node_id() -> impl Strategy<Value = NodeId> {
    prop_oneof![(0..10u64).prop_map(NodeId), any::<u64>().prop_map(NodeId)]
}

fn term() -> impl Strategy<Value = Term> {
    prop_oneof![(0..200u64).prop_map(Term), any::<u64>().prop_map(Term)]
}

/// Any message a member may send: ring lists no longer than the membership.
fn message() -> impl Strategy<Value = Message> {
    let active = || prop::collection::vec(node_id(), 0..=MEMBERS.len());
    prop_oneof![
        term().prop_map(|term| Message::Election { term }),
        term().prop_map(|term| Message::Answer { term }),
        term().prop_map(|term| Message::Coordinator { term, round: 0 }),
        (term(), any::<u64>()).prop_map(|(term, round)| Message::Heartbeat { term, round }),
        (term(), any::<u64>()).prop_map(|(term, round)| Message::Ack { term, round }),
        (term(), prop::option::of(node_id()))
            .prop_map(|(term, successor)| Message::Resign { term, successor }),
        term().prop_map(|term| Message::Takeover { term }),
        term().prop_map(|term| Message::Probe { term }),
        (term(), prop::option::of(node_id()), any::<bool>()).prop_map(|(term, leader, cut_off)| {
            Message::ProbeReply {
                term,
                leader,
                cut_off,
            }
        }),
        (term(), node_id(), active()).prop_map(|(term, initiator, active)| {
            Message::RingElection {
                term,
                initiator,
                active,
            }
        }),
        (term(), node_id(), node_id(), active()).prop_map(|(term, leader, initiator, active)| {
            Message::RingCoordinator {
                term,
                leader,
                initiator,
                active,
            }
        }),
    ]
}

/// A frame header, field by field, written here as the format's
/// documentation lays it out (not by the codec), so that the tests can build
/// frames the codec would never encode.
#[derive(Clone, Copy, Debug)]
struct Header {
    body_len: u16,
    cluster: ClusterId,
    key: KeyId,
    sender: NodeId,
    recipient: NodeId,
    incarnation: Incarnation,
    sequence: u64,
}

impl Header {
    fn write(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend([VERSION, 0]);
        out.extend(self.body_len.to_be_bytes());
        out.extend(self.cluster.0.to_be_bytes());
        out.extend(self.key.0.to_be_bytes());
        out.extend(self.sender.0.to_be_bytes());
        out.extend(self.recipient.0.to_be_bytes());
        out.extend(self.incarnation.0.to_be_bytes());
        out.extend(self.sequence.to_be_bytes());
        assert_eq!(
            out.len(),
            HEADER_LEN,
            "the header layout adds up to HEADER_LEN"
        );
        out
    }
}

/// A frame from 5 to 1, built field by field with a valid tag under key 1
/// ([`hmac`]): how a key holder (or a test) makes frames the codec would never
/// encode.
fn seal(header: Header, body: &[u8]) -> Vec<u8> {
    let header = Header {
        body_len: u16::try_from(body.len()).expect("test bodies are small"),
        ..header
    };
    let mut frame = header.write();
    frame.extend_from_slice(body);
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET).expect("HMAC takes any key");
    mac.update(&frame);
    frame.extend_from_slice(&mac.finalize().into_bytes());
    assert_eq!(frame.len(), HEADER_LEN + body.len() + TAG_LEN);
    frame
}

fn header_from(sender: u64, sequence: u64) -> Header {
    Header {
        body_len: 0,
        cluster: CLUSTER,
        key: KeyId(1),
        sender: NodeId(sender),
        recipient: NodeId(1),
        incarnation: Incarnation(1),
        sequence,
    }
}

fn frame_from_5_to_1(message: &Message) -> Vec<u8> {
    let mut frame = Vec::new();
    codec(5)
        .encode(NodeId(1), message, &mut frame)
        .expect("encodes");
    frame
}

fn heartbeat() -> Message {
    Message::Heartbeat {
        term: Term(3),
        round: 1,
    }
}
