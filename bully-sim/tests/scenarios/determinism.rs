//! Same seed, same run: the simulator's trace is identical byte for byte.

use std::time::Duration;

use bully_core::{Config, NodeId};
use bully_sim::Simulation;
use bully_sim::chaos::{FaultMix, random_schedule};

fn run(seed: u64) -> (String, String) {
    let members: Vec<NodeId> = (1..=7).map(NodeId).collect();
    let config = Config::default();
    let mut sim = Simulation::new(seed, members.iter().copied(), config.clone()).unwrap();
    sim.enable_trace();
    sim.start_all();
    let schedule = random_schedule(
        seed,
        &members,
        30,
        Duration::from_millis(200),
        &config,
        FaultMix::ALL,
    );
    for action in &schedule {
        sim.apply(action).unwrap();
    }
    sim.heal_and_settle();
    (sim.trace_json_lines(), sim.mermaid(true))
}

#[test]
fn the_same_seed_gives_the_same_trace_byte_for_byte() {
    for seed in [1, 2, 42] {
        let (first_trace, first_diagram) = run(seed);
        let (second_trace, second_diagram) = run(seed);
        assert!(
            first_trace.lines().count() > 100,
            "a real run, not an empty one"
        );
        assert_eq!(first_trace, second_trace, "seed {seed}: traces differ");
        assert_eq!(
            first_diagram, second_diagram,
            "seed {seed}: diagrams differ"
        );
    }
}

#[test]
fn different_seeds_give_different_runs() {
    assert_ne!(run(1).0, run(2).0);
}

#[test]
fn every_trace_line_is_a_json_object_with_a_time_and_a_type() {
    let (trace, diagram) = run(3);
    for line in trace.lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(value["at_us"].is_u64(), "{line}");
        assert!(value["type"].is_string(), "{line}");
    }
    assert!(diagram.starts_with("sequenceDiagram\n"));
    assert!(diagram.contains("->>P"), "messages are drawn as arrows");
}
