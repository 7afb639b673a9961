//! [`Server`]: a hyper service on every core of a ringway runtime, with graceful
//! shutdown.
//!
//! Each core gets its own `SO_REUSEPORT` listener on the same port (the kernel spreads
//! connections among them; [`ringway::net::bind_per_core`] first checks that no other
//! socket holds the port, so a second server is refused rather than handed a share of
//! the first one's connections), builds its own service with the factory (so the service
//! may hold `Rc`s and other `!Send` state), and serves each connection as a task on that
//! core with hyper's HTTP/1 connection over a [`CompatStream`]. Nothing crosses cores on
//! a request's path.

use std::cell::Cell;
use std::future::{poll_fn, Future};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
#[cfg(feature = "http2")]
use hyper::server::conn::http2;
use hyper::service::Service;
use ringway::net::{bind_per_core, ListenOptions, TcpListener};

use crate::core_bound::CoreBound;
use crate::eager::Gate;
#[cfg(feature = "http2")]
use crate::hyper_rt::LocalExecutor;
use crate::hyper_rt::RingwayTimer;
#[cfg(feature = "tls")]
use crate::io_adapter::IoAdapter;
use crate::sender::{end_deferral, Link};
use crate::shutdown::ShutdownHandle;
use crate::socket::StreamSocket;
use crate::stream::CompatStream;
use crate::upgrades::{Upgrades, Watch, Watched};
use ringway::sync::drain::{Ask, ConnGuard, CoreDrain, Signal};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How a [`Server`] serves.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// hyper's HTTP/1 settings. The default has [`RingwayTimer`] set, so hyper's
    /// header-read timeout (30 s) is on.
    pub http1: http1::Builder,
    /// hyper's HTTP/2 settings, for [`Server::auto`]. The default runs stream tasks on
    /// the connection's core ([`LocalExecutor`]) and has [`RingwayTimer`] set.
    #[cfg(feature = "http2")]
    pub http2: http2::Builder<LocalExecutor>,
    /// After [`ShutdownHandle::shutdown`], how long connections get to finish their
    /// requests, and upgraded connections (WebSockets) to end, before they are closed
    /// regardless. Default 30 s.
    pub drain_timeout: Duration,
    /// The handle that shuts the server down ([`Server::shutdown_handle`] returns it).
    /// Default: a new one. Set one made beforehand with [`ShutdownHandle::new`] when the
    /// service needs it before the server exists, e.g. for its WebSocket tasks to await
    /// [`ShutdownHandle::stopping`]. Servers given the same handle shut down together.
    pub shutdown: ShutdownHandle,
    /// `TCP_NODELAY` on accepted connections. Default true.
    pub nodelay: bool,
    /// Listen backlog per core. Default 1024.
    pub backlog: i32,
    /// For [`Server::tls`]: how long a new connection may take to finish its TLS
    /// handshake before it is closed. Default 10 s.
    pub tls_handshake_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        let mut http1 = http1::Builder::new();
        http1.timer(RingwayTimer);
        #[cfg(feature = "http2")]
        let http2 = {
            let mut b = http2::Builder::new(LocalExecutor);
            b.timer(RingwayTimer);
            b
        };
        ServeOptions {
            http1,
            #[cfg(feature = "http2")]
            http2,
            drain_timeout: Duration::from_secs(30),
            shutdown: ShutdownHandle::new(),
            nodelay: true,
            backlog: 1024,
            tls_handshake_timeout: Duration::from_secs(10),
        }
    }
}

/// What a server did, summed over its cores.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServeReport {
    /// Connections accepted.
    pub connections: u64,
    /// Connections that ended with an error (a malformed request, a reset, a timeout).
    pub failed: u64,
    /// Connections still open at the drain deadline, closed without finishing
    /// (upgraded ones included).
    pub aborted: u64,
    /// Accepts that failed (e.g. out of file descriptors); accepting went on.
    pub accept_errors: u64,
    /// Connections upgraded (`hyper::upgrade`, WebSockets).
    pub upgraded: u64,
    /// Of [`aborted`](Self::aborted), the upgraded connections whose sockets were shut at
    /// the drain deadline.
    pub upgraded_aborted: u64,
}

