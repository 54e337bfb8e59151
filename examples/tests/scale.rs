//! `simulate scale`: one timed election, whose last line anyone can parse to
//! reproduce a figure of BENCHMARKS.md. The message counts are the analysis's;
//! the time is only checked to be a number.

use bully_sim::paper;

mod common;
use common::simulate;

/// The last line's two fields, `messages=<m> elapsed_ms=<t>`, and nothing else.
fn last_line(output: &str) -> (u64, f64) {
    let last = output.lines().last().expect("some output");
    let fields: Vec<&str> = last.split(' ').collect();
    let [messages, elapsed] = fields[..] else {
        panic!("two fields on the last line: {last:?}");
    };
    let messages = messages
        .strip_prefix("messages=")
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("messages=<count>: {last:?}"));
    let elapsed = elapsed
        .strip_prefix("elapsed_ms=")
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("elapsed_ms=<milliseconds>: {last:?}"));
    (messages, elapsed)
}

#[test]
fn each_algorithm_prints_the_analysed_count_and_a_time_on_its_last_line() {
    let n = 12;
    for (algorithm, expected) in [
        // Classic, the lowest of N initiating: N^2 - 1, equation (3) with P = 1.
        ("classic", paper::equation_3(n, 1)),
        // Modified: 3N - 2 (Table 1's values).
        ("modified", paper::modified_implementation(n, 1)),
        // Ring, every hop acknowledged: 4N - 2.
        ("ring", paper::ring_implementation(n)),
    ] {
        let output = simulate(&["scale", "--algorithm", algorithm, "--nodes", "12"]);
        let (messages, elapsed_ms) = last_line(&output);
        assert_eq!(messages, expected, "{algorithm}:\n{output}");
        assert!(elapsed_ms.is_finite() && elapsed_ms >= 0.0, "{output}");
        assert!(
            output.contains("leader: 12,"),
            "everyone agrees on the highest member:\n{output}"
        );
    }
}

#[test]
fn classic_at_a_hundred_members_sends_n_squared_minus_one() {
    let output = simulate(&["scale", "--algorithm", "classic", "--nodes", "100"]);
    assert_eq!(last_line(&output).0, 9_999);
    assert!(output.starts_with("classic, N = 100: member 1 alone starts an election"));
}
