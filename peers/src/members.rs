//! One system's members, whatever their type: the [`Visit`] in which a table hands
//! over what to do with them, and [`with_members`], which runs it with the builder
//! of `system`'s members.

use std::time::Instant;

use bully_core::{Config, DurableState};

use crate::bully::BullyPeer;
use crate::omni::OmniPeer;
use crate::peer::Peer;
use crate::raft_peer::RaftPeer;
use crate::system::{Library, System};

/// Something to do with one system's members, whatever their type.
pub trait Visit {
    /// What it returns.
    type Out;
    /// Does it; `build(id, n, seed)` makes member `id` of `1..=n`.
    fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> Self::Out;
}

/// Runs `v` with the member builder of `system`, bully-core's members configured
/// by `bully_config(n)` at `n` members. The caller says how: the equal-traffic
/// configurations are measured, by the rule that itself runs the peer's members
/// through here.
pub fn with_members<V: Visit>(
    system: System,
    bully_config: &dyn Fn(u64) -> Config,
    v: V,
) -> V::Out {
    match system.library() {
        Library::Bully => {
            let base = Instant::now();
            // Built per N (the equal-traffic configurations depend on it); the last
            // one is kept so a cluster's members share one lookup.
            let last: std::cell::RefCell<Option<(u64, Config)>> = std::cell::RefCell::new(None);
            v.visit(&move |id, n, _seed| {
                let mut last = last.borrow_mut();
                let config = match &*last {
                    Some((m, c)) if *m == n => c.clone(),
                    _ => {
                        let c = bully_config(n);
                        *last = Some((n, c.clone()));
                        c
                    }
                };
                if system == System::BullyMajorityUndeclared {
                    BullyPeer::with_state(id, n, config, base, DurableState::default())
                } else {
                    BullyPeer::new(id, n, config, base)
                }
            })
        }
        Library::Raft => {
            let settings = system.raft_settings();
            v.visit(&move |id, n, seed| RaftPeer::new(id, n, settings, member_seed(seed, id)))
        }
        Library::Omni => {
            let settings = system.omni_settings();
            v.visit(&move |id, n, seed| OmniPeer::new(id, n, settings, member_seed(seed, id)))
        }
    }
}

/// A member's own seed, derived from the run's.
pub fn member_seed(seed: u64, id: u64) -> u64 {
    seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ id.wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
}
