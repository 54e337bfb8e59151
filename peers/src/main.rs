//! `bully-peers`: the side-by-side tables (see README.md).
#![forbid(unsafe_code)]

use std::alloc::System as SystemAlloc;
use std::path::PathBuf;
use std::process::Command as Process;
use std::time::Instant;

use clap::{Parser, Subcommand};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

use bully_peers::cpu::{self, Timed};
use bully_peers::detector;
use bully_peers::matching::with_system;
use bully_peers::memory;
use bully_peers::scenario::Partition;
use bully_peers::steady::{self, Probe};
use bully_peers::system::System;
use bully_peers::tables;
use bully_peers::traffic;

#[global_allocator]
static GLOBAL: &StatsAlloc<SystemAlloc> = &INSTRUMENTED_SYSTEM;

fn live_bytes() -> i64 {
    let s = GLOBAL.stats();
    s.bytes_allocated as i64 + s.bytes_reallocated as i64 - s.bytes_deallocated as i64
}

#[derive(Parser)]
#[command(about = "bully-core, raft-rs and omnipaxos's BLE in one deterministic event loop")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Every member boots at once: time and messages to agreement and to quiet.
    Cold {
        #[arg(long, value_delimiter = ',', default_value = "5,10,25,100,1000")]
        nodes: Vec<u64>,
        #[arg(long, value_delimiter = ',')]
        systems: Vec<System>,
        /// Seeds per size up to 25 (half as many at 100, one above).
        #[arg(long, default_value_t = 10)]
        seeds: u64,
    },
    /// The agreed leader crashes; everyone detects it by its own timeout.
    Crash {
        #[arg(long, value_delimiter = ',', default_value = "5,10,25,100")]
        nodes: Vec<u64>,
        #[arg(long, value_delimiter = ',')]
        systems: Vec<System>,
        #[arg(long, default_value_t = 10)]
        seeds: u64,
    },
    /// The partial partitions for 20 s, then healed.
    Partitions {
        #[arg(long, value_delimiter = ',')]
        scenarios: Vec<Partition>,
        #[arg(long, value_delimiter = ',')]
        systems: Vec<System>,
        #[arg(long, default_value_t = 20)]
        seeds: u64,
    },
    /// CPU per whole election (boot to agreement): wall median of interleaved runs,
    /// callgrind instructions (needs valgrind).
    Cpu {
        #[arg(long, value_delimiter = ',', default_value = "5,100,1000")]
        nodes: Vec<u64>,
        #[arg(long, value_delimiter = ',')]
        systems: Vec<System>,
        #[arg(long, default_value_t = 11)]
        rounds: usize,
        /// Largest N counted under callgrind (0: none).
        #[arg(long, default_value_t = 100)]
        callgrind_max: u64,
    },
    /// Steady state: ns and instructions per follower heartbeat and per leader round.
    Steady {
        #[arg(long, value_delimiter = ',', default_value = "5,100,1000")]
        nodes: Vec<u64>,
        #[arg(long, value_delimiter = ',')]
        systems: Vec<System>,
        /// Largest N counted under callgrind (0: none).
        #[arg(long, default_value_t = 100)]
        callgrind_max: u64,
    },
    /// Heap bytes per member, built and in the steady state.
    Memory {
        #[arg(long, default_value_t = 1000)]
        nodes: u64,
        #[arg(long, value_delimiter = ',')]
        systems: Vec<System>,
    },
    /// Equal traffic: steady messages per second, bully-core's heartbeat
    /// interval at BLE's and raft-rs's traffic, and the crash and partition tables
    /// at that traffic.
    Traffic {
        #[arg(long, value_delimiter = ',', default_value = "5,10,25,100")]
        nodes: Vec<u64>,
        /// Crash seeds per size up to 25 (half as many at 100).
        #[arg(long, default_value_t = 10)]
        seeds: u64,
        #[arg(long, value_delimiter = ',')]
        scenarios: Vec<Partition>,
        /// Seeds per partition scenario.
        #[arg(long, default_value_t = 20)]
        partition_seeds: u64,
    },
    /// False suspicions per hour and failover under 30 % loss and jitter,
    /// bully-core as it runs and other detectors replayed on its heartbeat arrivals.
    Detector {
        #[arg(long, value_delimiter = ',', default_value = "5,25")]
        nodes: Vec<u64>,
        /// Simulated hours per size, condition and leader timeout, over the seeds.
        #[arg(long, default_value_t = 40.0)]
        hours: f64,
        /// Runs the hours are split over.
        #[arg(long, default_value_t = 20)]
        seeds: u64,
        /// Leader crashes per size, condition and leader timeout.
        #[arg(long, default_value_t = 200)]
        crash_seeds: u64,
        /// bully-core leader timeouts (ms) run as they are, the loss-adaptive
        /// detector on; the first one's heartbeat arrivals are replayed through
        /// the other detectors.
        #[arg(long, value_delimiter = ',', default_value = "500")]
        timeouts: Vec<u64>,
        /// bully-core leader timeouts (ms) run with the loss-adaptive detector
        /// off (fixed timeouts).
        #[arg(long, value_delimiter = ',', default_value = "500,1100")]
        fixed: Vec<u64>,
        /// One simulated hour per condition, N = 5, 500 ms only (overrides the rest).
        #[arg(long)]
        quick: bool,
    },
    /// Every table, as one markdown document.
    All {
        /// Write the document here (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also replace what lies between `<!-- peers:begin -->` and
        /// `<!-- peers:end -->` in this file (BENCHMARKS.md).
        #[arg(long)]
        update: Option<PathBuf>,
        /// Fewer seeds and rounds, sizes up to 100, no callgrind: a minute, for a look.
        #[arg(long)]
        quick: bool,
    },
    /// One whole election (what `cpu` runs under callgrind).
    Election {
        #[arg(long)]
        system: System,
        #[arg(long)]
        nodes: u64,
    },
    /// One steady-state probe (what `steady` runs under callgrind).
    Probe {
        #[arg(long)]
        system: System,
        #[arg(long)]
        nodes: u64,
        #[arg(long)]
        what: Probe,
        #[arg(long)]
        iterations: u64,
    },
}

