//! Per-sender replay protection: an RFC 6479 sliding window over sequence numbers,
//! restarted by every new incarnation.

use super::ids::Incarnation;

/// 64-bit words in the bitmap. RFC 6479 keeps one word more than the window, so
/// that sliding forward only ever zeroes whole words.
const WORDS: usize = 5;
/// How far behind the newest accepted sequence number a frame may arrive and still
/// be accepted (once).
pub const REPLAY_WINDOW: u64 = (WORDS as u64 - 1) * 64;

/// What one receiver remembers about one sender's frames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReplayWindow {
    incarnation: Incarnation,
    /// The highest sequence number accepted in this incarnation.
    top: u64,
    /// Bit `s % 64` of word `(s / 64) % WORDS` is set once sequence `s` was accepted.
    bitmap: [u64; WORDS],
}

/// Verdict on a frame, before it is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    Fresh,
    Replayed,
}

impl ReplayWindow {
    /// The window after accepting the first frame seen from a sender.
    pub(crate) fn first(incarnation: Incarnation, sequence: u64) -> ReplayWindow {
        let mut window = ReplayWindow {
            incarnation,
            top: sequence,
            bitmap: [0; WORDS],
        };
        window.mark(sequence);
        window
    }

    pub(crate) fn incarnation(&self) -> Incarnation {
        self.incarnation
    }

    /// Would a frame with this (incarnation, sequence) be new? Changes nothing, so a
    /// frame that fails later checks does not use up its number.
    pub(crate) fn check(&self, incarnation: Incarnation, sequence: u64) -> Check {
        if incarnation != self.incarnation {
            return if incarnation > self.incarnation {
                Check::Fresh
            } else {
                Check::Replayed
            };
        }
        if sequence > self.top {
            return Check::Fresh;
        }
        if self.top - sequence >= REPLAY_WINDOW {
            // Too old to remember: refusing it is the only safe answer.
            return Check::Replayed;
        }
        let (word, bit) = position(sequence);
        if self.bitmap[word] & bit != 0 {
            Check::Replayed
        } else {
            Check::Fresh
        }
    }

    /// Records a frame that [`check`](Self::check) found fresh and that was accepted.
    pub(crate) fn accept(&mut self, incarnation: Incarnation, sequence: u64) {
        if incarnation > self.incarnation {
            *self = ReplayWindow::first(incarnation, sequence);
            return;
        }
        if sequence > self.top {
            let old_word = self.top / 64;
            let new_word = sequence / 64;
            // Words the window slides over hold bits of numbers now too old to
            // matter; they are reused for the new ones.
            let slide = (new_word - old_word).min(WORDS as u64);
            for step in 1..=slide {
                self.bitmap[word_index(old_word + step)] = 0;
            }
            self.top = sequence;
        }
        self.mark(sequence);
    }

    fn mark(&mut self, sequence: u64) {
        let (word, bit) = position(sequence);
        self.bitmap[word] |= bit;
    }
}

fn word_index(word: u64) -> usize {
    // The remainder is below WORDS, so the cast cannot truncate.
    (word % WORDS as u64) as usize
}

fn position(sequence: u64) -> (usize, u64) {
    (word_index(sequence / 64), 1 << (sequence % 64))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIFE: Incarnation = Incarnation(7);

    fn fresh(window: &mut ReplayWindow, sequence: u64) -> bool {
        let verdict = window.check(LIFE, sequence) == Check::Fresh;
        if verdict {
            window.accept(LIFE, sequence);
        }
        verdict
    }

    #[test]
    fn each_number_in_the_window_is_accepted_exactly_once_whatever_the_order() {
        let mut window = ReplayWindow::first(LIFE, 1000);
        // Jump ahead, then fill in the gap backwards, then replay all of it.
        assert!(fresh(&mut window, 1000 + REPLAY_WINDOW - 1));
        for sequence in (1001..1000 + REPLAY_WINDOW - 1).rev() {
            assert!(fresh(&mut window, sequence), "{sequence} arrives late");
        }
        for sequence in 1000..1000 + REPLAY_WINDOW {
            assert!(!fresh(&mut window, sequence), "{sequence} replayed");
        }
    }

    #[test]
    fn a_number_that_fell_out_of_the_window_is_refused_even_if_never_seen() {
        let mut window = ReplayWindow::first(LIFE, 10);
        assert!(fresh(&mut window, 10 + REPLAY_WINDOW));
        assert!(!fresh(&mut window, 10), "seen, and now too old");
        assert!(!fresh(&mut window, 9), "never seen, but too old");
        assert!(fresh(&mut window, 11), "the oldest number still inside");
    }

    #[test]
    fn a_long_jump_forgets_everything_before_it() {
        let mut window = ReplayWindow::first(LIFE, 3);
        assert!(fresh(&mut window, 1_000_000));
        assert!(fresh(&mut window, 1_000_000 - 1));
        assert!(!fresh(&mut window, 1_000_000));
        // No stale bit survives in the reused words.
        for back in 2..REPLAY_WINDOW {
            assert_eq!(window.check(LIFE, 1_000_000 - back), Check::Fresh);
        }
    }

    #[test]
    fn a_new_incarnation_starts_afresh_and_an_old_one_is_refused() {
        let mut window = ReplayWindow::first(LIFE, 500);
        assert_eq!(window.check(Incarnation(8), 0), Check::Fresh);
        window.accept(Incarnation(8), 0);
        assert_eq!(window.incarnation(), Incarnation(8));
        assert_eq!(window.check(Incarnation(8), 0), Check::Replayed);
        assert_eq!(window.check(Incarnation(8), 1), Check::Fresh);
        assert_eq!(window.check(LIFE, 501), Check::Replayed);
    }

    #[test]
    fn the_top_of_the_range_is_handled_without_overflow() {
        let mut window = ReplayWindow::first(LIFE, u64::MAX - 1);
        assert!(fresh(&mut window, u64::MAX));
        assert!(!fresh(&mut window, u64::MAX));
        assert!(fresh(&mut window, u64::MAX - 2));
    }
}
