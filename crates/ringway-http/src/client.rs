//! The client codec: where one HTTP/1.1 response ends and the next begins, for clients
//! on the ringway runtime (ringway-load's connections read their responses with it).
//!
//! The head is parsed with `httparse`; the body is framed by the rules of RFC 9112 §6.3,
//! in order: no body for HEAD, 1xx, 204 and 304; chunked when `Transfer-Encoding` ends in
//! `chunked` (decoded by the server's own [`ChunkedDecoder`]: one chunked decoder in the
//! project, strict the same way both ways); `Content-Length` (all copies must agree);
//! otherwise the body runs to the end of the connection. A response is never recognised
//! by matching bytes at its end.

use std::mem::MaybeUninit;

use crate::chunked::{ChunkedDecoder, Decoded};
use crate::framing::parse_length;

/// Largest response head accepted.
pub const MAX_HEAD: usize = 64 * 1024;

/// Largest chunk-extension section and trailer section accepted in a chunked body
/// (generous: a client takes what a server sends, within bounds).
const MAX_CHUNK_META: usize = 64 * 1024;

/// Why a response could not be framed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FramingError(pub String);

/// A complete response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompleteResponse {
    /// Status code.
    pub status: u16,
    /// Body bytes (decoded, for chunked).
    pub body_len: u64,
    /// The connection cannot carry another response after this one.
    pub close: bool,
    /// Whether the body matched the expected one (`None` when not checked).
    pub body_ok: Option<bool>,
}

#[derive(Debug)]
enum Body {
    Fixed(u64),
    Chunked(ChunkedDecoder),
    UntilClose,
}

/// An incremental response parser: feed it bytes, it hands back complete responses.
#[derive(Debug, Default)]
pub struct ResponseParser {
    /// The current response's head, once parsed.
    cur: Option<(CompleteResponse, Body)>,
    /// Expected body, if bodies are checked.
    expect: Option<std::rc::Rc<[u8]>>,
    /// Matching position in `expect`, or `None` once a mismatch was seen.
    matched: Option<usize>,
}

impl ResponseParser {
    /// A parser; `expect` makes it compare every body with those bytes.
    pub fn new(expect: Option<std::rc::Rc<[u8]>>) -> Self {
        ResponseParser {
            cur: None,
            expect,
            matched: Some(0),
        }
    }

    /// Whether a response is partly read (its head has been parsed).
    pub fn in_body(&self) -> bool {
        self.cur.is_some()
    }

    /// Parses from `buf`. Returns the bytes used and, if one ended, the response. Using
    /// 0 bytes without a response means more bytes are needed (the head is incomplete).
    /// `head_request` says whether the request being answered was a HEAD.
    pub fn feed(
        &mut self,
        buf: &[u8],
        head_request: bool,
    ) -> Result<(usize, Option<CompleteResponse>), FramingError> {
        let mut used = 0;
        if self.cur.is_none() {
            match self.parse_head(buf, head_request)? {
                None => return Ok((0, None)),
                Some(n) => used = n,
            }
        }
        let (done, body) = self.cur.as_mut().expect("head parsed");
        let rest = &buf[used..];
        let finished = match body {
            Body::Fixed(left) => {
                let take = rest.len().min(*left as usize);
                check(&self.expect, &mut self.matched, &rest[..take]);
                *left -= take as u64;
                done.body_len += take as u64;
                used += take;
                *left == 0
            }
            Body::Chunked(d) => {
                let (n, ended) = feed_chunked(d, rest, |data| {
                    check(&self.expect, &mut self.matched, data);
                    done.body_len += data.len() as u64;
                })?;
                used += n;
                ended
            }
            Body::UntilClose => {
                check(&self.expect, &mut self.matched, rest);
                done.body_len += rest.len() as u64;
                used += rest.len();
                false
            }
        };
        Ok((used, if finished { self.finish() } else { None }))
    }

    /// The connection ended: completes a close-delimited body, and is an error inside
    /// any other (`Ok(None)` between responses).
    pub fn eof(&mut self) -> Result<Option<CompleteResponse>, FramingError> {
        match &self.cur {
            None => Ok(None),
            Some((_, Body::UntilClose)) => Ok(self.finish()),
            Some(_) => Err(FramingError(
                "connection closed inside a response body".into(),
            )),
        }
    }