fn or_all<T: Copy>(chosen: Vec<T>, all: &[T]) -> Vec<T> {
    if chosen.is_empty() {
        all.to_vec()
    } else {
        chosen
    }
}

fn main() {
    match Cli::parse().command {
        Command::Cold {
            nodes,
            systems,
            seeds,
        } => {
            print!(
                "{}",
                tables::elections(false, &nodes, &or_all(systems, &System::ALL), seeds)
            )
        }
        Command::Crash {
            nodes,
            systems,
            seeds,
        } => {
            print!(
                "{}",
                tables::elections(true, &nodes, &or_all(systems, &System::ALL), seeds)
            )
        }
        Command::Partitions {
            scenarios,
            systems,
            seeds,
        } => print!(
            "{}",
            tables::partitions(
                &or_all(scenarios, &Partition::ALL),
                &or_all(systems, &System::ALL),
                seeds
            )
        ),
        Command::Cpu {
            nodes,
            systems,
            rounds,
            callgrind_max,
        } => {
            print!(
                "{}",
                cpu::table(
                    &nodes,
                    &or_all(systems, &System::ALL),
                    rounds,
                    callgrind_max
                )
            )
        }
        Command::Steady {
            nodes,
            systems,
            callgrind_max,
        } => {
            print!(
                "{}",
                steady::table(&nodes, &or_all(systems, &System::ALL), callgrind_max)
            )
        }
        Command::Memory { nodes, systems } => {
            print!(
                "{}",
                memory::table(nodes, &or_all(systems, &System::ALL), &live_bytes)
            )
        }
        Command::Traffic {
            nodes,
            seeds,
            scenarios,
            partition_seeds,
        } => print!(
            "{}",
            traffic::table(
                &nodes,
                seeds,
                &or_all(scenarios, &Partition::ALL),
                partition_seeds
            )
        ),
        Command::Detector {
            nodes,
            hours,
            seeds,
            crash_seeds,
            timeouts,
            fixed,
            quick,
        } => {
            let options = if quick {
                detector::Options::quick()
            } else {
                detector::Options {
                    nodes,
                    hours,
                    seeds,
                    crash_seeds,
                    settings: timeouts
                        .into_iter()
                        .map(|ms| (ms, true))
                        .chain(fixed.into_iter().map(|ms| (ms, false)))
                        .map(|(ms, adaptive)| detector::Setting {
                            timeout: std::time::Duration::from_millis(ms),
                            adaptive,
                        })
                        .collect(),
                }
            };
            print!("{}", detector::table(&options))
        }
        Command::All { out, update, quick } => {
            // Each finished section is written at once, so a long run that is stopped
            // keeps what it measured.
            let write = |doc: &str| {
                if let Some(path) = &out {
                    std::fs::write(path, doc).expect("write the document");
                }
                if let Some(path) = &update {
                    replace_section(path, doc);
                }
            };
            let doc = everything(quick, &write);
            if out.is_none() {
                print!("{doc}");
            }
        }
        Command::Election { system, nodes } => {
            let (wall, messages, agreed) = with_system(system, Timed { n: nodes, seed: 1 });
            println!(
                "agreed={agreed} messages={messages} wall_ms={:.3}",
                wall.as_secs_f64() * 1e3
            );
        }
        Command::Probe {
            system,
            nodes,
            what,
            iterations,
        } => {
            let mut p = steady::prepare(system, nodes, what);
            let sent = steady::probe_loop(&mut p, iterations);
            println!("iterations={iterations} messages={sent}");
        }
    }
}

