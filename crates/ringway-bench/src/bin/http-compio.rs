//! HTTP peer: compio 0.19 (io_uring), one runtime per server core with its own
//! `SO_REUSEPORT` listener, the raw HTTP loop over owned buffers. With its default ring,
//! or `--tuned`: `SINGLE_ISSUER | DEFER_TASKRUN | COOP_TASKRUN | TASKRUN_FLAG`.

use clap::Parser;
use compio::buf::BufResult;
use compio::driver::ProactorBuilder;
use compio::io::{AsyncRead, AsyncWriteExt};
use compio::net::{TcpListener, TcpStream};
use ringway_bench::peers::canned::App;
use ringway_bench::peers::kit::{announce, listeners, PeerArgs, RawConn, READ_BUF};

/// compio per core, raw HTTP loop.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    peer: PeerArgs,
    /// Ring flags SINGLE_ISSUER | DEFER_TASKRUN | COOP_TASKRUN | TASKRUN_FLAG.
    #[arg(long)]
    tuned: bool,
}

async fn serve(mut stream: TcpStream, mut conn: RawConn) {
    let mut buf = Vec::with_capacity(READ_BUF);
    let mut out = Vec::with_capacity(READ_BUF);
    loop {
        let BufResult(res, b) = stream.read(buf).await;
        buf = b;
        let n = match res {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if conn.on_bytes(&buf[..n], &mut out) > 0 {
            let BufResult(res, o) = stream.write_all(out).await;
            if res.is_err() {
                return;
            }
            out = o;
            out.clear();
        }
        buf.clear();
    }
}

fn core(listener: std::net::TcpListener, app: App, tuned: bool) -> std::io::Result<()> {
    let mut proactor = ProactorBuilder::new();
    if tuned {
        proactor
            .single_issuer(true)
            .defer_taskrun(true)
            .coop_taskrun(true)
            .taskrun_flag(true);
    }
    let rt = compio::runtime::RuntimeBuilder::new()
        .with_proactor(proactor)
        .build()?;
    rt.block_on(async move {
        let listener = TcpListener::from_std(listener)?;
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    stream.set_nodelay(true)?;
                    compio::runtime::spawn(serve(stream, RawConn::new(app))).detach();
                }
                Err(e) => eprintln!("accept: {e}"),
            }
        }
    })
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let p = args.peer;
    let ls = listeners(p.bind, p.threads)?;
    let addr = ls[0].local_addr()?;
    let tuned = args.tuned;
    let threads: Vec<_> = ls
        .into_iter()
        .map(|l| std::thread::spawn(move || core(l, p.app, tuned)))
        .collect();
    announce("http-compio", addr, p.threads)?;
    for t in threads {
        t.join()
            .map_err(|_| std::io::Error::other("a core panicked"))??;
    }
    Ok(())
}