    fn finish(&mut self) -> Option<CompleteResponse> {
        let (mut done, _) = self.cur.take()?;
        if let Some(e) = &self.expect {
            done.body_ok = Some(self.matched == Some(e.len()));
        }
        self.matched = Some(0);
        Some(done)
    }

    /// Parses a head (skipping 1xx interim responses); `None` if incomplete.
    fn parse_head(
        &mut self,
        buf: &[u8],
        head_request: bool,
    ) -> Result<Option<usize>, FramingError> {
        let mut offset = 0;
        loop {
            // Uninitialised header slots: nothing to clear per response.
            let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; 64];
            let mut resp = httparse::Response::new(&mut []);
            let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
                &mut resp,
                &buf[offset..],
                &mut headers,
            );
            let n = match parsed {
                Ok(httparse::Status::Complete(n)) => n,
                Ok(httparse::Status::Partial) => {
                    if buf.len() - offset > MAX_HEAD {
                        return Err(FramingError("response head too large".into()));
                    }
                    return Ok(None);
                }
                Err(e) => return Err(FramingError(format!("bad response head: {e}"))),
            };
            let status = resp.code.unwrap_or(0);
            let http10 = resp.version == Some(0);
            if (100..200).contains(&status) {
                if status == 101 {
                    return Err(FramingError(
                        "101 Switching Protocols is not supported".into(),
                    ));
                }
                offset += n;
                continue; // interim response: the real one follows
            }
            let mut length: Option<u64> = None;
            let mut chunked = false;
            let mut te = false;
            let mut close = http10;
            for h in resp.headers.iter() {
                // The length tells the three names that matter apart before any
                // case-insensitive comparison.
                if !matches!(h.name.len(), 10 | 14 | 17) {
                    continue;
                }
                if h.name.eq_ignore_ascii_case("content-length") {
                    for part in h.value.split(|&b| b == b',') {
                        let l = parse_length(part.trim_ascii()).map_err(|_| {
                            FramingError(format!(
                                "bad Content-Length {:?}",
                                String::from_utf8_lossy(h.value)
                            ))
                        })?;
                        if length.is_some_and(|old| old != l) {
                            return Err(FramingError("conflicting Content-Length values".into()));
                        }
                        length = Some(l);
                    }
                } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                    te = true;
                    chunked = h
                        .value
                        .rsplit(|&b| b == b',')
                        .next()
                        .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
                } else if h.name.eq_ignore_ascii_case("connection") {
                    for token in h.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                        if token.eq_ignore_ascii_case(b"close") {
                            close = true;
                        } else if token.eq_ignore_ascii_case(b"keep-alive") && http10 {
                            close = false;
                        }
                    }
                }
            }
            let no_body = head_request || status == 204 || status == 304;
            let body = if no_body {
                Body::Fixed(0)
            } else if te && chunked {
                Body::Chunked(ChunkedDecoder::new(MAX_CHUNK_META, MAX_CHUNK_META))
            } else if te {
                // A transfer coding we cannot frame: the body runs to the close.
                Body::UntilClose
            } else if let Some(l) = length {
                Body::Fixed(l)
            } else {
                Body::UntilClose
            };
            if matches!(body, Body::UntilClose) {
                close = true;
            }
            self.cur = Some((
                CompleteResponse {
                    status,
                    body_len: 0,
                    close,
                    body_ok: None,
                },
                body,
            ));
            return Ok(Some(offset + n));
        }
    }
}

/// Decodes what `input` holds of a chunked body, handing its data to `data`: the bytes
/// used (all of them unless the body ended inside `input`) and whether it ended.
fn feed_chunked(
    d: &mut ChunkedDecoder,
    input: &[u8],
    mut data: impl FnMut(&[u8]),
) -> Result<(usize, bool), FramingError> {
    let mut used = 0;
    loop {
        let (n, what) = d
            .decode(&input[used..])
            .map_err(|e| FramingError(format!("chunked body: {e}")))?;
        match what {
            Decoded::Data(a, b) => data(&input[used + a..used + b]),
            Decoded::Done => return Ok((used + n, true)),
            Decoded::NeedMore => return Ok((used + n, false)),
        }
        used += n;
    }
}

