//! The two schedules in which, with a majority quorum, two members led at once.
//! Both were found from outside the project with the simulator, at default or
//! valid configurations; each test here replays one, as the shared
//! counterexample files tell it, and asserts that nobody leads, or works, while
//! another member's lease runs.
//!
//! 1. **A lost state file read as a first boot.** Member 2 of three loses its
//!    data (a replaced disk, a pod rescheduled without its volume) and comes
//!    back with [`DurableState::default()`], which is what `bully-agent` loads
//!    when `state.json` is missing. It used to vote at once, as a member of a
//!    cluster booting for the first time may, while 3's lease, which 2's own
//!    acknowledgements had renewed, still ran. A first boot is now declared
//!    ([`DurableState::first_boot`]); anything else waits a follower lease.
//! 2. **A re-asked claim counting a vote from its first ask.** A claim whose
//!    votes came so late that its lease would lapse at once asks again and
//!    dates its lease from the second ask; it used to count an acknowledgement
//!    sent for the first ask too, whose promise began earlier and ended before
//!    the lease. Every acknowledgement now names the request it answers.

use std::time::Duration;

use bully_core::{Config, DurableState, MessageKind, Node, NodeId, Quorum, Role};
use bully_sim::{LinkConfig, Simulation, Violation};

use crate::support::{AGENT_MARGIN, agent_timings};

fn overlaps(sim: &Simulation) -> Vec<Violation> {
    sim.violations()
        .iter()
        .filter(|v| {
            matches!(
                v,
                Violation::OverlappingLeaders { .. } | Violation::WorkOverlap { .. }
            )
        })
        .cloned()
        .collect()
}

/// Runs until 3's lease has just been renewed: its `lease_until` moved on.
fn until_the_lease_is_renewed(sim: &mut Simulation, leader: NodeId) {
    let mut lease = sim.node(leader).unwrap().lease_until();
    loop {
        assert!(sim.step(), "the simulation ran dry");
        let renewed = sim.node(leader).unwrap().lease_until();
        if renewed > lease {
            return;
        }
        lease = renewed;
    }
}

/// Three members lead by 3; the link 3 -> 1 is cut, so only 2's
/// acknowledgements keep 3's lease. Returns the simulation just after 2's
/// acknowledgement renewed it.
fn three_leads_on_twos_acknowledgements(config: &Config, settle: Duration) -> Simulation {
    let mut sim = Simulation::new(7, (1..=3).map(NodeId), config.clone()).unwrap();
    sim.start_all();
    sim.run_for(sim.settle_bound());
    assert_eq!(sim.agreed_leader(), Some(NodeId(3)));
    sim.cut(NodeId(3), NodeId(1)).unwrap();
    sim.run_for(settle);
    assert_eq!(sim.node(NodeId(3)).unwrap().role(), Role::Leader);
    until_the_lease_is_renewed(&mut sim, NodeId(3));
    sim
}

/// Member 2's process comes back with what `bully-agent` loads when its state
/// file is gone: the default durable state.
fn comes_back_without_its_state(sim: &mut Simulation, config: &Config, start: bool) {
    let config = config.clone();
    sim.command(NodeId(2), move |node, now| {
        *node = Node::with_durable_state(
            NodeId(2),
            (1..=3).map(NodeId),
            config,
            DurableState::default(),
        )
        .unwrap();
        if start {
            node.start(now);
        }
    })
    .unwrap();
}

#[test]
fn a_member_that_lost_its_state_file_waits_out_the_lease_it_renewed() {
    let config = Config::default().with_quorum(Quorum::Majority);
    let mut sim = three_leads_on_twos_acknowledgements(&config, Duration::from_secs(2));
    let lease = sim.node(NodeId(3)).unwrap().lease_until().unwrap();
    // 3 is isolated, and 2 restarts at once, having lost its state file.
    sim.isolate(NodeId(3)).unwrap();
    comes_back_without_its_state(&mut sim, &config, true);
    let restarted = sim.now();
    let mut first_led = None;
    while sim.now() < restarted + Duration::from_secs(2) && sim.step() {
        if first_led.is_none() && sim.node(NodeId(2)).unwrap().role() == Role::Leader {
            first_led = Some(sim.now());
        }
    }
    assert_eq!(overlaps(&sim), [], "2 led while 3's lease ran");
    let first_led = first_led.expect("2 and 1 are a majority: 2 leads in the end");
    assert!(
        first_led >= lease,
        "2 led {:?} before 3's lease ended",
        lease - first_led
    );
    assert!(
        first_led >= restarted + config.follower_lease(),
        "2 voted before a follower lease had passed since its restart"
    );
}

