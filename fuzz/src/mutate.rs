//! A mutator in the manner of libFuzzer's (`MutationDispatcher`, LLVM's
//! `FuzzerMutate.cpp`), for the stable runner: each new input is a committed
//! corpus entry (or a recent mutant) put through a short stack of bit flips, byte
//! sets, inserts and deletes, repeated chunks, splices with another corpus entry,
//! integer nudges and random tails; now and then a fresh random input.
//!
//! Without libFuzzer's coverage feedback it cannot keep what reaches new code,
//! so it keeps the last few mutants instead, which lets a change build on a change
//! (the stacks libFuzzer reaches by growing its corpus). Every choice comes from
//! one seeded ChaCha stream: the same seed and stream give the same inputs.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Mutations stacked on one input at most (libFuzzer's `-mutate_depth` default).
const MAX_DEPTH: usize = 5;
/// Recent mutants kept to mutate again.
const RECENT: usize = 64;
/// Byte values that tend to sit on boundaries (libFuzzer's "interesting" bytes).
const INTERESTING: [u8; 8] = [0, 1, 0x7f, 0x80, 0xfe, 0xff, 0x10, 0x40];

/// Makes new inputs from a corpus.
#[derive(Debug)]
pub struct Mutator {
    rng: ChaCha8Rng,
    max_len: usize,
    recent: Vec<Vec<u8>>,
}

impl Mutator {
    /// A mutator drawing from stream `stream` of `seed` (threads of one run share
    /// the seed and take one stream each), making inputs of at most `max_len`
    /// bytes.
    pub fn new(seed: u64, stream: u64, max_len: usize) -> Mutator {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Mutator {
            rng,
            max_len: max_len.max(1),
            recent: Vec::with_capacity(RECENT),
        }
    }

    /// Writes the next input into `out`.
    pub fn next_input(&mut self, corpus: &[Vec<u8>], out: &mut Vec<u8>) {
        out.clear();
        let pick = self.rng.random_range(0..100u32);
        if corpus.is_empty() || pick < 3 {
            let len = self.random_len(self.max_len);
            self.push_random(out, len);
            return;
        }
        if pick < 25 && !self.recent.is_empty() {
            let index = self.rng.random_range(0..self.recent.len());
            out.extend_from_slice(&self.recent[index]);
        } else {
            let index = self.rng.random_range(0..corpus.len());
            out.extend_from_slice(&corpus[index]);
        }
        for _ in 0..self.rng.random_range(1..=MAX_DEPTH) {
            self.mutate_once(corpus, out);
        }
        out.truncate(self.max_len);
        if self.recent.len() < RECENT {
            self.recent.push(out.clone());
        } else {
            let index = self.rng.random_range(0..RECENT);
            self.recent[index].clone_from(out);
        }
    }

    /// One mutation of `data`, chosen at random.
    fn mutate_once(&mut self, corpus: &[Vec<u8>], data: &mut Vec<u8>) {
        match self.rng.random_range(0..10u32) {
            0 => self.flip_bit(data),
            1 => self.set_byte(data),
            2 => self.insert_bytes(data),
            3 => self.insert_repeated(data),
            4 => self.erase_bytes(data),
            5 => self.repeat_chunk(data),
            6 => self.splice(corpus, data),
            7 => self.random_tail(data),
            8 => self.nudge_integer(data),
            _ => self.shuffle(data),
        }
    }

    fn flip_bit(&mut self, data: &mut [u8]) {
        if let Some(at) = self.position(data.len()) {
            data[at] ^= 1 << self.rng.random_range(0..8);
        }
    }

    fn set_byte(&mut self, data: &mut [u8]) {
        if let Some(at) = self.position(data.len()) {
            data[at] = if self.rng.random() {
                INTERESTING[self.rng.random_range(0..INTERESTING.len())]
            } else {
                self.rng.random()
            };
        }
    }

    /// One to four random bytes inserted anywhere.
    fn insert_bytes(&mut self, data: &mut Vec<u8>) {
        let at = self.rng.random_range(0..=data.len());
        let count = self.rng.random_range(1..=4);
        let bytes: Vec<u8> = (0..count).map(|_| self.rng.random()).collect();
        data.splice(at..at, bytes);
    }

    /// A run of one byte value (libFuzzer's `InsertRepeatedBytes`).
    fn insert_repeated(&mut self, data: &mut Vec<u8>) {
        let at = self.rng.random_range(0..=data.len());
        let count = self.random_len(128).max(1);
        let byte = match self.rng.random_range(0..3u32) {
            0 => 0,
            1 => 0xff,
            _ => self.rng.random(),
        };
        data.splice(at..at, std::iter::repeat_n(byte, count));
    }

    fn erase_bytes(&mut self, data: &mut Vec<u8>) {
        if let Some(at) = self.position(data.len()) {
            let count = self.random_len(data.len() - at).max(1);
            data.drain(at..at + count);
        }
    }

    /// A chunk of the input copied elsewhere in it, inserted or over the bytes
    /// there (libFuzzer's `CopyPart`): a repeated action, a repeated message.
    fn repeat_chunk(&mut self, data: &mut Vec<u8>) {
        let Some(from) = self.position(data.len()) else {
            return;
        };
        let count = self.random_len(data.len() - from).max(1);
        let chunk = data[from..from + count].to_vec();
        if self.rng.random() {
            let at = self.rng.random_range(0..=data.len());
            data.splice(at..at, chunk);
        } else {
            let at = self.rng.random_range(0..data.len());
            let end = (at + chunk.len()).min(data.len());
            data[at..end].copy_from_slice(&chunk[..end - at]);
        }
    }

