//! Memory per member: heap bytes the members hold, read from a counting allocator
//! the binary installs (`stats_alloc`).

use std::time::Duration;

use crate::matching::with_system;
use crate::members::Visit;
use crate::peer::Peer;
use crate::report::{Table, ratio, thousands};
use crate::scenario::{PATIENCE, cluster};
use crate::system::System;

/// Live heap bytes, as the binary's counting allocator sees them.
pub type LiveBytes<'a> = &'a dyn Fn() -> i64;

struct Held<'a> {
    n: u64,
    live: LiveBytes<'a>,
}

/// `(bytes per member when built, bytes per member in the steady state, inline size)`.
type Measured = (f64, f64, usize);

impl Visit for Held<'_> {
    type Out = Measured;
    fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> Measured {
        let n = self.n;
        let before = (self.live)();
        let peers: Vec<P> = (1..=n).map(|id| build(id, n, 1)).collect();
        let built = ((self.live)() - before) as f64 / n as f64;
        drop(peers);
        let mut sim = cluster(build, n, 1);
        sim.start_all();
        sim.run_until_agreed(PATIENCE).expect("the cluster agrees");
        let until = sim.now() + Duration::from_millis(300);
        sim.run_until(until);
        let peers = sim.into_peers();
        let with_peers = (self.live)();
        drop(peers);
        let steady = (with_peers - (self.live)()) as f64 / n as f64;
        (built, steady, std::mem::size_of::<P>())
    }
}

/// The memory table at `n` members.
pub fn table(n: u64, systems: &[System], live: LiveBytes<'_>) -> String {
    let mut t = Table::new(&[
        "N",
        "system",
        "bytes per member, built",
        "bytes per member, steady state",
        "vs bully",
        "of which inline (size_of)",
    ]);
    let mut reference = None;
    for &system in systems {
        let (built, steady, inline) = with_system(system, Held { n, live });
        if system == System::Bully {
            reference = Some(steady);
        }
        t.row(vec![
            thousands(n),
            system.label().into(),
            thousands(built.round() as u64),
            thousands(steady.round() as u64),
            ratio(steady, reference),
            thousands(inline as u64),
        ]);
    }
    t.markdown()
}
