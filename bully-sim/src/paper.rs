//! What the sources (README.md, "Sources") say, as numbers: Table 1 and equations
//! (1) to (6) of Soundarabai et al., "Improved Bully Election Algorithm for
//! Distributed Systems"; the best and worst cases of the lecture notes "Election
//! Algorithm in Distributed Systems"; the counts this implementation derives
//! where the sources disagree with themselves; and the list of those
//! disagreements.
//!
//! `N` is the number of processes in the set, `P` the rank of the one that notices
//! the crash and initiates (1 is the lowest), as in Soundarabai et al.'s section
//! 5.6. `T_m` and `T_1` are the paper's names for the total number of messages.

/// Soundarabai et al.'s Table 1: `(processes, classic Bully messages, modified Bully messages)`.
pub const TABLE_1: [(u64, u64, u64); 5] = [
    (5, 24, 13),
    (10, 99, 28),
    (15, 224, 43),
    (20, 399, 58),
    (25, 624, 73),
];

/// Table 1's `(classic, modified)` for `n` processes, if the table has a row for it.
pub fn table_1(n: u64) -> Option<(u64, u64)> {
    TABLE_1
        .iter()
        .find(|&&(processes, _, _)| processes == n)
        .map(|&(_, classic, modified)| (classic, modified))
}

/// Equation (1), modified Bully when the `p`-th process detects the crash:
/// `T_m = 2(N - P) + N`.
pub fn equation_1(n: u64, p: u64) -> u64 {
    2 * (n - p) + n
}

/// Equation (2), modified Bully with `P = 1`, as printed: `T_1 = 2(N - 1) + 1 = 3N - 1`.
/// Returns both sides, which are not equal: `(2N - 1, 3N - 1)`.
pub fn equation_2(n: u64) -> (u64, u64) {
    (2 * (n - 1) + 1, 3 * n - 1)
}

/// Equation (3), classic Bully when the `p`-th process detects the crash:
/// `T_m = (N - P + 1)(N - P) + N - 1`.
pub fn equation_3(n: u64, p: u64) -> u64 {
    (n - p + 1) * (n - p) + n - 1
}

/// Equation (4), classic Bully with `P = 1`: `T_1 = N^2 - 1`.
pub fn equation_4(n: u64) -> u64 {
    n * n - 1
}

/// Equation (5), classic Bully, "simplifying" its own sum: `T_m = n(n + 1)/2`.
pub fn equation_5(n: u64) -> u64 {
    n * (n + 1) / 2
}

/// Equation (6), modified Bully, the lowest initiates and the chosen process checks
/// with the past coordinator: `(n-1) + (n-1) + 1 + 1 + (n-1) = 3n - 1` ("or 3n").
pub fn equation_6(n: u64) -> u64 {
    (n - 1) + (n - 1) + 1 + 1 + (n - 1)
}

/// Table 1's modified column as a formula: `3N - 2`.
pub fn table_1_modified(n: u64) -> u64 {
    3 * n - 2
}

/// What this implementation's modified Bully sends when the `p`-th of `n` live
/// processes alone starts an election (nobody crashed inside the set):
/// `(N-1)` Elections to every other process (Figure 6 shows `4 -> 1, 2, 3`),
/// `(N-P)` Answers from the higher ones, 1 Takeover ("ElectedAsCoordinator") and
/// `(N-1)` Coordinators, so `3N - P - 1`. The highest process (`P = N`) has nobody
/// to ask and announces at once: `N - 1`.
pub fn modified_implementation(n: u64, p: u64) -> u64 {
    if p >= n { n - 1 } else { 3 * n - p - 1 }
}

/// The ring algorithm as implemented here (the lecture notes give no count): the token
/// makes `N` hops and the second pass `N - 1`, each hop acknowledged, so
/// `2(2N - 1) = 4N - 2` messages.
pub fn ring_implementation(n: u64) -> u64 {
    4 * n - 2
}

/// The lecture notes' best case: the second-highest process notices, and sends `N - 2`
/// Coordinator messages (the crashed coordinator is one of the `N`).
pub fn best_case_messages(n: u64) -> u64 {
    n - 2
}

/// The lecture notes' best-case turnaround: one message transmission time.
pub const BEST_CASE_DELAYS: f64 = 1.0;

/// The lecture notes' worst-case turnaround: "approximately 5 message transmission times
/// ... election, answer, election, answer, coordinator".
pub const WORST_CASE_DELAYS: f64 = 5.0;

/// Classic Bully's worst case as implemented here: the lowest of `n` notices that
/// `n` crashed; every live process above it runs an election that also asks the
/// crashed `n` (only the lowest suspects it). `(N-2)(N+1)` messages; the lecture
/// notes say only `O(N^2)`.
pub fn classic_worst_case(n: u64) -> u64 {
    (n - 2) * (n + 1)
}

/// One place where the sources disagree (with each other, or one with itself),
/// and what the code does about it.
#[derive(Clone, Copy, Debug)]
pub struct Disagreement {
    /// Where: the source and its section, equation or figure.
    pub topic: &'static str,
    /// What the sources say.
    pub sources: &'static str,
    /// What this implementation does, and why.
    pub code: &'static str,
}

