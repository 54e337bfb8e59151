//! The wire format against hostile input: every refusal class built by hand, every
//! flipped bit, random bytes, replays and restarts.

use proptest::prelude::*;

use super::frame::Header;
use super::*;
use crate::{ConfigError, Message, MessageKind, NodeId, Term};

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
        Message::Coordinator { term },
        Message::Heartbeat { term, round: 7 },
        Message::Ack { term, round: 7 },
        Message::Resign { term },
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
        term().prop_map(|term| Message::Coordinator { term }),
        (term(), any::<u64>()).prop_map(|(term, round)| Message::Heartbeat { term, round }),
        (term(), any::<u64>()).prop_map(|(term, round)| Message::Ack { term, round }),
        term().prop_map(|term| Message::Resign { term }),
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

/// A frame from 5 to 1, built field by field with a valid tag: how a key holder
/// (or a test) makes frames the codec would never encode.
fn seal(auth: &Auth, header: Header, body: &[u8]) -> Vec<u8> {
    let header = Header {
        body_len: u16::try_from(body.len()).expect("test bodies are small"),
        ..header
    };
    let mut frame = header.write().to_vec();
    frame.extend_from_slice(body);
    let tag = auth.tag(&frame);
    frame.extend_from_slice(&tag);
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

// ---------------------------------------------------------------------------
// Round trips and sizes

proptest! {
    #[test]
    fn every_message_survives_the_round_trip(message in message(), sequence in 0..3u64) {
        let mut sender = codec(5);
        let mut receiver = codec(1);
        let mut frame = Vec::new();
        for _ in 0..=sequence {
            sender.encode(NodeId(1), &message, &mut frame).unwrap();
            prop_assert_eq!(receiver.decode(&frame), Ok((NodeId(5), message.clone())));
        }
    }

    #[test]
    fn every_message_survives_the_round_trip_unauthenticated(message in message()) {
        let mut sender = codec_with(5, 1, Auth::None);
        let mut receiver = codec_with(1, 1, Auth::None);
        let mut frame = Vec::new();
        sender.encode(NodeId(1), &message, &mut frame).unwrap();
        prop_assert_eq!(receiver.decode(&frame), Ok((NodeId(5), message)));
    }
}

#[test]
fn each_kind_has_the_documented_size() {
    // Small terms, rounds and ids are one varint byte each; the ring lists hold
    // three ids.
    let expected = [86, 86, 86, 87, 87, 86, 86, 91, 92];
    for (message, size) in one_of_each_kind().iter().zip(expected) {
        let frame = frame_from_5_to_1(message);
        assert_eq!(frame.len(), size, "{message}");
        assert_eq!(frame_len(&frame), Ok(size));
        assert_eq!(codec(1).decode(&frame), Ok((NodeId(5), message.clone())));
    }
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).expect("hex"))
        .collect()
}

/// A known answer, computed independently of this crate (the tag with Python's
/// `hmac` module): any change to the layout, the body encoding or the MAC input
/// breaks it, and would break every deployed peer too.
#[test]
fn a_heartbeat_frame_is_byte_for_byte_the_documented_layout() {
    let expected = [
        "42554c59",                                                         // magic "BULY"
        "01",                                                               // version
        "00",                                                               // reserved
        "0003",                                                             // body length
        "00000000b0117ec0",                                                 // cluster id
        "00000001",                                                         // key id
        "0000000000000005",                                                 // sender
        "0000000000000001",                                                 // recipient
        "0000000000000001",                                                 // incarnation
        "0000000000000000",                                                 // sequence
        "030301", // body: postcard Heartbeat (variant 3), term 3, round 1
        "36d7a52a1c35815ce13eb3a1336898b34dbf23577427432a424666b17b105fba", // tag
    ]
    .concat();
    assert_eq!(frame_from_5_to_1(&heartbeat()), hex(&expected));
}

#[test]
fn the_encode_buffer_is_reused_without_growing() {
    let mut sender = codec(5);
    let mut frame = Vec::new();
    sender.encode(NodeId(1), &heartbeat(), &mut frame).unwrap();
    let capacity = frame.capacity();
    for _ in 0..100 {
        sender.encode(NodeId(1), &heartbeat(), &mut frame).unwrap();
    }
    assert_eq!(frame.capacity(), capacity);
    assert_eq!(sender.stats().encoded, 101);
    assert_eq!(sender.next_sequence(), Some(101));
}