impl ServeReport {
    fn add(&mut self, o: &ServeReport) {
        self.connections += o.connections;
        self.failed += o.failed;
        self.aborted += o.aborted;
        self.accept_errors += o.accept_errors;
        self.upgraded += o.upgraded;
        self.upgraded_aborted += o.upgraded_aborted;
    }
}

/// A hyper service served on every core of a ringway runtime.
///
/// ```
/// use std::convert::Infallible;
/// use std::io::{Read, Write};
///
/// use http::{Request, Response};
/// use hyper::body::Incoming;
/// use hyper::service::service_fn;
/// use ringway_compat::{ServeOptions, Server};
///
/// async fn hello(_: Request<Incoming>) -> Result<Response<String>, Infallible> {
///     Ok(Response::new("Hello, World!".to_string()))
/// }
///
/// fn main() -> std::io::Result<()> {
///     let rt = ringway::Runtime::new()?;
///     let server = Server::http1(&rt.handle(), "127.0.0.1:0", ServeOptions::default(), || {
///         service_fn(hello)
///     })?;
///     println!("listening on {}", server.local_addr());
///     // A client on a thread of its own, which then stops the server.
///     let addr = server.local_addr();
///     let stop = server.shutdown_handle();
///     let client = std::thread::spawn(move || {
///         let mut response = String::new();
///         let asked = std::net::TcpStream::connect(addr).and_then(|mut conn| {
///             conn.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")?;
///             conn.read_to_string(&mut response)
///         });
///         stop.shutdown();
///         asked.map(|_| response)
///     });
///     let report = rt.block_on(server.wait())?;
///     println!("{report:?}");
///     assert!(client.join().unwrap()?.ends_with("Hello, World!"));
///     assert_eq!(report.connections, 1);
///     Ok(())
/// }
/// ```
#[derive(Debug)]
pub struct Server {
    local_addr: SocketAddr,
    shutdown: ShutdownHandle,
    cores: Vec<ringway::JoinHandle<io::Result<ServeReport>>>,
}

impl Server {
    /// Binds `addr` on every core of the runtime behind `handle` and serves HTTP/1 with
    /// the service that `make_service` builds (once per core; each connection gets a
    /// clone). Returns once every core's listener is bound; serving goes on until
    /// [`ShutdownHandle::shutdown`]. A port of 0 picks a free port, the same on every
    /// core.
    pub fn http1<A, M, S, B>(
        handle: &ringway::Handle,
        addr: A,
        options: ServeOptions,
        make_service: M,
    ) -> io::Result<Server>
    where
        A: ToSocketAddrs,
        M: Fn() -> S + Send + Sync + 'static,
        S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
        S::Error: Into<BoxError>,
        S::Future: 'static,
        B: Body + 'static,
        B::Error: Into<BoxError>,
    {
        Server::start(handle, addr, options, make_service, Protocols::Http1)
    }

    /// As [`Server::http1`], but each connection speaks HTTP/2 if it opens with the
    /// HTTP/2 connection preface (prior knowledge, as h2c clients and gRPC do), and
    /// HTTP/1.1 otherwise. HTTP/2 streams run as tasks on the connection's core.
    #[cfg(feature = "http2")]
    pub fn auto<A, M, S, B>(
        handle: &ringway::Handle,
        addr: A,
        options: ServeOptions,
        make_service: M,
    ) -> io::Result<Server>
    where
        A: ToSocketAddrs,
        M: Fn() -> S + Send + Sync + 'static,
        S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
        S::Error: Into<BoxError>,
        S::Future: 'static,
        B: Body + 'static,
        B::Error: Into<BoxError>,
    {
        Server::start(handle, addr, options, make_service, Protocols::Auto)
    }

