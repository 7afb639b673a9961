//! The head scanner the server serves with (`head::scan_head`) against its reference,
//! httparse plus the checks this crate made of its result (`head::reference`): the same
//! bytes to both, and the same outcome required to the byte: the same head (offsets of
//! method, target and fields, version, framing, keep-alive, `Expect`), the same "more
//! bytes needed", or the same error (status and reason).
//!
//! Every input is tried whole, at every prefix (a head arriving byte by byte), from
//! every later start (what a pipelined batch puts in front of the scanner), under the
//! default limits and under tight ones. The inputs: heads generated from the grammar
//! with hostile alternatives at every part; the conformance suite's cases and the fuzz
//! corpus, mutated; every byte value at every position of typical heads.

mod common;

use std::path::Path;

use proptest::prelude::*;
use ringway_http::head::{reference, scan_head};
use ringway_http::Config;

/// The scanner and the reference on `buf`: the same outcome.
fn same(buf: &[u8], cfg: &Config) -> Result<(), TestCaseError> {
    let ours = scan_head(buf, cfg);
    let theirs = reference::scan_head(buf, cfg);
    prop_assert_eq!(
        &ours,
        &theirs,
        "on {:?} ({} bytes), limits {:?}",
        buf.escape_ascii().to_string(),
        buf.len(),
        limits(cfg)
    );
    Ok(())
}

fn limits(cfg: &Config) -> (usize, usize, usize, usize) {
    (
        cfg.max_request_line,
        cfg.max_field_size,
        cfg.max_head_size,
        cfg.max_headers,
    )
}

/// [`same`] on the whole, every prefix and every suffix of `buf`.
fn same_everywhere(buf: &[u8], cfg: &Config) -> Result<(), TestCaseError> {
    for end in 0..=buf.len() {
        same(&buf[..end], cfg)?;
    }
    for start in 1..buf.len() {
        same(&buf[start..], cfg)?;
    }
    Ok(())
}

/// Limits that head sizes of a few tens of bytes reach.
fn tight() -> Config {
    Config {
        max_request_line: 20,
        max_field_size: 10,
        max_head_size: 60,
        max_headers: 2,
        ..Config::default()
    }
}

fn configs() -> impl Strategy<Value = Config> {
    (
        prop::sample::select(vec![0usize, 8, 16, 24, 40, 8192]),
        prop::sample::select(vec![0usize, 4, 9, 16, 40, 8192]),
        prop::sample::select(vec![0usize, 20, 48, 100, 32768]),
        prop::sample::select(vec![0usize, 1, 2, 3, 100, 1000]),
    )
        .prop_map(|(line, field, head, fields)| Config {
            max_request_line: line,
            max_field_size: field,
            max_head_size: head,
            max_headers: fields,
            ..Config::default()
        })
}

/// One of `fixed` (mostly) or a few bytes from `alphabet`.
fn part(fixed: &[&[u8]], alphabet: &'static [u8], max: usize) -> BoxedStrategy<Vec<u8>> {
    let fixed: Vec<Vec<u8>> = fixed.iter().map(|s| s.to_vec()).collect();
    prop_oneof![
        6 => prop::sample::select(fixed),
        1 => prop::collection::vec(
            prop_oneof![4 => prop::sample::select(alphabet), 1 => any::<u8>()],
            0..max,
        ),
    ]
    .boxed()
}

fn line_end() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        12 => Just(b"\r\n".to_vec()),
        2 => Just(b"\n".to_vec()),
        1 => prop::sample::select(vec![
            b"\r".to_vec(),
            b"\rX".to_vec(),
            b"".to_vec(),
            b" \r\n".to_vec(),
            b"\r\r\n".to_vec(),
            b"\n\r".to_vec(),
        ]),
    ]
    .boxed()
}

