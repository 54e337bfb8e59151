//! What the example tests share: running the `simulate` program.

use std::process::Command;

/// Runs `simulate` with `args`, asserts it succeeded, and returns what it printed.
pub(crate) fn simulate(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_simulate"))
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}
