//! An axum application on ringway. Everything above `main` is plain axum and tower,
//! exactly as it would be written for tokio; only `main` (the runtime entry point)
//! differs.
//!
//! ```sh
//! cargo run --release -p ringway-compat --example axum            # 127.0.0.1:3000
//! curl localhost:3000/users/7
//! curl -H 'content-type: application/json' -d '{"name":"Ada"}' localhost:3000/users
//! RINGWAY_BACKEND=epoll cargo run -p ringway-compat --example axum   # on epoll
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use tower::ServiceBuilder;

#[derive(Clone, Default)]
struct AppState {
    users: Arc<Mutex<HashMap<u64, User>>>,
}

#[derive(Clone, Serialize)]
struct User {
    id: u64,
    name: String,
}

#[derive(Deserialize)]
struct NewUser {
    name: String,
}

fn app() -> Router {
    Router::new()
        .route("/", get(|| async { "Hello from axum on ringway!" }))
        .route("/users", get(list_users).post(create_user))
        .route("/users/{id}", get(get_user))
        .with_state(AppState::default())
        .layer(
            ServiceBuilder::new()
                .layer(tower::limit::ConcurrencyLimitLayer::new(1024))
                .map_response(|mut r: Response| {
                    r.headers_mut()
                        .insert("x-powered-by", HeaderValue::from_static("axum"));
                    r
                }),
        )
}

async fn list_users(State(state): State<AppState>) -> Json<Vec<User>> {
    let mut users: Vec<User> = state.users.lock().unwrap().values().cloned().collect();
    users.sort_by_key(|u| u.id);
    Json(users)
}

async fn create_user(
    State(state): State<AppState>,
    Json(new): Json<NewUser>,
) -> (StatusCode, Json<User>) {
    let mut users = state.users.lock().unwrap();
    let user = User {
        id: users.len() as u64 + 1,
        name: new.name,
    };
    users.insert(user.id, user.clone());
    (StatusCode::CREATED, Json(user))
}

async fn get_user(
    State(state): State<AppState>,
    Path(id): Path<u64>,
) -> Result<Json<User>, StatusCode> {
    state
        .users
        .lock()
        .unwrap()
        .get(&id)
        .cloned()
        .map(Json)
        .ok_or(StatusCode::NOT_FOUND)
}

// On tokio this would be:
//
//     #[tokio::main]
//     async fn main() {
//         let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await.unwrap();
//         axum::serve(listener, app()).await.unwrap();
//     }
fn main() -> std::io::Result<()> {
    let bind = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".into());
    let rt = ringway::Runtime::new()?;
    let app = app();
    let server = ringway_compat::Server::http1(
        &rt.handle(),
        bind.as_str(),
        ringway_compat::ServeOptions::default(),
        move || ringway_compat::TowerService(app.clone()),
    )?;
    println!(
        "axum on ringway ({}) listening on http://{}",
        rt.backend(),
        server.local_addr()
    );
    rt.block_on(server.wait())?;
    Ok(())
}
