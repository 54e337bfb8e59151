//! [`node`]: one `Node` under a sequence of inputs read from the bytes,
//! checked after every input against the sans-IO contract (S2: its term and
//! highest accepted token never decrease; S3: it accepts and follows no token
//! below that one; docs/correctness.md, section 1; where it sends, how much it
//! sends, when it next wants to be woken) and the safety core's invariants I1
//! to I6 (docs/protocol.md; `crate::invariants::check_input`), and its
//! lease against an account of the requests a quorum acknowledged (G6), and
//! its permit to work against the rules of `Node::poll_permit`.

mod config;
mod input;
mod lease;
mod permit;

use arbitrary::{Arbitrary, Result, Unstructured};
use bully_core::SafetyState;
use bully_core::{
    Config, DurableState, Event, FencingToken, Instant, Membership, Message, Node, NodeId, Quorum,
    Role, Term, Transmit,
};

use self::config::{arbitrary_config, exercise_config, expected_validation, member_list};
use self::input::{Input, node_input};
use self::lease::{LeaseView, LeaseWatch};
use self::permit::PermitWatch;
use super::tracing;
use crate::invariants;

/// Inputs one `node` run feeds.
const MAX_INPUTS: usize = 512;

/// Fuzzes one node of `members` built with `config`: the bytes choose which
/// member it is, whether it is declared a first boot, and up to 512 inputs
/// (see [the module](crate::fuzz) for the inputs and the checks). Running out
/// of bytes ends the run quietly; a broken promise panics with a message that
/// names it.
///
/// # Panics
///
/// At once, whatever `data` holds, if [`Node::new`] refuses `config` for
/// `members` (the message carries the [`ConfigError`](bully_core::ConfigError)):
/// a configuration your own code could not start with is not worth fuzzing.
/// Otherwise only on a broken promise.
///
/// # Examples
///
/// ```
/// use bully_core::{Config, NodeId, Quorum};
///
/// let config = Config::default().with_quorum(Quorum::Majority);
/// let members = [NodeId(1), NodeId(2), NodeId(3)];
/// // A fuzzer's input; any bytes will do.
/// bully_sim::fuzz::node(&config, &members, b"any bytes at all: a fuzzer's input");
/// ```
///
/// A configuration the node refuses is reported before any input:
///
/// ```should_panic
/// use bully_core::{Config, NodeId, Quorum};
///
/// // A quorum of four voters cannot be met by two members.
/// let config = Config::default().with_quorum(Quorum::AtLeast(4));
/// bully_sim::fuzz::node(&config, &[NodeId(1), NodeId(2)], &[]);
/// ```
pub fn node(config: &Config, members: &[NodeId], data: &[u8]) {
    checked_inputs(config, members, data);
}

/// [`node`], returning how many inputs it checked.
fn checked_inputs(config: &Config, members: &[NodeId], data: &[u8]) -> usize {
    if let Err(error) = Node::new(
        members.first().copied().unwrap_or(NodeId(0)),
        members.iter().copied(),
        config.clone(),
    ) {
        panic!(
            "bully_sim::fuzz::node: Node::new refuses this configuration for members \
             {members:?}: {error} ({config:?})"
        );
    }
    let u = &mut Unstructured::new(data);
    let mut checked = 0;
    let _ = u
        .choose(members)
        .and_then(|&id| drive_node(u, id, members, config.clone(), &mut checked));
    checked
}

/// Fuzzes one node with a member list, an identity and a configuration all
/// drawn from the bytes (the `node` target of this project's own fuzz crate):
/// small and huge ids, repeats, an identity outside the list now and then, and
/// every setting of [`Config`] at plausible values, zero, the largest allowed
/// and past it. Invalid configurations are checked to be refused by
/// [`Node::new`] exactly as the documented rules say (a `Node::new agrees with
/// the validation` panic otherwise); valid ones are run as [`node`] runs
/// yours. Every derived duration [`Config`] publishes is computed on the way,
/// and must not panic.
///
/// # Examples
///
/// ```
/// bully_sim::fuzz::node_with_arbitrary_config(b"any bytes at all: a fuzzer's input");
/// ```
pub fn node_with_arbitrary_config(data: &[u8]) {
    let _ = arbitrary_node(&mut Unstructured::new(data));
}

