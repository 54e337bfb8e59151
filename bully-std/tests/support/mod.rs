//! bully-std's test harness, shared by its tests: [`mem::MemCluster`] (members
//! over the in-memory network, with cut, isolate, heal, crash and restart) and
//! a transport with loss and freezes ([`faulty`]). The W1 check on work
//! intervals is `bully_sim::check_w1`, bully-tokio's tests' too.
// Each test binary uses a part of the harness: what one does not use is not dead.
#![allow(dead_code)]

pub(crate) mod faulty;
pub(crate) mod mem;
