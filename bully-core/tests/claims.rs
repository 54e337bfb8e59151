//! Claims and votes with a quorum, told one node at a time: how a member
//! answers another's claim (it votes, defers its vote behind a promise to a
//! sitting leader, or refuses), when a leader yields to a claim of its own
//! term, how a winner claims, and how a leadership's resign delay holds the
//! votes of the member that held it.
//!
//! The fault sweeps check that no two members lead at once and that the right
//! one ends up leading; these stories pin the votes on the way, which a sweep
//! cannot tell apart (a vote refused here is cast a moment later there, a
//! member that lets a silent leader go late still follows the next one).

use std::time::{Duration, Instant};

use bully_core::{
    Algorithm, Config, DropReason, Event, Leader, Message, Node, NodeId, Preemption, Quorum, Role,
    Term, Transmit,
};

mod support;

fn majority() -> Config {
    Config::default().with_quorum(Quorum::Majority)
}

/// The leader timeout of a follower with `rank` eligible members above it (the
/// leader not counted): detection is staggered by a step, an answer timeout and
/// a message time, per rank (`Config::with_stagger_detection`, on by default).
fn leader_timeout_at_rank(config: &Config, rank: u32) -> Duration {
    config.leader_timeout() + (config.answer_timeout() + config.max_message_delay()) * rank
}

fn ids(range: std::ops::RangeInclusive<u64>) -> Vec<NodeId> {
    range.map(NodeId).collect()
}

fn drain(node: &mut Node) -> Vec<Transmit> {
    std::iter::from_fn(|| node.poll_transmit()).collect()
}

fn events(node: &mut Node) -> Vec<Event> {
    std::iter::from_fn(|| node.poll_event()).collect()
}

/// Fires the node's next timer, returning when it fell due and what it sent.
fn next_timer(node: &mut Node) -> (Instant, Vec<Transmit>) {
    let due = node.poll_timeout().expect("a timer is armed");
    node.handle_timeout(due);
    (due, drain(node))
}

fn to(id: u64, message: Message) -> Transmit {
    Transmit {
        to: NodeId(id),
        message,
    }
}

/// A Coordinator: with a quorum, the first ask of a claim to vote on.
fn claim(term: u64) -> Message {
    Message::Coordinator {
        term: Term(term),
        round: 0,
    }
}

/// An acknowledgement of request `round` (round 0: the claim's first ask, a
/// vote).
fn ack(term: u64, round: u64) -> Message {
    Message::Ack {
        term: Term(term),
        round,
    }
}

/// A vote: the acknowledgement of a claim's first ask.
fn vote(term: u64) -> Message {
    ack(term, 0)
}

fn heartbeat(term: u64, round: u64) -> Message {
    Message::Heartbeat {
        term: Term(term),
        round,
    }
}

fn probe(term: u64) -> Message {
    Message::Probe { term: Term(term) }
}

fn no_leader(term: u64) -> Message {
    Message::ProbeReply {
        term: Term(term),
        leader: None,
        cut_off: false,
    }
}

fn election(term: u64) -> Message {
    Message::Election { term: Term(term) }
}

fn leader(node: &Node) -> Option<(u64, u64)> {
    node.leader().map(|Leader { id, term }| (id.0, term.0))
}

fn dropped(node: &Node, reason: DropReason) -> u64 {
    node.stats().dropped[reason]
}

/// `id` of 1..=3, under `config`, elects at once (`start_election`), wins
/// (nobody it asks answers, or passes a ring's token on) and claims term 1;
/// 1 votes, which with its own vote is a majority. Returns the node, leading,
/// and when it began to lead (its claim went out then too).
fn leading(id: u64, config: Config) -> (Node, Instant) {
    let mut now = Instant::now();
    let mut node = support::first_boot(id, ids(1..=3), config);
    node.start_election(now);
    let mut sent = drain(&mut node);
    while !sent.contains(&to(1, claim(1))) {
        (now, sent) = next_timer(&mut node);
    }
    node.handle_message(now, NodeId(1), vote(1));
    assert_eq!(node.role(), Role::Leader);
    assert_eq!(leader(&node), Some((id, 1)));
    drain(&mut node);
    events(&mut node);
    (node, now)
}

