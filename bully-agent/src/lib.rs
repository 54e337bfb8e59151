//! `bully-agent`: run a command on exactly one machine of a cluster, the Bully
//! leader, and nowhere else.
//!
//! The binary is the product; this library is its parts, public so that tests and
//! other tools can read what it writes (the state file, the status, the token's
//! format). See the crate's README for the operator's guide.
//!
//! - [`config`]: the TOML file and its checks.
//! - [`state`]: the durable state in the data directory; [`init`] declares a
//!   member's first boot in a new cluster.
//! - [`run`]: the daemon: the node, the command under a [`supervisor`], signals.
//! - [`containment`]: the job's whole process tree, in a [`cgroup`] or under
//!   the supervisor as subreaper ([`descendants`]).
//! - [`backoff`]: runs that keep failing make the member step aside;
//!   [`handover`]: a planned hand-over to a named member; [`health`]: a job
//!   whose checks keep failing makes the member step aside too.
//! - [`reload`]: SIGHUP reads the configuration again (members, keys, the
//!   command's settings) without a restart; [`resolve`] keeps members' host
//!   names resolved.
//! - [`systemd`]: readiness for a `Type=notify` unit, and its credentials.
//! - [`http`] and [`status`]: the endpoint and `bully-agent status`.
//! - [`token`]: `BULLY_FENCING_TOKEN`'s format.
// docs.rs builds with `--cfg docsrs` on nightly: items behind a feature
// show which one.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backoff;
pub mod cgroup;
pub mod child;
// The command line is the binary's (documented by `--help` and the man pages
// rendered from it); it is public only so that `main` and the man-page test
// reach it. Its clap-derived trait impls would carry clap's own docs, whose
// links resolve only inside clap's.
#[doc(hidden)]
pub mod cli;
pub mod config;
pub mod containment;
pub mod descendants;
pub mod error;
pub mod handover;
pub mod health;
pub mod http;
pub mod init;
pub mod own_binary;
pub mod reload;
pub mod resolve;
pub mod run;
pub mod state;
pub mod status;
pub mod supervisor;
pub mod systemd;
pub mod token;
pub mod view;
pub mod witness;