    /// As [`Server::http1`], over TLS: each connection's handshake is done on its core
    /// with rustls (through tokio-rustls over the adapter), then the connection speaks
    /// HTTP/2 if ALPN chose `h2`, and HTTP/1.1 otherwise (ALPN `http/1.1`, or none).
    /// If `config` names no ALPN protocols, the server offers `h2` and `http/1.1`, in
    /// that order; a configuration that names its own is used as it is. A handshake
    /// that fails or outlasts [`ServeOptions::tls_handshake_timeout`] closes the
    /// connection (counted in [`ServeReport::failed`]).
    ///
    /// HTTP/1.1 connections support upgrades (`hyper::upgrade`, WebSockets), as
    /// with [`Server::http1`].
    #[cfg(feature = "tls")]
    pub fn tls<A, M, S, B>(
        handle: &ringway::Handle,
        addr: A,
        options: ServeOptions,
        config: Arc<rustls::ServerConfig>,
        make_service: M,
    ) -> io::Result<Server>
    where
        A: ToSocketAddrs,
        M: Fn() -> S + Send + Sync + 'static,
        S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
        S::Error: Into<BoxError>,
        S::Future: 'static,
        B: Body + 'static,
        B::Error: Into<BoxError>,
    {
        let acceptor = tokio_rustls::TlsAcceptor::from(crate::tls::with_alpn(config));
        Server::start(
            handle,
            addr,
            options,
            make_service,
            Protocols::Tls(acceptor),
        )
    }

    fn start<A, M, S, B>(
        handle: &ringway::Handle,
        addr: A,
        options: ServeOptions,
        make_service: M,
        protocols: Protocols,
    ) -> io::Result<Server>
    where
        A: ToSocketAddrs,
        M: Fn() -> S + Send + Sync + 'static,
        S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
        S::Error: Into<BoxError>,
        S::Future: 'static,
        B: Body + 'static,
        B::Error: Into<BoxError>,
    {
        let addr = addr.to_socket_addrs()?.next().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "address resolved to nothing")
        })?;
        let listeners = bind(addr, handle.cores(), &options)?;
        let local_addr = listeners[0].local_addr()?;
        let shutdown = options.shutdown.clone();
        let make_service = Arc::new(make_service);
        let options = Arc::new(options);
        let cores = listeners
            .into_iter()
            .enumerate()
            .map(|(core, listener)| {
                let (shutdown, make_service, options, protocols) = (
                    shutdown.clone(),
                    make_service.clone(),
                    options.clone(),
                    protocols.clone(),
                );
                handle.spawn_on(core, move || async move {
                    let listener = TcpListener::from_std(listener)?;
                    let signal = shutdown.signal();
                    Ok(serve_core(listener, &options, make_service(), signal, protocols).await)
                })
            })
            .collect();
        Ok(Server {
            local_addr,
            shutdown,
            cores,
        })
    }

    /// The bound address (with the port picked, if 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A handle that starts the graceful shutdown, from any thread
    /// ([`ServeOptions::shutdown`]).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.shutdown.clone()
    }

    /// Waits until every core has shut down and drained (its HTTP connections closed,
    /// its upgraded connections ended, or cut at the drain deadline); the sum of their
    /// reports. Await it on the runtime (e.g. in `block_on`).
    pub async fn wait(self) -> io::Result<ServeReport> {
        let mut total = ServeReport::default();
        for core in self.cores {
            let r = core
                .await
                .map_err(|e| io::Error::other(format!("a server core failed: {e}")))??;
            total.add(&r);
        }
        Ok(total)
    }
}