// ----- Which claims a member votes for -----

/// 1 of 1..=3 follows 3 in term 5 from its heartbeat at `t0` (it saw no claim:
/// it voted for nobody), and promises 3 its vote until a follower lease later.
fn following_3_in_term_5() -> (Node, Instant) {
    let t0 = Instant::now();
    let mut node = support::first_boot(1, ids(1..=3), majority());
    node.handle_message(t0, NodeId(3), heartbeat(5, 1));
    assert_eq!(drain(&mut node), vec![to(3, ack(5, 1))]);
    assert_eq!(leader(&node), Some((3, 5)));
    events(&mut node);
    (node, t0)
}

/// Member 1 follows 3 in term 5; 2's claim of term 5 carries the fencing
/// token (5, 2), below the (5, 3) that 1 accepted: it is stale, dropped, and
/// no vote for it is deferred behind the promise to 3: when that promise runs
/// out, 1 still sends 2 nothing (a vote then would give term 5 a second leader).
///
/// Kills 227:53 `token < highest` -> `==` and -> `>`, and 227:64 `||` -> `&&`
/// in `on_claim` (each defers the vote and casts it at the promise's end).
#[test]
fn a_claim_below_the_token_a_member_follows_is_stale_and_never_gets_its_vote() {
    let (mut node, t0) = following_3_in_term_5();
    let config = majority();
    node.handle_message(t0 + Duration::from_millis(10), NodeId(2), claim(5));
    assert!(drain(&mut node).is_empty());
    assert_eq!(dropped(&node, DropReason::StaleLeader), 1);
    assert_eq!(dropped(&node, DropReason::Refused), 0);
    // Only 1's leader timeout is armed (3 is its leader: 2 ranks above it).
    assert_eq!(
        node.poll_timeout(),
        Some(t0 + leader_timeout_at_rank(&config, 1))
    );
    node.handle_timeout(t0 + config.follower_lease());
    assert!(
        drain(&mut node).is_empty(),
        "the promise ran out: still no vote"
    );
    assert_eq!(leader(&node), Some((3, 5)));
}

/// 2 of 1..=3, leaderless, hears the lower member 1 claim term 5 at `t0`:
/// under `Preemption::Always` it would take over from 1, so it does not vote
/// for it; it takes up term 5 and probes to stand.
fn claimed_by_1_in_term_5() -> (Node, Instant) {
    let t0 = Instant::now();
    let mut node = support::first_boot(2, ids(1..=3), majority());
    node.handle_message(t0, NodeId(1), claim(5));
    assert_eq!(drain(&mut node), vec![to(1, probe(5)), to(3, probe(5))]);
    (node, t0)
}

/// Member 2, leaderless and idle, hears the lower member 1 claim term 5: it
/// would take 1's leadership over, so rather than vote it stands, if a probe
/// lets it: it probes 1 and 3 in term 5 at once, and waits an answer timeout
/// for their replies.
///
/// Kills 235:28 `role() == Follower` -> `!=` in `on_claim` (no probe).
#[test]
fn a_member_that_would_take_over_from_a_lower_claimant_probes_to_stand_instead_of_voting() {
    let (node, t0) = claimed_by_1_in_term_5();
    assert_eq!(node.term(), Term(5));
    assert_eq!(node.role(), Role::Follower);
    assert_eq!(node.poll_timeout(), Some(t0 + majority().answer_timeout()));
}

/// Member 2 has seen term 5 (1's claim, above) but follows nobody and voted
/// for nobody. 3's claim of term 3, sent before and delivered late, is older
/// than what 2 has seen: dropped as stale, with no vote.
///
/// Kills 227:72 `term < self.term` -> `==` and -> `>`, and 227:64 `||` -> `&&`
/// in `on_claim` (each votes for 3 in term 3).
#[test]
fn a_claim_older_than_the_term_a_member_has_seen_is_stale_even_with_no_leader_accepted() {
    let (mut node, t0) = claimed_by_1_in_term_5();
    node.handle_message(t0 + Duration::from_millis(10), NodeId(3), claim(3));
    assert!(drain(&mut node).is_empty());
    assert_eq!(dropped(&node, DropReason::StaleLeader), 1);
    assert_eq!(node.term(), Term(5));
}

