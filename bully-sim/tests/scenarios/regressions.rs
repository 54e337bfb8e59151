//! The fault schedules with which the quorum sweeps (`quorum.rs`) found bugs,
//! each run whole in the simulator: once the faults stop, the cluster agrees
//! on the leader it should and no check fails. Each bug's smallest form, one
//! node and the messages that show it, is the test named in its comment in
//! bully-core's `tests/regressions.rs`.

use std::time::Duration;

use bully_core::{Config, NodeId};

/// The quorum sweep's schedule behind bully-core's
/// `a_member_whose_later_vote_no_longer_binds_follows_a_leader_of_an_older_term`,
/// whole (classic, seed 16270, members 1 to 3): after the faults stop, every
/// live member names 3.
#[test]
fn seed_16270_a_durable_restart_follows_the_leader_elected_without_it() {
    use bully_core::Quorum;
    use bully_sim::Simulation;
    use bully_sim::chaos::Action::{self, Advance, Crash, Jitter, Restart, RestartDurable};
    let ms = |micros: u64| Duration::from_micros(micros);
    let n = |id| NodeId(id);
    let schedule: Vec<Action> = vec![
        Advance(ms(269_418)),
        Crash(n(2)),
        Advance(ms(206_790)),
        Crash(n(2)),
        Advance(ms(166_917)),
        Crash(n(1)),
        Advance(ms(194_080)),
        Crash(n(3)),
        Advance(ms(392_722)),
        Jitter(ms(19_698)),
        Advance(ms(11_929)),
        Jitter(ms(7_548)),
        Advance(ms(167_107)),
        Restart(n(2)),
        Advance(ms(264_643)),
        Crash(n(2)),
        Advance(ms(33_291)),
        Crash(n(3)),
        Advance(ms(355_342)),
        Restart(n(3)),
        Advance(ms(278_795)),
        RestartDurable(n(2)),
        Advance(ms(307_991)),
        RestartDurable(n(2)),
        Advance(ms(127_519)),
        Crash(n(1)),
        Advance(ms(319_151)),
        Jitter(ms(5_939)),
        Advance(ms(381_191)),
        RestartDurable(n(1)),
        Advance(ms(219_192)),
        Jitter(ms(8_267)),
    ];
    let config = Config::default().with_quorum(Quorum::Majority);
    let mut sim = Simulation::new(16270, (1..=3).map(NodeId), config).unwrap();
    sim.start_all();
    for action in &schedule {
        sim.apply(action).unwrap();
    }
    let settle = sim.heal_and_settle();
    assert_eq!(settle.leader, Some(NodeId(3)), "{settle:?}");
    assert!(settle.within_bound(), "{settle:?}");
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// The quorum sweep's schedule behind bully-core's
/// `a_leader_probed_from_a_later_term_by_a_member_that_does_not_follow_leads_again_above_it`,
/// whole (seed 85270, members 1 to 3, every algorithm): after the faults stop,
/// every live member names 3.
#[test]
fn seed_85270_a_member_fenced_above_an_amnesiac_leader_follows_it_again() {
    use bully_core::{Algorithm, Quorum};
    use bully_sim::Simulation;
    use bully_sim::chaos::Action::{
        self, Advance, Crash, Jitter, Partition, Restart, RestartDurable, StartElection, StepDown,
    };
    let ms = |micros: u64| Duration::from_micros(micros);
    let n = |id| NodeId(id);
    let schedule: Vec<Action> = vec![
        Advance(ms(390_523)),
        Jitter(ms(21_123)),
        Advance(ms(222_278)),
        Crash(n(2)),
        Advance(ms(354_486)),
        Crash(n(3)),
        Advance(ms(354_891)),
        Jitter(ms(1_149)),
        Advance(ms(312_664)),
        Jitter(ms(7_545)),
        Advance(ms(102_758)),
        StepDown(n(1)),
        Advance(ms(66_690)),
        Partition {
            mask: 8_161_131_876_616_712_056,
        },
        Advance(ms(207_167)),
        Jitter(ms(34_267)),
        Advance(ms(388_825)),
        Jitter(ms(42_673)),
        Advance(ms(322_956)),
        Restart(n(3)),
        Advance(ms(129_569)),
        Restart(n(2)),
        Advance(ms(313_779)),
        RestartDurable(n(2)),
        Advance(ms(55_770)),
        Restart(n(1)),
        Advance(ms(250_407)),
        StepDown(n(2)),
        Advance(ms(326_497)),
        StartElection(n(3)),
        Advance(ms(172_371)),
        Jitter(ms(4_036)),
    ];
    for algorithm in [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring] {
        let config = Config::default()
            .with_algorithm(algorithm)
            .with_quorum(Quorum::Majority);
        let mut sim = Simulation::new(85270, (1..=3).map(NodeId), config).unwrap();
        sim.start_all();
        for action in &schedule {
            sim.apply(action).unwrap();
        }
        let settle = sim.heal_and_settle();
        assert_eq!(settle.leader, Some(NodeId(3)), "{algorithm:?}: {settle:?}");
        assert!(settle.within_bound(), "{algorithm:?}: {settle:?}");
        assert!(
            sim.violations().is_empty(),
            "{algorithm:?}: {:?}",
            sim.violations()
        );
    }
}

/// The quorum sweep's schedule behind bully-core's
/// `a_member_that_voted_for_a_claimant_does_not_go_back_to_its_lost_leader_while_it_promises`,
/// whole (ring, seed 163459, members 1 to 7; its restarts of members that were
/// up, which do nothing, left out): no two leaders at any moment, and 7 leads
/// once the faults stop.
#[test]
fn seed_163459_voters_for_a_claimant_do_not_renew_the_lease_of_the_leader_they_lost() {
    use bully_core::{Algorithm, Quorum};
    use bully_sim::Simulation;
    use bully_sim::chaos::Action::{self, Advance, Cut, CutBoth, Jitter, Loss, StartElection};
    let us = Duration::from_micros;
    let n = |id| NodeId(id);
    let schedule: Vec<Action> = vec![
        Advance(us(189_609)),
        StartElection(n(7)),
        Advance(us(155_732)),
        Cut {
            from: n(1),
            to: n(4),
        },
        Advance(us(393_430)),
        Advance(us(335_004)),
        CutBoth { a: n(5), b: n(4) },
        Advance(us(357_599)),
        CutBoth { a: n(7), b: n(6) },
        Advance(us(3_676)),
        Advance(us(101_889)),
        Jitter(us(8_088)),
        Advance(us(62_174)),
        Loss(6),
        Advance(us(151_439)),
        StartElection(n(2)),
        Advance(us(178_027)),
        Advance(us(27_227)),
        Advance(us(32_126)),
        Advance(us(211_124)),
        Jitter(us(8_034)),
        Advance(us(56_432)),
        Advance(us(156_615)),
    ];
    let config = Config::default()
        .with_algorithm(Algorithm::Ring)
        .with_quorum(Quorum::Majority);
    let mut sim = Simulation::new(163459, (1..=7).map(NodeId), config).unwrap();
    sim.start_all();
    for action in &schedule {
        sim.apply(action).unwrap();
        assert!(
            sim.violations().is_empty(),
            "after {action:?}: {:?}",
            sim.violations()
        );
    }
    let settle = sim.heal_and_settle();
    assert_eq!(settle.leader, Some(NodeId(7)), "{settle:?}");
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    assert_eq!(sim.overlapping_leaderships(), 0);
}
