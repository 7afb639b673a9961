//! The check every peer passes before it is measured: its response is the canned one.
//!
//! Two requests are written in one segment on one keep-alive connection and exactly two
//! responses must come back. Each is compared with [`crate::peers::canned::Canned`] field by
//! field: the status line, every header (name, value, order), the `Date` (a valid
//! IMF-fixdate within a few seconds of now) and the body. A difference a peer cannot
//! avoid (nginx always says `Server: nginx`) passes only if the registry declares it
//! ([`Deviation`]); anything else fails the peer, which is then reported, not measured.
//! The report prints each peer's declared deviations and its response size, so that a
//! reader sees exactly how far from byte-identical each comparison is.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::peers::canned::{coarse_now_secs, App, Canned};
use crate::suite::registry::spec::{Deviation, Endpoint};

/// A parsed response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// `HTTP/1.1 200 OK`.
    pub status_line: String,
    /// Headers as sent (name case kept), in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// Bytes of the whole response.
    pub size: usize,
}

/// Parses one response at the start of `buf`; `Ok(None)` if it is not complete yet.
/// The body is framed by `Content-Length` (every canned response has one).
pub fn parse_response(buf: &[u8]) -> Result<Option<Parsed>, String> {
    let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| "head is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("header line without a colon: {line:?}"))?;
        headers.push((name.to_string(), value.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .ok_or("no Content-Length")?
        .1
        .parse()
        .map_err(|_| "bad Content-Length")?;
    let start = head_end + 4;
    if buf.len() < start + len {
        return Ok(None);
    }
    Ok(Some(Parsed {
        status_line,
        headers,
        body: buf[start..start + len].to_vec(),
        size: start + len,
    }))
}

/// What a passing check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Size of the peer's response in bytes.
    pub size: usize,
    /// The declared deviations that were actually seen.
    pub seen: Vec<Deviation>,
}

/// Records the first declared deviation that `matches`, or fails with `what`.
fn tolerate(
    declared: &[Deviation],
    seen: &mut Vec<Deviation>,
    matches: impl Fn(&Deviation) -> bool,
    what: impl FnOnce() -> String,
) -> Result<(), String> {
    match declared.iter().find(|d| matches(d)) {
        Some(d) => {
            if !seen.contains(d) {
                seen.push(*d);
            }
            Ok(())
        }
        None => Err(what()),
    }
}

/// Compares `got` with the canned response of `app`. Differences must be in `declared`.
pub fn compare(got: &Parsed, app: App, declared: &[Deviation]) -> Result<Verdict, String> {
    let canned = Canned::new(app);
    let want = parse_response(canned.as_bytes())?.expect("the canned response is complete");
    let mut seen = Vec::new();
    compare_status(got, &want, declared, &mut seen)?;
    let want_names = compare_names(got, &want, declared, &mut seen)?;
    compare_values(got, &want, &want_names, declared, &mut seen)?;
    if got.body != want.body {
        return Err(format!(
            "body differs ({} bytes, expected {})",
            got.body.len(),
            want.body.len()
        ));
    }
    Ok(Verdict {
        size: got.size,
        seen,
    })
}

/// The status line: only the reason phrase may differ, if declared.
fn compare_status(
    got: &Parsed,
    want: &Parsed,
    declared: &[Deviation],
    seen: &mut Vec<Deviation>,
) -> Result<(), String> {
    if got.status_line == want.status_line {
        return Ok(());
    }
    let reason = got
        .status_line
        .strip_prefix("HTTP/1.1 200 ")
        .unwrap_or("\0");
    tolerate(
        declared,
        seen,
        |d| matches!(d, Deviation::ReasonPhrase(r) if *r == reason),
        || {
            format!(
                "status line {:?}, expected {:?}",
                got.status_line, want.status_line
            )
        },
    )
}

/// The header names: their case, extra and missing ones, their order. Returns the
/// canned names (lower case) that `got` has, in the canned order.
fn compare_names(
    got: &Parsed,
    want: &Parsed,
    declared: &[Deviation],
    seen: &mut Vec<Deviation>,
) -> Result<Vec<String>, String> {
    let lower = |h: &[(String, String)]| -> Vec<String> {
        h.iter().map(|(n, _)| n.to_ascii_lowercase()).collect()
    };
    let (got_names, want_names) = (lower(&got.headers), lower(&want.headers));
    for (name, _) in &got.headers {
        if name.chars().any(|c| c.is_ascii_uppercase()) {
            tolerate(
                declared,
                seen,
                |d| *d == Deviation::HeaderNameCase,
                || format!("header name {name:?} is not lower case"),
            )?;
        }
    }
    for name in got_names.iter().filter(|n| !want_names.contains(n)) {
        tolerate(
            declared,
            seen,
            |d| matches!(d, Deviation::ExtraHeader(h) if h == name),
            || format!("extra header {name:?}"),
        )?;
    }
    for name in want_names.iter().filter(|n| !got_names.contains(n)) {
        tolerate(
            declared,
            seen,
            |d| matches!(d, Deviation::MissingHeader(h) if h == name),
            || format!("missing header {name:?}"),
        )?;
    }
    // What is left of the canned headers once the declared missing ones are gone.
    let want_names: Vec<String> = want_names
        .into_iter()
        .filter(|n| got_names.contains(n))
        .collect();
    let common = got_names.iter().filter(|n| want_names.contains(n));
    if common.ne(want_names.iter()) {
        tolerate(
            declared,
            seen,
            |d| *d == Deviation::HeaderOrder,
            || format!("header order {got_names:?}, expected {want_names:?}"),
        )?;
    }
    Ok(want_names)
}

/// The values of the headers both have: the `Date` must be valid and current, the
/// `Server` and `ETag` values may differ if declared, the others must be equal.
fn compare_values(
    got: &Parsed,
    want: &Parsed,
    names: &[String],
    declared: &[Deviation],
    seen: &mut Vec<Deviation>,
) -> Result<(), String> {
    let value = |h: &[(String, String)], name: &str| -> String {
        h.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    for name in names {
        let (g, w) = (value(&got.headers, name), value(&want.headers, name));
        match name.as_str() {
            "date" => check_date(&g)?,
            _ if g == w => {}
            "server" => tolerate(
                declared,
                seen,
                |d| matches!(d, Deviation::ServerValue(v) if *v == g),
                || format!("Server {g:?}, expected {w:?}"),
            )?,
            "etag" => tolerate(
                declared,
                seen,
                |d| *d == Deviation::EtagValue,
                || format!("ETag {g:?}, expected {w:?}"),
            )?,
            _ => return Err(format!("{name}: {g:?}, expected {w:?}")),
        }
    }
    Ok(())
}

fn check_date(value: &str) -> Result<(), String> {
    let when = httpdate::parse_http_date(value)
        .map_err(|_| format!("Date {value:?} is not an IMF-fixdate"))?;
    let secs = when
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| format!("Date {value:?} before 1970"))?
        .as_secs();
    let now = coarse_now_secs();
    if secs.abs_diff(now) > 5 {
        return Err(format!(
            "Date {value:?} is {}s away from now",
            secs.abs_diff(now)
        ));
    }
    Ok(())
}

/// Writes two requests for `path` in one segment on one connection and reads back
/// exactly two responses.
fn fetch_two(addr: SocketAddr, path: &str) -> Result<Vec<Parsed>, String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let req = format!("GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    s.write_all(req.repeat(2).as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let mut responses = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while responses.len() < 2 {
        if let Some(p) = parse_response(&buf)? {
            buf.drain(..p.size);
            responses.push(p);
            continue;
        }
        if Instant::now() > deadline {
            return Err(format!("{} of 2 responses within 5 s", responses.len()));
        }
        match s.read(&mut chunk) {
            Ok(0) => {
                return Err(format!(
                    "connection closed after {} of 2 pipelined responses",
                    responses.len()
                ))
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(format!("read: {e}")),
        }
    }
    Ok(responses)
}

/// Fetches two pipelined responses for `app` from `addr` and checks both.
pub fn check_http(addr: SocketAddr, app: App, declared: &[Deviation]) -> Result<Verdict, String> {
    let responses = fetch_two(addr, &app.path())?;
    let first = compare(&responses[0], app, declared)?;
    compare(&responses[1], app, declared).map_err(|e| format!("second response: {e}"))?;
    Ok(first)
}

/// Checks an S15 server (an ASGI app, aiohttp, granian: each its own headers): both
/// responses are `200`, with the endpoint's content type and exactly its body.
pub fn check_asgi(addr: SocketAddr, endpoint: Endpoint) -> Result<usize, String> {
    let responses = fetch_two(addr, endpoint.path())?;
    for (i, r) in responses.iter().enumerate() {
        let which = if i == 0 { "first" } else { "second" };
        if !r.status_line.starts_with("HTTP/1.1 200") {
            return Err(format!("{which} response: status line {:?}", r.status_line));
        }
        let ct = r
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.as_str())
            .unwrap_or("");
        if !ct.starts_with(endpoint.content_type()) {
            return Err(format!(
                "{which} response: content-type {ct:?}, expected {}",
                endpoint.content_type()
            ));
        }
        if r.body != endpoint.body() {
            return Err(format!(
                "{which} response: body {:?}, expected {:?}",
                String::from_utf8_lossy(&r.body),
                String::from_utf8_lossy(endpoint.body())
            ));
        }
    }
    Ok(responses[0].size)
}