// ---------------------------------------------------------------------------
// Every refusal class, each from a frame built to trigger it

/// Decodes `frame` at a fresh node 1 and returns the error and its counter.
fn refusal(frame: &[u8], counter: fn(&WireStats) -> u64) -> WireError {
    let mut receiver = codec(1);
    let error = receiver.decode(frame).expect_err("the frame is refused");
    let stats = receiver.stats();
    assert_eq!(counter(&stats), 1, "{error} is counted under its own name");
    assert_eq!(stats.rejected(), 1, "and only there");
    assert_eq!(stats.accepted, 0);
    error
}

#[test]
fn a_frame_cut_short_is_truncated() {
    let frame = frame_from_5_to_1(&heartbeat());
    for len in [0, 1, HEADER_LEN - 1, HEADER_LEN, frame.len() - 1] {
        assert_eq!(
            refusal(&frame[..len], |s| s.truncated),
            WireError::Truncated,
            "{len} bytes"
        );
    }
}

#[test]
fn a_frame_over_the_limit_is_refused_before_it_is_read() {
    // Not even a header: the size alone condemns it.
    let flood = vec![0u8; DEFAULT_MAX_FRAME_LEN + 1];
    assert_eq!(
        refusal(&flood, |s| s.too_large),
        WireError::TooLarge {
            len: DEFAULT_MAX_FRAME_LEN + 1,
            max: DEFAULT_MAX_FRAME_LEN
        }
    );

    let mut small = codec(1);
    small.set_max_frame_len(MIN_FRAME_LEN).unwrap();
    let frame = frame_from_5_to_1(&heartbeat());
    assert!(matches!(
        small.decode(&frame),
        Err(WireError::TooLarge { .. })
    ));
    assert_eq!(small.stats().too_large, 1);
}

#[test]
fn a_frame_of_another_protocol_has_bad_magic() {
    let mut frame = frame_from_5_to_1(&heartbeat());
    frame[..4].copy_from_slice(b"HTTP");
    assert_eq!(refusal(&frame, |s| s.bad_magic), WireError::BadMagic);
}

#[test]
fn a_frame_from_a_future_version_is_unsupported() {
    let mut frame = frame_from_5_to_1(&heartbeat());
    frame[4] = 2;
    assert_eq!(
        refusal(&frame, |s| s.unsupported_version),
        WireError::UnsupportedVersion(2)
    );
    let mut flagged = frame_from_5_to_1(&heartbeat());
    flagged[5] = 0x80;
    assert_eq!(
        refusal(&flagged, |s| s.unsupported_version),
        WireError::UnsupportedVersion(VERSION)
    );
}

#[test]
fn bytes_after_the_tag_are_refused() {
    let mut frame = frame_from_5_to_1(&heartbeat());
    frame.push(0);
    assert_eq!(
        refusal(&frame, |s| s.trailing_bytes),
        WireError::TrailingBytes
    );
}

#[test]
fn a_frame_from_another_cluster_is_refused_even_with_the_same_key() {
    let mut neighbour =
        Codec::new(ClusterId(7), NodeId(5), Incarnation(1), MEMBERS, hmac()).expect("valid setup");
    let mut frame = Vec::new();
    neighbour
        .encode(NodeId(1), &heartbeat(), &mut frame)
        .unwrap();
    assert_eq!(
        refusal(&frame, |s| s.wrong_cluster),
        WireError::WrongCluster(ClusterId(7))
    );
}

#[test]
fn a_frame_redirected_to_another_node_is_refused() {
    // 5 tells 2 to take over; an attacker forwards the frame to 1 instead.
    let mut frame = Vec::new();
    codec(5)
        .encode(NodeId(2), &Message::Takeover { term: Term(9) }, &mut frame)
        .unwrap();
    assert_eq!(
        refusal(&frame, |s| s.wrong_recipient),
        WireError::WrongRecipient(NodeId(2))
    );
}

#[test]
fn a_frame_under_a_key_id_not_configured_is_an_unknown_key() {
    let mut frame = Vec::new();
    codec_with(5, 1, Auth::hmac(key(9, SECRET)))
        .encode(NodeId(1), &heartbeat(), &mut frame)
        .unwrap();
    assert_eq!(
        refusal(&frame, |s| s.unknown_key),
        WireError::UnknownKey(KeyId(9))
    );
}

