//! The bodies of the fuzz targets: plain functions of the fuzzer's bytes.
//!
//! libFuzzer calls them through `fuzz/fuzz_targets/*.rs` (nightly, `cargo fuzz run`);
//! `bully-core/tests/fuzz_corpus.rs` includes this file and calls them on every
//! committed input under `fuzz/corpus/<target>/`, so stable CI runs each target
//! too. Each function reads its choices from the bytes with
//! [`arbitrary::Unstructured`]; running out of bytes ends the run quietly. A panic
//! is a bug: either in the crate, or a broken invariant the target asserts.

use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Result, Unstructured};
use bully_core::sim::chaos::Action;
use bully_core::sim::{Simulation, TraceEntry};
use bully_core::wire::{
    Auth, ClusterId, Codec, HEADER_LEN, Incarnation, Key, KeyId, MAGIC, MAX_FRAME_LEN,
    MIN_FRAME_LEN, VERSION, WireError,
};
use bully_core::{
    Algorithm, Config, DurableState, Event, FencingToken, Membership, Message, Node, NodeId,
    Preemption, Quorum, Term,
};

/// Whether `BULLY_FUZZ_TRACE` is set: the targets then print what they do.
fn tracing() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("BULLY_FUZZ_TRACE").is_some())
}

// ----- decode -----

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
        let frame = match u.int_in_range(0..=2)? {
            0 => Vec::<u8>::arbitrary(u)?,
            1 => sealed_frame(u, keyed)?,
            _ => mutated_frame(u, keyed)?,
        };
        check_decode(&mut receiver, keyed, &frame);
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
/// cut or added.
fn mutated_frame(u: &mut Unstructured<'_>, keyed: bool) -> Result<Vec<u8>> {
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
    let _ = sender.encode(RECEIVER, &message, &mut frame);
    for _ in 0..u.int_in_range(0..=3)? {
        match u.int_in_range(0..=2)? {
            0 if !frame.is_empty() => {
                let at = u.choose_index(frame.len())?;
                frame[at] ^= u8::arbitrary(u)?;
            }
            1 => frame.truncate(u.int_in_range(0..=frame.len())?),
            _ => frame.push(u8::arbitrary(u)?),
        }
    }
    Ok(frame)
}

