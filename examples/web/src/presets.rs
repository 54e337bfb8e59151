//! The "Bully Algorithm Dance"'s five experiments with six dancers, as scenarios the page loads with
//! one click. Each is the script `bully_sim::scenario::dance_experiment`
//! runs, written down as timed actions: the instants come from running that
//! script on a scratch simulation, the die from the same seeded generator, so the
//! page shows the run the tests measure.

use bully_core::NodeId;
use bully_sim::{Simulation, scenario};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::clock::micros;
use crate::error::WebError;
use crate::scenario::{Action, SCENARIO_VERSION, Scenario, Settings, Timed};

/// The dance's dancers.
pub const DANCERS: u64 = 6;

/// What each experiment is, in the dance's words.
pub const TITLES: [&str; 5] = [
    "1. Everyone sits; dancers stand up one at a time, in a random order",
    "2. Everyone stands up at once",
    "3. The leader sits down; one random dancer notices",
    "4. The leader sits down; two random dancers notice at the same moment",
    "5. The leader and one other dancer sit down; one random dancer notices",
];

/// Experiment `number` (1 to 5) of the "Bully Algorithm Dance" under `settings` (its `n` is set to
/// six dancers), with `settings.seed` playing the die.
pub fn dance_experiment(number: u8, settings: &Settings) -> Result<Scenario, WebError> {
    let settings = Settings {
        n: DANCERS,
        ..settings.clone()
    };
    let config = settings.config();
    let seed = settings.seed;
    let leader = DANCERS;
    // The die, rolled as `dance_experiment` rolls it.
    let mut die = ChaCha8Rng::seed_from_u64(seed);
    let mut others: Vec<u64> = (1..DANCERS).collect();
    others.shuffle(&mut die);
    let at = |at_us: u64, action: Action| Timed {
        at_us,
        steps: None,
        action,
    };
    let actions = match number {
        1 => {
            let mut order: Vec<u64> = (1..=DANCERS).collect();
            order.shuffle(&mut die);
            let mut sim = Simulation::new(seed, settings.members(), config.clone())?;
            let mut actions: Vec<Timed> = order
                .iter()
                .map(|&id| at(0, Action::Crash { node: id }))
                .collect();
            for &id in &order {
                sim.crash(NodeId(id))?;
            }
            let settle = sim.settle_bound();
            for &id in &order {
                actions.push(at(micros(sim.elapsed()), Action::Recover { node: id }));
                sim.restart_durable(NodeId(id))?;
                sim.run_until_true(settle, |sim| sim.agreed_leader().is_some());
            }
            actions
        }
        2 => vec![at(0, Action::StartAll)],
        3..=5 => {
            let sim = scenario::settled(&config, DANCERS, seed)?;
            let t = micros(sim.elapsed());
            let mut actions = vec![
                at(0, Action::StartAll),
                at(t, Action::Crash { node: leader }),
            ];
            let noticers: &[u64] = match number {
                3 => &others[..1],
                4 => &others[..2],
                _ => {
                    actions.push(at(t, Action::Crash { node: others[0] }));
                    &others[1..2]
                }
            };
            actions.extend(
                noticers
                    .iter()
                    .map(|&id| at(t, Action::Notice { node: id })),
            );
            actions
        }
        _ => return Err(WebError::Preset(number)),
    };
    Ok(Scenario {
        version: SCENARIO_VERSION,
        settings,
        actions,
        now_us: 0,
    })
}
