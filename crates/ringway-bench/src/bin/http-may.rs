//! HTTP peer: may_minihttp 0.1 (stackful coroutines on may's epoll scheduler, httparse,
//! its own response writer), one worker per server core. Its writer fixes the status
//! line (`200 Ok`), the `Server: M` header and the order of `Date` and
//! `Content-Length`: the registry declares those differences.

use std::io;

use clap::Parser;
use may_minihttp::{HttpService, HttpServiceFactory, Request, Response};
use ringway_bench::peers::canned::App;
use ringway_bench::peers::kit::{announce, PeerArgs};

/// may_minihttp.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    peer: PeerArgs,
}

/// Header lines and body of the app, leaked once: may_minihttp takes `&'static str`.
#[derive(Clone, Copy)]
struct Canned {
    path: &'static str,
    headers: &'static [&'static str],
    body: &'static str,
}

impl Canned {
    fn new(app: App) -> Canned {
        // Date, Server and Content-Length are written by may_minihttp itself.
        let headers: Vec<&'static str> = app
            .headers()
            .into_iter()
            .filter(|(n, _)| *n != "content-length")
            .map(|(n, v)| &*Box::leak(format!("{n}: {v}").into_boxed_str()))
            .collect();
        Canned {
            path: Box::leak(app.path().into_boxed_str()),
            headers: Box::leak(headers.into_boxed_slice()),
            body: Box::leak(
                String::from_utf8(app.body())
                    .expect("the canned bodies are text")
                    .into_boxed_str(),
            ),
        }
    }
}

#[derive(Clone)]
struct Service(Canned);

impl HttpService for Service {
    fn call(&mut self, req: Request<'_, '_, '_>, rsp: &mut Response<'_>) -> io::Result<()> {
        if req.path() != self.0.path && req.path() != "/" {
            rsp.status_code(404, "Not Found");
            rsp.body("Not Found\n");
            return Ok(());
        }
        for h in self.0.headers {
            rsp.header(h);
        }
        rsp.body(self.0.body);
        Ok(())
    }
}

struct Factory(Canned);

impl HttpServiceFactory for Factory {
    type Service = Service;

    fn new_service(&self, _: usize) -> Service {
        Service(self.0)
    }
}

fn main() -> io::Result<()> {
    let args = Args::parse().peer;
    may::config().set_workers(args.threads.max(1));
    // may_minihttp binds by address and does not say which port it got: resolve port 0
    // here (the harness always passes a port).
    let addr = if args.bind.port() == 0 {
        std::net::TcpListener::bind(args.bind)?.local_addr()?
    } else {
        args.bind
    };
    let server = Factory(Canned::new(args.app)).start(addr)?;
    announce("http-may", addr, args.threads)?;
    server
        .join()
        .map_err(|_| io::Error::other("the server coroutine panicked"))
}