/// 3 leads term 1. The lower member 2, which lost 3's heartbeats for a while,
/// claims term 2. 3 would take over from 2, but it leads already: it takes up
/// term 2 and keeps leading its term 1 (its heartbeats reach 2), with no vote,
/// no probe and no step-down.
///
/// Kills 235:60 `&&` -> `||` in `on_claim` (the leader stands again: steps
/// down and probes).
#[test]
fn a_leader_that_hears_a_lower_member_claim_a_newer_term_keeps_leading() {
    let (mut node, t) = leading(3, majority());
    node.handle_message(t + Duration::from_millis(10), NodeId(2), claim(2));
    assert!(drain(&mut node).is_empty());
    assert!(events(&mut node).is_empty());
    assert_eq!(node.role(), Role::Leader);
    assert_eq!(leader(&node), Some((3, 1)));
    assert_eq!(node.term(), Term(2));
}

/// Member 1 votes for 3's claim of term 1 and follows 3 from its first
/// heartbeat. The network delivers 3's claim a second time: 1 votes again
/// (the same vote: one per term, for 3), goes on following 3, and drops
/// nothing.
///
/// Kills 227:53 `token < highest` -> `<=`, 243:48 `voted > term` -> `>=` and
/// -> `==`, 243:81 `whom != from` -> `==`, 282:55 `leader.id != from` -> `==`
/// and 282:78 `phase != Idle` -> `==` in `on_claim` (the first four refuse,
/// the last two let 3 go).
#[test]
fn a_repeated_claim_from_the_leader_a_member_voted_for_and_follows_gets_the_same_vote() {
    let t0 = Instant::now();
    let mut node = support::first_boot(1, ids(1..=3), majority());
    node.handle_message(t0, NodeId(3), claim(1));
    assert_eq!(drain(&mut node), vec![to(3, vote(1))]);
    node.handle_message(t0, NodeId(3), heartbeat(1, 1));
    assert_eq!(drain(&mut node), vec![to(3, ack(1, 1))]);
    assert_eq!(leader(&node), Some((3, 1)));
    events(&mut node);
    node.handle_message(t0 + Duration::from_millis(10), NodeId(3), claim(1));
    assert_eq!(drain(&mut node), vec![to(3, vote(1))]);
    assert_eq!(leader(&node), Some((3, 1)));
    assert!(events(&mut node).is_empty());
    assert_eq!(dropped(&node, DropReason::StaleLeader), 0);
    assert_eq!(dropped(&node, DropReason::Refused), 0);
}

/// Member 1 has voted for 2 in term 4. 3's claim of term 4 comes next: one
/// vote per member per term, so 1 refuses it for good: nothing sent (it does
/// not lead, so it has nothing to yield), no vote deferred: when the promise
/// its vote made to 2 runs out, it still sends 3 nothing.
///
/// Kills 243:55 `||` -> `&&`, 243:65 `voted == term` -> `!=` and 243:81
/// `whom != from` -> `==` in `on_claim` (each defers a second vote in term
/// 4 and casts it), and 250:35 `&&` -> `||` (1 "yields", sending `Resign`).
#[test]
fn a_member_that_voted_for_2_in_term_4_refuses_3s_claim_of_term_4_for_good() {
    let config = majority();
    let t0 = Instant::now();
    let mut node = support::first_boot(1, ids(1..=3), config.clone());
    node.handle_message(t0, NodeId(2), claim(4));
    assert_eq!(drain(&mut node), vec![to(2, vote(4))]);
    node.handle_message(t0 + Duration::from_millis(10), NodeId(3), claim(4));
    assert!(drain(&mut node).is_empty());
    assert_eq!(dropped(&node, DropReason::Refused), 1);
    // The vote armed 1's leader timeout (2 and 3 rank above it); nothing else.
    assert_eq!(
        node.poll_timeout(),
        Some(t0 + leader_timeout_at_rank(&config, 2))
    );
    node.handle_timeout(t0 + config.follower_lease());
    assert!(drain(&mut node).is_empty(), "the promise to 2 ran out");
}

