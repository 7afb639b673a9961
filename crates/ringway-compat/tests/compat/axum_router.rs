//! A real axum router (routing, path and JSON extractors, shared state, a tower
//! middleware stack) served by `Server` on a two-core ringway runtime, on both backends,
//! with hyper's own client over the adapter; then graceful shutdown, and the drain
//! deadline.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{client, fetch, get as get_req};
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use ringway::{Backend, Runtime};
use ringway_compat::{ServeOptions, Server, TowerService};
use serde::{Deserialize, Serialize};
use tower::ServiceBuilder;

#[derive(Deserialize)]
struct NewUser {
    name: String,
    age: u32,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct User {
    id: u64,
    name: String,
    age: u32,
}

#[derive(Clone, Default)]
struct AppState {
    next_id: Arc<AtomicU64>,
}

fn app(state: AppState) -> Router {
    let middleware = ServiceBuilder::new()
        .layer(tower::limit::ConcurrencyLimitLayer::new(64))
        .map_response(|mut resp: axum::response::Response| {
            // Which core answered: the test checks that every core serves.
            let core = ringway::runtime::current_core().to_string();
            resp.headers_mut()
                .insert("x-core", HeaderValue::from_str(&core).unwrap());
            resp.headers_mut()
                .insert("x-served-by", HeaderValue::from_static("ringway-compat"));
            resp
        });
    Router::new()
        .route("/hello", get(|| async { "Hello, World!" }))
        .route(
            "/users/{id}",
            get(|Path(id): Path<u64>| async move { format!("user {id}") }),
        )
        .route("/users", post(create_user))
        .route(
            "/slow/{ms}",
            get(|Path(ms): Path<u64>| async move {
                ringway::time::sleep(Duration::from_millis(ms)).await;
                "slept"
            }),
        )
        .with_state(state)
        .layer(middleware)
}

async fn create_user(
    State(state): State<AppState>,
    Json(new): Json<NewUser>,
) -> (StatusCode, Json<User>) {
    let id = state.next_id.fetch_add(1, Ordering::Relaxed) + 1;
    (
        StatusCode::CREATED,
        Json(User {
            id,
            name: new.name,
            age: new.age,
        }),
    )
}

fn post_json(path: &str, body: &str) -> Request<Full<Bytes>> {
    Request::post(path)
        .header("host", "test")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

fn start(rt: &Runtime, options: ServeOptions) -> Server {
    // One state for every core's router: ids are unique server-wide.
    let state = AppState::default();
    Server::http1(&rt.handle(), "127.0.0.1:0", options, move || {
        TowerService(app(state.clone()))
    })
    .unwrap()
}

fn runtime(backend: Backend) -> Runtime {
    Runtime::builder()
        .worker_threads(2)
        .backend(backend)
        .build()
        .unwrap()
}

per_backend!(
    axum_router_routes_extracts_and_runs_middleware_on_every_core,
    graceful_shutdown_finishes_the_request_in_flight,
    drain_deadline_closes_what_is_left,
);

fn axum_router_routes_extracts_and_runs_middleware_on_every_core(backend: Backend) {
    let rt = runtime(backend);
    let server = start(&rt, ServeOptions::default());
    let addr = server.local_addr();
    let shutdown = server.shutdown_handle();
    let report = rt.block_on(async move {
        let mut c = client(addr).await;
        let r = fetch(&mut c, get_req("/hello")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.body(), "Hello, World!");
        assert_eq!(r.headers()["x-served-by"], "ringway-compat");
        assert_eq!(r.headers()["content-type"], "text/plain; charset=utf-8");

        // Path extractor, on the same keep-alive connection.
        let r = fetch(&mut c, get_req("/users/42")).await;
        assert_eq!((r.status().as_u16(), &r.body()[..]), (200, &b"user 42"[..]));

        // JSON extractor and JSON response, with shared state.
        let r = fetch(&mut c, post_json("/users", r#"{"name":"Ada","age":36}"#)).await;
        assert_eq!(r.status(), 201);
        assert_eq!(r.headers()["content-type"], "application/json");
        let user: User = serde_json::from_slice(r.body()).unwrap();
        assert_eq!(user.name, "Ada");
        assert_eq!(user.age, 36);

        // The extractor's rejections: malformed JSON, and a missing content type.
        let r = fetch(&mut c, post_json("/users", r#"{"name":"Ada""#)).await;
        assert_eq!(r.status(), 400, "{:?}", r.body());
        let r = fetch(&mut c, post_json("/users", r#"{"name":"Ada"}"#)).await;
        assert_eq!(r.status(), 422, "a field is missing: {:?}", r.body());
        let mut req = post_json("/users", r#"{"name":"Ada","age":1}"#);
        req.headers_mut().remove("content-type");
        assert_eq!(fetch(&mut c, req).await.status(), 415);

        // Routing misses.
        assert_eq!(fetch(&mut c, get_req("/nope")).await.status(), 404);
        assert_eq!(fetch(&mut c, get_req("/users")).await.status(), 405);
        assert_eq!(fetch(&mut c, get_req("/users/x")).await.status(), 400);

        // Many connections at once: the kernel spreads them over both cores'
        // listeners, and every answer is right.
        let tasks: Vec<_> = (0..40u64)
            .map(|i| {
                ringway::spawn(async move {
                    let mut c = client(addr).await;
                    let mut cores = Vec::new();
                    for j in 0..5 {
                        let body = format!(r#"{{"name":"u{i}-{j}","age":{j}}}"#);
                        let r = fetch(&mut c, post_json("/users", &body)).await;
                        assert_eq!(r.status(), 201);
                        let u: User = serde_json::from_slice(r.body()).unwrap();
                        assert_eq!(u.name, format!("u{i}-{j}"));
                        cores.push(r.headers()["x-core"].to_str().unwrap().to_string());
                    }
                    cores
                })
            })
            .collect();
        let mut cores = std::collections::BTreeSet::new();
        for t in tasks {
            cores.extend(t.await.unwrap());
        }
        assert_eq!(
            cores.into_iter().collect::<Vec<_>>(),
            ["0", "1"],
            "both cores serve"
        );
        // The ids come from state shared by both cores: 1 + 40 * 5 users, all distinct.
        let r = fetch(&mut c, post_json("/users", r#"{"name":"last","age":1}"#)).await;
        let last: User = serde_json::from_slice(r.body()).unwrap();
        assert_eq!(last.id, 202);
        drop(c);
        shutdown.shutdown();
        server.wait().await.unwrap()
    });
    assert_eq!(report.connections, 41);
    assert_eq!(report.aborted, 0);
    assert_eq!(report.failed, 0, "{report:?}");
}

async fn raw_request(addr: SocketAddr, req: &[u8]) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s =
        ringway_compat::CompatStream::new(ringway::net::TcpStream::connect(addr).await.unwrap());
    s.write_all(req).await.unwrap();
    s.flush().await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    out
}

fn graceful_shutdown_finishes_the_request_in_flight(backend: Backend) {
    let rt = runtime(backend);
    let server = start(&rt, ServeOptions::default());
    let addr = server.local_addr();
    let shutdown = server.shutdown_handle();
    let report = rt.block_on(async move {
        // A keep-alive request that takes 300 ms; shutdown comes in the middle.
        let slow = ringway::spawn(raw_request(
            addr,
            b"GET /slow/300 HTTP/1.1\r\nhost: t\r\n\r\n",
        ));
        // An idle keep-alive connection: closed by the shutdown.
        let mut idle = client(addr).await;
        assert_eq!(fetch(&mut idle, get_req("/hello")).await.status(), 200);
        ringway::time::sleep(Duration::from_millis(100)).await;
        shutdown.shutdown();
        let out = slow.await.unwrap();
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("\r\nconnection: close\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nslept"), "{text}");
        let report = server.wait().await.unwrap();
        // Accepting has stopped: a new connection is refused.
        assert!(ringway::net::TcpStream::connect(addr).await.is_err());
        assert!(
            idle.ready().await.is_err(),
            "the idle connection was closed"
        );
        report
    });
    assert_eq!(report.connections, 2);
    assert_eq!(report.aborted, 0);
}

fn drain_deadline_closes_what_is_left(backend: Backend) {
    let rt = runtime(backend);
    let options = ServeOptions {
        drain_timeout: Duration::from_millis(200),
        ..ServeOptions::default()
    };
    let server = start(&rt, options);
    let addr = server.local_addr();
    let shutdown = server.shutdown_handle();
    let report = rt.block_on(async move {
        let stuck = ringway::spawn(raw_request(
            addr,
            b"GET /slow/60000 HTTP/1.1\r\nhost: t\r\n\r\n",
        ));
        ringway::time::sleep(Duration::from_millis(100)).await;
        let started = std::time::Instant::now();
        shutdown.shutdown();
        let report = server.wait().await.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the drain waited for the handler"
        );
        let out = stuck.await.unwrap();
        assert!(out.is_empty(), "no response: the connection was closed");
        report
    });
    assert_eq!(report.connections, 1);
    assert_eq!(report.aborted, 1);
}