    /// Joined with another corpus entry: this one's head and the other's tail,
    /// or a piece of the other inserted (libFuzzer's `CrossOver`).
    fn splice(&mut self, corpus: &[Vec<u8>], data: &mut Vec<u8>) {
        if corpus.is_empty() {
            return;
        }
        let other = &corpus[self.rng.random_range(0..corpus.len())];
        let from = self.rng.random_range(0..=other.len());
        if self.rng.random() {
            let at = self.rng.random_range(0..=data.len());
            data.truncate(at);
            data.extend_from_slice(&other[from..]);
        } else {
            let count = self.random_len(other.len() - from);
            let at = self.rng.random_range(0..=data.len());
            data.splice(at..at, other[from..from + count].iter().copied());
        }
    }

    /// Cut anywhere and continued with random bytes of any length: new choices
    /// from where the input was cut (`arbitrary` reads lengths from the end).
    fn random_tail(&mut self, data: &mut Vec<u8>) {
        let at = self.rng.random_range(0..=data.len());
        data.truncate(at);
        let len = self.random_len(self.max_len.saturating_sub(at));
        self.push_random(data, len);
    }

    /// A 1, 2, 4 or 8-byte integer anywhere, either byte order, moved by up to
    /// 16 (libFuzzer's `ChangeBinaryInteger`): a term or a duration one off.
    fn nudge_integer(&mut self, data: &mut [u8]) {
        let width = [1, 2, 4, 8][self.rng.random_range(0..4)];
        if data.len() < width {
            return;
        }
        let at = self.rng.random_range(0..=data.len() - width);
        let field = &mut data[at..at + width];
        let mut bytes = [0u8; 8];
        bytes[..width].copy_from_slice(field);
        let big_endian = self.rng.random();
        if big_endian {
            bytes[..width].reverse();
        }
        let delta = self.rng.random_range(1..=16u64);
        let value = if self.rng.random() {
            u64::from_le_bytes(bytes).wrapping_add(delta)
        } else {
            u64::from_le_bytes(bytes).wrapping_sub(delta)
        };
        let mut out = value.to_le_bytes();
        if big_endian {
            out[..width].reverse();
        }
        field.copy_from_slice(&out[..width]);
    }

    /// Up to eight neighbouring bytes in a new order.
    fn shuffle(&mut self, data: &mut [u8]) {
        let Some(at) = self.position(data.len()) else {
            return;
        };
        let end = (at + self.rng.random_range(2..=8)).min(data.len());
        for i in (at + 1..end).rev() {
            let j = self.rng.random_range(at..=i);
            data.swap(i, j);
        }
    }

    /// A random index into `len` bytes, none if there are none.
    fn position(&mut self, len: usize) -> Option<usize> {
        (len > 0).then(|| self.rng.random_range(0..len))
    }

    /// A length up to `max`, small ones as likely as large ones by order of
    /// magnitude (most useful changes are short; long tails make long runs).
    fn random_len(&mut self, max: usize) -> usize {
        if max == 0 {
            return 0;
        }
        let bits = usize::BITS - max.leading_zeros();
        let cap = (1usize << self.rng.random_range(0..=bits)).min(max);
        self.rng.random_range(0..=cap)
    }

    fn push_random(&mut self, data: &mut Vec<u8>, len: usize) {
        data.extend((0..len).map(|_| self.rng.random::<u8>()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> Vec<Vec<u8>> {
        vec![
            b"the first corpus entry".to_vec(),
            vec![0xAA; 40],
            Vec::new(),
        ]
    }

    fn inputs(seed: u64, stream: u64, count: usize) -> Vec<Vec<u8>> {
        let mut mutator = Mutator::new(seed, stream, 256);
        let corpus = corpus();
        (0..count)
            .map(|_| {
                let mut out = Vec::new();
                mutator.next_input(&corpus, &mut out);
                out
            })
            .collect()
    }

    #[test]
    fn the_same_seed_and_stream_give_the_same_inputs() {
        assert_eq!(inputs(7, 0, 500), inputs(7, 0, 500));
        assert_ne!(inputs(7, 0, 500), inputs(7, 1, 500), "streams differ");
        assert_ne!(inputs(7, 0, 500), inputs(8, 0, 500), "seeds differ");
    }

    #[test]
    fn inputs_stay_within_the_length_limit_and_vary() {
        let made = inputs(1, 0, 5_000);
        assert!(made.iter().all(|input| input.len() <= 256));
        let distinct: std::collections::BTreeSet<&Vec<u8>> = made.iter().collect();
        assert!(
            distinct.len() > 4_000,
            "{} distinct of 5000",
            distinct.len()
        );
        // Some are corpus entries changed a little, some are long random runs.
        let near_first = made
            .iter()
            .filter(|input| input.starts_with(b"the first"))
            .count();
        assert!(near_first > 100, "{near_first} keep the first entry's head");
        assert!(made.iter().any(|input| input.len() > 128));
    }

    #[test]
    fn splices_join_two_corpus_entries() {
        let made = inputs(3, 0, 5_000);
        let joined = made.iter().any(|input| {
            input.starts_with(b"the first") && input.windows(8).any(|w| w == [0xAA; 8])
        });
        assert!(
            joined,
            "a head of the first entry with a piece of the second"
        );
    }
}