/// Member 1 voted for 2 in term 1, and 2 never confirmed. Once the promise
/// that vote made has run out, 3's claim of term 2 gets 1's vote at once: a
/// vote binds its own term only.
///
/// Kills 243:48 `voted > term` -> `<` and 243:73 `&&` -> `||` in `on_claim`
/// (both refuse a claim of a newer term than the vote's).
#[test]
fn a_member_that_voted_for_2_in_term_1_votes_for_3s_claim_of_term_2() {
    let config = majority();
    let t0 = Instant::now();
    let mut node = support::first_boot(1, ids(1..=3), config.clone());
    node.handle_message(t0, NodeId(2), claim(1));
    assert_eq!(drain(&mut node), vec![to(2, vote(1))]);
    node.handle_message(t0 + config.follower_lease(), NodeId(3), claim(2));
    assert_eq!(drain(&mut node), vec![to(3, vote(2))]);
    assert_eq!(dropped(&node, DropReason::Refused), 0);
}

/// Member 1 follows 2 in term 1 from `t0`; then 2 falls silent. A follower
/// lease later 1's promise to 2 has run out, though its leader timeout has
/// not: 3's claim of term 2 gets its vote, and 1 lets 2 go (`LeaderLost`)
/// rather than name a leader whose successor it just voted for.
///
/// Kills 282:64 `||` -> `&&` and 282:55 `leader.id != from` -> `==` in
/// `on_claim` (1 keeps naming 2).
#[test]
fn a_member_that_votes_for_a_new_claimant_lets_its_silent_leader_go() {
    let config = majority();
    let t0 = Instant::now();
    let mut node = support::first_boot(1, ids(1..=3), config.clone());
    node.handle_message(t0, NodeId(2), claim(1));
    node.handle_message(t0, NodeId(2), heartbeat(1, 1));
    drain(&mut node);
    events(&mut node);
    assert_eq!(leader(&node), Some((2, 1)));
    let at = t0 + config.follower_lease();
    assert!(
        node.poll_timeout() > Some(at),
        "the leader timeout is later"
    );
    node.handle_message(at, NodeId(3), claim(2));
    assert_eq!(drain(&mut node), vec![to(3, vote(2))]);
    assert_eq!(leader(&node), None);
    assert_eq!(
        events(&mut node),
        vec![Event::LeaderLost {
            leader: NodeId(2),
            term: Term(1)
        }]
    );
}

/// Member 1 runs an election of term 1 (its Elections to 2 and 3 are out).
/// 3's claim of term 1 arrives first: 1 votes for it and its own election
/// ends there: it is a follower, and the next thing it waits for is its
/// leader timeout, not the answers to its Elections (which would make it win
/// and claim over the member it just voted for).
///
/// Kills 282:78 `phase != Idle` -> `==` and 282:64 `||` -> `&&` in
/// `on_claim` (the election runs on).
#[test]
fn a_member_running_its_own_election_ends_it_when_it_votes_for_a_claim() {
    let config = majority();
    let t0 = Instant::now();
    let mut node = support::first_boot(1, ids(1..=3), config.clone());
    node.start_election(t0);
    assert_eq!(
        drain(&mut node),
        vec![to(2, election(1)), to(3, election(1))]
    );
    assert_eq!(node.role(), Role::Candidate);
    let at = t0 + Duration::from_millis(5);
    node.handle_message(at, NodeId(3), claim(1));
    assert_eq!(drain(&mut node), vec![to(3, vote(1))]);
    assert_eq!(node.role(), Role::Follower);
    assert_eq!(
        node.poll_timeout(),
        Some(at + leader_timeout_at_rank(&config, 2))
    );
}

// ----- A leader and a claim of its own term -----

