//! The bridge's Rust side against bully-sim's simulator: the page's session runs
//! the same simulation as the native code, counts what the sources count, and a
//! saved scenario comes back as it was.

use bully_core::{Config, MessageKind, NodeId};
use bully_sim::{Simulation, scenario};
use bully_web::{Action, AlgorithmChoice, Frame, Scenario, Session, Settings, WebError};

fn settings(n: u64, algorithm: AlgorithmChoice) -> Settings {
    Settings {
        n,
        algorithm,
        ..Settings::default()
    }
}

fn count(frame: &Frame, kind: MessageKind) -> u64 {
    frame
        .counts
        .iter()
        .find(|(name, _)| name == kind.name())
        .map_or(0, |(_, count)| *count)
}

#[test]
fn ten_processes_4_calls_the_election_51_messages_and_10_is_crowned() {
    let mut session = Session::new(settings(10, AlgorithmChoice::Classic)).unwrap();
    session.act(Action::Elect { node: 4 }).unwrap();
    assert!(session.run_to_end().unwrap());
    let frame = session.frame();
    assert_eq!(frame.agreed, Some(10));
    assert_eq!(frame.election_messages, 51);
    assert_eq!(count(&frame, MessageKind::Election), 21);
    assert_eq!(count(&frame, MessageKind::Answer), 21);
    assert_eq!(count(&frame, MessageKind::Coordinator), 9);
    let explained = frame.explanation.clone().expect("Table 1's setting");
    assert!(explained.table_1);
    assert!(explained.setting.contains("P = 4"));
    assert_eq!(explained.rows.len(), 1, "Table 1 has rows for P = 1 only");
    assert!(explained.rows[0].source.ends_with("equation (3)"));
    assert_eq!((explained.rows[0].value, explained.measured), (51, 51));
    assert!(frame.nodes.iter().all(|node| node.follows == Some(10)));
    assert!(frame.nodes[3].initiator, "4 started it");
    assert!(
        session
            .paper_log()
            .contains("Node 10 is elected as the Coordinator")
    );
    assert!(session.mermaid().contains("P4->>P5: Election"));

    // 10 crashes: the others notice by their own timeouts and crown 9.
    session.act(Action::Crash { node: 10 }).unwrap();
    assert!(session.run_to_end().unwrap());
    let frame = session.frame();
    assert_eq!(frame.agreed, Some(9));
    let explained = frame.explanation.expect("a failover is explained too");
    assert!(!explained.table_1, "a failover is not Table 1's setting");
    assert!(explained.title.contains("coordinator crashed"));
    assert_eq!(frame.violations, 0);
}

#[test]
fn modified_bully_from_4_of_10_sends_25_and_from_1_sends_table_1s_28() {
    let mut session = Session::new(settings(10, AlgorithmChoice::Modified)).unwrap();
    session.act(Action::Elect { node: 4 }).unwrap();
    assert!(session.run_to_end().unwrap());
    let frame = session.frame();
    assert_eq!((frame.agreed, frame.election_messages), (Some(10), 25));
    let explained = frame.explanation.unwrap();
    // Equation (1) gives 22; Figure 6's log (Elections to the lower processes too) 25.
    let values: Vec<(u64, bool)> = explained
        .rows
        .iter()
        .map(|r| (r.value, r.matches))
        .collect();
    assert_eq!(values, [(22, false), (25, true)]);
    assert!(explained.rows[0].source.ends_with("equation (1)"));
    assert!(explained.why.unwrap().contains("P − 1 = 3 Elections"));

    let mut session = Session::new(settings(10, AlgorithmChoice::Modified)).unwrap();
    session.act(Action::Elect { node: 1 }).unwrap();
    session.run_to_end().unwrap();
    let frame = session.frame();
    assert_eq!(frame.election_messages, 28);
    let table_1 = frame.explanation.unwrap().rows.pop().unwrap();
    assert_eq!(
        (
            table_1.source.ends_with("Table 1, row N = 10"),
            table_1.value
        ),
        (true, 28)
    );
}

/// What the page does, done directly on bully-sim's simulator.
fn native_run(seed: u64) -> Simulation {
    // The page's model: the sources' exact clocks.
    let config = Config::default()
        .with_staggered_start(false)
        .with_clock_drift(0.0);
    let mut sim = Simulation::new(seed, (1..=8).map(NodeId), config).unwrap();
    sim.wake_all();
    sim.set_default_link(bully_sim::LinkConfig {
        loss: 0.2,
        ..bully_sim::LinkConfig::reliable(sim.message_delay())
    });
    sim.enable_trace();
    sim.start_all();
    sim.run_for(sim.settle_bound());
    // The page counts each episode from its trigger (causal depths included),
    // as `bully_sim::scenario` measures.
    sim.reset_counts();
    sim.crash(NodeId(8)).unwrap();
    sim.reset_counts();
    let leader = sim.node(NodeId(3)).and_then(|n| n.leader()).map(|l| l.id);
    match leader {
        Some(leader) if leader != NodeId(3) => sim
            .command(NodeId(3), |node, now| node.suspect(now, leader))
            .unwrap()
            .unwrap(),
        _ => sim
            .command(NodeId(3), |node, now| node.start_election(now))
            .unwrap(),
    }
    sim.run_for(sim.failover_bound());
    sim
}

