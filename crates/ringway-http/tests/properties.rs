//! Property tests of the request decoder the server serves with (`RequestDecoder`,
//! proptest, stable Rust):
//! - any valid request stream (random methods, targets, fields, Content-Length and
//!   chunked bodies), cut into pieces anywhere and fed as a connection feeds it,
//!   decodes to exactly the requests that were generated: method, target, fields, body;
//! - random mutations of a valid request never panic, never yield two requests where
//!   one was sent, and decode the same whole or in pieces.

use proptest::prelude::*;
use ringway_http::whole_buffer::decode_stream;
use ringway_http::{Config, Event, RequestDecoder};

#[derive(Debug, Clone)]
enum Framing {
    None,
    Length,
    Chunked(Vec<usize>),
}

/// One request as generated: what a correct decoder must give back.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sent {
    method: String,
    target: String,
    fields: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

fn token() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9-]{0,12}"
}

/// A request and its bytes on the wire.
fn request() -> impl Strategy<Value = (Sent, Vec<u8>)> {
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
        .prop_map(|(method, target, raw_fields, body, framing)| {
            let mut r = format!("{method} {target} HTTP/1.1\r\nHost: example\r\n").into_bytes();
            let mut fields = vec![("Host".to_string(), b"example".to_vec())];
            for (n, v) in raw_fields {
                let name = format!("X-{n}");
                let value = v.trim_matches([' ', '\t']).to_string();
                r.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
                fields.push((name, value.into_bytes()));
            }
            let body = match framing {
                Framing::None => {
                    r.extend_from_slice(b"\r\n");
                    Vec::new()
                }
                Framing::Length => {
                    let line = format!("Content-Length: {}", body.len());
                    r.extend_from_slice(format!("{line}\r\n\r\n").as_bytes());
                    fields.push(("Content-Length".into(), body.len().to_string().into()));
                    r.extend_from_slice(&body);
                    body
                }
                Framing::Chunked(sizes) => {
                    r.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                    fields.push(("Transfer-Encoding".into(), b"chunked".to_vec()));
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
                    body
                }
            };
            let sent = Sent {
                method: method.to_string(),
                target,
                fields,
                body,
            };
            (sent, r)
        })
}

/// What feeding a stream gave: the requests decoded, the status of the error that
/// ended it, whether it ended inside a request.
#[derive(Debug, Default, PartialEq, Eq)]
struct Decoded {
    requests: Vec<Sent>,
    error: Option<u16>,
    incomplete: bool,
}

/// Feeds `buf` in pieces ending at `cuts` the way a connection does: the unconsumed
/// input grows by each piece, the decoder runs until it needs more, the bytes each event
/// used are consumed.
fn feed_in_pieces(buf: &[u8], cuts: &[usize], cfg: &Config) -> Decoded {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (buf.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.push(buf.len());
    let mut decoder = RequestDecoder::new();
    let mut input: Vec<u8> = Vec::new();
    let mut out = Decoded::default();
    let mut current: Option<Sent> = None;
    let mut last = 0;
    for c in cuts {
        input.extend_from_slice(&buf[last..c]);
        last = c;
        loop {
            let (used, event) = match decoder.decode(&input, cfg) {
                Ok(r) => r,
                Err(e) => {
                    out.error = Some(e.status());
                    return out;
                }
            };
            match event {
                Event::Head(raw) => {
                    let sent = Sent {
                        method: raw.method(&input).to_string(),
                        target: raw.target(&input).to_string(),
                        fields: raw
                            .fields(&input)
                            .map(|(n, v)| (n.to_string(), v.to_vec()))
                            .collect(),
                        body: Vec::new(),
                    };
                    if raw.body == ringway_http::BodyKind::None {
                        out.requests.push(sent);
                    } else {
                        current = Some(sent);
                    }
                }
                Event::Data(a, b) => current
                    .as_mut()
                    .expect("body bytes belong to a request")
                    .body
                    .extend_from_slice(&input[a..b]),
                Event::BodyEnd => out.requests.extend(current.take()),
                Event::NeedMore => {
                    input.drain(..used);
                    break;
                }
            }
            input.drain(..used);
        }
    }
    out.incomplete = !input.is_empty() || current.is_some();
    out
}

/// The same stream through `decode_stream` (the whole buffer at once).
fn decode_whole(buf: &[u8], cfg: &Config) -> Decoded {
    let s = decode_stream(buf, cfg);
    Decoded {
        requests: s
            .requests
            .iter()
            .map(|r| Sent {
                method: r.head.method.to_string(),
                target: r.head.uri.to_string(),
                fields: r
                    .head
                    .headers
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                    .collect(),
                body: r.body.clone(),
            })
            .collect(),
        error: s.error.map(|e| e.status()),
        incomplete: s.incomplete,
    }
}

/// Fields as an `http` map gives them back: names in lower case, grouped by name in
/// the order each name first appeared.
fn as_map(mut d: Decoded) -> Decoded {
    for r in &mut d.requests {
        let mut order: Vec<String> = Vec::new();
        for (n, _) in &mut r.fields {
            *n = n.to_ascii_lowercase();
            if !order.contains(n) {
                order.push(n.clone());
            }
        }
        r.fields
            .sort_by_key(|(n, _)| order.iter().position(|o| o == n));
    }
    d
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn any_split_decodes_to_what_was_sent(
        reqs in prop::collection::vec(request(), 1..4),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let cfg = Config::default();
        let stream: Vec<u8> = reqs.iter().flat_map(|(_, b)| b.clone()).collect();
        let sent: Vec<Sent> = reqs.into_iter().map(|(s, _)| s).collect();
        let want = Decoded { requests: sent, error: None, incomplete: false };
        let pieces = feed_in_pieces(&stream, &cuts, &cfg);
        prop_assert_eq!(&pieces, &want);
        prop_assert_eq!(decode_whole(&stream, &cfg), as_map(want));
    }

    #[test]
    fn mutations_never_panic_smuggle_or_depend_on_the_split(
        req in request(),
        muts in prop::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..6),
        cuts in prop::collection::vec(any::<usize>(), 0..4),
    ) {
        let cfg = Config::default();
        let mut m = req.1.clone();
        for (pos, byte, kind) in muts {
            let p = pos % (m.len() + 1);
            match kind {
                0 if p < m.len() => m[p] = byte,
                1 => m.insert(p, byte),
                _ if p < m.len() => { m.remove(p); }
                _ => {}
            }
        }
        let whole = feed_in_pieces(&m, &[], &cfg);
        prop_assert!(whole.requests.len() <= 1, "one request sent, {} decoded", whole.requests.len());
        let pieces = feed_in_pieces(&m, &cuts, &cfg);
        prop_assert_eq!(pieces, whole);
    }
}
