//! An incremental decoder for `Transfer-Encoding: chunked` bodies (RFC 9112 §7.1).
//!
//! It is fed whatever bytes arrived, in pieces of any size, and says how many it used
//! and whether the body (last chunk and trailers included) is complete. Strict: a chunk
//! size must be hex digits, every line must end in CRLF, and sizes may not overflow.

/// Why a chunked body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkError(pub &'static str);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading the hex size; `digits` seen so far.
    Size { digits: u8 },
    /// After the size: optional whitespace and `;extensions` up to CR.
    Ext,
    /// Expecting LF after the size line's CR.
    SizeLf,
    /// Inside chunk data.
    Data,
    /// Expecting CR after chunk data.
    DataCr,
    /// Expecting LF after chunk data.
    DataLf,
    /// At the start of a trailer line (or the final empty line).
    TrailerStart,
    /// Inside a trailer field line.
    TrailerLine,
    /// Expecting LF of a trailer line.
    TrailerLf,
    /// Expecting the LF of the final empty line.
    EndLf,
    /// The body is complete.
    Done,
}

/// An incremental, strict decoder of one chunked response body (see the
/// [module docs](self)).
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    /// Size being read, then bytes left in the current chunk.
    remaining: u64,
    /// Data bytes decoded so far.
    body_len: u64,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        ChunkedDecoder::new()
    }
}

impl ChunkedDecoder {
    /// A decoder at the start of a body.
    pub fn new() -> Self {
        ChunkedDecoder {
            state: State::Size { digits: 0 },
            remaining: 0,
            body_len: 0,
        }
    }

    /// Data bytes decoded so far.
    pub fn body_len(&self) -> u64 {
        self.body_len
    }

    /// Whether the whole body has been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes from `input`; data bytes are passed to `data`. Returns how many bytes of
    /// `input` were used: all of them unless the body ended inside `input`.
    pub fn feed(&mut self, input: &[u8], mut data: impl FnMut(&[u8])) -> Result<usize, ChunkError> {
        let mut i = 0;
        while i < input.len() && self.state != State::Done {
            let b = input[i];
            match self.state {
                State::Size { digits } => match (b as char).to_digit(16) {
                    Some(d) => {
                        if self.remaining > (u64::MAX >> 4) {
                            return Err(ChunkError("chunk size overflows"));
                        }
                        self.remaining = (self.remaining << 4) | d as u64;
                        self.state = State::Size {
                            digits: digits.saturating_add(1),
                        };
                    }
                    None if digits == 0 => return Err(ChunkError("chunk size is not hex")),
                    None => {
                        self.state = State::Ext;
                        continue; // look at this byte again as part of the extension
                    }
                },
                State::Ext => match b {
                    b'\r' => self.state = State::SizeLf,
                    b'\n' => return Err(ChunkError("bare LF in chunk size line")),
                    _ => {}
                },
                State::SizeLf => {
                    if b != b'\n' {
                        return Err(ChunkError("chunk size line not ended by CRLF"));
                    }
                    self.state = if self.remaining == 0 {
                        State::TrailerStart
                    } else {
                        State::Data
                    };
                }
                State::Data => {
                    let take = (input.len() - i).min(self.remaining as usize);
                    data(&input[i..i + take]);
                    self.remaining -= take as u64;
                    self.body_len += take as u64;
                    i += take;
                    if self.remaining == 0 {
                        self.state = State::DataCr;
                    }
                    continue;
                }
                State::DataCr => {
                    if b != b'\r' {
                        return Err(ChunkError("chunk data not followed by CRLF"));
                    }
                    self.state = State::DataLf;
                }
                State::DataLf => {
                    if b != b'\n' {
                        return Err(ChunkError("chunk data not followed by CRLF"));
                    }
                    self.state = State::Size { digits: 0 };
                }
                State::TrailerStart => {
                    self.state = match b {
                        b'\r' => State::EndLf,
                        b'\n' => return Err(ChunkError("bare LF in trailers")),
                        _ => State::TrailerLine,
                    }
                }
                State::TrailerLine => match b {
                    b'\r' => self.state = State::TrailerLf,
                    b'\n' => return Err(ChunkError("bare LF in trailers")),
                    _ => {}
                },
                State::TrailerLf => {
                    if b != b'\n' {
                        return Err(ChunkError("trailer line not ended by CRLF"));
                    }
                    self.state = State::TrailerStart;
                }
                State::EndLf => {
                    if b != b'\n' {
                        return Err(ChunkError("chunked body not ended by CRLF"));
                    }
                    self.state = State::Done;
                }
                State::Done => unreachable!("loop stops at Done"),
            }
            i += 1;
        }
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], piece: usize) -> Result<(Vec<u8>, usize), ChunkError> {
        let mut d = ChunkedDecoder::new();
        let mut body = Vec::new();
        let mut used = 0;
        for part in input.chunks(piece) {
            used += d.feed(part, |b| body.extend_from_slice(b))?;
            if d.is_done() {
                return Ok((body, used));
            }
        }
        Err(ChunkError("incomplete"))
    }

    #[test]
    fn decodes_in_any_pieces() {
        let msg =
            b"5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        for piece in 1..msg.len() {
            let (body, used) = decode_in_pieces(msg, piece).unwrap();
            assert_eq!(body, b"helloabcdefghijklmnopqrstuvwxyz");
            assert_eq!(used, msg.len() - 4, "piece {piece}");
        }
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            &b"x\r\n"[..],
            b"5\nhello\r\n",
            b"5\r\nhelloXX",
            b"ffffffffffffffffff\r\n",
            b"0\r\nX-T: 1\n",
        ] {
            assert!(
                decode_in_pieces(bad, 64).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
