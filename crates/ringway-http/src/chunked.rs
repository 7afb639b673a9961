//! The chunked transfer coding decoder (RFC 9112 §7.1): a byte-exact state machine.
//!
//! Strict on purpose: hex sizes of at most 16 digits with no sign, prefix or padding;
//! extensions checked against their grammar (`;` then a name token, then optionally
//! `=` and a token or a balanced quoted string) and bounded; CRLF and
//! only CRLF after every line and every chunk's data; trailer fields checked like head
//! fields, bounded, and discarded. Any deviation is a 400 and the connection closes.

use crate::error::{ErrorClass, HttpError};
use crate::token::is_tchar;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading hex digits of a chunk size (`digits` so far).
    Size { digits: u8 },
    /// Whitespace after the size, before `;`.
    SizeWs,
    /// After `;`: optional whitespace, then an extension name (required).
    ExtStart,
    /// Inside an extension name.
    ExtName,
    /// Whitespace after a name: `=` or `;` must follow (the grammar has no whitespace
    /// before CRLF).
    ExtNameWs,
    /// After `=`: optional whitespace, then a token or a quoted string.
    ExtValueStart,
    /// Inside a token value.
    ExtToken,
    /// Inside a quoted value (`escape`: just after a backslash).
    ExtQuoted { escape: bool },
    /// After a value: whitespace, then `;` or the end of the line.
    ExtAfterValue,
    /// Saw CR ending a size line.
    SizeLf,
    /// Inside chunk data.
    Data,
    /// Expecting CR after data.
    DataCr,
    /// Expecting LF after data.
    DataLf,
    /// At the start of a trailer line (or the final empty line).
    TrailerStart,
    /// Inside a trailer field name.
    TrailerName { len: usize },
    /// Inside a trailer field value.
    TrailerValue,
    /// Saw CR ending a trailer line.
    TrailerLf,
    /// Saw CR of the final empty line.
    EndLf,
    /// The body is complete.
    Done,
}

/// What one call to [`ChunkedDecoder::decode`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    /// Body bytes: `input[start..end]`.
    Data(usize, usize),
    /// The body ended (after its trailers).
    Done,
    /// All input was consumed; more is needed.
    NeedMore,
}

/// Decodes one chunked body.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    size: u64,
    ext_len: usize,
    trailer_len: usize,
    max_ext: usize,
    max_trailer: usize,
}

impl ChunkedDecoder {
    /// A decoder with the given extension and trailer limits.
    pub fn new(max_ext: usize, max_trailer: usize) -> Self {
        ChunkedDecoder {
            state: State::Size { digits: 0 },
            size: 0,
            ext_len: 0,
            trailer_len: 0,
            max_ext,
            max_trailer,
        }
    }

    /// Decodes from `input`; returns how many bytes were consumed and what was found.
    /// Call again with the rest of the input until `NeedMore` or `Done`.
    pub fn decode(&mut self, input: &[u8]) -> Result<(usize, Decoded), HttpError> {
        if self.state == State::Done {
            return Ok((0, Decoded::Done));
        }
        let mut i = 0;
        while i < input.len() {
            if self.state == State::Data {
                let take = (input.len() - i).min(usize::try_from(self.size).unwrap_or(usize::MAX));
                self.size -= take as u64;
                if self.size == 0 {
                    self.state = State::DataCr;
                }
                return Ok((i + take, Decoded::Data(i, i + take)));
            }
            self.step(input[i])?;
            i += 1;
            if self.state == State::Done {
                return Ok((i, Decoded::Done));
            }
        }
        Ok((i, Decoded::NeedMore))
    }