fn check(expect: &Option<std::rc::Rc<[u8]>>, matched: &mut Option<usize>, data: &[u8]) {
    let (Some(e), Some(m)) = (expect, *matched) else {
        return;
    };
    let end = m + data.len();
    *matched = (end <= e.len() && e[m..end] == *data).then_some(end);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` in pieces of `piece` bytes, the way a connection does (keeping what
    /// was not used), and returns the responses; `eof` at the end.
    fn parse_all(
        wire: &[u8],
        piece: usize,
        head: bool,
        expect: Option<&[u8]>,
    ) -> Vec<CompleteResponse> {
        let mut p = ResponseParser::new(expect.map(|e| e.into()));
        let mut carry: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        for part in wire.chunks(piece) {
            carry.extend_from_slice(part);
            loop {
                let (used, done) = p.feed(&carry, head).unwrap();
                carry.drain(..used);
                match done {
                    Some(d) => out.push(d),
                    None => break,
                }
                if carry.is_empty() {
                    break;
                }
            }
        }
        if let Some(d) = p.eof().unwrap() {
            out.push(d);
        }
        out
    }

    #[test]
    fn frames_every_kind_in_any_pieces() {
        let wire = b"HTTP/1.1 100 Continue\r\n\r\n\
HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello\
HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
HTTP/1.1 204 No Content\r\n\r\n\
HTTP/1.1 200 OK\r\n\r\ntill the end";
        for piece in 1..=wire.len() {
            let got = parse_all(wire, piece, false, None);
            let summary: Vec<_> = got
                .iter()
                .map(|d| (d.status, d.body_len, d.close))
                .collect();
            assert_eq!(
                summary,
                [
                    (200, 5, false),
                    (404, 3, false),
                    (204, 0, false),
                    (200, 12, true)
                ],
                "piece {piece}"
            );
        }
    }

    #[test]
    fn a_body_that_looks_like_a_response_end_is_still_body() {
        // A suffix matcher would stop at the first "\r\n\r\n" or at "0\r\n\r\n".
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n0\r\n\r\nHTTP/1.1 2";
        let got = parse_all(wire, 7, false, None);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].body_len, 15);
    }

    #[test]
    fn head_and_close_and_checks() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
        assert_eq!(parse_all(wire, 3, true, None)[0].body_len, 0);
        let wire = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok";
        assert!(parse_all(wire, 3, false, None)[0].close);
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno";
        let got = parse_all(wire, 5, false, Some(b"ok"));
        assert_eq!(got[0].body_ok, Some(true));
        assert_eq!(got[1].body_ok, Some(false));
    }

    #[test]
    fn rejects_bad_framing() {
        let mut p = ResponseParser::new(None);
        let e = p
            .feed(
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                false,
            )
            .unwrap_err();
        assert!(e.0.contains("conflicting"));
        let mut p = ResponseParser::new(None);
        assert!(p
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false)
            .is_err());
        let mut p = ResponseParser::new(None);
        assert!(p.feed(b"NOT HTTP\r\n\r\n", false).is_err());
        let mut p = ResponseParser::new(None);
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", false)
            .unwrap();
        assert!(p.eof().is_err());
    }

    #[test]
    fn chunked_bodies_in_any_pieces_and_strictly() {
        let body = b"5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\n";
        let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        wire.extend_from_slice(body);
        wire.extend_from_slice(b"HTTP/1.1 204 No Content\r\n\r\n");
        for piece in 1..=wire.len() {
            let got = parse_all(
                &wire,
                piece,
                false,
                Some(b"helloabcdefghijklmnopqrstuvwxyz"),
            );
            assert_eq!(got.len(), 2, "piece {piece}");
            assert_eq!(
                (got[0].body_len, got[0].body_ok),
                (31, Some(true)),
                "piece {piece}"
            );
        }
        for bad in [
            &b"x\r\n"[..],
            b"5\nhello\r\n",
            b"5\r\nhelloXX",
            b"ffffffffffffffffff\r\n",
            b"0\r\nX-T: 1\n",
            b"-5\r\nhello\r\n",
        ] {
            let mut p = ResponseParser::new(None);
            let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            wire.extend_from_slice(bad);
            let e = p.feed(&wire, false).unwrap_err();
            assert!(
                e.0.starts_with("chunked body"),
                "{:?}: {e:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