/// The setup of [`node_with_arbitrary_config`], then the run: the order in
/// which the bytes are read is the committed corpus's (`fuzz/corpus/node`).
fn arbitrary_node(u: &mut Unstructured<'_>) -> Result<()> {
    let members = member_list(u)?;
    let id = if u.ratio(1, 16)? {
        NodeId::arbitrary(u)?
    } else {
        *u.choose(&members)?
    };
    let config = arbitrary_config(u, &members)?;
    exercise_config(&config, members.len());
    let expected = Membership::new(members.iter().copied()).and_then(|membership| {
        if !membership.ids().contains(&id) {
            return Err(bully_core::ConfigError::MissingSelf(id));
        }
        expected_validation(&config, membership.ids())
    });
    let built = Node::new(id, members.iter().copied(), config.clone());
    assert_eq!(
        built.is_ok(),
        expected.is_ok(),
        "Node::new agrees with the validation: {built:?} vs {expected:?}"
    );
    if let Err(error) = built {
        if tracing() {
            eprintln!("node {id} of {members:?}: {config:?}, refused: {error}");
        }
        return Ok(());
    }
    drive_node(u, id, &members, config, &mut 0)
}

/// What the target knows of the node under test, to check the next input against.
struct Observed {
    /// The latest instant fed to this incarnation.
    clock: Option<Instant>,
    term: Term,
    highest: Option<FencingToken>,
    /// What the node sent that its lease may be dated from.
    lease: LeaseWatch,
    /// The permit to work as the node told it.
    permit: PermitWatch,
    /// Its safety core after the previous input.
    safety: SafetyState,
    /// Whether this incarnation was declared a first boot.
    first_boot: bool,
    /// When it came back (its first input, or its start), if it was not
    /// declared a first boot (I5).
    back: Option<Instant>,
}

impl Observed {
    fn of(node: &Node) -> Observed {
        let safety = node.safety();
        Observed {
            clock: None,
            term: node.term(),
            highest: node.highest_token(),
            lease: LeaseWatch::default(),
            permit: PermitWatch::default(),
            safety,
            first_boot: safety.first_boot,
            back: None,
        }
    }

    /// The instant the node takes `now` for: time never runs backwards inside it.
    fn feed(&mut self, now: Instant) -> Instant {
        let now = self.clock.map_or(now, |clock| clock.max(now));
        if self.clock.is_none() && !self.first_boot {
            self.back = Some(now);
        }
        self.clock = Some(now);
        now
    }
}

/// What one input is allowed to queue: one message per member, per expired
/// timer for a timeout.
#[derive(Clone, Copy, Debug)]
enum Bound {
    Input,
    Timeout { expired: usize },
}