fn page_run(seed: u64) -> Session {
    let mut session = Session::new(Settings {
        n: 8,
        seed,
        loss_percent: 20,
        ..Settings::default()
    })
    .unwrap();
    session.act(Action::StartAll).unwrap();
    let settle = session.simulation().settle_bound().as_micros() as u64;
    session.advance(settle).unwrap();
    session.act(Action::Crash { node: 8 }).unwrap();
    session.act(Action::Notice { node: 3 }).unwrap();
    let failover = session.simulation().failover_bound().as_micros() as u64;
    session.advance(failover).unwrap();
    session
}

#[test]
fn the_page_and_the_native_simulator_give_the_same_trace_for_the_same_seed() {
    for seed in [1, 7, 42] {
        let native = native_run(seed).trace_json_lines();
        let page = page_run(seed).trace_json_lines();
        assert!(native.lines().count() > 100);
        let first_difference = native.lines().zip(page.lines()).position(|(a, b)| a != b);
        assert_eq!(first_difference, None, "seed {seed}: the traces part there");
        assert_eq!(page.lines().count(), native.lines().count(), "seed {seed}");
    }
    // The seed matters: a fifth of the messages are lost, by the seed's draw.
    assert_ne!(
        page_run(1).trace_json_lines(),
        page_run(7).trace_json_lines()
    );
}

#[test]
fn a_saved_scenario_reloads_to_the_same_state_even_between_two_messages_of_one_instant() {
    let mut session = Session::new(settings(10, AlgorithmChoice::Classic)).unwrap();
    session.act(Action::Elect { node: 4 }).unwrap();
    // 5 has 4's Election; 6's and 7's land at the same instant, not yet handled.
    assert!(session.step_message().unwrap());
    session.act(Action::Crash { node: 7 }).unwrap();
    session.act(Action::CutBoth { a: 5, b: 9 }).unwrap();
    for _ in 0..5 {
        session.step_message().unwrap();
    }
    let json = session.scenario().to_json();
    let loaded = Session::from_scenario(&Scenario::from_json(&json).unwrap()).unwrap();
    assert_eq!(loaded.frame(), session.frame());
    assert_eq!(loaded.trace_json_lines(), session.trace_json_lines());
    assert_eq!(loaded.scenario(), session.scenario());

    // And both go on the same way.
    let (mut a, mut b) = (session, loaded);
    a.run_to_end().unwrap();
    b.run_to_end().unwrap();
    assert_eq!(a.frame(), b.frame());
    assert_eq!(a.frame().agreed, Some(10));
}

#[test]
fn the_dances_experiments_on_the_page_cost_what_the_simulator_measures() {
    for number in 2..=5 {
        for seed in 0..4 {
            let settings = Settings {
                seed,
                ..Settings::default()
            };
            let scenario = bully_web::presets::dance_experiment(number, &settings).unwrap();
            let mut session = Session::from_scenario(&scenario).unwrap();
            assert!(session.run_to_end().unwrap());
            let measured = scenario::dance_experiment(&settings.config(), number, seed).unwrap();
            let frame = session.frame();
            assert_eq!(
                frame.agreed.map(NodeId),
                measured.report.leader,
                "{number}/{seed}"
            );
            assert_eq!(
                frame.election_messages,
                measured.report.total(),
                "experiment {number}, seed {seed}"
            );
        }
    }
}

#[test]
fn bad_requests_are_refused_and_change_nothing() {
    assert_eq!(
        Session::new(settings(65, AlgorithmChoice::Classic)).unwrap_err(),
        WebError::Members(65)
    );
    assert!(Scenario::from_json("{\"settings\":1}").is_err());
    let mut session = Session::new(settings(5, AlgorithmChoice::Classic)).unwrap();
    session.act(Action::Crash { node: 2 }).unwrap();
    let before = (session.frame(), session.scenario());
    assert!(session.act(Action::Elect { node: 2 }).is_err(), "2 is down");
    assert!(session.act(Action::Notice { node: 6 }).is_err(), "no 6");
    assert!(session.act(Action::Isolate { group: vec![1, 9] }).is_err());
    assert!(bully_web::presets::dance_experiment(6, &Settings::default()).is_err());
    assert_eq!((session.frame(), session.scenario()), before);
}
