//! [`TowerService`]: a tower service (an axum `Router`, a `ServiceBuilder` stack) as a
//! hyper service, so [`Server`](crate::Server) can serve it.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;

/// Wraps a tower service (cloneable, as axum's `Router` is) so hyper can call it: each
/// call clones the service, waits for `poll_ready`, then calls it, as tower's contract
/// asks.
///
/// ```
/// use axum::{routing::get, Router};
/// use ringway_compat::{ServeOptions, Server, TowerService};
///
/// let rt = ringway::Runtime::new()?;
/// let server = Server::http1(&rt.handle(), "127.0.0.1:0", ServeOptions::default(), || {
///     TowerService(Router::new().route("/", get(|| async { "Hello, World!" })))
/// })?;
/// # // A client on a thread of its own, which then stops the server.
/// # use std::io::{Read, Write};
/// # let (addr, stop) = (server.local_addr(), server.shutdown_handle());
/// # let client = std::thread::spawn(move || {
/// #     let mut response = String::new();
/// #     let asked = std::net::TcpStream::connect(addr).and_then(|mut conn| {
/// #         conn.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")?;
/// #         conn.read_to_string(&mut response)
/// #     });
/// #     stop.shutdown();
/// #     asked.map(|_| response)
/// # });
/// rt.block_on(server.wait())?;
/// # assert!(client.join().unwrap()?.ends_with("Hello, World!"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct TowerService<T>(pub T);

impl<T, R> hyper::service::Service<R> for TowerService<T>
where
    T: tower_service::Service<R> + Clone,
{
    type Response = T::Response;
    type Error = T::Error;
    type Future = TowerCall<T, R>;

    fn call(&self, req: R) -> Self::Future {
        TowerCall {
            state: CallState::Waiting {
                service: self.0.clone(),
                request: Some(req),
            },
        }
    }
}

pin_project! {
    /// The future of a [`TowerService`] call.
    pub struct TowerCall<T: tower_service::Service<R>, R> {
        #[pin]
        state: CallState<T, R>,
    }
}

pin_project! {
    #[project = CallStateProj]
    enum CallState<T: tower_service::Service<R>, R> {
        Waiting { service: T, request: Option<R> },
        Calling { #[pin] future: T::Future },
    }
}

impl<T: tower_service::Service<R>, R> std::fmt::Debug for TowerCall<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TowerCall").finish_non_exhaustive()
    }
}

impl<T: tower_service::Service<R>, R> Future for TowerCall<T, R> {
    type Output = Result<T::Response, T::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            match state.as_mut().project() {
                CallStateProj::Waiting { service, request } => {
                    ready!(service.poll_ready(cx))?;
                    let req = request.take().expect("request taken once");
                    let future = service.call(req);
                    state.set(CallState::Calling { future });
                }
                CallStateProj::Calling { future } => return future.poll(cx),
            }
        }
    }
}