fn field() -> impl Strategy<Value = Vec<u8>> {
    let name = part(
        &[
            b"Host",
            b"host",
            b"HOST",
            b"hOsT",
            b"Content-Length",
            b"content-length",
            b"CONTENT-LENGTH",
            b"Transfer-Encoding",
            b"transfer-encoding",
            b"Connection",
            b"connection",
            b"Expect",
            b"EXPECT",
            b"Accept",
            b"User-Agent",
            b"X-A",
            b"Hosu",
            b"Hos",
            b"Hostx",
            b"Content-Lengtx",
            b"",
            b" Host",
            b"\tX",
            b"X Y",
            b"X\x01Y",
            b"X\x80Y",
            b"Host ",
            b"X\0",
        ],
        b"HostabcXYZ-_!#$%&'*+.^`|~019 \t:\x80\x00",
        12,
    );
    let sep = prop::sample::select(vec![
        b":".to_vec(),
        b": ".to_vec(),
        b": ".to_vec(),
        b":  \t".to_vec(),
        b" :".to_vec(),
        b"".to_vec(),
        b":\t".to_vec(),
    ]);
    let value = part(
        &[
            b"a",
            b"127.0.0.1:8080",
            b"0",
            b"5",
            b"3, 3",
            b"+3",
            b"-1",
            b"0x3",
            b"1_0",
            b"99999999999999999999999",
            b"",
            b" ",
            b"chunked",
            b"Chunked ",
            b"gzip, chunked",
            b"chunked, gzip",
            b",chunked",
            b"chunked,",
            b"chunked, chunked",
            b"\xa0chunked",
            b"close",
            b"Keep-Alive",
            b"keep-alive, close",
            b" upgrade ,keep-alive",
            b"100-continue",
            b"100-Continue ",
            b"teapot",
            b" v \t",
            b"a\0b",
            b"a\rb",
            b"a\nb",
            b"a\x7fb",
            b"\x80\xff\xa0",
            b"a value of some length, longer than the tight limits allow",
        ],
        b"abc012 \t,;=\"\x80\xa0\x7f\r\n\x00",
        20,
    );
    (name, sep, value, line_end()).prop_map(|(n, s, v, e)| [n, s, v, e].concat())
}

/// A request head built from the grammar, with hostile choices at every part.
fn head() -> impl Strategy<Value = Vec<u8>> {
    let leading = prop_oneof![
        12 => Just(b"".to_vec()),
        1 => prop::sample::select(vec![
            b"\r\n".to_vec(),
            b"\n".to_vec(),
            b"\r".to_vec(),
            b"\r\n\n".to_vec(),
            b"\rG".to_vec(),
        ]),
    ];
    let method = part(
        &[
            b"GET", b"GET", b"POST", b"HEAD", b"OPTIONS", b"CONNECT", b"PUT", b"BREW", b"get",
            b"G\0T", b"GE(T", b"", b"GET /",
        ],
        b"GETPOSabc!#$%&'*+-.^_`|~ (\x80\x00",
        12,
    );
    let sp = || {
        prop_oneof![
            12 => Just(b" ".to_vec()),
            1 => prop::sample::select(vec![
                b"  ".to_vec(),
                b"\t".to_vec(),
                b"".to_vec(),
                b" \t".to_vec(),
            ]),
        ]
    };
    let target = part(
        &[
            b"/",
            b"/a",
            b"/plaintext",
            b"/a/b?c=d",
            b"/a?b?c",
            b"/?",
            b"/a/very/long/path/that/crosses/sixteen/bytes?and=a&query=too",
            b"*",
            b"http://h/p?q",
            b"HTTPS://h:1",
            b"http://h",
            b"ftp://h/",
            b"h:80",
            b"/a#b",
            b"/a<b",
            b"/\"q",
            b"/?\"",
            b"/`",
            b"/?`",
            b"/\xc3\xa9",
            b"/\xff",
            b"\xc3\xa9",
            b"!",
            b"",
        ],
        b"/?#<>\"`abc%=&*:@!\x7f\x80\xc3\xa9\xff \t",
        24,
    );
    let version = part(
        &[
            b"HTTP/1.1",
            b"HTTP/1.1",
            b"HTTP/1.0",
            b"HTTP/2.0",
            b"HTTP/0.9",
            b"HTTP/1.32",
            b"HTTP/1",
            b"HTTP/1.",
            b"HTTP/",
            b"HTTP/2",
            b"HTTP/4294967295.255",
            b"HTTP/\r\r1.1",
            b"http/1.1",
            b"HTTP/1.1 ",
            b"",
        ],
        b"HTP/1.0 \r\n",
        10,
    );
    let fields = prop::collection::vec(field(), 0..5);
    let body = prop::sample::select(vec![
        b"".to_vec(),
        b"abc".to_vec(),
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
        b"0\r\n\r\n".to_vec(),
    ]);
    (
        leading,
        method,
        sp(),
        target,
        sp(),
        version,
        line_end(),
        fields,
        line_end(),
        body,
    )
        .prop_map(|(lead, m, s1, t, s2, v, e, f, end, body)| {
            [lead, m, s1, t, s2, v, e, f.concat(), end, body].concat()
        })
}