/// Feeds node `id` of `members`, built with `config` (which `Node::new`
/// takes), the inputs the bytes make, checking each and counting the checks
/// in `checked`.
fn drive_node(
    u: &mut Unstructured<'_>,
    id: NodeId,
    members: &[NodeId],
    config: Config,
    checked: &mut usize,
) -> Result<()> {
    let trace = tracing();
    if trace {
        eprintln!("node {id} of {members:?}: {config:?}");
    }
    // A member of a new cluster, declared so, or one that may have run before.
    let first_boot = bool::arbitrary(u)?;
    let built = if first_boot {
        Node::with_durable_state(
            id,
            members.iter().copied(),
            config.clone(),
            DurableState::first_boot(),
        )
    } else {
        Node::new(id, members.iter().copied(), config.clone())
    };
    let mut node = built.expect("Node::new took this configuration a moment ago");
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
                if let Message::Ack { term, round } = message {
                    if is_voter(&node, from) {
                        seen.lease.acknowledged(from, term, round);
                    }
                }
                node.handle_message(seen.feed(now), from, message);
                Bound::Input
            }
            Input::Timeout { at } => {
                now = now.max(at);
                let expired = timeout(&mut node, &mut seen, at);
                Bound::Timeout { expired }
            }
            Input::Clock { to } => {
                now = to;
                continue;
            }
            Input::Start => {
                let at = seen.feed(now);
                node.start(at);
                if !seen.first_boot {
                    seen.back = Some(at);
                }
                Bound::Input
            }
            Input::StartElection => {
                node.start_election(seen.feed(now));
                Bound::Input
            }
            Input::StepDown => {
                let leading = node.role() == Role::Leader;
                // Without a quorum a candidate may be the start's announcement,
                // which stepping down withdraws (`Node::step_down`).
                let announcing =
                    node.role() == Role::Candidate && node.config().quorum() == Quorum::None;
                let stepped = node.step_down(seen.feed(now));
                if leading || !announcing {
                    assert_eq!(
                        stepped, leading,
                        "command: step_down says {stepped} from a node that led: {leading}"
                    );
                }
                if stepped {
                    assert_eq!(
                        node.role(),
                        Role::Follower,
                        "command: a node that stepped down follows"
                    );
                }
                Bound::Input
            }
            Input::HandOver { to, until } => {
                let leading = node.role() == Role::Leader;
                let result = node.hand_over(seen.feed(now), to, until);
                match result {
                    Ok(stepped) => {
                        assert_eq!(
                            stepped, leading,
                            "command: hand_over says {stepped} from a node that led: {leading}"
                        );
                        if stepped {
                            assert_eq!(
                                node.role(),
                                Role::Follower,
                                "command: a node that handed over follows"
                            );
                        }
                    }
                    Err(bully_core::CommandError::Outranked { to: named, by }) => {
                        assert!(
                            leading && Some(named) == to && by > named && by != node.id(),
                            "command: hand_over to {to:?} refused as outranked by {by}"
                        );
                        assert_eq!(node.role(), Role::Leader, "command: a refused hand-over");
                    }
                    Err(bully_core::CommandError::NotLive(named)) => {
                        assert!(
                            leading && Some(named) == to && named != node.id(),
                            "command: hand_over to {to:?} refused as not live"
                        );
                        assert_eq!(node.role(), Role::Leader, "command: a refused hand-over");
                    }
                    Err(bully_core::CommandError::NoSuccessor) => {
                        assert!(
                            leading && to.is_none(),
                            "command: hand_over to {to:?} refused for want of a successor"
                        );
                        assert_eq!(node.role(), Role::Leader, "command: a refused hand-over");
                    }
                    Err(error) => {
                        let known =
                            to.is_some_and(|to| to != node.id() && node.members().contains(&to));
                        assert!(
                            !known || matches!(error, bully_core::CommandError::NotCandidate(_)),
                            "command: hand_over to {to:?}: {error}"
                        );
                    }
                }
                Bound::Input
            }
            Input::Suspect(member) => {
                let result = node.suspect(seen.feed(now), member);
                let known = member != node.id() && node.members().contains(&member);
                assert_eq!(
                    result.is_ok(),
                    known,
                    "command: suspect {member} (a member other than itself: {known}): {result:?}"
                );
                Bound::Input
            }
            Input::AddMember(member) => {
                let _ = node.add_member(seen.feed(now), member);
                Bound::Input
            }
            Input::RemoveMember(member) => {
                if node.remove_member(seen.feed(now), member).is_ok() {
                    seen.lease.forget(member);
                }
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
                // changed membership is refused as the rules say.
                node = match restarted {
                    Ok(node) => node,
                    Err(error) => {
                        assert_eq!(
                            expected_validation(&config, &members),
                            Err(error),
                            "restart: Node::new refuses the changed membership as the rules say"
                        );
                        continue;
                    }
                };
                if durable {
                    assert_eq!(
                        node.durable_state(),
                        state,
                        "restart: the durable state survives a restart with it"
                    );
                    // The term persisted; the accepted token lives in memory
                    // only, and so do the lease and the promises: the new
                    // incarnation's clock starts again.
                    seen = Observed {
                        term: seen.term,
                        ..Observed::of(&node)
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
        *checked += 1;
    }
    Ok(())
}

/// `handle_timeout(at)`, returning how many timers had expired.
fn timeout(node: &mut Node, seen: &mut Observed, at: Instant) -> usize {
    let now = seen.feed(at);
    let expired = node.expired_timers(now);
    // The deadline is due when a timer is, or the end of the permit told.
    assert_eq!(
        expired > 0 || seen.permit.end_due(now),
        node.poll_timeout().is_some_and(|next| next <= now),
        "deadline: expired_timers({now:?}) is {expired} with the next deadline at {:?}",
        node.poll_timeout()
    );
    node.handle_timeout(now);
    assert!(
        node.poll_timeout().is_none_or(|next| next > now),
        "deadline: after handle_timeout(now) the next deadline lies ahead: {:?} <= {:?}",
        node.poll_timeout(),
        now
    );
    expired
}

fn check_outputs(node: &mut Node, seen: &mut Observed, bound: Bound, members_before: usize) {
    let fan_out = members_before.max(node.members().len());
    let limit = match bound {
        Bound::Input => fan_out,
        Bound::Timeout { expired } => fan_out * expired,
    };
    // The instant the node took this input at (`restore` takes none, and sends
    // nothing).
    let now = seen.clock;
    // The permit first, as a driver drains it.
    seen.permit.check(node, now);
    let own_quorum = {
        let safety = node.safety();
        safety.voter && safety.quorum.is_some_and(|quorum| quorum <= 1)
    };
    if let Some(now) =
        now.filter(|_| members_before == 1 || node.members().len() == 1 || own_quorum)
    {
        seen.lease.alone(now);
    }
    let mut sent = 0;
    let mut transmits: Vec<Transmit> = Vec::new();
    while let Some(transmit) = node.poll_transmit() {
        if tracing() {
            eprintln!("    -> {transmit:?}");
        }
        sent += 1;
        transmits.push(transmit.clone());
        if let Some(now) = now {
            seen.lease.sent(&transmit.message, now);
        }
        assert_ne!(transmit.to, node.id(), "sent to itself: {transmit:?}");
        assert!(
            node.members().contains(&transmit.to),
            "sent to a non-member: {transmit:?}"
        );
    }
    assert!(
        sent <= limit,
        "one input queued {sent} transmits, more than {limit} ({bound:?}, {fan_out} members)"
    );
    let floor = seen.highest;
    while let Some(event) = node.poll_event() {
        assert!(
            !matches!(bound, Bound::Timeout { expired: 0 }),
            "handle_timeout with no timer expired emitted {event:?}"
        );
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
    let leading = node
        .leader()
        .filter(|leader| leader.id == node.id() && node.role() == Role::Leader)
        .map(|leader| leader.term);
    let safety = node.safety();
    seen.lease.check(LeaseView {
        leading,
        quorum: node.config().quorum() != Quorum::None,
        until: node.lease_until(),
        lease: node.config().leader_lease(),
        quorum_size: safety.quorum.map(|quorum| (quorum, safety.voter)),
    });
    if let Some(now) = now {
        let input = invariants::Input {
            now,
            sent: &transmits,
            back_since: seen.back,
        };
        if let Err(broken) = invariants::check_input(&seen.safety, &safety, &input) {
            panic!("{broken}");
        }
    }
    seen.safety = safety;
    seen.term = node.term();
    seen.highest = node.highest_token();
}

/// Whether `member` is a member whose vote counts (its acknowledgements back a
/// lease).
fn is_voter(node: &Node, member: NodeId) -> bool {
    let config = node.config();
    member != node.id()
        && node.members().contains(&member)
        && (config.observers_vote() || !config.observers().contains(&member))
}

#[cfg(test)]
mod tests {
    //! The harness on a configuration of a user's: it reads inputs from the
    //! bytes and checks them, and refuses a configuration the node refuses.

    use super::*;
    use crate::fuzz::tests::{five_members, pseudo_random, users_config};

    #[test]
    fn a_users_configuration_takes_hundreds_of_checked_inputs_without_a_false_alarm() {
        let members = five_members();
        let config = users_config();
        let mut total = 0;
        for seed in 0..64 {
            total += checked_inputs(&config, &members, &pseudo_random(seed, 4096));
        }
        // About one input per eight bytes; an input the bytes cut short, a
        // clock change and a restart are not checked.
        assert!(total > 64 * 100, "only {total} inputs checked");
    }

    #[test]
    fn no_bytes_check_nothing_and_pass() {
        assert_eq!(checked_inputs(&users_config(), &five_members(), &[]), 0);
    }

    #[test]
    #[should_panic(
        expected = "Node::new refuses this configuration for members [NodeId(1), \
                               NodeId(2)]: a quorum of 4 cannot be met by 2 voting members"
    )]
    fn a_configuration_node_new_refuses_panics_at_once_with_its_error() {
        let config = Config::default().with_quorum(Quorum::AtLeast(4));
        node(&config, &[NodeId(1), NodeId(2)], &[]);
    }

    #[test]
    #[should_panic(expected = "Node::new refuses this configuration for members []")]
    fn no_members_panics_at_once() {
        node(&Config::default(), &[], b"bytes");
    }

    #[test]
    fn a_quorum_of_half_the_voters_is_fuzzed_one_node_at_a_time() {
        let config = Config::default().with_quorum(Quorum::AtLeast(2));
        let members = [NodeId(1), NodeId(2), NodeId(3), NodeId(4)];
        assert!(checked_inputs(&config, &members, &pseudo_random(7, 2048)) > 0);
    }
}