#[test]
fn an_unauthenticated_frame_is_refused_where_a_key_is_configured_and_vice_versa() {
    let mut plain = Vec::new();
    codec_with(5, 1, Auth::None)
        .encode(NodeId(1), &heartbeat(), &mut plain)
        .unwrap();
    assert_eq!(
        refusal(&plain, |s| s.unknown_key),
        WireError::UnknownKey(KeyId::NONE)
    );

    let signed = frame_from_5_to_1(&heartbeat());
    let mut open = codec_with(1, 1, Auth::None);
    assert_eq!(open.decode(&signed), Err(WireError::UnknownKey(KeyId(1))));
    assert_eq!(open.stats().unknown_key, 1);
}

#[test]
fn a_forged_coordinator_from_a_made_up_key_has_a_bad_tag() {
    // The attacker knows the layout and the key id, not the secret.
    let mut forger = codec_with(5, 1, Auth::hmac(key(1, OTHER_SECRET)));
    let mut frame = Vec::new();
    forger
        .encode(
            NodeId(1),
            &Message::Coordinator {
                term: Term(1 << 40),
            },
            &mut frame,
        )
        .unwrap();
    assert_eq!(refusal(&frame, |s| s.bad_tag), WireError::BadTag);
}

#[test]
fn a_frame_replayed_by_an_attacker_is_refused_the_second_time() {
    let frame = frame_from_5_to_1(&heartbeat());
    let mut receiver = codec(1);
    assert_eq!(receiver.decode(&frame), Ok((NodeId(5), heartbeat())));
    assert_eq!(
        receiver.decode(&frame),
        Err(WireError::Replayed {
            sender: NodeId(5),
            incarnation: Incarnation(1),
            sequence: 0
        })
    );
    let stats = receiver.stats();
    assert_eq!(
        (stats.accepted, stats.replayed, stats.rejected()),
        (1, 1, 1)
    );
}

#[test]
fn an_authentic_body_that_is_not_a_message_is_malformed() {
    let auth = hmac();
    let mut ring_too_long = vec![7, 1, 2, 6]; // RingElection, term 1, from 2, six ids
    ring_too_long.extend([1, 2, 3, 5, 8, 8]);
    let bodies: [(&str, Vec<u8>); 6] = [
        ("empty", vec![]),
        ("an unknown variant", vec![0x7f, 1]),
        (
            "a varint that never ends",
            vec![3, 0xff, 0xff, 0xff, 0xff, 0xff],
        ),
        ("a message and then junk", vec![3, 1, 0, 0]),
        // A list claiming four billion ids in a few bytes: refused, not allocated.
        (
            "a lying length",
            vec![7, 1, 2, 0xff, 0xff, 0xff, 0xff, 0x0f, 1],
        ),
        ("a ring list longer than the membership", ring_too_long),
    ];
    for (sequence, (what, body)) in (0..).zip(bodies) {
        let frame = seal(&auth, header_from(5, sequence), &body);
        assert_eq!(
            refusal(&frame, |s| s.malformed_body),
            WireError::MalformedBody,
            "{what}"
        );
    }
}

#[test]
fn a_key_holder_outside_the_membership_is_not_a_member() {
    let auth = hmac();
    let body = postcard::to_allocvec(&heartbeat()).unwrap();
    let stranger = seal(&auth, header_from(99, 0), &body);
    assert_eq!(
        refusal(&stranger, |s| s.not_member),
        WireError::NotMember(NodeId(99))
    );
    // Nor may anyone speak as the receiver itself.
    let impostor = seal(&auth, header_from(1, 0), &body);
    assert_eq!(
        refusal(&impostor, |s| s.not_member),
        WireError::NotMember(NodeId(1))
    );
}