/// Checks an echo server: 3000 bytes in three writes come back in order.
pub fn check_echo(addr: SocketAddr) -> Result<(), String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    for part in data.chunks(1000) {
        s.write_all(part).map_err(|e| format!("write: {e}"))?;
    }
    let mut back = vec![0u8; data.len()];
    s.read_exact(&mut back).map_err(|e| format!("read: {e}"))?;
    if back != data {
        return Err("the echo differs from what was sent".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canned(app: App) -> Parsed {
        parse_response(Canned::new(app).as_bytes())
            .unwrap()
            .unwrap()
    }

    #[test]
    fn the_canned_response_passes_with_nothing_declared() {
        for app in [App::Hello, App::Body] {
            let v = compare(&canned(app), app, &[]).unwrap();
            assert!(v.seen.is_empty());
            assert_eq!(v.size, Canned::new(app).as_bytes().len());
        }
        assert_eq!(
            parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nab").unwrap(),
            None
        );
    }

    #[test]
    fn nginx_shaped_response_needs_its_declarations() {
        let date = crate::peers::canned::imf_date(coarse_now_secs());
        let text = format!(
            "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: {date}\r\nContent-Type: text/plain\r\n\
             Content-Length: 13\r\nConnection: keep-alive\r\n\r\nHello, World!"
        );
        let p = parse_response(text.as_bytes()).unwrap().unwrap();
        let err = compare(&p, App::Hello, &[]).unwrap_err();
        assert!(err.contains("not lower case"), "{err}");
        let declared = [
            Deviation::ServerValue("nginx"),
            Deviation::HeaderNameCase,
            Deviation::ExtraHeader("connection"),
        ];
        let v = compare(&p, App::Hello, &declared).unwrap();
        assert_eq!(v.seen.len(), 3);
        assert_eq!(v.size, text.len());
        // The same without the Server declaration fails on it.
        let err = compare(&p, App::Hello, &declared[1..]).unwrap_err();
        assert!(err.contains("Server \"nginx\""), "{err}");
    }

    #[test]
    fn wrong_bodies_values_dates_and_statuses_fail_even_when_deviations_are_declared() {
        let all = [
            Deviation::ReasonPhrase("Ok"),
            Deviation::ServerValue("x"),
            Deviation::HeaderNameCase,
            Deviation::HeaderOrder,
            Deviation::EtagValue,
        ];
        let good = String::from_utf8(Canned::new(App::Hello).as_bytes().to_vec()).unwrap();
        let cases = [
            good.replace("Hello, World!", "Hello, world!"),
            good.replace("text/plain", "text/html!"),
            good.replace("200 OK", "404 OK"),
            good.replace("content-type: text/plain\r\n", ""),
        ];
        for bad in cases {
            let p = parse_response(bad.as_bytes()).unwrap().unwrap();
            assert!(compare(&p, App::Hello, &all).is_err(), "{bad:?}");
        }
        let mut stale = Canned::new(App::Hello);
        stale.set_date(784111777);
        let p = parse_response(stale.as_bytes()).unwrap().unwrap();
        let err = compare(&p, App::Hello, &all).unwrap_err();
        assert!(err.contains("away from now"), "{err}");
        // A declared reason phrase passes; another does not.
        let ok = good.replace("200 OK", "200 Ok");
        let p = parse_response(ok.as_bytes()).unwrap().unwrap();
        assert!(compare(&p, App::Hello, &all).is_ok());
        let p = parse_response(good.replace("200 OK", "200 Fine").as_bytes())
            .unwrap()
            .unwrap();
        assert!(compare(&p, App::Hello, &all).is_err());
    }

    #[test]
    fn a_missing_header_passes_only_when_declared_and_only_that_one() {
        let good = String::from_utf8(Canned::new(App::Hello).as_bytes().to_vec()).unwrap();
        let date_line = good
            .split("\r\n")
            .find(|l| l.starts_with("date: "))
            .unwrap()
            .to_string();
        // The Python servers' head: the canned one without its date.
        let no_date = good.replace(&format!("{date_line}\r\n"), "");
        let p = parse_response(no_date.as_bytes()).unwrap().unwrap();
        let err = compare(&p, App::Hello, &[]).unwrap_err();
        assert!(err.contains("missing header \"date\""), "{err}");
        let declared = [Deviation::MissingHeader("date")];
        let v = compare(&p, App::Hello, &declared).unwrap();
        assert_eq!(v.seen, declared);
        assert_eq!(v.size, good.len() - date_line.len() - 2);
        // Declaring date missing does not excuse another missing header.
        let no_type = no_date.replace("content-type: text/plain\r\n", "");
        let p = parse_response(no_type.as_bytes()).unwrap().unwrap();
        let err = compare(&p, App::Hello, &declared).unwrap_err();
        assert!(err.contains("content-type"), "{err}");
    }
}
