//! The test harness pieces shared by bully-tokio's tests: a socket that loses
//! datagrams ([`lossy`]). The W1 check on work intervals is
//! `bully_core::driver::check_w1`, bully-std's tests' too.

pub(crate) mod lossy;
