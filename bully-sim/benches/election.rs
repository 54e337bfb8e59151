//! A whole election in the simulator, per algorithm and cluster size: the setting
//! of Soundarabai et al.'s Table 1 (members `1..=N` idle with no leader, member 1 alone starts an
//! election), from building the cluster to the election's last message.
//!
//! `cargo bench -p bully-sim --bench election`
//!
//! Criterion's throughput line is the simulator's messages per second (the
//! election's messages, heartbeats left out). The ring stops at 10,000 members
//! here: its token carries the list of live ids, so a pass costs `O(N^2)` and one
//! election of 100,000 takes minutes; `simulate scale` measures it once.

use std::hint::black_box;
use std::time::Duration;

use bully_core::{Algorithm, Config, NodeId};
use bully_sim::scenario;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};

/// Each algorithm with the sizes it is measured at.
const RUNS: [(&str, Algorithm, &[u64]); 3] = [
    ("classic", Algorithm::Classic, &[10, 100, 1_000]),
    (
        "modified",
        Algorithm::Modified,
        &[10, 100, 1_000, 10_000, 100_000],
    ),
    ("ring", Algorithm::Ring, &[10, 100, 1_000, 10_000]),
];

fn elections(c: &mut Criterion) {
    for (name, algorithm, sizes) in RUNS {
        let config = Config::default().with_algorithm(algorithm);
        let mut group = c.benchmark_group(format!("election/{name}"));
        group.sampling_mode(SamplingMode::Flat).sample_size(10);
        for &n in sizes {
            let report = scenario::one_initiator(&config, n, NodeId(1)).expect("runs");
            assert_eq!(report.leader, Some(NodeId(n)), "{name} N={n}");
            println!("{name} N={n}: {} messages", report.total());
            group.throughput(Throughput::Elements(report.total()));
            group.measurement_time(if n >= 10_000 {
                Duration::from_secs(10)
            } else {
                Duration::from_secs(3)
            });
            group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
                b.iter(|| scenario::one_initiator(&config, black_box(n), NodeId(1)).expect("runs"))
            });
        }
        group.finish();
    }
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .configure_from_args();
    elections(&mut criterion);
    criterion.final_summary();
}
