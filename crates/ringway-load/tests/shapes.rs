//! Request and connection counts of the shapes: `-x` (N requests per connection, then a
//! client-side close), `-x` with `-t` and `-i` (the Rustlet shape), `--batch`, and a new
//! connection per request. The counting server must agree exactly.

mod common;

use common::{load, Server};

#[test]
fn per_connection_requests_then_close() {
    let server = Server::start(&["--mode", "cl"]);
    let url = server.url("/");
    let (report, _) = load(&["-x", "5", "-c", "4", "-n", "60", &url]);
    let counts = server.stop();
    assert_eq!(report.error_total(), 0, "{:?}", report.errors);
    assert_eq!(
        (report.requests, counts.responses, counts.requests),
        (60, 60, 60)
    );
    assert_eq!((report.connections_opened, counts.connections), (12, 12));
}

#[test]
fn rustlet_shape_threads_and_iterations() {
    let server = Server::start(&["--mode", "cl"]);
    let url = server.url("/");
    let (report, text) = load(&["-x", "7", "-c", "4", "-t", "2", "-i", "3", &url]);
    let counts = server.stop();
    assert_eq!(report.error_total(), 0, "{:?}", report.errors);
    // 3 iterations × 4 connections × 7 requests.
    assert_eq!((report.requests, counts.responses), (84, 84));
    assert_eq!((report.connections_opened, counts.connections), (12, 12));
    assert_eq!(report.iterations.len(), 3);
    for it in &report.iterations {
        assert_eq!(it.requests, 28);
        assert!(it.qps > 0.0 && it.max_us >= it.avg_us);
    }
    assert!(text.contains("iteration 3: 28 requests"), "{text}");
    assert!(text.contains("99.9%"), "{text}");
}

/// A batch is 10 requests in flight at once: the server holds every response until 10
/// requests are held together (`--hold 10`), so a client that sent fewer at once would
/// only get answers by the hold's timeout, which the server counts.
#[test]
fn batches_of_concurrent_requests() {
    let server = Server::start(&["--mode", "cl", "--hold", "10"]);
    let url = server.url("/");
    let (report, text) = load(&["--batch", "10", "-n", "50", &url]);
    let counts = server.stop();
    assert_eq!(report.error_total(), 0, "{:?}", report.errors);
    assert_eq!((report.requests, counts.responses), (50, 50));
    assert_eq!(
        (counts.held_max, counts.hold_timeouts),
        (10, 0),
        "each batch's 10 requests were in flight together"
    );
    let batches = report.batch_us.as_ref().expect("batch times");
    assert_eq!(batches.count, 5);
    // Persistent connections: one per request of a batch.
    assert_eq!((report.connections_opened, counts.connections), (10, 10));
    assert!(text.contains("Batches: 5"), "{text}");

    // Fresh connections for every batch.
    let server = Server::start(&["--mode", "cl", "--hold", "10"]);
    let url = server.url("/");
    let (report, _) = load(&["--batch", "10", "-n", "50", "-x", "1", &url]);
    let counts = server.stop();
    assert_eq!(
        (report.requests, counts.responses, counts.connections),
        (50, 50, 50)
    );
    assert_eq!((counts.held_max, counts.hold_timeouts), (10, 0));
}

#[test]
fn new_connection_per_request() {
    let server = Server::start(&["--mode", "chunked"]);
    let url = server.url("/");
    let (report, _) = load(&["--new-conn", "-c", "3", "-t", "2", "-n", "100", &url]);
    let counts = server.stop();
    assert_eq!(report.error_total(), 0, "{:?}", report.errors);
    assert_eq!((report.requests, counts.responses), (100, 100));
    assert_eq!((report.connections_opened, counts.connections), (100, 100));
}

#[test]
fn open_loop_with_a_request_count() {
    let server = Server::start(&["--mode", "cl"]);
    let url = server.url("/");
    let (report, _) = load(&["-R", "2000", "-c", "4", "-n", "400", &url]);
    let counts = server.stop();
    assert_eq!((report.requests, counts.responses), (400, 400));
    assert!(report.latency_uncorrected_us.is_some());
}