/// One listener per core on `addr`, by the runtime's rule ([`bind_per_core`]): the
/// cores share the port with `SO_REUSEPORT`, but a port that another socket holds (a
/// second server, even one that asks for `SO_REUSEPORT` too) is refused with
/// `AddrInUse`, instead of the kernel splitting the port's connections between two
/// servers without a word. Made on the calling thread (any thread), adopted by each core.
/// `TCP_NODELAY` is set on the listeners, so that accepted connections inherit it.
fn bind(
    addr: SocketAddr,
    cores: usize,
    options: &ServeOptions,
) -> io::Result<Vec<std::net::TcpListener>> {
    let listen = ListenOptions {
        backlog: options.backlog,
        nodelay: options.nodelay,
        ..ListenOptions::default()
    };
    bind_per_core(addr, cores, &listen).map_err(|e| {
        if e.kind() == io::ErrorKind::AddrInUse {
            io::Error::new(
                e.kind(),
                format!(
                    "{e}: another socket listens on {addr} (a server shares its port only \
                     among its own cores)"
                ),
            )
        } else {
            e
        }
    })
}

/// What a core's connection tasks count.
#[derive(Debug, Default)]
struct CoreCounts {
    failed: Cell<u64>,
    /// The core's upgraded connections.
    upgrades: Upgrades,
}

/// One core's accept loop, then its drain.
async fn serve_core<S, B>(
    listener: TcpListener,
    options: &ServeOptions,
    service: S,
    signal: &Signal,
    protocols: Protocols,
) -> ServeReport
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
    S::Error: Into<BoxError>,
    S::Future: 'static,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    let drain = Rc::new(CoreDrain::default());
    let counts = Rc::new(CoreCounts::default());
    // The builders, where this core's connection tasks can reach them.
    #[cfg(feature = "http2")]
    let local_options = Rc::new(options.clone());
    let mut report = ServeReport::default();
    {
        let mut incoming = listener.incoming();
        loop {
            let next = poll_fn(|cx| {
                if signal.poll_raised(cx).is_ready() {
                    return Poll::Ready(None);
                }
                incoming.poll_next(cx).map(Some)
            })
            .await;
            let stream = match next {
                None => break,
                Some(None) => {
                    tracing::error!("the listener stopped accepting; this core serves no more");
                    break;
                }
                Some(Some(Err(e))) => {
                    report.accept_errors += 1;
                    tracing::warn!(error = %e, "accept failed");
                    // Out of fds or memory: give closing connections a moment rather
                    // than spinning on the same error.
                    ringway::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                Some(Some(Ok(stream))) => stream,
            };
            report.connections += 1;
            let fd = stream.as_raw_fd();
            if options.nodelay {
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!(error = %e, "TCP_NODELAY refused");
                }
            }
            let (guard, counts) = (drain.enter(), counts.clone());
            match protocols {
                Protocols::Http1 => {
                    let io = CompatStream::new(stream);
                    let link = io.defer_to_owner();
                    let watch = Watch::new(fd);
                    let io = CoreBound::new(Watched::new(io, watch.clone()));
                    let conn = options
                        .http1
                        .serve_connection(io, service.clone())
                        .with_upgrades();
                    let task = serve_connection(conn, link, guard, counts, Some(watch));
                    ringway::spawn(task).detach();
                }
                #[cfg(feature = "tls")]
                Protocols::Tls(ref acceptor) => {
                    let (options, service) = (local_options.clone(), service.clone());
                    let acceptor = acceptor.clone();
                    ringway::spawn(async move {
                        let io = CompatStream::new(stream);
                        let link = io.defer_to_owner();
                        let watch = Watch::new(fd);
                        let io = Watched::new(io, watch.clone());
                        let timeout = options.tls_handshake_timeout;
                        let Some(tls) =
                            crate::tls::handshake(&acceptor, io, &link, &guard, timeout).await
                        else {
                            counts.failed.set(counts.failed.get() + 1);
                            return;
                        };
                        let h2 = crate::tls::is_h2(&tls);
                        let io = IoAdapter(tls);
                        let watch = Some(watch);
                        if h2 {
                            let conn = options.http2.serve_connection(io, service);
                            serve_connection(conn, link, guard, counts, watch).await
                        } else {
                            let conn = options.http1.serve_connection(io, service).with_upgrades();
                            serve_connection(conn, link, guard, counts, watch).await
                        }
                    })
                    .detach();
                }
                #[cfg(feature = "http2")]
                Protocols::Auto => {
                    let (options, service) = (local_options.clone(), service.clone());
                    ringway::spawn(async move {
                        let io = CompatStream::new(stream);
                        match crate::sniff::sniff_h2(io, &guard).await {
                            Some((io, true)) => {
                                let link = io.defer_to_owner();
                                let conn = options.http2.serve_connection(io, service);
                                serve_connection(conn, link, guard, counts, None).await
                            }
                            Some((io, false)) => {
                                let link = io.defer_to_owner();
                                let watch = Watch::new(fd);
                                let io = CoreBound::new(Watched::new(io, watch.clone()));
                                let conn =
                                    options.http1.serve_connection(io, service).with_upgrades();
                                serve_connection(conn, link, guard, counts, Some(watch)).await
                            }
                            None => counts.failed.set(counts.failed.get() + 1),
                        }
                    })
                    .detach();
                }
            }
        }
    }
    // Stop accepting before draining: new connections are refused, not left waiting.
    drop(listener);
    drain.finish();
    if drain.live() > 0
        && ringway::time::timeout(options.drain_timeout, drain.emptied())
            .await
            .is_err()
    {
        report.aborted = drain.live() as u64;
        // Upgraded connections are shut and counted out at once: their streams are the
        // application's, dropped when its tasks see the end (the drain does not wait).
        report.upgraded_aborted = counts.upgrades.cut();
        drain.abort();
        drain.emptied().await;
    }
    report.failed = counts.failed.get();
    report.upgraded = counts.upgrades.count.get();
    report
}

