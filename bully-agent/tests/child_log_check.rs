//! The child-log checks of `support/child_log.rs`, on hand-written logs.
mod support;
