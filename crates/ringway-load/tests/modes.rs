//! Echo modes, TLS, JSON output and the clear errors (bad URL, refused connection).

mod common;

use std::io::Write as _;

use common::{load, load_err, Server};

#[test]
fn fixed_echo_verified() {
    let server = Server::start(&["--mode", "echo"]);
    let url = format!("tcp://{}", server.addr);
    let (report, _) = load(&["--echo", "1024", "-c", "4", "-n", "2000", &url]);
    server.stop();
    assert_eq!(report.error_total(), 0, "{:?}", report.errors);
    assert_eq!(report.requests, 2000);
    assert_eq!(report.bytes_read, 2000 * 1024);
    assert_eq!(report.bytes_written, 2000 * 1024);
}

#[test]
fn framed_echo_verified_and_pipelined() {
    let server = Server::start(&["--mode", "echo"]);
    let url = format!("tcp://{}", server.addr);
    let (report, _) = load(&["--echo-framed", "-c", "3", "-p", "4", "-n", "3000", &url]);
    server.stop();
    assert_eq!(report.error_total(), 0, "{:?}", report.errors);
    assert_eq!(report.requests, 3000);
    assert_eq!(report.bytes_read, report.bytes_written);
    // Frames are 2 + 1..=100 bytes.
    assert!(report.bytes_read >= 3000 * 3 && report.bytes_read <= 3000 * 102);
}

#[test]
fn json_has_the_contract_keys() {
    let server = Server::start(&["--mode", "cl"]);
    let url = server.url("/");
    let (_, text) = load(&["--json", "-n", "200", "-c", "2", &url]);
    server.stop();
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(v["requests"], 200);
    assert!(v["duration_s"].as_f64().unwrap() > 0.0);
    assert!(v["rps"].as_f64().unwrap() > 0.0);
    for k in ["p50", "p90", "p99", "p999", "max"] {
        assert!(v["latency_us"][k].as_f64().unwrap() > 0.0, "{k}");
    }
    for k in ["connect", "read", "write", "timeout", "status"] {
        assert_eq!(v["errors"][k], 0, "{k}");
    }
    let hist: u64 = v["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[1].as_u64().unwrap())
        .sum();
    assert_eq!(hist, 200);
}

fn write_pem(dir: &std::path::Path) -> (String, String) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("certificate");
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::File::create(&cert)
        .unwrap()
        .write_all(ck.cert.pem().as_bytes())
        .unwrap();
    std::fs::File::create(&key)
        .unwrap()
        .write_all(ck.key_pair.serialize_pem().as_bytes())
        .unwrap();
    (cert.display().to_string(), key.display().to_string())
}

#[test]
fn tls_insecure_and_trusted() {
    let dir = std::env::temp_dir().join(format!("ringway-load-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = write_pem(&dir);
    let server = Server::start(&["--mode", "cl", "--cert", &cert, "--key", &key]);
    let url = format!("https://localhost:{}/", server.addr.port());
    let (report, _) = load(&[
        "--insecure",
        "-n",
        "300",
        "-c",
        "3",
        "-p",
        "2",
        "--expect-body",
        "Hello, World!",
        &url,
    ]);
    assert_eq!(report.error_total(), 0, "{:?}", report.errors);
    assert_eq!(report.requests, 300);
    // Trusting the test certificate explicitly, with a handshake per request.
    let (report, _) = load(&["--cacert", &cert, "-x", "1", "-n", "20", "-c", "2", &url]);
    assert_eq!((report.requests, report.connections_opened), (20, 20));
    // Without trust, every handshake fails and the run says so.
    let e = load_err(&["-n", "5", "-c", "1", &url]);
    assert!(e.contains("cannot connect"), "{e}");
    let counts = server.stop();
    assert_eq!(counts.responses, 320);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn clear_errors() {
    let e = load_err(&["-n", "1", "htp://127.0.0.1:1/"]);
    assert!(e.contains("bad URL") && e.contains("scheme"), "{e}");
    let e = load_err(&["-n", "1", "http://127.0.0.1:notaport/"]);
    assert!(e.contains("bad port"), "{e}");
    // A port nobody listens on: bind, note the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = load_err(&["-d", "5s", &format!("http://127.0.0.1:{port}/")]);
    assert!(e.contains("cannot connect") && e.contains("refused"), "{e}");
    let e = load_err(&["-R", "0", "-n", "1", "http://127.0.0.1:1/"]);
    assert!(e.contains("-R"), "{e}");
}

#[test]
fn an_unreachable_rate_is_reported() {
    // One connection without pipelining cannot carry a million requests a second.
    let server = Server::start(&["--mode", "cl"]);
    let url = server.url("/");
    let (report, text) = load(&["-R", "1000000", "-c", "1", "-d", "500ms", &url]);
    server.stop();
    assert!(report.requests > 0);
    assert!(
        text.contains("target rate 1000000 req/s was not reached"),
        "{text}"
    );
    assert!(report.warnings.iter().any(|w| w.contains("not reached")));
}
