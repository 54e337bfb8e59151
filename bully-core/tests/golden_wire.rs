//! The wire's bytes, pinned: every message kind as node 2 of cluster 7 frames
//! it for node 5, with HMAC-SHA256 and without authentication, against
//! `tests/golden/wire.txt`. A refactoring that moves the codec must leave these
//! bytes as they are (members of one cluster run mixed versions during an
//! upgrade); a change to the format records them anew with
//! `BULLY_GOLDEN=record` and says so in CHANGELOG.md. `BULLY_GOLDEN=off`
//! (mutation testing) skips it.
#![cfg(feature = "wire")]

use std::path::PathBuf;

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{Message, NodeId, Term};

const SECRET: &[u8; 32] = b"a golden secret, for tests only!";

/// One message of every kind, with every field away from its default.
fn every_kind() -> Vec<(&'static str, Message)> {
    let term = Term(9);
    vec![
        ("election", Message::Election { term }),
        ("answer", Message::Answer { term }),
        ("coordinator", Message::Coordinator { term, round: 300 }),
        ("heartbeat", Message::Heartbeat { term, round: 300 }),
        ("ack", Message::Ack { term, round: 300 }),
        (
            "resign",
            Message::Resign {
                term,
                successor: None,
            },
        ),
        (
            "resign-successor",
            Message::Resign {
                term,
                successor: Some(NodeId(5)),
            },
        ),
        ("takeover", Message::Takeover { term }),
        (
            "ring-election",
            Message::RingElection {
                term,
                initiator: NodeId(2),
                active: vec![NodeId(2), NodeId(3), NodeId(5)],
            },
        ),
        (
            "ring-coordinator",
            Message::RingCoordinator {
                term,
                leader: NodeId(5),
                initiator: NodeId(2),
                active: vec![NodeId(2), NodeId(3), NodeId(5)],
            },
        ),
        ("probe", Message::Probe { term }),
        (
            "probe-reply",
            Message::ProbeReply {
                term,
                leader: Some(NodeId(5)),
                cut_off: true,
            },
        ),
        (
            "probe-reply-leaderless",
            Message::ProbeReply {
                term,
                leader: None,
                cut_off: false,
            },
        ),
    ]
}

/// Every kind framed under `auth`, one `<auth> <kind> <hex>` line each; the
/// codec's sequence numbers run on from frame to frame.
fn frames(name: &str, auth: Auth) -> String {
    let members = [NodeId(2), NodeId(3), NodeId(5)];
    let mut codec = Codec::new(
        ClusterId(7),
        NodeId(2),
        Incarnation(1_700_000_000_000),
        members,
        auth,
    )
    .unwrap();
    let mut out = Vec::new();
    let mut lines = String::new();
    for (kind, message) in every_kind() {
        codec.encode(NodeId(5), &message, &mut out).unwrap();
        let hex: String = out.iter().map(|byte| format!("{byte:02x}")).collect();
        lines.push_str(&format!("{name} {kind} {hex}\n"));
    }
    lines
}

#[test]
fn every_message_kind_frames_to_the_recorded_bytes() {
    let key = Key::new(KeyId(42), SECRET).unwrap();
    let actual = frames("hmac", Auth::hmac(key)) + &frames("none", Auth::None);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/wire.txt");
    let golden = std::env::var("BULLY_GOLDEN").unwrap_or_default();
    if golden == "off" {
        // Mutation testing: the frames are checked by the codec's own tests.
        return;
    }
    if golden == "record" {
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap();
    for (actual, expected) in actual.lines().zip(expected.lines()) {
        assert_eq!(
            actual, expected,
            "the frame differs from tests/golden/wire.txt: a change meant to keep \
             the wire format changed it"
        );
    }
    assert_eq!(
        actual.lines().count(),
        expected.lines().count(),
        "one line per message kind and authentication"
    );
}
