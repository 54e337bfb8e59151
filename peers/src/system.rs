//! The configurations compared: each library's recommended one and the one closest
//! to the others.

use std::time::{Duration, Instant};

use bully_core::{Config, DurableState, Quorum};
use clap::ValueEnum;

use crate::bully::BullyPeer;
use crate::omni::{OmniPeer, OmniSettings};
use crate::peer::Peer;
use crate::raft_peer::{RaftPeer, RaftSettings};
use crate::traffic;

/// One library in one configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
pub enum System {
    /// bully-core, `Config::default()`: classic Bully, heartbeat 100 ms, leader
    /// timeout 500 ms, no quorum.
    Bully,
    /// bully-core, `Config::default().with_quorum(Quorum::Majority)`.
    BullyMajority,
    /// raft-rs, `Config::default()` (heartbeat 2 ticks, election 20 ticks: 200 ms and
    /// 2 to 4 s), ticked every 100 ms as its documentation does; no pre-vote, no
    /// check-quorum.
    Raft,
    /// raft-rs's defaults with pre-vote and check-quorum.
    RaftPvCq,
    /// raft-rs with pre-vote and check-quorum, heartbeat 1 tick and election 5 ticks
    /// of 100 ms: 100 ms heartbeats and a 500 ms minimum election timeout, as bully's.
    Raft500,
    /// omnipaxos's defaults (`election_tick_timeout` 1), ticked every 100 ms as its
    /// documentation's example: a BLE round every 100 ms.
    Ble,
    /// omnipaxos with `election_tick_timeout` 5 at 100 ms ticks: a BLE round every
    /// 500 ms, bully's leader timeout.
    Ble500,
    /// bully-core, classic Bully at BLE's steady traffic: the heartbeat interval of
    /// `traffic`'s rule, chosen per N so that its steady messages per second do not
    /// exceed `ble`'s, leader timeout `max(5 h, h + 2 T_M)`, the rest default.
    BullyAtBle,
    /// bully-core with a majority quorum at BLE's steady traffic (the same rule).
    BullyMajorityAtBle,
    /// `bully majority` with members not declared a first boot (`Node::new`,
    /// or a lost state file): each votes for nobody for a follower lease after
    /// its start. What a cold start costs when nobody says the cluster is new.
    BullyMajorityUndeclared,
    /// bully-core, classic Bully at `raft pv+cq 500ms`'s steady traffic (the same rule).
    BullyAtRaft,
}

impl System {
    /// Every configuration, in table order.
    pub const ALL: [System; 7] = [
        System::Bully,
        System::BullyMajority,
        System::Raft,
        System::RaftPvCq,
        System::Raft500,
        System::Ble,
        System::Ble500,
    ];

    /// The equal-traffic configurations (issue 25), built per N: the `traffic`
    /// command's, not in [`System::ALL`].
    pub const AT_TRAFFIC: [System; 3] = [
        System::BullyAtBle,
        System::BullyMajorityAtBle,
        System::BullyAtRaft,
    ];

    /// The label used in the tables.
    pub fn label(self) -> &'static str {
        match self {
            System::Bully => "bully",
            System::BullyMajority => "bully majority",
            System::Raft => "raft",
            System::RaftPvCq => "raft pv+cq",
            System::Raft500 => "raft pv+cq 500ms",
            System::Ble => "ble",
            System::Ble500 => "ble 500ms",
            System::BullyAtBle => "bully @ble traffic",
            System::BullyMajorityAtBle => "bully majority @ble traffic",
            System::BullyAtRaft => "bully @raft traffic",
            System::BullyMajorityUndeclared => "bully majority, not declared new",
        }
    }

    /// Which library it is.
    pub fn library(self) -> Library {
        match self {
            System::Bully
            | System::BullyMajority
            | System::BullyAtBle
            | System::BullyMajorityAtBle
            | System::BullyAtRaft
            | System::BullyMajorityUndeclared => Library::Bully,
            System::Raft | System::RaftPvCq | System::Raft500 => Library::Raft,
            System::Ble | System::Ble500 => Library::Omni,
        }
    }

    /// bully-core's configuration at `n` members, for the bully systems (the
    /// equal-traffic ones measure their peer's traffic at `n` once per process:
    /// [`traffic::matched`]).
    pub fn bully_config(self, n: u64) -> Config {
        match self {
            System::BullyMajority | System::BullyMajorityUndeclared => {
                Config::default().with_quorum(Quorum::Majority)
            }
            System::BullyAtBle => traffic::matched(System::Ble, Quorum::None, n).config,
            System::BullyMajorityAtBle => traffic::matched(System::Ble, Quorum::Majority, n).config,
            System::BullyAtRaft => traffic::matched(System::Raft500, Quorum::None, n).config,
            _ => Config::default(),
        }
    }

    /// raft-rs's settings, for the raft systems.
    pub fn raft_settings(self) -> RaftSettings {
        let defaults = raft::Config::default();
        let tick = Duration::from_millis(100);
        match self {
            System::Raft500 => RaftSettings {
                tick,
                election_tick: 5,
                heartbeat_tick: 1,
                pre_vote: true,
                check_quorum: true,
            },
            _ => RaftSettings {
                tick,
                election_tick: defaults.election_tick,
                heartbeat_tick: defaults.heartbeat_tick,
                pre_vote: self == System::RaftPvCq,
                check_quorum: self == System::RaftPvCq,
            },
        }
    }

    /// omnipaxos's settings, for the BLE systems.
    pub fn omni_settings(self) -> OmniSettings {
        OmniSettings {
            tick: Duration::from_millis(100),
            election_tick_timeout: match self {
                System::Ble500 => 5,
                _ => omnipaxos::ServerConfig::default().election_tick_timeout,
            },
        }
    }
}

/// The three libraries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Library {
    /// bully-core.
    Bully,
    /// raft-rs.
    Raft,
    /// omnipaxos.
    Omni,
}

/// Something to do with one system's members, whatever their type.
pub trait Visit {
    /// What it returns.
    type Out;
    /// Does it; `build(id, n, seed)` makes member `id` of `1..=n`.
    fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> Self::Out;
}

/// Runs `v` with the member builder of `system`.
pub fn with_system<V: Visit>(system: System, v: V) -> V::Out {
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
                        let c = system.bully_config(n);
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

/// The command-line spelling of a system.
pub fn system_arg(system: System) -> String {
    use clap::ValueEnum;
    system
        .to_possible_value()
        .expect("every system has a name")
        .get_name()
        .to_string()
}
