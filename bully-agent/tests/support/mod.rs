//! Shared by the process tests (`processes.rs`, `pause.rs`, `nemesis.rs`,
//! `bad_config.rs`) and by any other test that runs real `bully-agent`
//! processes:
//!
//! - `child.sh`: the command the agents run while they lead; it appends
//!   `start|beat|term|stop TOKEN PID MILLIS` lines to one shared file, and can
//!   take a while to stop after SIGTERM.
//! - [`child_log`]: parses that file and checks it (overlaps, token order, gaps,
//!   writes a `FencingGuard` refuses).
//! - [`cluster`]: configurations, a temporary directory, every member declared
//!   new (`bully-agent init`), real agent processes and the signals the tests
//!   send them, a lost data directory; kills everything on drop.
//! - [`procs`]: the process table from `/proc`, and freezing a process tree.
//! - [`relay`]: a UDP relay in the test process, to cut links without root.
//! - [`lone`]: one agent alone in its cluster, seen through its endpoint (the
//!   endpoint, `on_exit` and run-time error tests).
//! - [`marked`]: the processes of one test's job, by a marker in their
//!   environment (the process tree tests).
//! - [`nemesis`]: randomized fault schedules for real clusters (`nemesis.rs`):
//!   drawn from a seed, run, and judged from the child log.
//! - [`postgres`]: a throwaway PostgreSQL server (`postgres_fencing.rs`).

// Each test binary uses a part of the support code.
#![allow(dead_code)]

pub(crate) mod child_log;
pub(crate) mod cluster;
pub(crate) mod lone;
pub(crate) mod marked;
pub(crate) mod nemesis;
pub(crate) mod postgres;
pub(crate) mod procs;
pub(crate) mod reconfig;
pub(crate) mod relay;
