//! The start's announcement without a quorum (bully-core/src/node/announcement.rs):
//! the highest member announces as it boots, without knowing the cluster's
//! term, and leads only once a round trip brought no objection. A sitting leader
//! whose term the announcement reaches objects, and the newcomer leads the next
//! term: no term is led by two members (S4), in three message delays.

use bully_core::{Config, Event, MessageKind, NodeId, Term};
use bully_sim::{Simulation, scenario};

use crate::support::leaderships;

/// Five settled under 5; 5 crashes and 4 takes over, in the term after 5's.
fn four_leads_after_five_crashed() -> Simulation {
    let mut sim = scenario::settled(&Config::default(), 5, 7).unwrap();
    sim.crash(NodeId(5)).unwrap();
    sim.run_for(sim.settle_bound());
    assert_eq!(sim.agreed_leader(), Some(NodeId(4)));
    sim.enable_trace();
    sim.reset_counts();
    sim
}

#[test]
fn five_comes_back_announces_the_term_four_leads_and_four_objects() {
    let mut sim = four_leads_after_five_crashed();
    let four_term = sim.node(NodeId(4)).unwrap().term();
    // 5 persisted the term it led, one below 4's: its announcement names 4's.
    sim.restart_durable(NodeId(5)).unwrap();
    assert_eq!(sim.node(NodeId(5)).unwrap().term(), four_term);
    let back = sim.run_until_true(sim.settle_bound(), |sim| {
        sim.agreed_leader() == Some(NodeId(5))
    });
    assert!(back, "5 took over");
    // The announcement out (1), 4's reminder back (2), 5's announcement of
    // the next term out (3).
    assert!(sim.in_delays(sim.since_reset()) <= 3.0);
    assert_eq!(
        sim.node(NodeId(5)).unwrap().term(),
        four_term.next(),
        "5 leads the term after 4's"
    );
    let sent = sim.sent();
    assert_eq!(
        sent[MessageKind::Coordinator],
        4 + 1 + 4,
        "5 tells 1..4, 4 tells 5, 5 tells 1..4 again"
    );
    let led = leaderships(&sim);
    assert_eq!(led, [(four_term.next(), NodeId(5))], "5 never led 4's term");
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn five_comes_back_without_its_term_and_four_corrects_it() {
    let mut sim = four_leads_after_five_crashed();
    let four_term = sim.node(NodeId(4)).unwrap().term();
    // Without its state 5 announces term 1, below everyone's: the followers
    // refuse it, and 4 tells 5 who leads.
    sim.restart(NodeId(5)).unwrap();
    let back = sim.run_until_true(sim.settle_bound(), |sim| {
        sim.agreed_leader() == Some(NodeId(5))
    });
    assert!(back, "5 took over");
    assert!(sim.in_delays(sim.since_reset()) <= 3.0);
    let led = leaderships(&sim);
    assert_eq!(
        led,
        [(four_term.next(), NodeId(5))],
        "5 led only a new term"
    );
}

#[test]
fn nobody_objects_to_a_cold_start_and_the_highest_leads_after_the_answer_timeout() {
    let config = Config::default();
    let mut sim = Simulation::new(3, scenario::members(4), config.clone()).unwrap();
    sim.enable_trace();
    sim.start_all();
    // One message delay on, everyone names 4, which still waits.
    sim.run_for(config.max_message_delay());
    for id in [1, 2, 3].map(NodeId) {
        assert_eq!(
            sim.node(id).unwrap().leader().map(|leader| leader.id),
            Some(NodeId(4))
        );
    }
    assert!(leaderships(&sim).is_empty(), "4 waits for objections");
    sim.run_for(config.answer_timeout());
    assert_eq!(sim.agreed_leader(), Some(NodeId(4)));
    assert_eq!(leaderships(&sim), [(Term(1), NodeId(4))]);
    assert_eq!(sim.sent()[MessageKind::Coordinator], 3);
}

#[test]
fn three_shut_down_while_announcing_tells_1_and_2_who_elect_at_once() {
    use bully_core::{Message, Node, Role, Transmit};
    use std::time::Instant;
    let members = [NodeId(1), NodeId(2), NodeId(3)];
    let t0 = Instant::now();
    let mut three = Node::new(NodeId(3), members, Config::default()).unwrap();
    let mut one = Node::new(NodeId(1), members, Config::default()).unwrap();
    one.start(t0);
    three.start(t0);
    let announced: Vec<Transmit> = std::iter::from_fn(|| three.poll_transmit()).collect();
    let coordinator = Message::Coordinator {
        term: Term(1),
        round: 0,
    };
    assert!(announced.iter().all(|t| t.message == coordinator));
    // 1 follows the announcement; 3 does not lead yet (it waits for objections).
    one.handle_message(t0, NodeId(3), coordinator.clone());
    assert_eq!(one.leader().map(|leader| leader.id), Some(NodeId(3)));
    assert_eq!(three.role(), Role::Candidate);
    while three.poll_event().is_some() {}
    // 3 is shut down before the answer timeout: it withdraws the announcement.
    assert!(three.step_down(t0), "the announcement is withdrawn");
    let sent: Vec<Transmit> = std::iter::from_fn(|| three.poll_transmit()).collect();
    let resign = Message::Resign {
        term: Term(1),
        successor: None,
    };
    assert_eq!(
        sent.iter()
            .map(|t| (t.to, t.message.clone()))
            .collect::<Vec<_>>(),
        vec![(NodeId(1), resign.clone()), (NodeId(2), resign.clone())]
    );
    assert_eq!(three.role(), Role::Follower);
    let events: Vec<Event> = std::iter::from_fn(|| three.poll_event()).collect();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::SteppedDown { .. } | Event::BecameLeader { .. })),
        "it never led: {events:?}"
    );
    // Its answer timeout passes: it does not lead after all.
    let later = t0 + Config::default().answer_timeout();
    three.handle_timeout(later);
    assert_ne!(three.role(), Role::Leader);
    // 1 lets 3 go at once and stands after one stagger step (2, above it, goes
    // first), instead of waiting out its leader timeout.
    while one.poll_transmit().is_some() {}
    while one.poll_event().is_some() {}
    one.handle_message(t0, NodeId(3), resign);
    assert_eq!(one.leader(), None);
    let lost: Vec<Event> = std::iter::from_fn(|| one.poll_event()).collect();
    assert!(
        lost.iter().any(|e| matches!(
            e,
            Event::LeaderLost {
                leader: NodeId(3),
                ..
            }
        )),
        "{lost:?}"
    );
    let config = Config::default();
    let step = config.answer_timeout() + config.max_message_delay();
    let due = one.poll_timeout().expect("1 waits to stand");
    assert!(
        due <= t0 + step,
        "1 stands {:?} after the resignation",
        due - t0
    );
    one.handle_timeout(due);
    let asked: Vec<Transmit> = std::iter::from_fn(|| one.poll_transmit()).collect();
    assert!(
        asked
            .iter()
            .any(|t| t.to == NodeId(2) && matches!(t.message, Message::Election { .. })),
        "{asked:?}"
    );
}

