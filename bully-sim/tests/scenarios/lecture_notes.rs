//! The lecture notes "Election Algorithm in Distributed Systems" (README.md,
//! "Sources"): their example (processes 1..7) and their best and worst cases, in
//! the simulator, with the message counts and turnaround times the notes discuss.

use bully_core::{Config, MessageKind, NodeId, Role};
use bully_sim::Simulation;
use bully_sim::scenario::{self, ElectionReport};

/// The lecture notes' model: a process that recovers starts an election at once.
fn config() -> Config {
    Config::default().with_staggered_start(false)
}

fn count(report: &ElectionReport, kind: MessageKind) -> u64 {
    report.messages[kind]
}

fn seven_settled() -> Simulation {
    let sim = scenario::settled(&config(), 7, 1).unwrap();
    assert_eq!(
        sim.agreed_leader(),
        Some(NodeId(7)),
        "the highest of 1..7 leads"
    );
    sim
}

/// The first act of the example, for the tests of what follows it.
fn six_leads_after_4_noticed_7_down() -> Simulation {
    let mut sim = seven_settled();
    sim.crash(NodeId(7)).unwrap();
    sim.command(NodeId(4), |node, now| node.suspect(now, NodeId(7)))
        .unwrap()
        .unwrap();
    sim.run_for(config().coordinator_timeout());
    sim
}