/// Every disagreement the reproduction found, in the order the README lists them.
pub const DISAGREEMENTS: &[Disagreement] = &[
    Disagreement {
        topic: "Soundarabai et al., equation (1) vs Figure 6",
        sources: "Equation (1) counts 2(N-P)+N messages for modified Bully. Figure 6's \
                log (N=10, P=4) also shows Elections from 4 to the lower 1, 2 and 3, \
                and step 1(i) says \"P sends an ELECTION message to all processes\".",
        code: "Follows Figure 6 and step 1(i): Elections go to every live process, \
               so 3N-P-1 (25 for N=10, P=4, where equation (1) gives 22). Both agree \
               at P=1 (3N-2, Table 1), because the lowest has nobody below it.",
    },
    Disagreement {
        topic: "Soundarabai et al., equation (2), equation (6) and the text vs Table 1",
        sources: "Equation (2) reads 2(N-1)+1 = 3N-1, but 2(N-1)+1 is 2N-1; the text \
                and equation (6) say 3n-1 (\"or 3n\"); Table 1 shows 13, 28, 43, 58, \
                73, which is 3N-2 (equation (1) at P=1).",
        code: "Reproduces Table 1 (3N-2): N live processes, the crashed coordinator \
               outside the set. Equation (6)'s 3n-1 is the count when the chosen \
               process also checks with the crashed former coordinator (its \"1+1\"); \
               the code sends that check too when the crashed coordinator is still a \
               member the chosen process does not know to be down (`cases`: modified \
               worst case, 3n-1 for n live processes). No run here sends 3n.",
    },
    Disagreement {
        topic: "Soundarabai et al., equation (5) vs equation (4) and Table 1",
        sources: "Equation (5) simplifies the classic sum to n(n+1)/2; equation (4) and \
                Table 1 say N^2-1 (24, 99, 224, 399, 624). The sum as printed \
                (Elections plus n-1 Coordinators) is neither; counting the Answers \
                too, as items (ii) and (iv) of the derivation do, gives n^2-1.",
        code: "Measures N^2-1 (equations (3) and (4), Table 1) for every N.",
    },
    Disagreement {
        topic: "Soundarabai et al., Figures 3 and 4 vs equation (3)",
        sources: "The two logs show 20 ElectionMessage lines but 21 responses: the \
                Election from 5 to 9 falls between the figures (9's answer to 5 opens \
                Figure 4), in both copies of the paper. Equation (3) counts 51 = 21 \
                Elections + 21 Answers + 9 Coordinators.",
        code: "Sends 21 Elections (51 messages, equation (3)); the golden test adds \
               the missing line explicitly and checks that it is the only gap.",
    },
    Disagreement {
        topic: "Soundarabai et al., Figures 3 and 4: the order of the messages",
        sources: "The paper's simulator runs one election after another: 5's election \
                ends before 6's begins, and 10 announces after every election has \
                finished.",
        code: "In a synchronous system the elections run at once: each process answers \
               an Election when it arrives (6 answers 4 and holds its own election \
               before 5's Election reaches it), and 10 announces one message time in, \
               when 4's Election reaches it, answering 5..9 afterwards. The same \
               messages, senders and receivers in another interleaving: the golden \
               test compares multisets, and the order per sender and kind.",
    },
    Disagreement {
        topic: "Soundarabai et al., \"fewer stages\" vs the measured time",
        sources: "Soundarabai et al. say modified Bully needs fewer stages than Bully's five.",
        code: "Measured in message delays, not stages: in Table 1's setting classic \
               agrees after 2 (the highest hears the lowest's Election and announces) \
               and modified after 4 (Election, Answer, Takeover, Coordinator). With the \
               crashed coordinator inside the set (the lecture notes' worst case) modified's \
               cross-check waits out its silence after the handover: 6.5 against \
               classic's 4.5 with the default timings (`cases`). Reported as measured; \
               modified does send far fewer messages.",
    },
    Disagreement {
        topic: "The lecture notes' worst-case turnaround",
        sources: "\"Approximately 5 message transmission times ... election, answer, \
                election, answer, coordinator\".",
        code: "Elections run concurrently: the lowest's Election reaches N-1 (1), \
               N-1 waits out the crashed N's silence (2*T_M + P_p, twice the message \
               time and the processing time: 2.5 with the default timings) and its \
               Coordinator arrives (1): 4.5 message times.",
    },
    Disagreement {
        topic: "The tutorial and Wikipedia vs the Bully Algorithm Dance: an answered candidate \
                that hears no Coordinator",
        sources: "The tutorial \"What is Bully Algorithm\" and Wikipedia's \"Bully \
                algorithm\": \"restarts the process at the beginning\". The Bully \
                Algorithm Dance, step 5 of its algorithm: \"gives up and crowns herself \
                leader\".",
        code: "Restarts its election in a new term (classic.rs, choice 3): a higher \
               process answered a moment ago, and a lower one crowning itself over it \
               would be deposed at once.",
    },
    Disagreement {
        topic: "The tutorial and Wikipedia vs Soundarabai et al. and the Dance: an election \
                while already electing",
        sources: "The tutorial and Wikipedia: on an Election from below, answer and \
                \"start the election process at the beginning\". Soundarabai et al. \
                (step 2(ii)) and the Bully Algorithm Dance (step 3): answer, and hold an \
                election \"unless it is already holding one\".",
        code: "At most one election per process per term (classic.rs, choice 2); \
               this is what makes Table 1's N^2-1 exact.",
    },
    Disagreement {
        topic: "Soundarabai et al., modified Bully when nobody is above the initiator",
        sources: "Step 1(iv): \"if no one responds, P wins\", after Elections to all \
                (equation (1) gives N for P=N).",
        code: "The highest live process announces at once without an Election round, \
               as classic Bully's does: N-1 messages. This is what lets a staggered \
               failover cost the lecture notes' best case, N-2.",
    },
    Disagreement {
        topic: "The lecture notes' ring algorithm and its best case",
        sources: "The lecture notes give no message count for the ring, and their best case \
                (N-2 messages, one message time) is stated for Bully.",
        code: "Every ring hop is acknowledged (counted as Answer): 4N-2 messages and \
               2N-1 message times for N live processes. The ring cannot reach N-2: \
               the token must go round every live process before anyone knows the \
               coordinator.",
    },
];
