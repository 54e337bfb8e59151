//! Round trips and sizes: every message survives encoding, each kind has its documented size and layout.

use super::*;

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
    // Small terms, rounds and ids are one varint byte each, and an absent
    // successor one byte more; the ring lists hold three ids.
    let expected = [86, 86, 87, 87, 87, 87, 86, 91, 92];
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
        "03",                                                               // version
        "00",                                                               // reserved
        "0003",                                                             // body length
        "00000000b0117ec0",                                                 // cluster id
        "00000001",                                                         // key id
        "0000000000000005",                                                 // sender
        "0000000000000001",                                                 // recipient
        "0000000000000001",                                                 // incarnation
        "0000000000000000",                                                 // sequence
        "030301", // body: postcard Heartbeat (variant 3), term 3, round 1
        "caff82fa2be2852f27aaf8e52c8751d4cb1bf38854f17c918d6730412a789f37", // tag
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
