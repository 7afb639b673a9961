//! The HTTP floor answers every complete request head with the canned response, exactly
//! once, in order, however the requests are split across writes; a flood of pipelined
//! requests read late (so that sends go short and responses are owed while a send is in
//! flight) loses and duplicates nothing; and heads sent just before the client closes
//! its side are still answered. Over TLS (S11) the same holds, and a client that does not
//! speak TLS is closed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use ringway_bench::peers::canned::{App, Canned, DATE_LEN};

/// The floor on a free port, killed (by its pid) when dropped.
struct Floor {
    child: Child,
    addr: String,
}

impl Drop for Floor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Floor {
    start_app("hello")
}

fn start_app(app: &str) -> Floor {
    let mut child = Command::new(env!("CARGO_BIN_EXE_http-floor"))
        .args(["--bind", "127.0.0.1:0", "--app", app])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    Floor { child, addr }
}

fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Reads exactly `n` responses and checks each against the canned one (the date only
/// for its shape: it may tick between responses).
fn read_responses(s: &mut TcpStream, n: usize) {
    read_app_responses(s, n, App::Hello);
}

fn read_app_responses(s: &mut TcpStream, n: usize, app: App) {
    let canned = Canned::new(app);
    let expected = canned.as_bytes();
    let (len, date_at) = (expected.len(), canned.date_offset());
    let mut got = vec![0u8; n * len];
    s.read_exact(&mut got).unwrap();
    for (i, r) in got.chunks(len).enumerate() {
        assert_eq!(r[..date_at], expected[..date_at], "response {i}");
        assert_eq!(
            r[date_at + DATE_LEN..],
            expected[date_at + DATE_LEN..],
            "response {i}"
        );
        let date = std::str::from_utf8(&r[date_at..date_at + DATE_LEN]).unwrap();
        assert!(httpdate::parse_http_date(date).is_ok(), "bad date {date:?}");
    }
}

/// Nothing more arrives: the floor sent exactly what was asked.
fn assert_silent(s: &mut TcpStream) {
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut one = [0u8; 1];
    match s.read(&mut one) {
        Ok(0) => {}
        Ok(_) => panic!("an extra byte after the expected responses"),
        Err(e) => assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{e}"
        ),
    }
}

const REQ: &[u8] = b"GET /plaintext HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n";

#[test]
fn every_head_split_anywhere_gets_exactly_one_response() {
    let floor = start();
    let stream: Vec<u8> = REQ.repeat(3);
    for cut in [1, 5, REQ.len() - 3, REQ.len() - 1, REQ.len(), REQ.len() + 2] {
        let mut s = connect(&floor.addr);
        s.set_nodelay(true).unwrap();
        s.write_all(&stream[..cut]).unwrap();
        thread::sleep(Duration::from_millis(30));
        s.write_all(&stream[cut..]).unwrap();
        read_responses(&mut s, 3);
        assert_silent(&mut s);
    }
    // A partial head alone is not answered.
    let mut s = connect(&floor.addr);
    s.write_all(&REQ[..REQ.len() - 1]).unwrap();
    assert_silent(&mut s);
    s.write_all(b"\n").unwrap();
    read_responses(&mut s, 1);
}

#[test]
fn a_late_reader_of_many_pipelined_requests_gets_them_all() {
    let floor = start();
    let n = 60_000; // ~2.6 MB of requests, ~7.9 MB of responses: sends go short
    let s = connect(&floor.addr);
    let mut reader = s.try_clone().unwrap();
    let read = thread::spawn(move || {
        thread::sleep(Duration::from_millis(500));
        read_responses(&mut reader, n);
        assert_silent(&mut reader);
    });
    let mut w = s;
    for chunk in REQ.repeat(n).chunks(7_001) {
        w.write_all(chunk).unwrap();
    }
    read.join().unwrap();
}

#[test]
fn heads_sent_before_the_client_closes_are_answered() {
    let floor = start();
    let mut s = connect(&floor.addr);
    s.write_all(&REQ.repeat(5)).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    read_responses(&mut s, 5);
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "the floor closes after answering");
}

#[test]
fn body_app_sends_the_static_file_response() {
    let floor = start_app("body");
    let mut s = connect(&floor.addr);
    s.write_all(&REQ.repeat(4)).unwrap();
    read_app_responses(&mut s, 4, App::Body);
    assert_silent(&mut s);
}

/// The floor over TLS (S11): its certificate, made here, is the client's only root.
struct TlsFloor {
    floor: Floor,
    roots: rustls::RootCertStore,
    dir: std::path::PathBuf,
}

impl Drop for TlsFloor {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_tls() -> TlsFloor {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let dir = std::env::temp_dir().join(format!("floor-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_http-floor"))
        .args(["--bind", "127.0.0.1:0", "--tls-cert"])
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ck.cert.der().clone()).unwrap();
    TlsFloor {
        floor: Floor { child, addr },
        roots,
        dir,
    }
}

fn tls_client(f: &TlsFloor) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(f.roots.clone())
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(cfg), name).unwrap();
    rustls::StreamOwned::new(conn, connect(&f.floor.addr))
}

#[test]
fn over_tls_every_head_gets_its_response_and_a_broken_handshake_is_closed() {
    let f = start_tls();
    let mut c = tls_client(&f);
    // Three pipelined in one record, then one split across two records.
    c.write_all(&REQ.repeat(3)).unwrap();
    c.flush().unwrap();
    c.write_all(&REQ[..7]).unwrap();
    c.flush().unwrap();
    thread::sleep(Duration::from_millis(50));
    c.write_all(&REQ[7..]).unwrap();
    let canned = Canned::new(App::Hello);
    let mut got = vec![0u8; 4 * canned.as_bytes().len()];
    c.read_exact(&mut got).unwrap();
    let date_at = canned.date_offset();
    for r in got.chunks(canned.as_bytes().len()) {
        assert_eq!(r[..date_at], canned.as_bytes()[..date_at]);
        assert_eq!(
            r[date_at + DATE_LEN..],
            canned.as_bytes()[date_at + DATE_LEN..]
        );
    }
    // Bytes that are not TLS: the floor answers with nothing but an alert and closes.
    let mut raw = connect(&f.floor.addr);
    raw.write_all(REQ).unwrap();
    let mut rest = Vec::new();
    let _ = raw.read_to_end(&mut rest);
    assert!(
        !rest.windows(4).any(|w| w == b"HTTP"),
        "no plaintext answer"
    );
    // And it still serves a new TLS client afterwards.
    let mut again = tls_client(&f);
    again.write_all(REQ).unwrap();
    let mut one = vec![0u8; canned.as_bytes().len()];
    again.read_exact(&mut one).unwrap();
    assert_eq!(one[..date_at], canned.as_bytes()[..date_at]);
}
