//! The `decode` target: the wire decoder (`bully_core::wire::Codec`) on raw
//! bytes, on well-formed frames with a correct tag around arbitrary bodies, and on
//! valid frames with bytes changed.

use arbitrary::{Arbitrary, Result, Unstructured};
use bully_core::wire::{
    Auth, ClusterId, Codec, HEADER_LEN, Incarnation, Key, KeyId, MAGIC, MAX_FRAME_LEN,
    MIN_FRAME_LEN, VERSION, WireError,
};
use bully_core::{Message, NodeId};

use super::tracing;

const CLUSTER: ClusterId = ClusterId(0xB011);
const SECRET: &[u8; 32] = b"the fuzzers' cluster secret, 32!";
const KEY: KeyId = KeyId(1);
const WIRE_MEMBERS: [NodeId; 3] = [NodeId(1), NodeId(2), NodeId(3)];
const RECEIVER: NodeId = NodeId(1);
/// Frames one `decode` input may feed the same receiver (so that its replay
/// windows see sequences).
const MAX_FRAMES: usize = 16;

/// The wire decoder, with and without authentication, on frames that are raw
/// bytes, well-formed frames with a correct tag around arbitrary bodies, or
/// valid frames with bytes flipped. It must never panic; what it accepts must come
/// from a member, re-encode, and decode again to the same value; and accepting a
/// frame twice is a replay.
pub fn decode(data: &[u8]) {
    let _ = decode_frames(&mut Unstructured::new(data));
}

fn auth(keyed: bool) -> Auth {
    if keyed {
        Auth::hmac(Key::new(KEY, SECRET).expect("a 32-byte secret with a non-zero id"))
    } else {
        Auth::None
    }
}

fn codec(id: NodeId, incarnation: u64, keyed: bool, max_frame_len: usize) -> Codec {
    let mut codec = Codec::new(
        CLUSTER,
        id,
        Incarnation(incarnation),
        WIRE_MEMBERS,
        auth(keyed),
    )
    .expect("a valid codec setup");
    codec
        .set_max_frame_len(max_frame_len)
        .expect("a limit within the allowed range");
    codec
}

fn decode_frames(u: &mut Unstructured<'_>) -> Result<()> {
    let keyed = bool::arbitrary(u)?;
    let max_frame_len = if bool::arbitrary(u)? {
        u.int_in_range(MIN_FRAME_LEN..=MAX_FRAME_LEN)?
    } else {
        bully_core::wire::DEFAULT_MAX_FRAME_LEN
    };
    let mut receiver = codec(RECEIVER, 1, keyed, max_frame_len);
    for _ in 0..MAX_FRAMES {
        if u.is_empty() {
            break;
        }
        let (frame, valid) = match u.int_in_range(0..=2)? {
            0 => (Vec::<u8>::arbitrary(u)?, None),
            1 => (sealed_frame(u, keyed)?, None),
            _ => mutated_frame(u, keyed)?,
        };
        check_decode(&mut receiver, keyed, &frame, valid.as_deref());
    }
    Ok(())
}

/// An id as a frame might name it: mostly a member, sometimes a stranger.
fn wire_id(u: &mut Unstructured<'_>) -> Result<NodeId> {
    Ok(match u.int_in_range(0..=7usize)? {
        0 => NodeId::arbitrary(u)?,
        pick => WIRE_MEMBERS[pick % WIRE_MEMBERS.len()],
    })
}