#[test]
fn a_codec_refuses_to_send_what_no_peer_would_accept() {
    let mut sender = codec(5);
    let mut frame = Vec::new();
    assert_eq!(
        sender.encode(NodeId(99), &heartbeat(), &mut frame),
        Err(WireError::NotMember(NodeId(99)))
    );
    assert_eq!(
        sender.encode(NodeId(5), &heartbeat(), &mut frame),
        Err(WireError::NotMember(NodeId(5)))
    );
    sender.set_max_frame_len(MIN_FRAME_LEN).unwrap();
    let ring = one_of_each_kind().pop().unwrap();
    assert!(matches!(
        sender.encode(NodeId(1), &ring, &mut frame),
        Err(WireError::TooLarge { .. })
    ));
    assert!(frame.is_empty(), "no half-written frame is left behind");
    assert_eq!(
        sender.next_sequence(),
        Some(0),
        "failures use no sequence number"
    );

    sender.set_max_frame_len(DEFAULT_MAX_FRAME_LEN).unwrap();
    sender.exhaust_sequence_for_test();
    assert_eq!(
        sender.encode(NodeId(1), &heartbeat(), &mut frame),
        Ok(()),
        "the last number is usable"
    );
    assert_eq!(
        sender.encode(NodeId(1), &heartbeat(), &mut frame),
        Err(WireError::SequenceExhausted)
    );
}

#[test]
fn bad_setups_are_refused() {
    assert_eq!(
        Key::new(KeyId(1), &SECRET[..MIN_KEY_LEN - 1]).map(|_| ()),
        Err(SetupError::KeyTooShort {
            len: MIN_KEY_LEN - 1,
            min: MIN_KEY_LEN
        })
    );
    assert_eq!(
        Key::new(KeyId::NONE, SECRET).map(|_| ()),
        Err(SetupError::ReservedKeyId)
    );
    let same_id = Auth::Hmac {
        current: key(1, SECRET),
        previous: Some(key(1, OTHER_SECRET)),
    };
    assert_eq!(
        Codec::new(CLUSTER, NodeId(1), Incarnation(1), MEMBERS, same_id).map(|_| ()),
        Err(SetupError::DuplicateKeyId(KeyId(1)))
    );
    assert_eq!(
        Codec::new(CLUSTER, NodeId(4), Incarnation(1), MEMBERS, hmac()).map(|_| ()),
        Err(SetupError::Members(crate::ConfigError::MissingSelf(
            NodeId(4)
        )))
    );
    let mut codec = codec(1);
    assert_eq!(
        codec.set_max_frame_len(MAX_FRAME_LEN + 1),
        Err(SetupError::FrameLimit(MAX_FRAME_LEN + 1))
    );
    assert_eq!(
        codec.set_max_frame_len(MIN_FRAME_LEN - 1),
        Err(SetupError::FrameLimit(MIN_FRAME_LEN - 1))
    );
    assert!(!format!("{:?}", key(1, SECRET)).contains("secret"));
}

// ---------------------------------------------------------------------------
// Tampering

/// Every single-bit change to an authentic frame is caught, wherever it lands:
/// header, body or tag, with or without a key.
#[test]
fn a_flipped_bit_anywhere_in_a_frame_is_always_rejected() {
    for auth in [hmac(), Auth::None] {
        for message in one_of_each_kind() {
            let mut frame = Vec::new();
            codec_with(5, 1, auth.clone())
                .encode(NodeId(1), &message, &mut frame)
                .unwrap();
            for bit in 0..frame.len() * 8 {
                let mut tampered = frame.clone();
                tampered[bit / 8] ^= 1 << (bit % 8);
                let mut receiver = codec_with(1, 1, auth.clone());
                assert!(
                    receiver.decode(&tampered).is_err(),
                    "{message}: bit {bit} flipped went unnoticed"
                );
                assert_eq!(receiver.stats().rejected(), 1);
                assert_eq!(receiver.decode(&frame), Ok((NodeId(5), message.clone())));
            }
        }
    }
}

