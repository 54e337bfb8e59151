//! Tampering: a changed frame is always refused.

use super::*;

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
        .prop_map(|(sender, sequence, body)| seal(header_from(sender, sequence), &body));
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