/// A frame with a well-formed header and a correct tag (HMAC with the cluster key,
/// or SHA-256 without one) around arbitrary header fields and body bytes: what
/// reaches the replay windows and the body decoder, which raw bytes never would.
fn sealed_frame(u: &mut Unstructured<'_>, keyed: bool) -> Result<Vec<u8>> {
    let cluster = if u.ratio(1, 8)? {
        ClusterId::arbitrary(u)?
    } else {
        CLUSTER
    };
    let key = match (u.int_in_range(0..=7)?, keyed) {
        (0, _) => KeyId::arbitrary(u)?,
        (_, true) => KEY,
        (_, false) => KeyId::NONE,
    };
    let sender = wire_id(u)?;
    let recipient = if u.ratio(1, 8)? {
        wire_id(u)?
    } else {
        RECEIVER
    };
    let incarnation = u64::from(u.int_in_range(0..=3u8)?);
    let sequence = if u.ratio(1, 4)? {
        u64::arbitrary(u)?
    } else {
        u64::from(u.int_in_range(0..=255u8)?)
    };
    let body = if bool::arbitrary(u)? {
        // A real body, then mangled a little: close to what postcard accepts.
        let mut body = encoded_body(u, keyed)?;
        for _ in 0..u.int_in_range(0..=3)? {
            if body.is_empty() {
                break;
            }
            let at = u.choose_index(body.len())?;
            body[at] = u8::arbitrary(u)?;
        }
        body
    } else {
        Vec::<u8>::arbitrary(u)?
    };
    let body = &body[..body.len().min(usize::from(u16::MAX))];
    let body_len = u16::try_from(body.len()).unwrap_or(u16::MAX);
    let mut frame = Vec::with_capacity(HEADER_LEN + body.len() + 32);
    frame.extend_from_slice(&MAGIC);
    frame.extend_from_slice(&[VERSION, 0]);
    frame.extend_from_slice(&body_len.to_be_bytes());
    frame.extend_from_slice(&cluster.0.to_be_bytes());
    frame.extend_from_slice(&key.0.to_be_bytes());
    frame.extend_from_slice(&sender.0.to_be_bytes());
    frame.extend_from_slice(&recipient.0.to_be_bytes());
    frame.extend_from_slice(&incarnation.to_be_bytes());
    frame.extend_from_slice(&sequence.to_be_bytes());
    frame.extend_from_slice(body);
    let tag = tag(keyed && key == KEY, &frame);
    frame.extend_from_slice(&tag);
    Ok(frame)
}

fn tag(keyed: bool, authenticated: &[u8]) -> [u8; 32] {
    use hmac::{KeyInit, Mac};
    use sha2::Digest;
    if keyed {
        let mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(SECRET).expect("any key length");
        mac.chain_update(authenticated)
            .finalize()
            .into_bytes()
            .into()
    } else {
        sha2::Sha256::digest(authenticated).into()
    }
}

/// The postcard body of an arbitrary message, as the codec encodes it.
fn encoded_body(u: &mut Unstructured<'_>, keyed: bool) -> Result<Vec<u8>> {
    let message = Message::arbitrary(u)?;
    let mut sender = codec(NodeId(2), 1, keyed, MAX_FRAME_LEN);
    let mut frame = Vec::new();
    if sender.encode(RECEIVER, &message, &mut frame).is_err() {
        return Ok(Vec::new());
    }
    let end = frame.len().saturating_sub(32);
    Ok(frame.get(HEADER_LEN..end).unwrap_or_default().to_vec())
}

/// A valid frame of an arbitrary message from a member, with a few bytes changed,
/// cut or added; and the valid frame it was made from (none if the message did
/// not fit in a frame).
fn mutated_frame(u: &mut Unstructured<'_>, keyed: bool) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
    let from = WIRE_MEMBERS[u.int_in_range(1..=2)?];
    let mut sender = codec(
        from,
        u64::from(u.int_in_range(0..=3u8)?),
        keyed,
        MAX_FRAME_LEN,
    );
    let message = Message::arbitrary(u)?;
    let mut frame = Vec::new();
    // Sequence numbers the receiver has or has not seen.
    for _ in 0..u.int_in_range(0..=3)? {
        let _ = sender.encode(RECEIVER, &message, &mut frame);
    }
    let valid = sender
        .encode(RECEIVER, &message, &mut frame)
        .ok()
        .map(|()| frame.clone());
    for _ in 0..u.int_in_range(0..=3)? {
        match u.int_in_range(0..=5)? {
            // A bit or a few flipped, a byte set, one removed (anywhere: header,
            // body or tag).
            0 if !frame.is_empty() => {
                let at = u.choose_index(frame.len())?;
                frame[at] ^= u8::arbitrary(u)?;
            }
            1 if !frame.is_empty() => {
                let at = u.choose_index(frame.len())?;
                frame[at] = u8::arbitrary(u)?;
            }
            2 if !frame.is_empty() => {
                let at = u.choose_index(frame.len())?;
                frame.remove(at);
            }
            // Cut short, a byte inserted, bytes appended.
            3 => frame.truncate(u.int_in_range(0..=frame.len())?),
            4 => {
                let at = u.int_in_range(0..=frame.len())?;
                frame.insert(at, u8::arbitrary(u)?);
            }
            _ => {
                for _ in 0..u.int_in_range(1..=4)? {
                    frame.push(u8::arbitrary(u)?);
                }
            }
        }
    }
    Ok((frame, valid))
}