    fn step(&mut self, b: u8) -> Result<(), HttpError> {
        let bad = |r| Err(HttpError::bad(r));
        self.state = match self.state {
            State::Size { digits } => match b {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    if digits >= 16 {
                        return bad("chunk size too long");
                    }
                    let v = (b as char).to_digit(16).unwrap_or(0) as u64;
                    self.size = (self.size << 4) | v;
                    State::Size { digits: digits + 1 }
                }
                _ if digits == 0 => return bad("bad chunk size"),
                b';' => {
                    self.ext_len = 0;
                    State::ExtStart
                }
                b' ' | b'\t' => State::SizeWs,
                b'\r' => State::SizeLf,
                _ => return bad("junk after chunk size"),
            },
            State::SizeWs => match b {
                b' ' | b'\t' => State::SizeWs,
                b';' => {
                    self.ext_len = 0;
                    State::ExtStart
                }
                _ => return bad("junk after chunk size"),
            },
            ext @ (State::ExtStart
            | State::ExtName
            | State::ExtNameWs
            | State::ExtValueStart
            | State::ExtToken
            | State::ExtQuoted { .. }
            | State::ExtAfterValue) => {
                self.ext_len += 1;
                if self.ext_len > self.max_ext {
                    return bad("chunk extension too long");
                }
                ext_step(ext, b)?
            }
            State::SizeLf => match b {
                b'\n' if self.size == 0 => State::TrailerStart,
                b'\n' => State::Data,
                _ => return bad("bare CR in chunk size line"),
            },
            State::Data => unreachable!("data is consumed in bulk"),
            State::DataCr => match b {
                b'\r' => State::DataLf,
                _ => return bad("chunk data not followed by CRLF"),
            },
            State::DataLf => match b {
                b'\n' => State::Size { digits: 0 },
                _ => return bad("chunk data not followed by CRLF"),
            },
            State::TrailerStart => {
                self.count_trailer()?;
                match b {
                    b'\r' => State::EndLf,
                    c if is_tchar(c) => State::TrailerName { len: 1 },
                    _ => return bad("bad trailer line"),
                }
            }
            State::TrailerName { len } => {
                self.count_trailer()?;
                match b {
                    b':' => State::TrailerValue,
                    c if is_tchar(c) => State::TrailerName { len: len + 1 },
                    _ => return bad("bad trailer field name"),
                }
            }
            State::TrailerValue => {
                self.count_trailer()?;
                match b {
                    b'\r' => State::TrailerLf,
                    c if c == b'\t' || c >= 0x20 && c != 0x7f => State::TrailerValue,
                    _ => return bad("bad trailer field value"),
                }
            }
            State::TrailerLf => {
                self.count_trailer()?;
                match b {
                    b'\n' => State::TrailerStart,
                    _ => return bad("bare CR in trailer"),
                }
            }
            State::EndLf => match b {
                b'\n' => State::Done,
                _ => return bad("bare CR ending trailers"),
            },
            State::Done => State::Done,
        };
        Ok(())
    }

    fn count_trailer(&mut self) -> Result<(), HttpError> {
        self.trailer_len += 1;
        if self.trailer_len > self.max_trailer {
            return Err(HttpError::new(
                ErrorClass::HeaderTooLarge,
                "trailer section too large",
            ));
        }
        Ok(())
    }
}

