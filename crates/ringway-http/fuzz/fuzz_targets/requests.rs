//! Fuzz target: arbitrary bytes as one connection's input, decoded whole and split in
//! two at a point taken from the input. Must never panic, and the split decoding must
//! agree with the whole one on every request served before an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringway_http::chunked::decode_all;
use ringway_http::decode::decode_stream;
use ringway_http::Config;

fuzz_target!(|data: &[u8]| {
    let cfg = Config {
        max_head_size: 4096,
        max_request_line: 1024,
        max_body_size: 4096,
        ..Config::default()
    };
    let whole = decode_stream(data, &cfg);
    // A prefix never holds more requests than the whole.
    if !data.is_empty() {
        let cut = data[0] as usize % data.len();
        let prefix = decode_stream(&data[..cut], &cfg);
        assert!(prefix.requests.len() <= whole.requests.len() + usize::from(whole.error.is_some()));
        for (a, b) in prefix.requests.iter().zip(&whole.requests) {
            assert_eq!(a.head.method, b.head.method);
            assert_eq!(a.head.uri, b.head.uri);
            assert_eq!(a.body, b.body);
        }
    }
    let _ = decode_all(data, 64, 256);
});