fn check_decode(receiver: &mut Codec, keyed: bool, frame: &[u8]) {
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

// ----- node -----

/// Inputs one `node` run feeds.
const MAX_INPUTS: usize = 512;
/// The node's timers (`Timer::ALL` in `bully-core/src/timer.rs`): the bound on what
/// one `handle_timeout` may send is the per-input bound per expired timer.
const TIMERS: usize = 7;

/// One `Node` with an arbitrary valid configuration, fed an arbitrary sequence of
/// inputs: messages from members, from itself and from strangers, with terms near
/// its own or near `u64::MAX`; timeouts when due, early, late, or in the past;
/// time running backwards; every command; restarts with and without the durable
/// state.
///
/// After every input: the term and the highest accepted fencing token never
/// decrease (within one incarnation; a durable restart keeps them), no leadership
/// below that token is accepted, nothing is sent to the node itself or to a
/// non-member, one input queues at most `members().len()` transmits (per expired
/// timer for `handle_timeout`), and after `handle_timeout(now)` the next deadline
/// is `None` or later than `now`.
pub fn node(data: &[u8]) {
    let _ = drive_node(&mut Unstructured::new(data));
}

/// A member list as a caller might give one: small ids mostly, sometimes huge
/// ones, sometimes a repeat.
fn member_list(u: &mut Unstructured<'_>) -> Result<Vec<NodeId>> {
    let len = u.int_in_range(1..=6)?;
    let mut ids = Vec::with_capacity(len);
    for _ in 0..len {
        ids.push(match u.int_in_range(0..=7)? {
            0 => NodeId(u64::MAX - u64::from(u.int_in_range(0..=2u8)?)),
            1 => NodeId::arbitrary(u)?,
            _ => NodeId(u64::from(u.int_in_range(0..=8u8)?)),
        });
    }
    Ok(ids)
}

/// A duration a configuration might hold: small and plausible, zero, the maximum,
/// just past it, or anything.
fn duration(u: &mut Unstructured<'_>) -> Result<Duration> {
    Ok(match u.int_in_range(0..=7)? {
        0 => Duration::ZERO,
        1 => Config::MAX_DURATION,
        2 => Config::MAX_DURATION + Duration::from_nanos(1),
        3 => Duration::arbitrary(u)?,
        4 => Duration::from_nanos(u64::from(u.int_in_range(1..=1000u16)?)),
        _ => Duration::from_millis(u64::from(u.int_in_range(1..=2000u16)?)),
    })
}

/// An arbitrary configuration, built through its public setters; valid or not.
fn config(u: &mut Unstructured<'_>, members: &[NodeId]) -> Result<Config> {
    let mut config = Config::default()
        .with_algorithm(Algorithm::arbitrary(u)?)
        .with_stagger_detection(bool::arbitrary(u)?);
    config = config.with_preemption(match u.int_in_range(0..=2)? {
        0 => Preemption::Always,
        1 => Preemption::Never,
        _ => Preemption::AfterStable(duration(u)?),
    });
    config = config.with_quorum(match u.int_in_range(0..=3)? {
        0 | 1 => Quorum::None,
        2 => Quorum::Majority,
        _ => Quorum::AtLeast(u.int_in_range(0..=7)?),
    });
    if u.ratio(1, 4)? {
        config = config.with_heartbeat_interval(duration(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_leader_timeout(duration(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_max_message_delay(duration(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_max_processing_time(duration(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_answer_timeout(duration(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_coordinator_timeout(duration(u)?);
    }
    if u.ratio(1, 4)? {
        config = config.with_max_term_lead(match u.int_in_range(0..=2)? {
            0 => u64::arbitrary(u)?,
            _ => u64::from(u.int_in_range(0..=4u8)?),
        });
    }
    if u.ratio(1, 4)? {
        let drift = match u.int_in_range(0..=3)? {
            0 => f64::arbitrary(u)?,
            1 => 0.1,
            2 => 0.0,
            _ => f64::from(u.int_in_range(0..=100u8)?) / 1000.0,
        };
        config = config.with_clock_drift(drift);
    }
    if u.ratio(1, 4)? {
        let mut observers = Vec::new();
        for &id in members {
            if bool::arbitrary(u)? {
                observers.push(id);
            }
        }
        config = config
            .with_observers(observers)
            .with_observers_vote(bool::arbitrary(u)?);
    }
    Ok(config)
}

/// Every derived duration of a configuration, valid or not: none may panic.
fn exercise_config(config: &Config, members: usize) {
    let _ = config.validate();
    let _ = config.round_trip();
    let _ = config.answer_timeout();
    let _ = config.coordinator_timeout();
    let _ = config.flag_timeout();
    let _ = config.stagger_step();
    let _ = config.follower_lease();
    let _ = config.leader_lease();
    let _ = config.failover_bound(members);
    let _ = config.settle_bound(members);
    let _ = config.ring_timeout(members, members.saturating_sub(1));
    let _ = config.leader_timeout_at_rank(members.saturating_sub(1));
    let _ = config.quorum_size(members);
}

/// What the target knows of the node under test, to check the next input against.
struct Observed {
    /// The latest instant fed to this incarnation.
    clock: Option<Instant>,
    term: Term,
    highest: Option<FencingToken>,
}

impl Observed {
    fn of(node: &Node) -> Observed {
        Observed {
            clock: None,
            term: node.term(),
            highest: node.highest_token(),
        }
    }

    /// The instant the node takes `now` for: time never runs backwards inside it.
    fn feed(&mut self, now: Instant) -> Instant {
        let now = self.clock.map_or(now, |clock| clock.max(now));
        self.clock = Some(now);
        now
    }
}

/// What one input is allowed to queue, per expired timer for a timeout.
#[derive(Clone, Copy)]
enum Bound {
    Input,
    Timeout,
}

fn drive_node(u: &mut Unstructured<'_>) -> Result<()> {
    let members = member_list(u)?;
    let id = if u.ratio(1, 16)? {
        NodeId::arbitrary(u)?
    } else {
        *u.choose(&members)?
    };
    let config = config(u, &members)?;
    let trace = tracing();
    if trace {
        eprintln!("node {id} of {members:?}: {config:?}");
    }
    exercise_config(&config, members.len());
    let expected = Membership::new(members.iter().copied()).and_then(|membership| {
        if !membership.ids().contains(&id) {
            return Err(bully_core::ConfigError::MissingSelf(id));
        }
        config.validate_for(membership.ids())
    });
    let built = Node::new(id, members.iter().copied(), config.clone());
    assert_eq!(
        built.is_ok(),
        expected.is_ok(),
        "Node::new agrees with the validation: {built:?} vs {expected:?}"
    );
    let Ok(mut node) = built else {
        return Ok(());
    };
    let mut now = Instant::now();
    let mut seen = Observed::of(&node);
    for _ in 0..MAX_INPUTS {
        if u.is_empty() {
            break;
        }
        let input = node_input(u, &node, now)?;
        if trace {
            eprintln!("  {input:?}");
        }
        let members_before = node.members().len();
        let bound = match input {
            Input::Message { from, message } => {
                node.handle_message(seen.feed(now), from, message);
                Bound::Input
            }
            Input::Timeout { at } => {
                now = now.max(at);
                timeout(&mut node, &mut seen, at);
                Bound::Timeout
            }
            Input::Clock { to } => {
                now = to;
                continue;
            }
            Input::Start => {
                node.start(seen.feed(now));
                Bound::Input
            }
            Input::StartElection => {
                node.start_election(seen.feed(now));
                Bound::Input
            }
            Input::StepDown => {
                let leading = node.role() == bully_core::Role::Leader;
                assert_eq!(node.step_down(seen.feed(now)), leading);
                Bound::Input
            }
            Input::Suspect(member) => {
                let result = node.suspect(seen.feed(now), member);
                let known = member != node.id() && node.members().contains(&member);
                assert_eq!(result.is_ok(), known, "suspect {member}: {result:?}");
                Bound::Input
            }
            Input::AddMember(member) => {
                let _ = node.add_member(seen.feed(now), member);
                Bound::Input
            }
            Input::RemoveMember(member) => {
                let _ = node.remove_member(seen.feed(now), member);
                Bound::Input
            }
            Input::Restart { durable } => {
                let state = node.durable_state();
                let members = node.members().to_vec();
                let restarted = if durable {
                    Node::with_durable_state(id, members.clone(), config.clone(), state)
                } else {
                    Node::new(id, members.clone(), config.clone())
                };
                // Membership changes at runtime are not validated against the
                // quorum (a removal can leave too few voters): a restart with the
                // changed membership is refused as `validate_for` refuses it.
                node = match restarted {
                    Ok(node) => node,
                    Err(error) => {
                        assert_eq!(config.validate_for(&members), Err(error));
                        continue;
                    }
                };
                if durable {
                    assert_eq!(node.durable_state(), state);
                    // The term persisted; the accepted token lives in memory only.
                    seen = Observed {
                        highest: node.highest_token(),
                        ..seen
                    };
                } else {
                    seen = Observed::of(&node);
                }
                continue;
            }
            Input::Restore(state) => {
                node.restore(state);
                Bound::Input
            }
        };
        check_outputs(&mut node, &mut seen, bound, members_before);
    }
    Ok(())
}

/// One input to the node under test.
#[derive(Debug)]
enum Input {
    Message {
        from: NodeId,
        message: Message,
    },
    /// `handle_timeout(at)`: when due, just before or after, or in the past.
    Timeout {
        at: Instant,
    },
    /// The caller's clock moves (or, for a confused caller, runs backwards).
    Clock {
        to: Instant,
    },
    Start,
    StartElection,
    StepDown,
    Suspect(NodeId),
    AddMember(NodeId),
    RemoveMember(NodeId),
    /// A new incarnation, from the durable state or from nothing.
    Restart {
        durable: bool,
    },
    Restore(DurableState),
}

fn node_input(u: &mut Unstructured<'_>, node: &Node, now: Instant) -> Result<Input> {
    Ok(match u.int_in_range(0..=15)? {
        0..=4 => Input::Message {
            from: sender(u, node)?,
            message: message(u, node)?,
        },
        5 | 6 => Input::Timeout {
            at: nudge(u, node.poll_timeout().unwrap_or(now))?,
        },
        7 => Input::Timeout { at: nudge(u, now)? },
        8 => Input::Clock { to: nudge(u, now)? },
        9 => Input::Start,
        10 => Input::StartElection,
        11 => Input::StepDown,
        12 => Input::Suspect(sender(u, node)?),
        13 => {
            let member = sender(u, node)?;
            if bool::arbitrary(u)? {
                Input::AddMember(member)
            } else {
                Input::RemoveMember(member)
            }
        }
        14 => Input::Restart {
            durable: bool::arbitrary(u)?,
        },
        _ => {
            let term = term_near(u, node.term())?;
            let vote = if bool::arbitrary(u)? {
                Some((term_near(u, node.term())?, sender(u, node)?))
            } else {
                None
            };
            Input::Restore(DurableState { term, vote })
        }
    })
}

fn timeout(node: &mut Node, seen: &mut Observed, at: Instant) {
    let now = seen.feed(at);
    node.handle_timeout(now);
    assert!(
        node.poll_timeout().is_none_or(|next| next > now),
        "after handle_timeout(now) the next deadline lies ahead: {:?} <= {:?}",
        node.poll_timeout(),
        now
    );
}

/// An instant near `at`: the same, a little before or after, or much later.
fn nudge(u: &mut Unstructured<'_>, at: Instant) -> Result<Instant> {
    let delta = Duration::from_micros(u64::from(u16::arbitrary(u)?));
    Ok(match u.int_in_range(0..=7)? {
        0 => at,
        1 => at.checked_sub(delta).unwrap_or(at),
        2 => at + Duration::from_secs(u64::from(u.int_in_range(0..=100_000u32)?)),
        _ => at + delta,
    })
}

/// Who a message claims to come from: a member, the node itself, or a stranger.
fn sender(u: &mut Unstructured<'_>, node: &Node) -> Result<NodeId> {
    Ok(match u.int_in_range(0..=9)? {
        0 => node.id(),
        1 => NodeId::arbitrary(u)?,
        2 => NodeId(u64::from(u.int_in_range(0..=9u8)?)),
        _ => *u.choose(node.members())?,
    })
}

/// A term relative to `term`: the same, a little ahead or behind, far ahead, near
/// the end of the range, or anything.
fn term_near(u: &mut Unstructured<'_>, term: Term) -> Result<Term> {
    let small = u64::from(u.int_in_range(0..=3u8)?);
    Ok(Term(match u.int_in_range(0..=7)? {
        0 => term.0.saturating_sub(small),
        1 => u64::MAX - small,
        2 => u64::arbitrary(u)?,
        3 => term.0.saturating_add(1 << 20).saturating_add(small),
        _ => term.0.saturating_add(small),
    }))
}

/// A message a peer might send `node`, ring lists of members and strangers included.
fn message(u: &mut Unstructured<'_>, node: &Node) -> Result<Message> {
    let term = term_near(u, node.term())?;
    let round = if bool::arbitrary(u)? {
        u64::arbitrary(u)?
    } else {
        u64::from(u.int_in_range(0..=9u8)?)
    };
    let mut active = Vec::new();
    for _ in 0..u.int_in_range(0..=node.members().len() + 1)? {
        active.push(sender(u, node)?);
    }
    let initiator = if u.ratio(3, 4)? {
        active.first().copied().unwrap_or(node.id())
    } else {
        sender(u, node)?
    };
    Ok(match u.int_in_range(0..=8)? {
        0 => Message::Election { term },
        1 => Message::Answer { term },
        2 => Message::Coordinator { term },
        3 => Message::Heartbeat { term, round },
        4 => Message::Ack { term, round },
        5 => Message::Resign { term },
        6 => Message::Takeover { term },
        7 => Message::RingElection {
            term,
            initiator,
            active,
        },
        _ => Message::RingCoordinator {
            term,
            leader: sender(u, node)?,
            initiator,
            active,
        },
    })
}

fn check_outputs(node: &mut Node, seen: &mut Observed, bound: Bound, members_before: usize) {
    let fan_out = members_before.max(node.members().len());
    let limit = match bound {
        Bound::Input => fan_out,
        Bound::Timeout => fan_out * TIMERS,
    };
    let mut sent = 0;
    while let Some(transmit) = node.poll_transmit() {
        sent += 1;
        assert_ne!(transmit.to, node.id(), "sent to itself: {transmit:?}");
        assert!(
            node.members().contains(&transmit.to),
            "sent to a non-member: {transmit:?}"
        );
    }
    assert!(
        sent <= limit,
        "one input queued {sent} transmits, more than {limit}"
    );
    let floor = seen.highest;
    while let Some(event) = node.poll_event() {
        if let Event::LeaderElected { leader, term } = event {
            let token = FencingToken { term, leader };
            assert!(
                floor.is_none_or(|floor| token >= floor),
                "S3: accepted {token:?} below {floor:?}"
            );
        }
    }
    assert!(
        node.term() >= seen.term,
        "S2: term went from {} to {}",
        seen.term,
        node.term()
    );
    assert!(
        node.highest_token() >= seen.highest,
        "S2: accepted token went from {:?} to {:?}",
        seen.highest,
        node.highest_token()
    );
    if let (Some(leader), Some(floor)) = (node.leader(), floor) {
        assert!(
            leader.token() >= floor,
            "S3: follows {leader} below {floor:?}"
        );
    }
    seen.term = node.term();
    seen.highest = node.highest_token();
}

// ----- cluster -----

/// Actions one `cluster` run applies before the quiet period.
const MAX_ACTIONS: usize = 48;

/// A simulated cluster of 2 to 6 members, for each algorithm, with or without a
/// majority quorum, under every preemption policy, fed an arbitrary sequence of
/// steps: deliveries one at a time, crashes, restarts with and without state,
/// partitions, cut links, loss, duplication, jitter, time passing, wrong failure
/// detector reports, elections and step-downs on command, messages replayed
/// later (duplicated and delayed past the timing model), and forgeries from
/// strangers. S1 to S3 (and, with a quorum, exclusive leadership) hold after every
/// step; then every fault is healed, a quiet period passes, and L1 holds: every
/// live member names the highest live member (a majority of them, with a quorum;
/// under `Preemption::Never`, any one leader).
pub fn cluster(data: &[u8]) {
    let _ = drive_cluster(&mut Unstructured::new(data));
}

fn drive_cluster(u: &mut Unstructured<'_>) -> Result<()> {
    let n = u.int_in_range(2..=6u64)?;
    let algorithm = Algorithm::arbitrary(u)?;
    let quorum = bool::arbitrary(u)?;
    let preemption = match u.int_in_range(0..=3)? {
        0 => Preemption::Never,
        1 => Preemption::AfterStable(Duration::from_millis(800)),
        _ => Preemption::Always,
    };
    let config = Config::default()
        .with_algorithm(algorithm)
        .with_preemption(preemption)
        .with_quorum(if quorum {
            Quorum::Majority
        } else {
            Quorum::None
        })
        .with_stagger_detection(u.ratio(3, 4)?);
    let members: Vec<NodeId> = (1..=n).map(NodeId).collect();
    let seed = u64::arbitrary(u)?;
    let mut sim = Simulation::new(seed, members.iter().copied(), config.clone())
        .expect("a valid configuration");
    sim.enable_trace();
    sim.start_all();
    let context = |sim: &Simulation, done: &[Step]| {
        format!(
            "{algorithm:?}, quorum {quorum}, {preemption:?}, n {n}, seed {seed}: {:?}\nsteps: {done:?}",
            sim.violations()
        )
    };
    let mut done = Vec::new();
    for _ in 0..MAX_ACTIONS {
        if u.is_empty() {
            break;
        }
        let step = step(u, &members)?;
        apply(&mut sim, &step);
        done.push(step);
        assert!(sim.violations().is_empty(), "{}", context(&sim, &done));
    }
    if tracing() {
        eprintln!(
            "cluster {algorithm:?}, quorum {quorum}, {preemption:?}, n {n}: {} steps {done:?}",
            done.len()
        );
    }
    let settle = sim.heal_and_settle();
    assert!(
        sim.violations().is_empty(),
        "while settling: {}",
        context(&sim, &done)
    );
    let live = members.iter().filter(|&&id| sim.is_up(id)).count() as u64;
    let electable = live > 0 && (!quorum || live > n / 2);
    let expected = match preemption {
        Preemption::Never => settle.leader.filter(|_| electable),
        _ => sim.highest_live().filter(|_| electable),
    };
    assert!(
        settle.leader == expected && (settle.leader.is_some() == electable),
        "L1: agreed on {:?}, expected {expected:?} ({live} of {n} live): {}",
        settle.leader,
        context(&sim, &done)
    );
    Ok(())
}

/// One thing the `cluster` target does to the simulation.
#[derive(Clone, Debug)]
enum Step {
    /// A fault or command of the simulator's own vocabulary.
    Act(Action),
    /// Deliver the next message or fire the next timer.
    Deliver,
    /// Send again the `index`-th message sent so far (counted from the latest),
    /// as a duplicate delayed beyond the timing model.
    Replay(usize),
    /// A message from someone outside the cluster.
    Forge {
        from: NodeId,
        to: NodeId,
        message: Message,
    },
}

fn step(u: &mut Unstructured<'_>, members: &[NodeId]) -> Result<Step> {
    let member = |u: &mut Unstructured<'_>| -> Result<NodeId> {
        Ok(if u.ratio(1, 32)? {
            NodeId(members.len() as u64 + 1)
        } else {
            *u.choose(members)?
        })
    };
    let millis = |u: &mut Unstructured<'_>, max: u16| -> Result<Duration> {
        Ok(Duration::from_millis(u64::from(u.int_in_range(0..=max)?)))
    };
    Ok(match u.int_in_range(0..=19)? {
        0..=3 => Step::Act(Action::Advance(millis(u, 600)?)),
        4..=6 => Step::Deliver,
        7 => Step::Act(Action::Crash(member(u)?)),
        8 => Step::Act(if bool::arbitrary(u)? {
            Action::Restart(member(u)?)
        } else {
            Action::RestartDurable(member(u)?)
        }),
        9 => Step::Act(Action::Partition {
            mask: u64::arbitrary(u)?,
        }),
        10 => Step::Act(if bool::arbitrary(u)? {
            Action::Cut {
                from: member(u)?,
                to: member(u)?,
            }
        } else {
            Action::CutBoth {
                a: member(u)?,
                b: member(u)?,
            }
        }),
        11 => Step::Act(Action::Loss(u.int_in_range(0..=100)?)),
        12 => Step::Act(Action::Duplicate(u.int_in_range(0..=100)?)),
        13 => Step::Act(Action::Jitter(millis(u, 80)?)),
        14 => Step::Act(Action::Heal),
        15 => Step::Act(Action::Suspect {
            node: member(u)?,
            suspect: member(u)?,
        }),
        16 => Step::Act(if bool::arbitrary(u)? {
            Action::StartElection(member(u)?)
        } else {
            Action::StepDown(member(u)?)
        }),
        17 | 18 => Step::Replay(usize::from(u8::arbitrary(u)?)),
        _ => Step::Forge {
            from: NodeId(members.len() as u64 + 1 + u64::from(u8::arbitrary(u)?)),
            to: member(u)?,
            message: Message::arbitrary(u)?,
        },
    })
}

fn apply(sim: &mut Simulation, step: &Step) {
    match step {
        // An action naming a non-member is refused, and changes nothing.
        Step::Act(action) => {
            let _ = sim.apply(action);
        }
        Step::Deliver => {
            sim.step();
        }
        Step::Replay(back) => {
            let sent: Vec<(NodeId, NodeId, &Message)> = sim
                .trace()
                .iter()
                .rev()
                .filter_map(|record| match &record.entry {
                    TraceEntry::Send {
                        from, to, message, ..
                    } => Some((*from, *to, message)),
                    _ => None,
                })
                .collect();
            if sent.is_empty() {
                return;
            }
            let (from, to, message) = sent[back % sent.len()];
            let message = message.clone();
            if !sim.has_faulted() {
                // A copy delivered this late is a timing fault: switching loss on
                // and off tells the simulator the run left the synchronous model,
                // as a lossy link would. (Loss is 0 until then: any loss would
                // have left it already.)
                let _ = sim.apply(&Action::Loss(1));
                let _ = sim.apply(&Action::Loss(0));
            }
            let _ = sim.inject(from, to, message);
        }
        Step::Forge { from, to, message } => {
            let _ = sim.inject(*from, *to, message.clone());
        }
    }
}
