//! bully-tokio's test harness, shared by every test of the crate: the clusters
//! the stories run ([`mem::MemCluster`] over the in-memory network in paused
//! time, [`turmoil::TurmoilCluster`] over turmoil's simulated UDP), each with
//! the faults named as in raft-rs's test network (cut, isolate, heal, crash,
//! restart); the timings the tests run with ([`config`]); waiting for a group to
//! agree on a leader ([`agree`]); loopback sockets ([`udp`]); a socket that
//! loses datagrams ([`lossy`]) and turmoil's socket as the transport's
//! ([`sim_socket`]). The W1 check on work intervals is
//! `bully_sim::check_w1`, bully-std's tests' too.
// Each test binary uses a part of the harness: what one does not use is not dead.
#![allow(dead_code)]

pub(crate) mod agree;
pub(crate) mod config;
pub(crate) mod lossy;
pub(crate) mod mem;
pub(crate) mod sim_socket;
pub(crate) mod turmoil;
pub(crate) mod udp;
