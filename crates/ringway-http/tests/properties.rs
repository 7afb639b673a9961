//! Property tests of head parsing and body framing (proptest, stable Rust):
//! - any valid request stream (heads with random fields, Content-Length and chunked
//!   bodies), cut into pieces anywhere and fed as a connection would feed it, decodes to
//!   exactly what the whole stream decodes to;
//! - random mutations of a valid request never panic and never yield two requests
//!   where one was sent.

use proptest::prelude::*;
use ringway_http::decode::{decode_stream, Stream};
use ringway_http::Config;

#[derive(Debug, Clone)]
enum Framing {
    None,
    Length,
    Chunked(Vec<usize>),
}

fn token() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9-]{0,12}"
}

fn request() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec!["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]),
        "/[a-z0-9/._~%-]{0,30}(\\?[a-z0-9=&]{0,20})?",
        prop::collection::vec((token(), "[ -~]{0,20}"), 0..8),
        prop::collection::vec(any::<u8>(), 0..200),
        prop_oneof![
            Just(Framing::None),
            Just(Framing::Length),
            prop::collection::vec(1usize..50, 1..5).prop_map(Framing::Chunked)
        ],
    )
        .prop_map(|(method, target, fields, body, framing)| {
            let mut r = format!("{method} {target} HTTP/1.1\r\nHost: example\r\n").into_bytes();
            for (n, v) in fields {
                let lower = n.to_ascii_lowercase();
                if [
                    "host",
                    "content-length",
                    "transfer-encoding",
                    "connection",
                    "expect",
                ]
                .contains(&lower.as_str())
                {
                    continue;
                }
                r.extend_from_slice(format!("X-{n}: {}\r\n", v.trim()).as_bytes());
            }
            match framing {
                Framing::None => r.extend_from_slice(b"\r\n"),
                Framing::Length => {
                    r.extend_from_slice(
                        format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(),
                    );
                    r.extend_from_slice(&body);
                }
                Framing::Chunked(sizes) => {
                    r.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                    let mut rest = &body[..];
                    for s in sizes {
                        let take = s.min(rest.len());
                        if take == 0 {
                            break;
                        }
                        r.extend_from_slice(format!("{take:x};ext=\"v\"\r\n").as_bytes());
                        r.extend_from_slice(&rest[..take]);
                        r.extend_from_slice(b"\r\n");
                        rest = &rest[take..];
                    }
                    if !rest.is_empty() {
                        r.extend_from_slice(format!("{:X}\r\n", rest.len()).as_bytes());
                        r.extend_from_slice(rest);
                        r.extend_from_slice(b"\r\n");
                    }
                    r.extend_from_slice(b"0\r\nX-Trailer: t\r\n\r\n");
                }
            }
            r
        })
}

/// Feeds `buf` in pieces ending at `cuts`, the way a connection does: decode what is
/// complete, keep the rest, append the next piece.
fn feed_in_pieces(buf: &[u8], cuts: &[usize], cfg: &Config) -> Summary {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (buf.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.push(buf.len());
    let mut pending: Vec<u8> = Vec::new();
    let mut out = Summary::default();
    let mut last = 0;
    for c in cuts {
        pending.extend_from_slice(&buf[last..c]);
        last = c;
        let s = decode_stream(&pending, cfg);
        // Consume whole requests only (as the connection would have served them).
        let used = consumed(&pending, &s, cfg);
        out.requests.extend(summarise(&s).requests);
        if s.error.is_some() {
            out.error = s.error.map(|e| e.status());
            return out;
        }
        pending.drain(..used);
    }
    out.incomplete = !pending.is_empty();
    out
}

/// Bytes taken by the complete requests of `s` (re-decoding prefixes: test-only cost).
fn consumed(buf: &[u8], s: &Stream, cfg: &Config) -> usize {
    let want = s.requests.len();
    if want == 0 {
        return 0;
    }
    (1..=buf.len())
        .find(|&n| {
            let p = decode_stream(&buf[..n], cfg);
            p.requests.len() == want && !p.incomplete
        })
        .unwrap_or(buf.len())
}

/// (method, target, fields, body) of one request.
type Summarised = (String, String, Vec<(String, Vec<u8>)>, Vec<u8>);

#[derive(Debug, Default, PartialEq, Eq)]
struct Summary {
    requests: Vec<Summarised>,
    error: Option<u16>,
    incomplete: bool,
}

fn summarise(s: &Stream) -> Summary {
    Summary {
        requests: s
            .requests
            .iter()
            .map(|r| {
                (
                    r.head.method.to_string(),
                    r.head.uri.to_string(),
                    r.head
                        .headers
                        .iter()
                        .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                        .collect(),
                    r.body.clone(),
                )
            })
            .collect(),
        error: s.error.as_ref().map(|e| e.status()),
        incomplete: s.incomplete,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn any_split_parses_the_same(
        reqs in prop::collection::vec(request(), 1..4),
        cuts in prop::collection::vec(any::<usize>(), 0..4),
    ) {
        let cfg = Config::default();
        let stream: Vec<u8> = reqs.concat();
        let whole = summarise(&decode_stream(&stream, &cfg));
        prop_assert_eq!(whole.requests.len(), reqs.len(), "every valid request decodes");
        prop_assert!(whole.error.is_none() && !whole.incomplete);
        let pieces = feed_in_pieces(&stream, &cuts, &cfg);
        prop_assert_eq!(pieces, whole);
    }

    #[test]
    fn mutations_never_panic_nor_smuggle(
        req in request(),
        muts in prop::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let cfg = Config::default();
        let mut m = req.clone();
        for (pos, byte, kind) in muts {
            let p = pos % (m.len() + 1);
            match kind {
                0 if p < m.len() => m[p] = byte,
                1 => m.insert(p, byte),
                _ if p < m.len() => { m.remove(p); }
                _ => {}
            }
        }
        let s = decode_stream(&m, &cfg);
        prop_assert!(s.requests.len() <= 1, "one request sent, {} decoded", s.requests.len());
    }
}
