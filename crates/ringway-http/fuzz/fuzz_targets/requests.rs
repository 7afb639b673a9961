//! Fuzz target: arbitrary bytes as one connection's input, through the decoder the
//! server serves with (`RequestDecoder`), fed the way a connection feeds it: whole, and
//! in two pieces cut at a point taken from the input. Must never panic; both feedings
//! must decode the same requests (heads and bodies) and end the same way (the same
//! error, unless a size limit is what one of them hit); every head it
//! accepts is free of NUL and bare CR; and the `http` types of every accepted head can
//! be built. And the head scanner the decoder serves with gives, on the input whole, on
//! the two pieces, and under limits taken from the input, the same outcome as its
//! reference (httparse plus this crate's checks, `head::reference`): the same head to
//! the byte, the same "more bytes needed", or the same error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringway_http::head::{reference, scan_head};
use ringway_http::{Config, Event, RequestDecoder};

/// The scanner and the reference on `buf`: the same outcome.
fn same_as_reference(buf: &[u8], cfg: &Config) {
    let ours = scan_head(buf, cfg);
    let theirs = reference::scan_head(buf, cfg);
    assert_eq!(
        ours,
        theirs,
        "the scanner and the reference differ on {:?}",
        buf.escape_ascii().to_string()
    );
}

/// Limits small enough for a fuzzed head to reach, taken from two bytes of the input.
fn tight(data: &[u8]) -> Config {
    let a = data.get(1).copied().unwrap_or(0) as usize;
    let b = data.get(2).copied().unwrap_or(0) as usize;
    Config {
        max_request_line: a % 64,
        max_field_size: b % 48,
        max_head_size: (a + b) % 160,
        max_headers: b % 5,
        ..Config::default()
    }
}

/// What one feeding decoded.
struct Outcome {
    /// The requests, in order.
    requests: Vec<Request>,
    /// The status of the error that ended the input, if one did.
    error: Option<u16>,
}

/// One decoded request, as much of it as both feedings must agree on.
#[derive(Debug, PartialEq)]
struct Request {
    method: String,
    target: String,
    fields: usize,
    body: Vec<u8>,
}

fn feed(data: &[u8], cut: usize, cfg: &Config) -> Outcome {
    let mut decoder = RequestDecoder::new();
    let mut input = Vec::new();
    let mut requests = Vec::new();
    let mut current = None;
    for piece in [&data[..cut], &data[cut..]] {
        input.extend_from_slice(piece);
        loop {
            let (used, event) = match decoder.decode(&input, cfg) {
                Ok(r) => r,
                Err(e) => {
                    return Outcome {
                        requests,
                        error: Some(e.status()),
                    }
                }
            };
            match event {
                Event::Head(raw) => {
                    let head = &input[..raw.len];
                    assert!(!head.contains(&0), "NUL in an accepted head");
                    assert!(
                        head.windows(2).all(|w| w[0] != b'\r' || w[1] == b'\n')
                            && head.last() != Some(&b'\r'),
                        "bare CR in an accepted head"
                    );
                    raw.to_head(&input).expect("http types of an accepted head");
                    let r = Request {
                        method: raw.method(&input).to_string(),
                        target: raw.target(&input).to_string(),
                        fields: raw.fields(&input).count(),
                        body: Vec::new(),
                    };
                    if raw.body == ringway_http::BodyKind::None {
                        requests.push(r);
                    } else {
                        current = Some(r);
                    }
                }
                Event::Data(a, b) => current.as_mut().expect("a body").body.extend(&input[a..b]),
                Event::BodyEnd => requests.extend(current.take()),
                Event::NeedMore => {
                    input.drain(..used);
                    break;
                }
            }
            input.drain(..used);
        }
    }
    Outcome {
        requests,
        error: None,
    }
}

fuzz_target!(|data: &[u8]| {
    let cfg = Config {
        max_head_size: 4096,
        max_request_line: 1024,
        max_body_size: 4096,
        ..Config::default()
    };
    let cut = data.first().map_or(0, |&b| b as usize % (data.len() + 1));
    let tight = tight(data);
    for c in [&cfg, &Config::default(), &tight] {
        for buf in [data, &data[..cut], &data[cut..]] {
            same_as_reference(buf, c);
        }
    }
    // A head arriving a byte at a time (short inputs: the cost is quadratic).
    if data.len() <= 160 {
        for end in 0..data.len() {
            same_as_reference(&data[..end], &tight);
        }
    }
    let whole = feed(data, data.len(), &cfg);
    let split = feed(data, cut, &cfg);
    assert_eq!(
        split.requests, whole.requests,
        "the split changed the requests decoded"
    );
    // Both end in an error or neither does. Which error may differ only where a limit
    // is involved: seen whole, a head can be over a limit (414, 431, 413) that its
    // first piece alone was not yet, and that piece can already be malformed (400).
    let limit = |s: Option<u16>| matches!(s, Some(413 | 414 | 431));
    match (split.error, whole.error) {
        (a, b) if a == b => {}
        (Some(_), Some(_)) if limit(split.error) || limit(whole.error) => {}
        (a, b) => panic!("the split ended in {a:?}, the whole in {b:?}"),
    }
});
