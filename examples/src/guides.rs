//! The guides in docs/guides/ as doctests: every Rust block of a guide is
//! compiled, and run unless it is marked `no_run`, by `cargo test`, so that a
//! guide's program is the one that works.

/// docs/guides/work-while-leading.md
#[doc = include_str!("../../docs/guides/work-while-leading.md")]
pub struct WorkWhileLeading;

/// docs/guides/your-own-transport.md
#[doc = include_str!("../../docs/guides/your-own-transport.md")]
pub struct YourOwnTransport;

/// docs/guides/drive-the-core.md
#[doc = include_str!("../../docs/guides/drive-the-core.md")]
pub struct DriveTheCore;
