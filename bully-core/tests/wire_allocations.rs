//! The wire codec's heap use: nothing in the steady state, and never more than a
//! frame's own bytes justify, whatever its length fields claim.
//!
//! A counting global allocator (`stats_alloc`) wraps the system one; the tests
//! assert counts, not timings. Frames are built by hand from the documented layout,
//! with the tag computed here, so they reach the body decoder.

mod main_thread;

use std::alloc::System;

use bully_core::wire::{
    Auth, ClusterId, Codec, HEADER_LEN, Incarnation, Key, KeyId, MAGIC, VERSION, WireError,
};
use bully_core::{Message, NodeId, Term};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const SECRET: &[u8] = b"the cluster's 32-byte secret key";
const MEMBERS: [NodeId; 3] = [NodeId(1), NodeId(2), NodeId(3)];

fn codec(id: u64) -> Codec {
    let key = Key::new(KeyId(1), SECRET).unwrap();
    Codec::new(
        ClusterId(9),
        NodeId(id),
        Incarnation(1),
        MEMBERS,
        Auth::hmac(key),
    )
    .unwrap()
}

/// An authentic frame from 3 to 1 around `body`, as a key holder could make it.
fn sealed(sequence: u64, body: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    frame.extend(MAGIC);
    frame.extend([VERSION, 0]);
    frame.extend(u16::try_from(body.len()).unwrap().to_be_bytes());
    frame.extend(9u64.to_be_bytes()); // cluster
    frame.extend(1u32.to_be_bytes()); // key id
    frame.extend(3u64.to_be_bytes()); // sender
    frame.extend(1u64.to_be_bytes()); // recipient
    frame.extend(1u64.to_be_bytes()); // incarnation
    frame.extend(sequence.to_be_bytes());
    assert_eq!(frame.len(), HEADER_LEN);
    frame.extend(body);
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(SECRET).unwrap();
    mac.update(&frame);
    frame.extend(mac.finalize().into_bytes());
    frame
}

fn a_hand_built_frame_decodes_so_the_documented_layout_is_the_real_one() {
    // postcard: Heartbeat is variant 3, term 7 and round 1 one-byte varints.
    let frame = sealed(0, &[3, 7, 1]);
    assert_eq!(
        codec(1).decode(&frame),
        Ok((
            NodeId(3),
            Message::Heartbeat {
                term: Term(7),
                round: 1
            }
        ))
    );
}

fn heartbeats_encoded_and_decoded_allocate_nothing_once_warm() {
    let mut sender = codec(3);
    let mut receiver = codec(1);
    let mut frame = Vec::new();
    let heartbeat = Message::Heartbeat {
        term: Term(5),
        round: 1,
    };
    sender.encode(NodeId(1), &heartbeat, &mut frame).unwrap();
    receiver.decode(&frame).unwrap();

    let region = Region::new(GLOBAL);
    for _ in 0..1_000 {
        sender.encode(NodeId(1), &heartbeat, &mut frame).unwrap();
        assert_eq!(receiver.decode(&frame), Ok((NodeId(3), heartbeat.clone())));
    }
    let change = region.change();
    assert_eq!(
        (change.allocations, change.reallocations),
        (0, 0),
        "heap traffic in 1,000 heartbeats: {change:?}"
    );
}

fn a_ring_list_claiming_billions_of_ids_allocates_nothing_for_them() {
    // RingElection (7), term 1, initiator 2, then a list "of 4,294,967,295 ids"
    // followed by a few bytes: postcard sees the claim cannot fit and serde
    // reserves nothing.
    let mut body = vec![7, 1, 2, 0xff, 0xff, 0xff, 0xff, 0x0f];
    body.extend([1; 16]);
    let frame = sealed(0, &body);
    let mut receiver = codec(1);

    let region = Region::new(GLOBAL);
    assert_eq!(receiver.decode(&frame), Err(WireError::MalformedBody));
    let change = region.change();
    assert!(
        change.bytes_allocated <= 16 * 8,
        "at most the ids actually present: {change:?}"
    );
}

fn a_key_holder_cannot_make_a_receiver_reserve_more_than_its_frame_holds() {
    // The largest body a frame carries, all of it one list of one-byte ids: the
    // receiver's allocation follows the bytes present (then the list is refused for
    // being longer than the membership).
    let ids = 60_000usize;
    let mut body = vec![7, 1, 2]; // RingElection, term 1, initiator 2
    body.extend([0xe0, 0xd4, 0x03]); // varint 60,000
    body.extend(std::iter::repeat_n(1, ids));
    let frame = sealed(0, &body);
    let mut receiver = codec(1);

    let region = Region::new(GLOBAL);
    assert_eq!(receiver.decode(&frame), Err(WireError::MalformedBody));
    let change = region.change();
    assert!(
        change.bytes_allocated <= ids * size_of::<NodeId>() * 2,
        "bounded by the frame's own bytes: {change:?}"
    );
}

/// The counting allocator is process-wide, so this binary has no libtest
/// harness (`harness = false` in Cargo.toml): each case runs on the main
/// thread with no other thread alive (tests/main_thread).
fn main() {
    main_thread::run(&[
        (
            "a_hand_built_frame_decodes_so_the_documented_layout_is_the_real_one",
            a_hand_built_frame_decodes_so_the_documented_layout_is_the_real_one,
        ),
        (
            "heartbeats_encoded_and_decoded_allocate_nothing_once_warm",
            heartbeats_encoded_and_decoded_allocate_nothing_once_warm,
        ),
        (
            "a_ring_list_claiming_billions_of_ids_allocates_nothing_for_them",
            a_ring_list_claiming_billions_of_ids_allocates_nothing_for_them,
        ),
        (
            "a_key_holder_cannot_make_a_receiver_reserve_more_than_its_frame_holds",
            a_key_holder_cannot_make_a_receiver_reserve_more_than_its_frame_holds,
        ),
    ]);
}
