//! `ringway echo`: a TCP echo server on every core.

use std::io::{self, Write as _};
use std::net::SocketAddr;

use clap::{Args, ValueEnum};
use ringway::net::{ListenOptions, TcpListener, TcpStream};
use ringway::{Backend, Runtime};

/// Backend choice on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BackendArg {
    /// io_uring if the kernel allows, else epoll.
    Auto,
    /// io_uring or fail.
    Uring,
    /// epoll.
    Epoll,
}

impl From<BackendArg> for Backend {
    fn from(b: BackendArg) -> Backend {
        match b {
            BackendArg::Auto => Backend::Auto,
            BackendArg::Uring => Backend::Uring,
            BackendArg::Epoll => Backend::Epoll,
        }
    }
}

#[derive(Debug, Args)]
pub struct EchoArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7000")]
    bind: SocketAddr,
    /// I/O backend (default: auto, or RINGWAY_BACKEND if set).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Worker threads (cores); default: one per CPU.
    #[arg(long)]
    threads: Option<usize>,
    /// Pin each worker to its CPU.
    #[arg(long)]
    pin: bool,
}

pub fn run(args: EchoArgs) -> io::Result<()> {
    let mut b = Runtime::builder();
    if let Some(backend) = args.backend {
        b.backend(backend.into());
    }
    if let Some(t) = args.threads {
        b.worker_threads(t);
    }
    b.pin_threads(args.pin);
    let rt = b.build()?;
    let bind = args.bind;
    // Bind on core 0 first, so a bad address fails here with a clear message and port 0
    // resolves to one port shared by every core's listener.
    let opts = ListenOptions {
        reuse_port: true,
        ..ListenOptions::default()
    };
    let first = rt.block_on(async { TcpListener::bind_with(bind, &opts) })?;
    let addr = rt.block_on(async { first.local_addr() })?;
    println!(
        "ringway echo listening on {addr} ({} cores, backend {})",
        rt.cores(),
        rt.backend()
    );
    io::stdout().flush()?;
    let handle = rt.handle();
    let others: Vec<_> = (1..rt.cores())
        .map(|core| {
            handle.spawn_on(core, move || async move {
                let l = TcpListener::bind_with(
                    addr,
                    &ListenOptions {
                        reuse_port: true,
                        ..Default::default()
                    },
                )?;
                serve(l).await
            })
        })
        .collect();
    rt.block_on(async move {
        let r = serve(first).await;
        drop(others);
        r
    })
}

async fn serve(listener: TcpListener) -> io::Result<()> {
    let mut incoming = listener.incoming();
    while let Some(conn) = incoming.next().await {
        match conn {
            Ok(stream) => ringway::spawn(echo(stream)).detach(),
            Err(e) => eprintln!("ringway echo: accept failed: {e}"),
        }
    }
    Ok(())
}

async fn echo(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut rx = stream.recv_multishot();
    while let Some(chunk) = rx.next().await {
        let Ok(chunk) = chunk else { break };
        let (res, _) = stream.write_all(chunk).await;
        if res.is_err() {
            break;
        }
    }
}