/// Serves one connection until it closes, finishing gracefully when the drain asks, and
/// hands what each poll of it wrote to the kernel (see `Outbox::defer_to_owner`). If an
/// upgrade took the connection's I/O (which carries `watch`), the connection stays in
/// the drain until the I/O is dropped.
async fn serve_connection<C: GracefulConnection, S: StreamSocket>(
    conn: C,
    link: Link<S>,
    guard: ConnGuard,
    counts: Rc<CoreCounts>,
    watch: Option<Rc<Watch>>,
) {
    let r = serve_until_done(conn, &link, &guard).await;
    if let Err(e) = r {
        counts.failed.set(counts.failed.get() + 1);
        tracing::debug!(error = %e, "connection ended with an error");
    }
    // `conn` is dropped: only an upgrade can still hold the I/O.
    if let Some(watch) = watch {
        counts.upgrades.adopt(watch, guard);
    }
}

/// Polls `conn` to its end (see [`serve_connection`]).
async fn serve_until_done<C: GracefulConnection, S: StreamSocket>(
    conn: C,
    link: &Link<S>,
    guard: &ConnGuard,
) -> Result<(), hyper::Error> {
    let mut conn = pin!(conn);
    let mut finishing = false;
    let mut registered = false;
    let mut gate = None;
    poll_fn(|cx| {
        // This task's waker does not change, and the drain keeps it until it asks
        // something else (then takes it): while serving, registering once is enough.
        let ask = match guard.current() {
            Ask::Serve if registered => Ask::Serve,
            _ => {
                registered = true;
                guard.ask(cx)
            }
        };
        match ask {
            Ask::Serve => {}
            Ask::Finish if !finishing => {
                finishing = true;
                conn.as_mut().graceful_shutdown();
            }
            Ask::Finish => {}
            // Dropping the connection cancels its I/O.
            Ask::Abort => return Poll::Ready(Ok(())),
        }
        let r = poll_connection(conn.as_mut(), cx, &mut gate);
        // What hyper wrote in this poll goes to the kernel now, in one send (its
        // `poll_flush` only queued it): every pipelined response of the poll together.
        if let Ok(mut outbox) = link.try_borrow_mut() {
            outbox.poll_owner(cx);
        }
        if r.is_ready() {
            // An upgraded connection lives on without this task (in whoever awaits the
            // upgrade): its writes must go out on their own from now on.
            end_deferral(link);
        }
        r
    })
    .await
}

