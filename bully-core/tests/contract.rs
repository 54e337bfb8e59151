//! The sans-IO contract: what a caller may rely on, whatever it or a peer feeds
//! the node (the properties are docs/correctness.md's, section 1).

use std::time::{Duration, Instant};

use bully_core::{
    CommandError, Config, ConfigError, DropReason, Event, Message, Node, NodeId, Preemption, Role,
    Term,
};

fn members(n: u64) -> Vec<NodeId> {
    (1..=n).map(NodeId).collect()
}

/// A member that elects as soon as it starts, as the sources' processes do (the
/// staggered start would have a lower member listen first).
fn node(id: u64, n: u64) -> Node {
    let config = Config::default().with_staggered_start(false);
    Node::new(NodeId(id), members(n), config).unwrap()
}

fn transmits(node: &mut Node) -> Vec<bully_core::Transmit> {
    std::iter::from_fn(|| node.poll_transmit()).collect()
}

fn events(node: &mut Node) -> Vec<Event> {
    std::iter::from_fn(|| node.poll_event()).collect()
}

#[test]
fn a_membership_without_the_node_or_with_duplicates_is_refused() {
    let config = Config::default();
    assert_eq!(
        Node::new(NodeId(1), Vec::new(), config.clone()).unwrap_err(),
        ConfigError::EmptyMembership
    );
    assert_eq!(
        Node::new(NodeId(4), members(3), config.clone()).unwrap_err(),
        ConfigError::MissingSelf(NodeId(4))
    );
    assert_eq!(
        Node::new(NodeId(1), [NodeId(1), NodeId(2), NodeId(2)], config).unwrap_err(),
        ConfigError::DuplicateMember(NodeId(2))
    );
}

#[test]
fn timeouts_that_contradict_each_other_are_refused() {
    let ms = Duration::from_millis;
    let base = Config::default();
    let cases = [
        (
            base.clone().with_heartbeat_interval(Duration::ZERO),
            "zero heartbeat",
        ),
        // T_M: the message time, the longest a message takes.
        (
            base.clone().with_leader_timeout(ms(100)),
            "leader timeout <= heartbeat + T_M",
        ),
        (
            base.clone().with_answer_timeout(ms(10)),
            "answer timeout under a round trip",
        ),
        (
            base.clone().with_coordinator_timeout(ms(60)),
            "coordinator timeout too short",
        ),
        (base.clone().with_max_term_lead(0), "no term lead"),
        (
            base.clone()
                .with_preemption(Preemption::AfterStable(Duration::ZERO)),
            "zero stable",
        ),
        (
            base.clone()
                .with_leader_timeout(Duration::from_secs(90_000)),
            "longer than a day",
        ),
    ];
    for (config, why) in cases {
        assert!(config.validate().is_err(), "{why} was accepted");
        assert!(Node::new(NodeId(1), members(3), config).is_err(), "{why}");
    }
    assert!(matches!(
        base.clone().with_leader_timeout(ms(120)).validate(),
        Err(ConfigError::LeaderTimeoutTooShort { .. })
    ));
    // With a majority, heartbeats every 20 ms and a 100 ms leader timeout: the
    // 79.8 ms lease is shorter than a claim's votes (a round trip on a fast
    // clock, 50.05 ms) plus the first renewal's round trip (50 ms).
    let quick = base
        .clone()
        .with_quorum(bully_core::Quorum::Majority)
        .with_heartbeat_interval(ms(20))
        .with_leader_timeout(ms(100));
    assert_eq!(
        quick.validate(),
        Err(ConfigError::LeaseTooShort {
            lease: quick.leader_lease(),
            min: Duration::from_micros(100_050),
        })
    );
    assert!(quick.with_leader_timeout(ms(121)).validate().is_ok());
    base.validate().unwrap();
}

#[test]
fn the_failover_bound_adds_up_detection_and_announcement() {
    let config = Config::default();
    // T_M + leader timeout + answer timeout + P_p + T_M (P_p: the processing
    // time, the longest before a reply leaves), the answer timeout
    // being the round trip (50 ms) on a clock that may run ρ = 0.001 fast.
    let expected = Duration::from_micros(20_000 + 500_000 + 50_050 + 10_000 + 20_000);
    assert_eq!(config.failover_bound(7), expected);
    assert!(config.settle_bound(7) > config.failover_bound(7));
    assert!(
        config.settle_bound(9) > config.settle_bound(3),
        "the slowest detection grows with N"
    );
}

