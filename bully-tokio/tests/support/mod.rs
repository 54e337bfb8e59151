//! The test harness pieces shared by bully-tokio's tests: the W1 check on work
//! intervals ([`work`]) and a socket that loses datagrams ([`lossy`]).

pub(crate) mod lossy;
pub(crate) mod work;