/// 2 of 1..=3 leads term 1 from `t` (3 did not answer its Election). 3,
/// restarted without its durable state, claims term 1 too: a twin of 2's
/// leadership, which 2 can only tell from a claim that crossed its own
/// announcement once a round trip has passed since it. Within the round trip
/// 2 refuses the claim and leads on; after it, 2 refuses the claim (one vote
/// per term) and yields: it resigns term 1 to both members at once, and the
/// election that follows gives everyone one newer term.
///
/// Kills 246:17 and 247:17 `&&` -> `||` (a leader yields within the round
/// trip), 246:43 `leadership_term() == Some(term)` -> `!=`, 249:43 `now >
/// ...` -> `==`, `<` and `>=`, 250:35 `&&` -> `||`, and 250:43 `from >
/// self.id` -> `==` and `<` in `on_claim`.
#[test]
fn a_leader_yields_to_a_higher_members_claim_of_its_own_term_only_after_a_round_trip() {
    let config = majority();
    let rt = config.round_trip();
    for (after, yields) in [(rt, false), (rt + Duration::from_nanos(1), true)] {
        let (mut node, t) = leading(2, config.clone());
        node.handle_message(t + after, NodeId(3), claim(1));
        let sent = drain(&mut node);
        assert_eq!(dropped(&node, DropReason::Refused), 1, "{after:?}");
        if yields {
            let resign = Message::Resign {
                term: Term(1),
                successor: None,
            };
            assert_eq!(sent, vec![to(1, resign.clone()), to(3, resign)]);
            assert_eq!(
                events(&mut node),
                vec![Event::SteppedDown { term: Term(1) }]
            );
            assert_eq!(node.role(), Role::Follower);
        } else {
            assert!(sent.is_empty(), "{sent:?}");
            assert!(events(&mut node).is_empty());
            assert_eq!(node.role(), Role::Leader);
        }
    }
}

// ----- Claiming -----

/// Member 2 of 1..=3 (modified Bully; a leader timeout of 2 s, so that its
/// probe's clearance outlasts the story) follows 3 from its heartbeat (3's
/// claim never reached it), then loses it: it probes, both members back it,
/// and it stands in term 2. Nobody answers, so it claims term 2, voting for
/// itself; nobody votes, and the claim lapses (2 probes again, and is
/// backed). Then 1's Election of term 2 comes: 2 answers and takes part. That
/// election comes to nothing too; while its clearance lasts 2 runs it again
/// in its own term, wins, and claims term 2 again: its vote in term 2 went to
/// itself, so this is no second vote, and terms number leaderships, not
/// attempts.
///
/// Kills 110:44 `voted > term` -> `==` and -> `>=`, 110:69 `&&` -> `||` and
/// 110:77 `whom != self.id` -> `==` in `begin_claim` (each takes its own
/// vote for one for another member, and stands in term 3).
#[test]
fn a_claim_that_came_to_nothing_is_made_again_in_its_own_term() {
    let config = majority()
        .with_algorithm(Algorithm::Modified)
        .with_leader_timeout(Duration::from_secs(2));
    let t0 = Instant::now();
    let mut node = support::first_boot(2, ids(1..=3), config);
    node.handle_message(t0, NodeId(3), heartbeat(1, 1));
    drain(&mut node);
    let (at, sent) = next_timer(&mut node);
    assert_eq!(
        sent,
        vec![to(1, probe(1)), to(3, probe(1))],
        "3 fell silent"
    );
    for from in [1, 3] {
        node.handle_message(at, NodeId(from), no_leader(1));
    }
    assert_eq!(
        drain(&mut node),
        vec![to(1, election(2)), to(3, election(2))]
    );
    let (_, sent) = next_timer(&mut node);
    assert_eq!(
        sent,
        vec![to(1, claim(2)), to(3, claim(2))],
        "nobody answered"
    );
    let (at, sent) = next_timer(&mut node);
    assert_eq!(sent, vec![to(1, probe(2)), to(3, probe(2))], "nobody voted");
    for from in [1, 3] {
        node.handle_message(at, NodeId(from), no_leader(2));
    }
    assert!(drain(&mut node).is_empty());
    node.handle_message(at, NodeId(1), election(2));
    assert_eq!(
        drain(&mut node),
        vec![to(1, Message::Answer { term: Term(2) })]
    );
    let (_, sent) = next_timer(&mut node);
    assert_eq!(
        sent,
        vec![to(1, election(2)), to(3, election(2))],
        "1's election came to nothing: 2 runs it again in term 2"
    );
    let (_, sent) = next_timer(&mut node);
    // The claim's second ask in term 2: a vote for the first would name
    // round 0 and back nothing later than it.
    let second_ask = Message::Coordinator {
        term: Term(2),
        round: 1,
    };
    assert_eq!(sent, vec![to(1, second_ask.clone()), to(3, second_ask)]);
    assert_eq!(node.term(), Term(2));
    assert_eq!(node.role(), Role::Candidate);
}

