//! Every refusal class, each from a frame built to trigger it.

use super::*;

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
    frame[4] = VERSION + 1;
    assert_eq!(
        refusal(&frame, |s| s.unsupported_version),
        WireError::UnsupportedVersion(VERSION + 1)
    );
    let mut older = frame_from_5_to_1(&heartbeat());
    older[4] = VERSION - 1;
    assert_eq!(
        refusal(&older, |s| s.unsupported_version),
        WireError::UnsupportedVersion(VERSION - 1),
        "version 1 (before Resign named a successor) is refused, not misread"
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
                round: 0,
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
        let frame = seal(header_from(5, sequence), &body);
        assert_eq!(
            refusal(&frame, |s| s.malformed_body),
            WireError::MalformedBody,
            "{what}"
        );
    }
}

#[test]
fn a_key_holder_outside_the_membership_is_not_a_member() {
    let body = postcard::to_allocvec(&heartbeat()).unwrap();
    let stranger = seal(header_from(99, 0), &body);
    assert_eq!(
        refusal(&stranger, |s| s.not_member),
        WireError::NotMember(NodeId(99))
    );
    // Nor may anyone speak as the receiver itself.
    let impostor = seal(header_from(1, 0), &body);
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
    // The end of the sequence numbers is a unit test of the codec's
    // (src/wire/codec.rs): no public call skips 2^64 frames.
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
        Err(SetupError::Members(ConfigError::MissingSelf(NodeId(4))))
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