/// A frame an attacker might send, from pure noise to an authentic frame with
/// one byte changed, to reach every check.
fn hostile_frame() -> impl Strategy<Value = Vec<u8>> {
    let noise = prop::collection::vec(any::<u8>(), 0..160);
    let behind_a_valid_prelude = (any::<u16>(), prop::collection::vec(any::<u8>(), 0..160))
        .prop_map(|(body_len, rest)| {
            let mut frame = MAGIC.to_vec();
            frame.extend([VERSION, 0]);
            frame.extend((body_len % 96).to_be_bytes());
            frame.extend(rest);
            frame
        });
    // Authentic garbage: a key holder's random body, so postcard sees it.
    let sealed_noise = (0..10u64, 0..3u64, prop::collection::vec(any::<u8>(), 0..64))
        .prop_map(|(sender, sequence, body)| seal(&hmac(), header_from(sender, sequence), &body));
    let mutated =
        (message(), any::<prop::sample::Index>(), any::<u8>()).prop_map(|(message, at, byte)| {
            let mut frame = frame_from_5_to_1(&message);
            let at = at.index(frame.len());
            frame[at] = byte;
            frame
        });
    prop_oneof![noise, behind_a_valid_prelude, sealed_noise, mutated]
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(fuzz_cases())
    })]

    #[test]
    fn random_bytes_never_panic_and_nothing_unsound_gets_through(frame in hostile_frame()) {
        let mut receiver = codec(1);
        let before = receiver.stats();
        match receiver.decode(&frame) {
            Ok((from, message)) => {
                prop_assert!(MEMBERS.contains(&from) && from != NodeId(1));
                if let Message::RingElection { active, .. }
                | Message::RingCoordinator { active, .. } = &message
                {
                    prop_assert!(active.len() <= MEMBERS.len());
                }
                prop_assert_eq!(receiver.stats().accepted, before.accepted + 1);
            }
            Err(_) => prop_assert_eq!(receiver.stats().rejected(), 1),
        }
        let _ = frame_len(&frame);
    }
}

// ---------------------------------------------------------------------------
// Replays, reordering, restarts

fn frames_from_5(sender: &mut Codec, count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|n| {
            let mut frame = Vec::new();
            let term = Term(n as u64);
            sender
                .encode(
                    NodeId(1),
                    &Message::Heartbeat { term, round: 1 },
                    &mut frame,
                )
                .unwrap();
            frame
        })
        .collect()
}

proptest! {
    #[test]
    fn frames_reordered_within_the_window_are_each_accepted_once(
        order in Just((0..40usize).collect::<Vec<_>>()).prop_shuffle()
    ) {
        let frames = frames_from_5(&mut codec(5), 40);
        let mut receiver = codec(1);
        for &n in &order {
            prop_assert!(receiver.decode(&frames[n]).is_ok(), "frame {} arrives late", n);
        }
        for &n in &order {
            let replayed = matches!(receiver.decode(&frames[n]), Err(WireError::Replayed { .. }));
            prop_assert!(replayed, "frame {} comes back", n);
        }
        prop_assert_eq!(receiver.stats().accepted, 40);
        prop_assert_eq!(receiver.stats().replayed, 40);
    }
}

#[test]
fn a_frame_older_than_the_window_is_refused_even_if_never_seen() {
    let frames = frames_from_5(&mut codec(5), REPLAY_WINDOW as usize + 1);
    let mut receiver = codec(1);
    assert!(receiver.decode(&frames[REPLAY_WINDOW as usize]).is_ok());
    assert!(matches!(
        receiver.decode(&frames[0]),
        Err(WireError::Replayed { sequence: 0, .. })
    ));
    assert!(
        receiver.decode(&frames[1]).is_ok(),
        "the oldest still inside"
    );
}

#[test]
fn a_restarted_sender_with_a_higher_incarnation_is_accepted_and_its_old_life_is_not() {
    let mut receiver = codec(1);
    let old_life = frames_from_5(&mut codec_with(5, 1_700_000_000_000, hmac()), 3);
    assert!(receiver.decode(&old_life[0]).is_ok());

    // 5 restarts: sequence numbers start again at 0, under a later incarnation.
    let restarted = Incarnation::from_unix_millis(1_700_000_000_000 + 5_000);
    let mut sender = codec_with(5, restarted.0, hmac());
    let new_life = frames_from_5(&mut sender, 2);
    assert_eq!(
        receiver.decode(&new_life[0]).map(|(from, _)| from),
        Ok(NodeId(5))
    );
    assert_eq!(receiver.peer_incarnation(NodeId(5)), Some(restarted));

    // Frames of the old life, even ones never delivered, are now replays.
    assert!(matches!(
        receiver.decode(&old_life[1]),
        Err(WireError::Replayed { .. })
    ));
    assert!(receiver.decode(&new_life[1]).is_ok());
}

