//! The test harness pieces shared by bully-std's tests: the W1 check on work
//! intervals ([`work`]) and a transport with loss and freezes ([`faulty`]).

pub(crate) mod faulty;
pub(crate) mod work;
