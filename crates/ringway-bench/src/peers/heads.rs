//! Counting complete request heads (`\r\n\r\n`) in a byte stream that arrives in
//! arbitrary pieces: what the raw servers (the HTTP floor, the hand-written tokio loop)
//! do instead of parsing, as the raw loops of the benchmark write-ups did.
//!
//! Between pieces only the length of a partial match is kept (at most 3 bytes of the
//! terminator), so a head split anywhere, even inside its `\r\n\r\n`, is counted once,
//! when its last byte arrives. Matches do not overlap: after a head ends the next one
//! starts from scratch.

use memchr::memmem;

const TERMINATOR: &[u8; 4] = b"\r\n\r\n";

/// Counts request heads across pieces of one connection's stream.
#[derive(Debug, Clone, Default)]
pub struct HeadCounter {
    /// Bytes of the terminator matched at the end of what was fed so far (0..=3).
    partial: u8,
}

/// One byte through the terminator's automaton. After a mismatch the only way to be
/// inside a new match is that the byte itself is a `\r` (no proper suffix of a partial
/// match other than `\r` is a prefix of `\r\n\r\n`).
#[inline]
fn step(state: u8, byte: u8) -> u8 {
    if byte == TERMINATOR[usize::from(state)] {
        state + 1
    } else if byte == b'\r' {
        1
    } else {
        0
    }
}

/// Longest suffix of `tail` that is a proper prefix of the terminator, given that
/// `tail` holds no whole terminator.
#[inline]
fn partial_at_end(tail: &[u8]) -> u8 {
    if tail.ends_with(b"\r\n\r") {
        3
    } else if tail.ends_with(b"\r\n") {
        2
    } else if tail.ends_with(b"\r") {
        1
    } else {
        0
    }
}

impl HeadCounter {
    /// A counter at the start of a stream.
    pub fn new() -> HeadCounter {
        HeadCounter::default()
    }

    /// Feeds the next piece; returns how many heads ended in it.
    #[inline]
    pub fn feed(&mut self, data: &[u8]) -> u32 {
        let mut heads = 0;
        let mut i = 0;
        // Finish (or abandon) a match begun in an earlier piece: a few bytes at most.
        while self.partial != 0 && i < data.len() {
            self.partial = step(self.partial, data[i]);
            i += 1;
            if self.partial == 4 {
                heads += 1;
                self.partial = 0;
            }
        }
        if i == data.len() {
            return heads;
        }
        let rest = &data[i..];
        let mut end = 0;
        for at in memmem::find_iter(rest, TERMINATOR) {
            heads += 1;
            end = at + TERMINATOR.len();
        }
        self.partial = partial_at_end(&rest[end..]);
        heads
    }

    /// `true` if the stream so far ends inside a terminator.
    pub fn in_partial_match(&self) -> bool {
        self.partial != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: the automaton byte by byte over the whole stream.
    fn naive(data: &[u8]) -> u32 {
        let (mut s, mut n) = (0u8, 0);
        for &b in data {
            s = step(s, b);
            if s == 4 {
                n += 1;
                s = 0;
            }
        }
        n
    }

    #[test]
    fn counts_whole_and_pipelined_heads() {
        let one = b"GET /plaintext HTTP/1.1\r\nhost: x\r\n\r\n";
        assert_eq!(HeadCounter::new().feed(one), 1);
        assert_eq!(HeadCounter::new().feed(&one.repeat(16)), 16);
        assert_eq!(HeadCounter::new().feed(b"GET / HTTP/1.1\r\nhost: x\r\n"), 0);
        // Non-overlapping: six bytes of CRLFs end one head, not two.
        assert_eq!(HeadCounter::new().feed(b"\r\n\r\n\r\n"), 1);
        assert_eq!(HeadCounter::new().feed(b"\r\r\n\r\n"), 1);
    }

    #[test]
    fn a_head_split_inside_its_terminator_counts_once() {
        let stream = b"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n";
        for cut in 0..=stream.len() {
            let mut c = HeadCounter::new();
            let n = c.feed(&stream[..cut]) + c.feed(&stream[cut..]);
            assert_eq!(n, 2, "cut at {cut}");
            assert!(!c.in_partial_match());
        }
        let mut c = HeadCounter::new();
        let n: u32 = stream.iter().map(|b| c.feed(std::slice::from_ref(b))).sum();
        assert_eq!(n, 2, "byte by byte");
    }

    #[test]
    fn agrees_with_the_automaton_on_random_streams_and_splits() {
        // A small deterministic generator: streams rich in CR and LF, cut at random.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2000 {
            let len = (next() % 200) as usize;
            let data: Vec<u8> = (0..len)
                .map(|_| match next() % 4 {
                    0 => b'\r',
                    1 => b'\n',
                    2 => b'a',
                    _ => b'\r',
                })
                .collect();
            let mut c = HeadCounter::new();
            let mut got = 0;
            let mut at = 0;
            while at < data.len() {
                let take = 1 + (next() % 9) as usize;
                let end = (at + take).min(data.len());
                got += c.feed(&data[at..end]);
                at = end;
            }
            assert_eq!(got, naive(&data), "{:?}", String::from_utf8_lossy(&data));
        }
    }
}