#[test]
fn an_incarnation_from_the_clock_grows_and_saturates() {
    use core::time::Duration;
    let boot = Incarnation::from_duration_since_epoch(Duration::from_millis(1_700_000_000_123));
    assert_eq!(boot, Incarnation::from_unix_millis(1_700_000_000_123));
    assert!(
        Incarnation::from_duration_since_epoch(Duration::from_millis(1_700_000_000_124)) > boot
    );
    assert_eq!(
        Incarnation::from_duration_since_epoch(Duration::MAX),
        Incarnation(u64::MAX)
    );
    assert_eq!(Incarnation(u64::MAX).next(), Incarnation(u64::MAX));
    assert_eq!(Incarnation(4).next(), Incarnation(5));
}

// ---------------------------------------------------------------------------
// Key rotation

#[test]
fn a_three_step_key_rotation_never_refuses_a_frame() {
    let old = || key(1, SECRET);
    let new = || key(2, OTHER_SECRET);
    let steps = [
        Auth::hmac(old()),
        Auth::Hmac {
            current: old(),
            previous: Some(new()),
        },
        Auth::Hmac {
            current: new(),
            previous: Some(old()),
        },
        Auth::hmac(new()),
    ];
    let mut sender = codec(5);
    let mut receiver = codec(1);
    let mut frame = Vec::new();
    // Each step rolls out to the sender first, then the receiver: between the two,
    // they run adjacent steps, and must still understand each other.
    for pair in steps.windows(2) {
        sender.set_auth(pair[1].clone()).unwrap();
        sender.encode(NodeId(1), &heartbeat(), &mut frame).unwrap();
        assert!(receiver.decode(&frame).is_ok(), "sender one step ahead");
        receiver.set_auth(pair[1].clone()).unwrap();
        sender.set_auth(pair[0].clone()).unwrap();
        sender.encode(NodeId(1), &heartbeat(), &mut frame).unwrap();
        assert!(receiver.decode(&frame).is_ok(), "receiver one step ahead");
        sender.set_auth(pair[1].clone()).unwrap();
    }
    // Once retired, the old key is refused.
    let mut stale = codec(5);
    stale.encode(NodeId(1), &heartbeat(), &mut frame).unwrap();
    assert_eq!(
        receiver.decode(&frame),
        Err(WireError::UnknownKey(KeyId(1)))
    );
}

#[test]
fn a_member_added_at_runtime_is_heard_and_a_removed_one_is_refused() {
    let members = [NodeId(1), NodeId(6)];
    let mut newcomer = Codec::new(CLUSTER, NodeId(6), Incarnation(1), members, hmac()).unwrap();
    let mut receiver = codec(1);
    let mut frame = Vec::new();
    newcomer
        .encode(NodeId(1), &heartbeat(), &mut frame)
        .unwrap();
    // Before it is added, 6 is a stranger.
    assert_eq!(
        receiver.decode(&frame),
        Err(WireError::NotMember(NodeId(6)))
    );
    assert!(
        receiver
            .encode(NodeId(6), &heartbeat(), &mut Vec::new())
            .is_err()
    );

    receiver.add_member(NodeId(6)).unwrap();
    assert_eq!(
        receiver.add_member(NodeId(6)),
        Err(ConfigError::DuplicateMember(NodeId(6)).into())
    );
    newcomer
        .encode(NodeId(1), &heartbeat(), &mut frame)
        .unwrap();
    assert_eq!(receiver.decode(&frame), Ok((NodeId(6), heartbeat())));
    receiver
        .encode(NodeId(6), &heartbeat(), &mut Vec::new())
        .unwrap();

    receiver.remove_member(NodeId(6)).unwrap();
    newcomer
        .encode(NodeId(1), &heartbeat(), &mut frame)
        .unwrap();
    assert_eq!(
        receiver.decode(&frame),
        Err(WireError::NotMember(NodeId(6)))
    );
    assert_eq!(
        receiver.encode(NodeId(6), &heartbeat(), &mut Vec::new()),
        Err(WireError::NotMember(NodeId(6)))
    );
    assert_eq!(
        receiver.remove_member(NodeId(6)),
        Err(SetupError::NotMember(NodeId(6)))
    );
    assert_eq!(
        receiver.remove_member(NodeId(1)),
        Err(ConfigError::MissingSelf(NodeId(1)).into())
    );
    assert_eq!(receiver.members(), &MEMBERS);
}
