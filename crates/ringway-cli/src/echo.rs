//! `ringway echo`: a TCP echo server on every core.

use std::future::Future;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::Poll;

use clap::Args;
use ringway::net::{bind_per_core, ListenOptions, TcpListener, TcpStream};

use crate::runtime_args::RuntimeArgs;
use crate::stop_signals::StopSignals;

#[derive(Debug, Args)]
pub(crate) struct EchoArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7000")]
    bind: SocketAddr,
    #[command(flatten)]
    pub(crate) runtime: RuntimeArgs,
}

pub(crate) fn run(args: EchoArgs) -> io::Result<()> {
    // Before the cores start, so that they inherit the blocked mask.
    let stop = StopSignals::new()?;
    let rt = args.runtime.build()?;
    // One listener per core, all made here so that a bad or taken address fails here
    // with a clear message, and port 0 resolves to one port shared by every core.
    // Connections inherit TCP_NODELAY from the listener: no setsockopt per accept.
    let opts = ListenOptions {
        nodelay: true,
        ..ListenOptions::default()
    };
    let listeners = bind_per_core(args.bind, rt.cores(), &opts)?;
    let addr = listeners[0].local_addr()?;
    println!(
        "ringway echo listening on {addr} ({} cores, backend {})",
        rt.cores(),
        rt.backend()
    );
    io::stdout().flush()?;
    let handle = rt.handle();
    let cores: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(core, l)| {
            handle.spawn_on(core, move || async move {
                serve(TcpListener::from_std(l)?).await
            })
        })
        .collect();
    rt.block_on(async move {
        let mut served = ringway::spawn(async move {
            for c in cores {
                c.await.map_err(|e| io::Error::other(e.to_string()))??;
            }
            Ok(())
        });
        let mut stopped = ringway::spawn(stop.next());
        std::future::poll_fn(|cx| {
            if let Poll::Ready(r) = Pin::new(&mut served).poll(cx) {
                return Poll::Ready(r.map_err(|e| io::Error::other(e.to_string()))?);
            }
            if let Poll::Ready(Ok(sig)) = Pin::new(&mut stopped).poll(cx) {
                let _ = writeln!(
                    io::stderr(),
                    "ringway echo: signal {}, stopping",
                    sig.as_raw()
                );
                return Poll::Ready(Ok(()));
            }
            Poll::Pending
        })
        .await
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
        // In the background: the task goes back to receiving at once; the pool buffer
        // returns to the ring when the kernel is done with it.
        if stream.send_all(chunk).await.is_err() {
            break;
        }
    }
    let _ = stream.flush().await;
}
