//! Timeouts in an axum app on `Server`, on both backends: ringway-compat's drop-ins for
//! tower's `TimeoutLayer` (the error is tower's own `Elapsed`, so axum's
//! `HandleErrorLayer` code written for tower keeps working) and tower-http's (a 408);
//! one layer that fires, one that does not. And the reason they exist: tower's own
//! layer calls tokio's timer, which panics on a ringway core.

use std::time::{Duration, Instant};

use axum::error_handling::HandleErrorLayer;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{BoxError, Router};
use ringway::{Backend, Runtime};
use ringway_compat::{ServeOptions, Server, TowerService};
use tower::ServiceBuilder;

per_backend!(timeout_layers_fire_and_pass);

async fn slow() -> &'static str {
    ringway::time::sleep(Duration::from_millis(300)).await;
    "slow"
}

async fn fast() -> &'static str {
    "fast"
}

/// tower's way of answering its timeout error, as written for tokio.
async fn on_error(e: BoxError) -> (StatusCode, String) {
    if e.is::<tower::timeout::error::Elapsed>() {
        (StatusCode::GATEWAY_TIMEOUT, "tower timeout".to_string())
    } else {
        (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    }
}

fn router() -> Router {
    let tower_style = Router::new()
        .route("/tower/slow", get(slow))
        .route("/tower/fast", get(fast))
        .layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(on_error))
                .layer(ringway_compat::timeout::TimeoutLayer::new(
                    Duration::from_millis(50),
                )),
        );
    let http_style = Router::new()
        .route("/http/slow", get(slow))
        .route("/http/fast", get(fast))
        .layer(ringway_compat::timeout::http::TimeoutLayer::new(
            Duration::from_millis(50),
        ));
    // A generous limit that a slow handler stays within: the layer does not fire.
    let roomy = Router::new().route("/roomy/slow", get(slow)).layer(
        ringway_compat::timeout::http::TimeoutLayer::new(Duration::from_secs(10)),
    );
    tower_style.merge(http_style).merge(roomy)
}

fn timeout_layers_fire_and_pass(backend: Backend) {
    let rt = Runtime::builder()
        .worker_threads(1)
        .backend(backend)
        .build()
        .unwrap();
    let server = Server::http1(&rt.handle(), "127.0.0.1:0", ServeOptions::default(), || {
        TowerService(router())
    })
    .unwrap();
    let (addr, stop) = (server.local_addr(), server.shutdown_handle());
    rt.block_on(async move {
        let mut c = crate::common::client(addr).await;
        for (path, status, body) in [
            ("/tower/fast", 200, "fast"),
            ("/tower/slow", 504, "tower timeout"),
            ("/http/fast", 200, "fast"),
            ("/http/slow", 408, ""),
        ] {
            let start = Instant::now();
            let r = crate::common::fetch(&mut c, crate::common::get(path)).await;
            assert_eq!(r.status(), status, "{path}");
            assert_eq!(r.body(), body, "{path}");
            if status != 200 {
                let took = start.elapsed();
                assert!(
                    took >= Duration::from_millis(50),
                    "{path}: fired early, {took:?}"
                );
                assert!(
                    took < Duration::from_millis(300),
                    "{path}: the handler ran to its end"
                );
            }
        }
        let r = crate::common::fetch(&mut c, crate::common::get("/roomy/slow")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.body(), "slow");
        drop(c);
        ringway::time::sleep(Duration::from_millis(20)).await;
        // The timed-out handlers' sleeps were dropped with them, and the connection's
        // header-read timer with it.
        assert_eq!(
            ringway::time::pending_timers(),
            0,
            "no timer outlives its request"
        );
        stop.shutdown();
        server.wait().await.unwrap();
    });
}

/// tower's own `Timeout` arms `tokio::time::sleep` when called: without tokio's runtime
/// (on a ringway core) that panics. This is where the drop-ins are needed; if it ever
/// stops panicking, the README's limits need a look.
#[ringway::test]
async fn towers_own_timeout_needs_tokios_runtime() {
    use tower::Service;
    let mut svc = tower::timeout::Timeout::new(
        tower::service_fn(|()| async { Ok::<_, BoxError>(()) }),
        Duration::from_secs(1),
    );
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| svc.call(())));
    let e = panicked
        .err()
        .expect("tower's Timeout panics without tokio's runtime");
    let text = e
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(text.contains("no reactor running"), "{text}");
}

/// The drop-ins need no `Server`: any task on a ringway core (here `#[ringway::test]`,
/// as under `#[ringway::main]`) can use them as tower services.
#[ringway::test(both)]
async fn timeout_services_work_on_any_ringway_core() {
    use tower::ServiceExt;
    let slow = tower::service_fn(|()| async {
        ringway::time::sleep(Duration::from_millis(200)).await;
        Ok::<_, BoxError>("slow")
    });
    let fast = tower::service_fn(|()| async { Ok::<_, BoxError>("fast") });
    let limit = Duration::from_millis(30);
    let e = ringway_compat::timeout::Timeout::new(slow, limit)
        .oneshot(())
        .await
        .expect_err("the slow call times out");
    assert!(e.is::<tower::timeout::error::Elapsed>(), "{e}");
    let ok = ringway_compat::timeout::Timeout::new(fast, limit)
        .oneshot(())
        .await
        .unwrap();
    assert_eq!(ok, "fast");
    assert_eq!(ringway::time::pending_timers(), 0);
}