/// Replaces what lies between the markers in `path` with `doc`.
fn replace_section(path: &std::path::Path, doc: &str) {
    let text = std::fs::read_to_string(path).expect("read the file to update");
    let (begin, end) = ("<!-- peers:begin -->", "<!-- peers:end -->");
    let (Some(b), Some(e)) = (text.find(begin), text.find(end)) else {
        eprintln!("{} has no {begin} ... {end} markers", path.display());
        std::process::exit(1);
    };
    let updated = format!("{}{begin}\n\n{doc}\n{}", &text[..b], &text[e..]);
    std::fs::write(path, updated).expect("write the updated file");
}

fn everything(quick: bool, write: &dyn Fn(&str)) -> String {
    let started = Instant::now();
    let all = System::ALL;
    let (seeds, part_seeds, rounds, cg) = if quick {
        (3, 5, 3, 0)
    } else {
        (10, 20, 11, 100)
    };
    let big: &[u64] = if quick {
        &[5, 10, 25, 100]
    } else {
        &[5, 10, 25, 100, 1000]
    };
    let cpu_sizes: &[u64] = if quick { &[5, 100] } else { &[5, 100, 1000] };
    let core = Process::new("git")
        .args(["log", "-1", "--format=%h %cs %s", "--", "../bully-core"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let mut doc = String::new();
    let mut section = |title: &str, command: &str, body: String| {
        eprintln!("{title}: done at {:.0} s", started.elapsed().as_secs_f64());
        doc.push_str(&format!("#### {title}\n\n`{command}`\n\n{body}\n"));
        write(&doc);
    };
    section(
        "Cold start",
        &format!("cargo run --release -- cold --seeds {seeds}"),
        tables::elections(false, big, &all, seeds),
    );
    section(
        "Leader crash",
        &format!("cargo run --release -- crash --seeds {seeds}"),
        tables::elections(true, &[5, 10, 25, 100], &all, seeds),
    );
    section(
        "Partial partitions, healed after 20 s",
        &format!("cargo run --release -- partitions --seeds {part_seeds}"),
        tables::partitions(&Partition::ALL, &all, part_seeds),
    );
    section(
        "CPU per whole election (boot to agreement)",
        &format!("cargo run --release -- cpu --rounds {rounds} --callgrind-max {cg}"),
        cpu::table(cpu_sizes, &all, rounds, cg),
    );
    section(
        "Steady state",
        &format!("cargo run --release -- steady --callgrind-max {cg}"),
        steady::table(cpu_sizes, &all, cg),
    );
    section(
        "Equal traffic",
        &format!("cargo run --release -- traffic --seeds {seeds} --partition-seeds {part_seeds}"),
        traffic::table(&[5, 10, 25, 100], seeds, &Partition::ALL, part_seeds),
    );
    let mem_n = if quick { 100 } else { 1000 };
    section(
        &format!("Memory per member at N = {mem_n}"),
        &format!("cargo run --release -- memory --nodes {mem_n}"),
        memory::table(mem_n, &all, &live_bytes),
    );
    let det = if quick {
        detector::Options::quick()
    } else {
        detector::Options::full()
    };
    section(
        "Failure detector under 30 % loss and jitter",
        &if quick {
            "cargo run --release -- detector --quick".to_string()
        } else {
            format!(
                "cargo run --release -- detector --hours {} --seeds {} --crash-seeds {}",
                det.hours, det.seeds, det.crash_seeds
            )
        },
        detector::table(&det),
    );
    write(&doc);
    doc.push_str(&format!(
        "bully-core measured: `{core}`; raft 0.7.0, omnipaxos 0.2.4, omnipaxos_storage 0.2.4 \
         (pinned in peers/Cargo.toml). Generated by `cargo run --release -- all{}` in {:.0} s.\n",
        if quick { " --quick" } else { "" },
        started.elapsed().as_secs_f64()
    ));
    write(&doc);
    doc
}
