//! The errors of the [`Handle`](crate::Handle)'s calls: [`DriverError`] and
//! [`ChangeError`], bully-tokio's too (both written once, in
//! `bully_driver`), here with the transport's `io::Error`.

use std::io;

pub use bully_driver::DriverError;

/// Why [`Handle::add_member`](crate::Handle::add_member),
/// [`remove_member`](crate::Handle::remove_member),
/// [`set_member_address`](crate::Handle::set_member_address) or
/// [`set_auth`](crate::Handle::set_auth) changed nothing: the node refused
/// ([`CommandError`](bully_core::CommandError)), the transport refused (an
/// [`io::Error`]), or the driver has stopped ([`DriverError`]).
pub type ChangeError = bully_driver::ChangeError<io::Error>;