/// 5 of 1..=5 comes back with the term it persisted, 1, and announces term 2.
/// Returns it, announcing, and the instant it started.
fn five_back_announcing_term_2() -> (bully_core::Node, std::time::Instant) {
    use bully_core::{DurableState, Message, Node, Role};
    let t0 = std::time::Instant::now();
    let members = (1..=5).map(NodeId);
    let durable = DurableState {
        term: Term(1),
        vote: None,
        first_boot: false,
    };
    let mut five =
        Node::with_durable_state(NodeId(5), members, Config::default(), durable).unwrap();
    five.start(t0);
    let announced: Vec<_> = std::iter::from_fn(|| five.poll_transmit()).collect();
    assert_eq!(announced.len(), 4);
    assert!(announced.iter().all(|t| t.message
        == Message::Coordinator {
            term: Term(2),
            round: 0
        }));
    assert_eq!(five.role(), Role::Candidate);
    (five, t0)
}

#[test]
fn a_sitting_leader_two_terms_on_objects_and_five_stands_above_its_term() {
    use bully_core::Message;
    let (mut five, t0) = five_back_announcing_term_2();
    // 4 led terms 2 and 3 while 5 was away: its heartbeat of term 3 is an
    // objection too (a later term than the one announced).
    five.handle_message(
        t0,
        NodeId(4),
        Message::Heartbeat {
            term: Term(3),
            round: 7,
        },
    );
    let sent: Vec<_> = std::iter::from_fn(|| five.poll_transmit()).collect();
    assert!(
        sent.iter().all(|t| t.message
            == Message::Coordinator {
                term: Term(4),
                round: 0
            }),
        "5 stands in term 4 at once: {sent:?}"
    );
    assert_eq!(sent.len(), 4);
    assert_eq!(five.term(), Term(4));
}

#[test]
fn a_late_heartbeat_of_an_older_term_is_no_objection_and_five_leads_the_term_it_announced() {
    use bully_core::{Message, Role};
    let (mut five, t0) = five_back_announcing_term_2();
    // A heartbeat 4 sent in term 1, before 5 went away, arrives late.
    five.handle_message(
        t0,
        NodeId(4),
        Message::Heartbeat {
            term: Term(1),
            round: 3,
        },
    );
    assert!(
        std::iter::from_fn(|| five.poll_transmit()).all(|t| !matches!(
            t.message,
            Message::Coordinator { .. } | Message::Election { .. }
        )),
        "no new election"
    );
    assert_eq!(five.term(), Term(2));
    let due = five.poll_timeout().expect("the announcement's wait");
    five.handle_timeout(due);
    assert_eq!(five.role(), Role::Leader);
    assert_eq!(five.term(), Term(2), "5 leads the term it announced");
}