#[test]
fn messages_from_strangers_from_itself_and_from_far_ahead_are_counted_and_change_nothing() {
    let now = Instant::now();
    let mut node = node(2, 3);
    node.start(now);
    transmits(&mut node);
    events(&mut node);
    let (term, role, deadline) = (node.term(), node.role(), node.poll_timeout());

    node.handle_message(
        now,
        NodeId(99),
        Message::Coordinator {
            term: Term(5),
            round: 0,
        },
    );
    node.handle_message(
        now,
        NodeId(2),
        Message::Coordinator {
            term: Term(5),
            round: 0,
        },
    );
    let far = Term(term.0 + Config::default().max_term_lead() + 1);
    node.handle_message(
        now,
        NodeId(3),
        Message::Coordinator {
            term: far,
            round: 0,
        },
    );

    let dropped = node.stats().dropped;
    assert_eq!(dropped[DropReason::NotMember], 1);
    assert_eq!(dropped[DropReason::FromSelf], 1);
    assert_eq!(dropped[DropReason::TermTooFarAhead], 1);
    assert_eq!(
        (node.term(), node.role(), node.poll_timeout()),
        (term, role, deadline)
    );
    assert!(transmits(&mut node).is_empty());
    assert!(events(&mut node).is_empty());
    assert_eq!(node.leader(), None);
}

#[test]
fn an_early_or_repeated_timeout_is_a_no_op_and_deadlines_never_lie_in_the_past() {
    let start = Instant::now();
    let mut node = node(1, 3);
    node.start(start);
    transmits(&mut node);
    events(&mut node);
    let deadline = node.poll_timeout().expect("waiting for answers");
    node.handle_timeout(deadline - Duration::from_millis(1));
    assert!(transmits(&mut node).is_empty(), "nothing is due yet");
    assert_eq!(node.poll_timeout(), Some(deadline));

    node.handle_timeout(deadline);
    // Nobody answered: 1 leads, and its next deadline (a heartbeat) is ahead.
    assert_eq!(node.role(), Role::Leader);
    let heartbeat_at = node.poll_timeout().unwrap();
    assert!(heartbeat_at > deadline);
    // 2 and 3 never answered, so they are suspected and not told; the same
    // instant again does nothing more.
    assert!(transmits(&mut node).is_empty());
    node.handle_timeout(deadline);
    assert!(transmits(&mut node).is_empty());
    // Heartbeats go to every member, suspected or not: that is how one that was
    // only slow learns who leads.
    node.handle_timeout(heartbeat_at);
    let round = transmits(&mut node);
    assert_eq!(round.len(), 2);
    assert!(
        round
            .iter()
            .all(|t| matches!(t.message, Message::Heartbeat { .. }))
    );
}

#[test]
fn time_running_backwards_is_treated_as_standing_still() {
    let start = Instant::now();
    let mut node = node(3, 3);
    node.start(start + Duration::from_secs(10));
    let deadline = node.poll_timeout().unwrap();
    node.handle_timeout(start);
    assert_eq!(
        node.poll_timeout(),
        Some(deadline),
        "an instant from the past fires nothing"
    );
    assert!(deadline > start + Duration::from_secs(10));
}

#[test]
fn commands_naming_strangers_are_errors() {
    let mut node = node(4, 7);
    let now = Instant::now();
    assert_eq!(
        node.suspect(now, NodeId(8)),
        Err(CommandError::UnknownMember(NodeId(8)))
    );
    assert_eq!(
        node.suspect(now, NodeId(4)),
        Err(CommandError::SelfReference(NodeId(4)))
    );
    assert!(!node.step_down(now), "only a leader can step down");
}

#[test]
fn events_come_in_the_documented_order() {
    let now = Instant::now();
    let mut node = node(3, 3);
    node.start(now);
    transmits(&mut node);
    assert_eq!(
        events(&mut node),
        [
            Event::ElectionStarted { term: Term(1) },
            Event::BecameLeader { term: Term(1) },
            Event::LeaderElected {
                leader: NodeId(3),
                term: Term(1)
            },
        ]
    );
    // A Coordinator from a higher term and lower id: 3 bullies back, after
    // stepping down from the leadership that token out-ranks.
    node.handle_message(
        now,
        NodeId(2),
        Message::Coordinator {
            term: Term(4),
            round: 0,
        },
    );
    assert_eq!(
        events(&mut node),
        [
            Event::SteppedDown { term: Term(4) },
            Event::ElectionStarted { term: Term(5) },
            Event::BecameLeader { term: Term(5) },
            Event::LeaderElected {
                leader: NodeId(3),
                term: Term(5)
            },
        ]
    );
}
