//! The configurations compared: each library's recommended one and the one closest
//! to the others, by name, with raft-rs's and omnipaxos's settings. bully-core's
//! configuration per system is chosen in `matching.rs` (the equal-traffic ones are
//! measured), and the members are built in `members.rs`.

use std::time::Duration;

use clap::ValueEnum;

use crate::omni::OmniSettings;
use crate::raft_peer::RaftSettings;

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

    /// The equal-traffic configurations, built per N: the `traffic`
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

/// The command-line spelling of a system.
pub fn system_arg(system: System) -> String {
    use clap::ValueEnum;
    system
        .to_possible_value()
        .expect("every system has a name")
        .get_name()
        .to_string()
}