/// Member 3 of 1..=3 (the ring algorithm, under `Preemption::Never`) votes
/// for 2's claim of term 1 (2's ring election of term 1 missed 3). Then the
/// second pass of 1's ring election of term 1, which listed 3, reaches it: 3
/// won that election. But its vote in term 1 went to 2, and a vote for itself
/// would be a second one in that term: it claims nothing, and starts a ring
/// election of term 2 instead (its token to its successor, 1).
///
/// Kills 110:51 `||` -> `&&`, 110:61 `voted == term` -> `!=` and 110:77
/// `whom != self.id` -> `==` in `begin_claim` (each claims term 1).
#[test]
fn a_member_that_voted_for_2_in_term_1_and_then_wins_term_1_stands_in_term_2_instead() {
    let config = majority()
        .with_algorithm(Algorithm::Ring)
        .with_preemption(Preemption::Never);
    let t0 = Instant::now();
    let mut node = support::first_boot(3, ids(1..=3), config);
    node.handle_message(t0, NodeId(2), claim(1));
    assert_eq!(drain(&mut node), vec![to(2, vote(1))]);
    let pass = Message::RingCoordinator {
        term: Term(1),
        leader: NodeId(3),
        initiator: NodeId(1),
        active: ids(1..=3),
    };
    node.handle_message(t0 + Duration::from_millis(10), NodeId(2), pass);
    let token = Message::RingElection {
        term: Term(2),
        initiator: NodeId(3),
        active: vec![NodeId(3)],
    };
    assert_eq!(
        drain(&mut node),
        vec![to(2, Message::Answer { term: Term(1) }), to(1, token)]
    );
    assert_eq!(node.term(), Term(2));
    assert_eq!(node.role(), Role::Candidate);
}

/// Under `AfterStable(800 ms)` with a resign delay `delay` (the ring algorithm),
/// 3 of 1..=3 leads term 1 from `t0` and steps down at once: for its resign
/// delay it votes for no other member (its work may still be stopping), and
/// says it resigned only then. At `t1`, 400 ms on, the lower member 2 claims
/// term 2 (3 votes for it if its delay is over, else defers the vote) and
/// leads it; 3 follows 2, promising it its vote, for the stable period, every
/// 100 ms. Then 3 sets out to take over: it starts a ring election of term 3,
/// whose token comes back with 1 and 2 on it. Returns what 3 sends then.
fn taking_over_from_2_after_leading(delay: Duration) -> Vec<Transmit> {
    let stable = Duration::from_millis(800);
    let config = majority()
        .with_algorithm(Algorithm::Ring)
        .with_preemption(Preemption::AfterStable(stable))
        .with_resign_delay(delay);
    let (mut node, t0) = leading(3, config);
    assert!(node.step_down(t0));
    assert!(
        drain(&mut node).is_empty(),
        "the Resign waits for the delay"
    );
    let t1 = t0 + Duration::from_millis(400);
    while node.poll_timeout().is_some_and(|due| due <= t1) {
        next_timer(&mut node);
    }
    node.handle_message(t1, NodeId(2), claim(2));
    drain(&mut node);
    for round in 1..=8 {
        let at = t1 + Duration::from_millis(100 * (round - 1));
        while node.poll_timeout().is_some_and(|due| due <= at) {
            // The lease timer of 3's leadership, which ended: nothing to do.
            assert_eq!(next_timer(&mut node).1, vec![]);
        }
        node.handle_message(at, NodeId(2), heartbeat(2, round));
        drain(&mut node);
    }
    assert_eq!(leader(&node), Some((2, 2)));
    assert_eq!(node.poll_timeout(), Some(t1 + stable));
    let (at, sent) = next_timer(&mut node);
    let token = |active| Message::RingElection {
        term: Term(3),
        initiator: NodeId(3),
        active,
    };
    assert_eq!(sent, vec![to(1, token(vec![NodeId(3)]))]);
    node.handle_message(at, NodeId(2), token(vec![NodeId(3), NodeId(1), NodeId(2)]));
    assert_eq!(node.term(), Term(3));
    drain(&mut node)
}