#[test]
fn process_4_notices_7_is_down_and_6_wins_and_tells_everyone() {
    let mut sim = seven_settled();
    sim.crash(NodeId(7)).unwrap();
    sim.reset_counts();
    sim.command(NodeId(4), |node, now| node.suspect(now, NodeId(7)))
        .unwrap()
        .unwrap();
    assert_eq!(
        sim.node(NodeId(4)).unwrap().role(),
        Role::Candidate,
        "4 holds an election"
    );
    assert_eq!(
        sim.sent()[MessageKind::Election],
        2,
        "to 5 and 6, not to the suspected 7"
    );
    let answers_before =
        |sim: &Simulation, id| sim.node(NodeId(id)).unwrap().stats().sent[MessageKind::Answer];
    let (five_before, six_before) = (answers_before(&sim, 5), answers_before(&sim, 6));

    sim.run_for(config().coordinator_timeout());
    assert_eq!(sim.agreed_leader(), Some(NodeId(6)), "6, the bully, wins");
    // 5 and 6 answered 4; 6 told 5 to stop; 5 and 6 asked 7, which never answered.
    assert_eq!(answers_before(&sim, 5) - five_before, 1, "5 answered 4");
    assert_eq!(
        answers_before(&sim, 6) - six_before,
        2,
        "6 answered 4 and 5"
    );
    let sent = sim.sent();
    assert_eq!(
        sent[MessageKind::Election],
        2 + 2 + 1,
        "4->5,6; 5->6,7; 6->7"
    );
    assert_eq!(sent[MessageKind::Answer], 3);
    assert_eq!(
        sent[MessageKind::Coordinator],
        5,
        "6 tells 1..5; 7 is suspected"
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn process_7_recovers_and_takes_over() {
    let mut sim = six_leads_after_4_noticed_7_down();
    assert_eq!(sim.agreed_leader(), Some(NodeId(6)));

    sim.reset_counts();
    sim.restart_durable(NodeId(7)).unwrap();
    // Nobody is above 7: it announces at once, in one message time.
    sim.run_for(sim.message_delay());
    assert_eq!(sim.agreed_leader(), Some(NodeId(7)));
    assert_eq!(sim.sent().total() - sim.sent()[MessageKind::Heartbeat], 6);
    assert_eq!(sim.sent()[MessageKind::Coordinator], 6);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn process_7_recovering_without_its_term_is_corrected_and_still_takes_over() {
    let mut sim = six_leads_after_4_noticed_7_down();
    let six_term = sim.node(NodeId(6)).unwrap().term();

    sim.reset_counts();
    sim.restart(NodeId(7)).unwrap();
    // 7 restarts at term 0 and announces term 1, below the cluster's floor: every
    // member refuses it, and the sitting leader 6 tells 7 who leads. 7 then
    // bullies its way back in a term above 6's.
    let back = sim.run_until_true(config().coordinator_timeout(), |sim| {
        sim.agreed_leader() == Some(NodeId(7))
    });
    assert!(back, "7 took over");
    // Stale announcement out (1), 6's correction back (2), 7's new announcement (3).
    assert_eq!(sim.in_delays(sim.since_reset()), 3.0);
    let seven = sim.node(NodeId(7)).unwrap();
    assert!(seven.term() > six_term, "7 leads in a term above 6's");
    let refused: u64 = sim
        .members()
        .iter()
        .filter_map(|&id| sim.node(id))
        .map(|node| node.stats().dropped[bully_core::DropReason::StaleLeader])
        .sum();
    assert!(refused >= 6, "everyone refused 7's stale announcement");
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn best_case_the_second_highest_notices_n_minus_2_messages_in_one_message_time() {
    for n in [5, 7, 10] {
        let report = scenario::best_case(&config(), n).unwrap();
        assert_eq!(report.leader, Some(NodeId(n - 1)));
        assert_eq!(report.total(), n - 2, "n={n}: {}", report.messages);
        assert_eq!(count(&report, MessageKind::Coordinator), n - 2);
        assert_eq!(report.delays, 1.0, "n={n}: one message transmission time");
        assert_eq!(report.depth, 1);
    }
}

/// Messages when member `j` of `1..=n` notices that the crashed `n` is gone and
/// nobody else has: `j` asks the `m = n-1-j` live members above it; each of those
/// asks everyone above itself (the crashed `n` included, since only `j` suspects
/// it) and answers everyone below; `n-1` waits out `n`'s silence and tells the
/// `n-2` others. `m + m(m+1)/2` Elections, `m + m(m-1)/2` Answers, `n-2`
/// Coordinators: `m^2 + 2m + n - 2`.
fn single_noticer_messages(n: u64, j: u64) -> u64 {
    let m = n - 1 - j;
    m * m + 2 * m + n - 2
}

#[test]
fn worst_case_the_lowest_notices_quadratic_messages_about_five_message_times() {
    let config = config();
    let t_m = config.max_message_delay().as_secs_f64();
    for n in [5, 7, 10] {
        let report = scenario::worst_case(&config, n).unwrap();
        assert_eq!(report.leader, Some(NodeId(n - 1)));
        assert_eq!(
            report.total(),
            single_noticer_messages(n, 1),
            "n={n}: {}",
            report.messages
        );
        assert_eq!(report.total(), (n - 2) * (n + 1));
        // The lecture notes: "approximately 5 message transmission times". Here:
        // 1's Election reaches n-1 (1), n-1 waits out the crashed n's answer
        // (2*T_M + P_p, with T_M the message time, the longest a message takes,
        // and P_p the processing time, the longest before a reply leaves), and
        // its Coordinator arrives (1).
        let expected = 2.0 + config.answer_timeout().as_secs_f64() / t_m;
        assert!(
            (report.delays - expected).abs() < 1e-9,
            "n={n}: {} delays",
            report.delays
        );
        assert!(
            (4.0..=5.0).contains(&report.delays),
            "approximately 5: {}",
            report.delays
        );
    }
}

#[test]
fn any_single_noticer_costs_what_the_formula_says() {
    for n in [5u64, 7, 10] {
        for j in 1..n {
            let report = scenario::detection(&config(), n, &[NodeId(n)], &[NodeId(j)]).unwrap();
            assert_eq!(report.total(), single_noticer_messages(n, j), "n={n} j={j}");
            assert_eq!(report.leader, Some(NodeId(n - 1)));
            assert_eq!(report.leader_changes, 1, "one leadership, no flapping");
        }
    }
}
