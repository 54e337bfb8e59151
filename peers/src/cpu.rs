//! CPU per whole election: wall time (median of interleaved runs) and instructions
//! (callgrind, counting only inside [`run_election`]).

use std::hint::black_box;
use std::time::{Duration, Instant};

use crate::callgrind::callgrind;
use crate::matching::with_system;
use crate::members::Visit;
use crate::peer::{Peer, Time};
use crate::report::{Table, median, ratio, thousands};
use crate::scenario::{PATIENCE, cluster};
use crate::system::{System, system_arg};

/// Boots every member and runs until they agree: what the CPU figures measure.
/// Never inlined, so callgrind can count inside it alone (`--toggle-collect`).
#[inline(never)]
pub fn run_election<P: Peer>(sim: &mut crate::sim::Sim<P>) -> Option<Time> {
    sim.start_all();
    sim.run_until_agreed(PATIENCE)
}

/// One whole election, timed: `(wall time, messages sent, agreed)`.
pub struct Timed {
    /// Members.
    pub n: u64,
    /// The run's seed.
    pub seed: u64,
}

impl Visit for Timed {
    type Out = (Duration, u64, bool);
    fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> Self::Out {
        let mut sim = cluster(build, self.n, self.seed);
        let start = Instant::now();
        let agreed = black_box(run_election(&mut sim)).is_some();
        let wall = start.elapsed();
        (wall, sim.counts().total(), agreed)
    }
}

/// The CPU table: per size and configuration, wall median of `rounds` interleaved
/// runs and callgrind's instructions (sizes up to `callgrind_max`).
pub fn table(sizes: &[u64], systems: &[System], rounds: usize, callgrind_max: u64) -> String {
    let mut t = Table::new(&[
        "N",
        "system",
        "messages",
        "wall: median of interleaved runs",
        "vs bully",
        "instructions (whole loop)",
        "of which in the library",
        "vs bully",
        "per message (library)",
    ]);
    for &n in sizes {
        let rounds = if n >= 1000 {
            rounds.div_ceil(3)
        } else {
            rounds
        };
        let mut walls: Vec<Vec<Duration>> = vec![Vec::new(); systems.len()];
        let mut messages = vec![0u64; systems.len()];
        for round in 0..rounds {
            for (i, &system) in systems.iter().enumerate() {
                let (wall, m, agreed) = with_system(system, Timed { n, seed: 1 });
                assert!(agreed, "{} did not agree at N = {n}", system.label());
                let _ = round;
                walls[i].push(wall);
                messages[i] = m;
            }
        }
        let mut bully_wall = None;
        let mut bully_instr = None;
        for (i, &system) in systems.iter().enumerate() {
            let wall = median(&walls[i]).expect("at least one round");
            let counted = (n <= callgrind_max)
                .then(|| {
                    callgrind(
                        "*run_election*",
                        &[
                            "election".into(),
                            "--system".into(),
                            system_arg(system),
                            "--nodes".into(),
                            n.to_string(),
                        ],
                    )
                })
                .flatten();
            if system == System::Bully {
                bully_wall = Some(wall.as_secs_f64());
                bully_instr = counted.map(|(_, lib)| lib as f64);
            }
            t.row(vec![
                thousands(n),
                system.label().into(),
                thousands(messages[i]),
                format!("{:.3} ms", wall.as_secs_f64() * 1e3),
                ratio(wall.as_secs_f64(), bully_wall),
                counted.map_or("–".into(), |(all, _)| thousands(all)),
                counted.map_or("–".into(), |(_, lib)| thousands(lib)),
                counted.map_or("–".into(), |(_, lib)| ratio(lib as f64, bully_instr)),
                counted.map_or("–".into(), |(_, lib)| {
                    format!("{:.0}", lib as f64 / messages[i].max(1) as f64)
                }),
            ]);
        }
    }
    t.markdown()
}