/// Member 3 led term 1 and stepped down; it follows the lower leader 2, and
/// at the end of the stable period it takes over: it wins term 3, but its
/// promise to 2 (from 2's last heartbeat) keeps it from voting even for
/// itself. If its own resign delay is over, it asks 2 to yield (its claim of
/// term 3, to 2 alone), whose resignation releases the promise; while that
/// delay still runs, it asks nothing and its claim waits for the promise's end.
///
/// Kills 127:94 `held <= now` -> `>` in `begin_claim` (the delay's end
/// reversed: it asks while the delay runs and not after), and 127:27 and
/// 127:47 `&&` -> `||` (it asks while the delay runs).
#[test]
fn a_member_taking_over_asks_the_lower_leader_to_yield_once_its_own_resign_delay_is_over() {
    let ack = to(2, Message::Answer { term: Term(3) });
    assert_eq!(
        taking_over_from_2_after_leading(Duration::from_millis(300)),
        vec![ack.clone(), to(2, claim(3))],
        "the delay ended at 300 ms"
    );
    assert_eq!(
        taking_over_from_2_after_leading(Duration::from_secs(2)),
        vec![ack],
        "the delay runs until 2 s"
    );
}

/// Member 2 of 1..=3 (modified Bully) follows nobody and led nothing. 1's
/// Election of term 1 asks it: it probes first (1 and 3 reply), then answers
/// 1 and raises its flag for 1's election. It owes nobody a `Resign`: nothing
/// is due at once, and firing its timers then sends nothing.
///
/// Kills 331:20 and 331:47 `&&` -> `||` in `give_way` (a resignation of a
/// leadership it never held, due at once, to both members).
#[test]
fn a_member_that_raises_its_flag_for_an_election_resigns_nothing_it_did_not_lead() {
    let config = majority().with_algorithm(Algorithm::Modified);
    let t0 = Instant::now();
    let mut node = support::first_boot(2, ids(1..=3), config);
    node.handle_message(t0, NodeId(1), election(1));
    assert_eq!(drain(&mut node), vec![to(1, probe(0)), to(3, probe(0))]);
    for from in [1, 3] {
        node.handle_message(t0, NodeId(from), no_leader(0));
    }
    assert_eq!(
        drain(&mut node),
        vec![to(1, Message::Answer { term: Term(1) })]
    );
    assert_eq!(node.expired_timers(t0), 0);
    node.handle_timeout(t0);
    assert!(drain(&mut node).is_empty());
}

// ----- A leadership's resign delay -----

/// 2 of 1..=3, under `Preemption::Never` and with no resign delay, leads term
/// 1 from `t`. 3 claims term 2 at `ty`: 2 yields (its `Resign` goes at once)
/// and votes for 3, which promises 3 its vote for a follower lease. 1's claim
/// of term 3 comes next: its vote waits for that promise. Then the work of
/// 2's leadership stops (`work_stopped`): with no resign delay there is no
/// hold to end early, and nothing changes: nothing is due then, and the vote
/// for 1 goes when the promise to 3 runs out, to the nanosecond.
///
/// Kills 349:36 `||` -> `&&` in `hold_votes` (a hold of no length, which
/// `work_stopped` then releases, casting the deferred vote at once).
#[test]
fn without_a_resign_delay_work_stopped_leaves_a_deferred_vote_to_its_promise() {
    let config = majority().with_preemption(Preemption::Never);
    let (mut node, t) = leading(2, config.clone());
    let ty = t + Duration::from_millis(10);
    node.handle_message(ty, NodeId(3), claim(2));
    let resign = Message::Resign {
        term: Term(1),
        successor: None,
    };
    assert_eq!(
        drain(&mut node),
        vec![to(1, resign.clone()), to(3, resign), to(3, vote(2))]
    );
    node.handle_message(ty + Duration::from_millis(10), NodeId(1), claim(3));
    assert!(drain(&mut node).is_empty(), "the promise to 3 runs");
    let stopped = ty + Duration::from_millis(20);
    node.work_stopped(stopped);
    assert!(drain(&mut node).is_empty());
    assert_eq!(node.expired_timers(stopped), 0);
    let (at, sent) = loop {
        let (at, sent) = next_timer(&mut node);
        if !sent.is_empty() {
            break (at, sent);
        }
    };
    assert_eq!(at, ty + config.follower_lease());
    assert_eq!(sent, vec![to(1, vote(3))]);
}

