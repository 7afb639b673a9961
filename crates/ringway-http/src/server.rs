//! The server: one `SO_REUSEPORT` listener per core, a multishot accept loop per core,
//! one task per connection, a graceful shutdown that drains within a deadline.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ringway::net::{ListenOptions, TcpListener, TcpStream};
use ringway::time::{sleep, timeout};
use ringway::{JoinHandle, Runtime};

use crate::config::Config;
use crate::conn::Conn;
use crate::handler::Handler;
use crate::select::{race, Either};
use crate::shutdown::{CoreState, ShutdownHandle};
use crate::stats::{Stats, StatsSnapshot};
use crate::transport::Tcp;

/// What every core of one server shares (read-only, or atomic).
pub(crate) struct Shared {
    pub cfg: Config,
    pub tls: Option<Arc<rustls::ServerConfig>>,
    pub stats: Arc<Stats>,
    id: u64,
    global: Arc<AtomicBool>,
}

/// An HTTP/1.1 server, configured and not yet listening.
///
/// ```no_run
/// use http::{Request, Response};
/// use ringway_http::{Body, Config, Server};
///
/// fn main() -> std::io::Result<()> {
///     let rt = ringway::Runtime::new()?;
///     Server::new(Config::default()).run(&rt, "127.0.0.1:8080", || {
///         |req: Request<Body>| async move {
///             Response::new(Body::from(format!("you asked for {}\n", req.uri())))
///         }
///     })?;
///     Ok(())
/// }
/// ```
pub struct Server {
    cfg: Config,
    tls: Option<Arc<rustls::ServerConfig>>,
}

/// A server listening on every core.
pub struct Running {
    addr: SocketAddr,
    shutdown: ShutdownHandle,
    stats: Arc<Stats>,
    cores: Vec<JoinHandle<()>>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Server {
    /// A plaintext server with this configuration.
    pub fn new(cfg: Config) -> Server {
        Server { cfg, tls: None }
    }

    /// Serves TLS (see [`crate::tls::server_config`]).
    pub fn with_tls(mut self, tls: Arc<rustls::ServerConfig>) -> Server {
        self.tls = Some(tls);
        self
    }

    /// Binds `addr` on every core of `rt` and starts serving with a handler made by
    /// `make` on each core. Returns at once; see [`Running::wait`].
    pub fn start<A, M, H>(self, rt: &Runtime, addr: A, make: M) -> io::Result<Running>
    where
        A: ToSocketAddrs,
        M: Fn() -> H + Send + Sync + 'static,
        H: Handler,
    {
        let addr = addr
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::other("no address to bind"))?;
        let opts = ListenOptions {
            reuse_port: true,
            ..ListenOptions::default()
        };
        let first = rt.block_on(async { TcpListener::bind_with(addr, &opts) })?;
        let addr = first.local_addr()?;
        let stats = Arc::new(Stats::default());
        let global = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            cfg: self.cfg,
            tls: self.tls,
            stats: stats.clone(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            global: global.clone(),
        });
        let make = Arc::new(make);
        let mut cores = Vec::with_capacity(rt.cores());
        {
            let (shared, make) = (shared.clone(), make.clone());
            // The first listener was bound on this thread (core 0); its task runs here
            // whenever `wait` drives core 0.
            cores.push(
                rt.handle()
                    .spawn_on(0, move || serve_core(first, shared, Rc::new(make()))),
            );
        }
        for core in 1..rt.cores() {
            let (shared, make, opts) = (shared.clone(), make.clone(), opts.clone());
            cores.push(rt.handle().spawn_on(core, move || async move {
                match TcpListener::bind_with(addr, &opts) {
                    Ok(l) => serve_core(l, shared, Rc::new(make())).await,
                    Err(e) => tracing::error!("core {core}: cannot bind {addr}: {e}"),
                }
            }));
        }
        Ok(Running {
            addr,
            shutdown: ShutdownHandle {
                id: shared.id,
                global,
                rt: rt.handle(),
            },
            stats,
            cores,
        })
    }

    /// [`start`](Self::start), then [`Running::wait`].
    pub fn run<A, M, H>(self, rt: &Runtime, addr: A, make: M) -> io::Result<StatsSnapshot>
    where
        A: ToSocketAddrs,
        M: Fn() -> H + Send + Sync + 'static,
        H: Handler,
    {
        Ok(self.start(rt, addr, make)?.wait(rt))
    }
}

impl Running {
    /// The bound address (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// A handle that starts the graceful shutdown from any thread.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.shutdown.clone()
    }

    /// The server's counters.
    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// Drives core 0 until every core has shut down and drained (or its drain deadline
    /// passed). Returns the final counters.
    pub fn wait(self, rt: &Runtime) -> StatsSnapshot {
        let cores = self.cores;
        rt.block_on(async move {
            for c in cores {
                let _ = c.await;
            }
        });
        self.stats.snapshot()
    }
}

/// One core's accept loop, then its drain.
async fn serve_core<H: Handler>(listener: TcpListener, shared: Arc<Shared>, handler: Rc<H>) {
    let state = CoreState::register(shared.id, shared.global.clone());
    {
        let watch = state.watch();
        let mut incoming = listener.incoming();
        let mut failing = false;
        loop {
            match race(incoming.next(), watch.down()).await {
                Either::Left(Some(Ok(stream))) => {
                    failing = false;
                    shared.stats.connection();
                    let conn = serve_stream(stream, shared.clone(), handler.clone(), &state);
                    ringway::spawn(conn).detach();
                }
                Either::Left(Some(Err(e))) => {
                    // EMFILE and friends: back off instead of spinning, then resume.
                    shared.stats.accept_error();
                    if !failing {
                        tracing::warn!("accept failed: {e} (backing off; said once per run)");
                        failing = true;
                    }
                    sleep(Duration::from_millis(20)).await;
                }
                Either::Left(None) | Either::Right(()) => break,
            }
        }
    }
    drop(listener);
    let _ = timeout(shared.cfg.drain_timeout, state.drained()).await;
    state.unregister();
}

fn serve_stream<H: Handler>(
    stream: TcpStream,
    shared: Arc<Shared>,
    handler: Rc<H>,
    state: &Rc<CoreState>,
) -> impl std::future::Future<Output = ()> + 'static {
    let watch = state.watch();
    async move {
        let peer = if shared.cfg.access_log {
            stream.peer_addr().ok()
        } else {
            None
        };
        match shared.tls.clone() {
            None => {
                Conn::new(Tcp::new(stream), shared, handler, watch, peer)
                    .run()
                    .await
            }
            Some(tls) => match crate::tls::Tls::new(stream, tls) {
                Ok(t) => Conn::new(t, shared, handler, watch, peer).run().await,
                Err(e) => {
                    shared.stats.tls_error();
                    tracing::warn!("TLS setup failed: {e}");
                }
            },
        }
    }
}