/// One byte of a chunk extension (RFC 9112 §7.1.1):
/// `*( BWS ";" BWS ext-name [ BWS "=" BWS ( token / quoted-string ) ] )`.
fn ext_step(state: State, b: u8) -> Result<State, HttpError> {
    let ws = b == b' ' || b == b'\t';
    // A quoted string holds HTAB, SP, visible ASCII and obs-text; no controls.
    let qd = |c: u8| c == b'\t' || c >= 0x20 && c != 0x7f;
    Ok(match state {
        State::ExtStart if ws => State::ExtStart,
        State::ExtStart if is_tchar(b) => State::ExtName,
        State::ExtStart => return Err(HttpError::bad("chunk extension without a name")),
        State::ExtName if is_tchar(b) => State::ExtName,
        State::ExtName | State::ExtNameWs if ws => State::ExtNameWs,
        State::ExtName | State::ExtNameWs if b == b'=' => State::ExtValueStart,
        State::ExtName | State::ExtNameWs if b == b';' => State::ExtStart,
        State::ExtName if b == b'\r' => State::SizeLf,
        State::ExtValueStart if ws => State::ExtValueStart,
        State::ExtValueStart if b == b'"' => State::ExtQuoted { escape: false },
        State::ExtValueStart if is_tchar(b) => State::ExtToken,
        State::ExtValueStart => return Err(HttpError::bad("chunk extension without a value")),
        State::ExtToken if is_tchar(b) => State::ExtToken,
        State::ExtQuoted { escape: true } if qd(b) => State::ExtQuoted { escape: false },
        State::ExtQuoted { escape: false } if b == b'\\' => State::ExtQuoted { escape: true },
        State::ExtQuoted { escape: false } if b == b'"' => State::ExtAfterValue,
        State::ExtQuoted { escape: false } if qd(b) => State::ExtQuoted { escape: false },
        State::ExtQuoted { .. } => return Err(HttpError::bad("bad quoted chunk extension")),
        State::ExtToken | State::ExtAfterValue if ws => State::ExtAfterValue,
        State::ExtToken | State::ExtAfterValue if b == b';' => State::ExtStart,
        State::ExtToken | State::ExtAfterValue if b == b'\r' => State::SizeLf,
        _ => return Err(HttpError::bad("bad chunk extension")),
    })
}

/// Decodes a whole chunked body from `input` (for tests and the fuzz target): the body
/// bytes and how many input bytes the body took, or `None` if it is incomplete.
pub fn decode_all(
    input: &[u8],
    max_ext: usize,
    max_trailer: usize,
) -> Result<Option<(Vec<u8>, usize)>, HttpError> {
    let mut d = ChunkedDecoder::new(max_ext, max_trailer);
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        let (n, what) = d.decode(&input[pos..])?;
        match what {
            Decoded::Data(s, e) => out.extend_from_slice(&input[pos + s..pos + e]),
            Decoded::Done => return Ok(Some((out, pos + n))),
            Decoded::NeedMore => return Ok(None),
        }
        pos += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(chunked: &str) -> Result<Option<Vec<u8>>, HttpError> {
        decode_all(chunked.as_bytes(), 1024, 1024).map(|r| r.map(|(b, _)| b))
    }

    #[test]
    fn extensions_follow_the_grammar() {
        for ok in [
            "5;a\r\nhello\r\n0\r\n\r\n",
            "5;a=b\r\nhello\r\n0\r\n\r\n",
            "5 ; a = b ;c\r\nhello\r\n0\r\n\r\n",
            "5;a=\"b;c\\\"\";d\r\nhello\r\n0;x=y\r\n\r\n",
            "5;a=\"\"\r\nhello\r\n0\r\n\r\n",
        ] {
            assert_eq!(body(ok), Ok(Some(b"hello".to_vec())), "{ok:?}");
        }
        for bad in [
            "5;\r\nhello\r\n0\r\n\r\n",
            "5; \r\nhello\r\n0\r\n\r\n",
            "5;;a\r\nhello\r\n0\r\n\r\n",
            "5;=b\r\nhello\r\n0\r\n\r\n",
            "5;a=\r\nhello\r\n0\r\n\r\n",
            "5;a b\r\nhello\r\n0\r\n\r\n",
            "5;a=b c\r\nhello\r\n0\r\n\r\n",
            "5;a \r\nhello\r\n0\r\n\r\n",
            "5;a=\"b\r\nhello\r\n0\r\n\r\n",
            "5;a=\"b\"c\r\nhello\r\n0\r\n\r\n",
            "5;a@b\r\nhello\r\n0\r\n\r\n",
            "0;\r\n\r\n",
        ] {
            assert!(body(bad).is_err(), "{bad:?} accepted");
        }
    }
}