/// 2 of 1..=3, with a resign delay of 1 s, leads term 1 from `t`; nobody
/// acknowledges its heartbeats, and its lease runs out (`LeaseExpired`, a
/// `Resign` to both members at once). For its resign delay it votes for no
/// other member: 3's claim of term 2, 10 ms later, is deferred. The work of
/// its leadership stops 200 ms after the lease ran out (`work_stopped`): the
/// hold ends there, and the vote for 3 is cast at the next `handle_timeout`,
/// due at once.
///
/// Kills 358:50 `&&` -> `||` and 358:9 (the body replaced by `()`) in
/// `release_after_work` (the vote waits for the resign delay's end).
#[test]
fn a_former_leader_votes_as_soon_as_its_work_has_stopped() {
    let config = majority().with_resign_delay(Duration::from_secs(1));
    let (mut node, t) = leading(2, config.clone());
    let mut now = t;
    let mut sent = Vec::new();
    while node.role() == Role::Leader {
        (now, sent) = next_timer(&mut node);
    }
    assert_eq!(now, t + config.leader_lease(), "the lease ran out");
    let resign = Message::Resign {
        term: Term(1),
        successor: None,
    };
    assert_eq!(sent, vec![to(1, resign.clone()), to(3, resign)]);
    assert_eq!(
        events(&mut node),
        vec![
            Event::LeaseExpired { term: Term(1) },
            Event::SteppedDown { term: Term(1) }
        ]
    );
    node.handle_message(now + Duration::from_millis(10), NodeId(3), claim(2));
    assert!(drain(&mut node).is_empty(), "the hold defers the vote");
    assert_eq!(dropped(&node, DropReason::Refused), 1);
    let stopped = now + Duration::from_millis(200);
    node.work_stopped(stopped);
    assert!(drain(&mut node).is_empty());
    assert_eq!(node.poll_timeout(), Some(stopped));
    node.handle_timeout(stopped);
    assert_eq!(drain(&mut node), vec![to(3, vote(2))]);
}

/// 4 of 1..=4 wins term 1 and claims it. Before the votes come, 3's claim of
/// term 3 reaches it: 4 would take over from 3, so it does not vote, and its
/// term moves to 3. Then 1 and 2 vote for 4's claim of term 1: a quorum, but
/// for a term 4 no longer stands in. 4 does not lead: it would lead term 3
/// with no vote in term 3, beside 3's own claim of it. Found by the `cluster`
/// fuzz target through I6 (a leader's vote is its own in its term).
#[test]
fn a_claim_overtaken_by_a_newer_term_never_leads_that_term() {
    let mut node = support::first_boot(4, ids(1..=4), majority());
    let t0 = Instant::now();
    node.start_election(t0);
    let mut sent = drain(&mut node);
    let mut now = t0;
    while !sent.contains(&to(1, claim(1))) {
        (now, sent) = next_timer(&mut node);
    }
    node.handle_message(now, NodeId(3), claim(3));
    assert_eq!(node.term(), Term(3));
    node.handle_message(now, NodeId(1), vote(1));
    node.handle_message(now, NodeId(2), vote(1));
    assert_ne!(node.role(), Role::Leader);
    assert!(
        !events(&mut node)
            .iter()
            .any(|event| matches!(event, Event::BecameLeader { .. })),
        "4 led on votes for another term"
    );
}