/// The same with `bully-agent`'s timings, 2 down for up to two seconds before
/// its process starts again.
#[test]
fn an_agent_that_lost_its_state_file_never_overlaps_the_leader_it_left() {
    let config = agent_timings(bully_core::Algorithm::Classic);
    assert_eq!(config.resign_delay(), AGENT_MARGIN);
    for down in [0, 500, 1_000, 2_000].map(Duration::from_millis) {
        let mut sim = three_leads_on_twos_acknowledgements(&config, Duration::from_secs(10));
        // 2's process dies, and 3 is cut off from everyone.
        sim.partition(&[&[NodeId(3)], &[NodeId(2)]]).unwrap();
        comes_back_without_its_state(&mut sim, &config, false);
        sim.run_for(down);
        // 2's process is back: it reaches 1 again; 3 stays cut off.
        sim.heal();
        sim.isolate(NodeId(3)).unwrap();
        sim.command(NodeId(2), |node, now| node.start(now)).unwrap();
        let back = sim.now();
        sim.run_until_true(Duration::from_secs(10), |sim| {
            sim.node(NodeId(2)).unwrap().role() == Role::Leader
        });
        assert_eq!(overlaps(&sim), [], "down for {down:?}");
        assert_eq!(
            sim.node(NodeId(2)).unwrap().role(),
            Role::Leader,
            "down for {down:?}: 2 and 1 are a majority"
        );
        assert!(
            sim.now() >= back + config.follower_lease(),
            "down for {down:?}: 2 voted before a follower lease"
        );
    }
}

/// A declared first boot is the only start that votes at once: the quorum cold
/// start it keeps fast is `Simulation::new`'s, whose members are declared new.
#[test]
fn only_a_declared_first_boot_votes_at_once() {
    let config = Config::default().with_quorum(Quorum::Majority);
    let members = || (1..=3).map(NodeId);
    let claim = bully_core::Message::Coordinator {
        term: bully_core::Term(1),
        round: 0,
    };
    for (state, votes) in [
        (Some(DurableState::first_boot()), true),
        (Some(DurableState::default()), false),
        (None, false),
    ] {
        let mut node = match state {
            Some(state) => Node::with_durable_state(NodeId(2), members(), config.clone(), state),
            None => Node::new(NodeId(2), members(), config.clone()),
        }
        .unwrap();
        let now = std::time::Instant::now();
        node.start(now);
        while node.poll_transmit().is_some() {}
        node.handle_message(now, NodeId(3), claim.clone());
        let voted = std::iter::from_fn(|| node.poll_transmit())
            .any(|t| t.to == NodeId(3) && t.message.kind() == MessageKind::Ack);
        assert_eq!(voted, votes, "{state:?}");
    }
}

/// The schedule of the shared file `reask.rs`: a resign delay of 300 ms
/// (valid), 3 claims, the votes of 2 and 1 take 430 and 440 ms (delayed, not
/// lost), and 3's later messages to 1 and 2 are cut. The votes come so late
/// that a lease dated from the claim would lapse at once, so 3 asks again; its
/// second ask never arrives, and the only votes it hears are those for the
/// first, whose promises began 40 ms after the start and end 520 ms later.
#[test]
fn a_vote_for_the_first_ask_does_not_count_for_the_second() {
    let config = Config::default()
        .with_quorum(Quorum::Majority)
        .with_resign_delay(Duration::from_millis(300));
    config.validate().unwrap();
    let mut sim = Simulation::new(1, (1..=3).map(NodeId), config.clone()).unwrap();
    sim.start_all();
    // Until 3 has sent its claim to 1 and 2.
    while sim.sent()[MessageKind::Coordinator] < 2 {
        assert!(sim.step());
    }
    let slow = |ms| LinkConfig::reliable(Duration::from_millis(ms));
    sim.set_link(NodeId(2), NodeId(3), slow(430)).unwrap();
    sim.set_link(NodeId(1), NodeId(3), slow(440)).unwrap();
    sim.cut(NodeId(3), NodeId(1)).unwrap();
    sim.cut(NodeId(3), NodeId(2)).unwrap();
    let until = sim.now() + Duration::from_secs(3);
    let mut three_led = false;
    let mut isolated = false;
    while sim.now() < until && sim.step() {
        if !isolated && sim.node(NodeId(3)).unwrap().role() == Role::Leader {
            three_led = true;
            sim.isolate(NodeId(3)).unwrap();
            isolated = true;
        }
    }
    assert_eq!(overlaps(&sim), []);
    assert!(
        !three_led,
        "3 led on votes for its first ask, dated from its second"
    );
    assert_eq!(
        sim.node(NodeId(2)).unwrap().role(),
        Role::Leader,
        "1 and 2, a majority, elect 2"
    );
}