/// The conformance suite's requests and the fuzz corpus.
fn seeds() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = common::hostile_cases::cases()
        .into_iter()
        .map(|c| c.req)
        .filter(|r| r.len() <= 600)
        .collect();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/requests");
    let mut files: Vec<_> = std::fs::read_dir(&corpus)
        .expect("the fuzz corpus")
        .map(|e| e.expect("a corpus entry").path())
        .collect();
    files.sort();
    for f in files {
        let bytes = std::fs::read(&f).expect("a corpus file");
        if bytes.len() <= 600 {
            seeds.push(bytes);
        }
    }
    assert!(seeds.len() > 80, "{} seeds", seeds.len());
    seeds
}

/// One change to a byte string.
#[derive(Debug, Clone)]
enum Mutation {
    Replace(usize, u8),
    Insert(usize, u8),
    Remove(usize),
    /// Copies a stretch of the input elsewhere (a line twice, a header in a value).
    Splice(usize, usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop_oneof![
        4 => prop::sample::select(b" \t\r\n:/?#\0\x7f\x80\xa0,aH1".to_vec()),
        1 => any::<u8>(),
    ];
    prop_oneof![
        3 => (any::<usize>(), byte.clone()).prop_map(|(at, b)| Mutation::Replace(at, b)),
        2 => (any::<usize>(), byte).prop_map(|(at, b)| Mutation::Insert(at, b)),
        2 => any::<usize>().prop_map(Mutation::Remove),
        1 => (any::<usize>(), any::<usize>(), 1usize..40)
            .prop_map(|(from, to, len)| Mutation::Splice(from, to, len)),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let n = bytes.len();
        match *m {
            Mutation::Replace(at, b) if n > 0 => bytes[at % n] = b,
            Mutation::Insert(at, b) => bytes.insert(at % (n + 1), b),
            Mutation::Remove(at) if n > 0 => {
                bytes.remove(at % n);
            }
            Mutation::Splice(from, to, len) if n > 0 => {
                let from = from % n;
                let piece = bytes[from..(from + len).min(n)].to_vec();
                let to = to % (n + 1);
                bytes.splice(to..to, piece);
            }
            _ => {}
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Generated heads, under the default limits, tight ones and drawn ones.
    #[test]
    fn generated_heads(head in head(), cfg in configs()) {
        same_everywhere(&head, &Config::default())?;
        same_everywhere(&head, &tight())?;
        same_everywhere(&head, &cfg)?;
    }

    /// The conformance cases and the fuzz corpus, each changed in a few places.
    #[test]
    fn mutated_conformance_cases(
        pick in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..5),
        cfg in configs(),
    ) {
        let seeds = seeds();
        let bytes = mutate(pick.get(&seeds).clone(), &mutations);
        same_everywhere(&bytes, &Config::default())?;
        same_everywhere(&bytes, &cfg)?;
    }
}

/// Every seed as it is, under both fixed limits.
#[test]
fn conformance_cases_as_they_are() {
    for seed in seeds() {
        for cfg in [Config::default(), tight()] {
            same_everywhere(&seed, &cfg).unwrap();
        }
    }
    // And the large ones (floods, long targets) whole and around their limits.
    for c in common::hostile_cases::cases() {
        same(&c.req, &Config::default()).unwrap();
        same(&c.req, &tight()).unwrap();
    }
}

/// Every byte value in place of, and inserted before, every byte of typical heads.
#[test]
fn every_byte_everywhere() {
    let heads: [&[u8]; 4] = [
        b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
        b"POST /a/b?c=d HTTP/1.1\r\nhost: h\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
        b"GET http://h/p HTTP/1.0\nTransfer-Encoding: chunked\nExpect: 100-continue\n\n",
        b"OPTIONS * HTTP/1.1\r\nX-A:  v \r\nHost:a\r\n\r\n",
    ];
    for head in heads {
        for at in 0..=head.len() {
            for b in 0..=255u8 {
                let mut replaced = head.to_vec();
                if at < head.len() {
                    replaced[at] = b;
                    same(&replaced, &Config::default()).unwrap();
                }
                let mut inserted = head.to_vec();
                inserted.insert(at, b);
                same(&inserted, &Config::default()).unwrap();
            }
        }
    }
}

/// The limits at and around every size of a typical head.
#[test]
fn every_limit_around_a_typical_head() {
    let head =
        b"GET /a?b HTTP/1.1\r\nHost: h\r\nX-Field: some value\r\nExpect: 100-continue\r\n\r\n";
    for line in 0..24 {
        for field in 0..24 {
            for fields in 0..4 {
                let cfg = Config {
                    max_request_line: line,
                    max_field_size: field,
                    max_head_size: 2 * line + field,
                    max_headers: fields,
                    ..Config::default()
                };
                same_everywhere(head, &cfg).unwrap();
            }
        }
    }
}

/// Every ordered pair and triple of the field lines that decide framing, the
/// connection's fate and `Host` (the values that join, repeat, conflict or are empty),
/// on both versions: how repeated and empty fields combine is where a scanner that
/// gathers as it goes can part from one that reads the fields afterwards, and few
/// generated heads name two of them.
#[test]
fn every_combination_of_the_fields_the_server_reads() {
    let lines: [&[u8]; 22] = [
        b"Host: a\r\n",
        b"host:\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"Transfer-Encoding:\r\n",
        b"Transfer-Encoding: \t\r\n",
        b"transfer-encoding: gzip\r\n",
        b"Transfer-Encoding: ,chunked\r\n",
        b"Transfer-Encoding: chunked, \r\n",
        b"Transfer-Encoding: x y\r\n",
        b"Content-Length: 3\r\n",
        b"content-length: 0\r\n",
        b"Content-Length:\r\n",
        b"Content-Length: 3, 3\r\n",
        b"Connection: close\r\n",
        b"Connection: keep-alive\r\n",
        b"connection: , Keep-Alive ,\r\n",
        b"Connection:\r\n",
        b"Expect: 100-continue\r\n",
        b"Expect:\r\n",
        b"expect: 100-Continue \r\n",
        b"X-Long-Field-Name: with a value\r\n",
        b"Accept: */*\r\n",
    ];
    let mut checked = 0;
    for version in [&b"HTTP/1.1"[..], b"HTTP/1.0"] {
        for a in lines {
            for b in lines {
                for c in [&b""[..]].into_iter().chain(lines) {
                    let head = [b"POST /p ", version, b"\r\n", a, b, c, b"\r\n"].concat();
                    for cfg in [Config::default(), tight()] {
                        same(&head, &cfg).unwrap();
                    }
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 2 * 22 * 22 * 23);
}