/// Decodes `frame`, made from the valid frame `valid` (if any), and checks what
/// the receiver did with it.
fn check_decode(receiver: &mut Codec, keyed: bool, frame: &[u8], valid: Option<&[u8]>) {
    let rejected = receiver.stats().rejected();
    let Ok((from, message)) = receiver.decode(frame) else {
        assert_eq!(
            receiver.stats().rejected(),
            rejected + 1,
            "a refusal is counted"
        );
        return;
    };
    if tracing() {
        eprintln!("accepted from {from}: {message}");
    }
    // A frame changed in any way is refused. Under a key the tag is an HMAC that
    // only the cluster's members can compute; without one it is a SHA-256 of the
    // frame, which catches every change short of a recomputed checksum (and the
    // target never recomputes one for a changed frame).
    if let Some(valid) = valid {
        assert!(
            frame == valid,
            "accepted {message} from {from} in a frame changed from a valid one \
             (keyed: {keyed}):\n  valid   {valid:02x?}\n  changed {frame:02x?}"
        );
    }
    assert!(
        from != RECEIVER && WIRE_MEMBERS.contains(&from),
        "accepted a frame from {from}"
    );
    assert!(frame.len() <= receiver.max_frame_len());
    // Re-encoding what was accepted decodes to the same value.
    let mut sender = codec(from, 1, keyed, receiver.max_frame_len());
    let mut out = Vec::new();
    sender
        .encode(RECEIVER, &message, &mut out)
        .expect("what was accepted re-encodes within the same limit");
    let mut fresh = codec(RECEIVER, 1, keyed, receiver.max_frame_len());
    assert_eq!(fresh.decode(&out), Ok((from, message)));
    // The same frame again is a replay.
    assert!(
        matches!(receiver.decode(frame), Err(WireError::Replayed { .. })),
        "a frame is accepted once"
    );
}

#[cfg(test)]
mod tests {
    //! The tampering oracle fails on a hand-built case that breaks it.

    use super::*;

    /// Two valid frames from member 2 to the receiver, of sequences 1 and 2.
    fn two_frames(keyed: bool) -> (Vec<u8>, Vec<u8>) {
        let mut sender = codec(NodeId(2), 1, keyed, MAX_FRAME_LEN);
        let message = Message::Election {
            term: bully_core::Term(4),
        };
        let (mut first, mut second) = (Vec::new(), Vec::new());
        sender.encode(RECEIVER, &message, &mut first).unwrap();
        sender.encode(RECEIVER, &message, &mut second).unwrap();
        (first, second)
    }

    #[test]
    fn a_flipped_bit_anywhere_in_a_keyed_frame_is_refused() {
        let (valid, _) = two_frames(true);
        let mut receiver = codec(RECEIVER, 1, true, MAX_FRAME_LEN);
        for at in 0..valid.len() {
            let mut changed = valid.clone();
            changed[at] ^= 1 << (at % 8);
            check_decode(&mut receiver, true, &changed, Some(&valid));
        }
        assert_eq!(receiver.stats().rejected(), valid.len() as u64);
        // The valid frame itself is still accepted once.
        check_decode(&mut receiver, true, &valid, Some(&valid));
    }

    #[test]
    #[should_panic(expected = "changed from a valid one")]
    fn a_changed_frame_that_is_accepted_fails_the_check() {
        // The second frame differs from the first (its sequence and tag), and
        // the receiver accepts it: as the check sees it, a change got through.
        let (first, second) = two_frames(true);
        let mut receiver = codec(RECEIVER, 1, true, MAX_FRAME_LEN);
        check_decode(&mut receiver, true, &second, Some(&first));
    }
}