/// Polls `conn`. For HTTP/2, the streams the poll accepted get their first poll in
/// this task (see `eager`), and the connection is polled again at once if any of them
/// woke it (queued a response), to write their responses together: up to
/// [`STREAM_ROUNDS`] rounds, then the task comes back in a later turn.
///
/// While the task runs the streams, the wakes they give the connection are held back
/// (`gate`, made at the first poll: its waker is the one the connection is polled
/// with): polling the connection again answers them, so they do not bring the task
/// back for a poll that finds nothing.
fn poll_connection<C: GracefulConnection>(
    conn: Pin<&mut C>,
    cx: &mut Context<'_>,
    gate: &mut Option<Gate>,
) -> Poll<Result<(), hyper::Error>> {
    if !C::EXECUTES {
        return conn.poll(cx);
    }
    let gate = gate.get_or_insert_with(|| Gate::new(cx.waker()));
    match gate.waker_for(cx.waker()) {
        Some(waker) => {
            let task = cx.waker();
            poll_rounds(conn, &mut Context::from_waker(waker), Some((gate, task)))
        }
        None => poll_rounds(conn, cx, None),
    }
}

/// [`poll_connection`]'s rounds; `gate` holds the streams' wakes back, and gives the
/// task a wake that came if the rounds stop.
fn poll_rounds<C: GracefulConnection>(
    mut conn: Pin<&mut C>,
    cx: &mut Context<'_>,
    gate: Option<(&Gate, &std::task::Waker)>,
) -> Poll<Result<(), hyper::Error>> {
    let mut rounds = 0;
    loop {
        let (r, streams) = crate::eager::collect(|| conn.as_mut().poll(cx));
        if !streams {
            return r;
        }
        if let Some((gate, _)) = gate {
            gate.hold();
        }
        crate::eager::run();
        // Without a gate the wakes went to the task: poll again to be sure.
        let woken = gate.map_or(true, |(gate, _)| gate.release());
        rounds += 1;
        if r.is_ready() || !woken {
            return r;
        }
        if rounds == STREAM_ROUNDS {
            if let Some((_, task)) = gate {
                task.wake_by_ref();
            }
            return r;
        }
    }
}

/// How many times in a row [`poll_connection`] polls an HTTP/2 connection whose streams
/// it ran, before leaving the rest to a later turn (other tasks of the core wait
/// meanwhile).
const STREAM_ROUNDS: usize = 4;

/// Which protocols a server speaks.
#[derive(Clone)]
enum Protocols {
    Http1,
    #[cfg(feature = "http2")]
    Auto,
    #[cfg(feature = "tls")]
    Tls(tokio_rustls::TlsAcceptor),
}

/// A hyper server connection that can be asked to finish gracefully.
trait GracefulConnection: Future<Output = Result<(), hyper::Error>> {
    /// The connection hands futures to its executor (HTTP/2's streams).
    const EXECUTES: bool = false;

    fn graceful_shutdown(self: std::pin::Pin<&mut Self>);
}

impl<I, S, B> GracefulConnection for http1::UpgradeableConnection<I, S>
where
    S: Service<Request<Incoming>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    fn graceful_shutdown(self: std::pin::Pin<&mut Self>) {
        http1::UpgradeableConnection::graceful_shutdown(self)
    }
}

#[cfg(feature = "http2")]
impl<I, S, B> GracefulConnection for http2::Connection<I, S, LocalExecutor>
where
    S: Service<Request<Incoming>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: 'static,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    const EXECUTES: bool = true;

    fn graceful_shutdown(self: std::pin::Pin<&mut Self>) {
        http2::Connection::graceful_shutdown(self)
    }
}
