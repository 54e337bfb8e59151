//! The test harness pieces shared by bully-std's tests: a transport with loss
//! and freezes ([`faulty`]). The W1 check on work intervals is
//! `bully_core::driver::check_w1`, bully-tokio's tests' too.

pub(crate) mod faulty;
