//! Static files: GET/HEAD under one root directory, with MIME types, `ETag` and
//! `Last-Modified` (304 on `If-None-Match`/`If-Modified-Since`), single `Range`
//! requests (206, 416), and traversal refused (no `..`, no escaping symlinks).
//!
//! Files are kept open per core with their validators built (see `cache.rs`), and
//! re-checked against the file system once per [`StaticFiles::revalidate_after`]
//! period (1 s unless set). Small files are sent from memory; larger ones are read
//! through the runtime (io_uring reads at offsets) in 64 KiB chunks, or spliced.

mod cache;

use std::future::Future;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use ringway::fs::File;

use crate::body::{Body, BodyStream};
use crate::date::format_imf;
use crate::mime::content_type;
use cache::{Identity, Lookup, OpenFile};

const CHUNK: usize = 64 * 1024;

/// How long a resolved, opened file is served without looking at the file system again.
const DEFAULT_REVALIDATE: Duration = Duration::from_secs(1);

/// A handler for the files under one directory.
///
/// Clones share one configuration and one count of opened files; each core keeps its
/// own open files (see [`revalidate_after`](StaticFiles::revalidate_after)).
#[derive(Debug, Clone)]
pub struct StaticFiles {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    root: PathBuf,
    /// Numbers this handler's entries in the per-core caches.
    id: u64,
    revalidate: Duration,
    opened: AtomicU64,
}

impl StaticFiles {
    /// Serves `dir` (which must exist).
    pub fn new(dir: impl AsRef<Path>) -> io::Result<StaticFiles> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        let root = std::fs::canonicalize(dir.as_ref())?;
        if !root.is_dir() {
            return Err(io::Error::other(format!(
                "{} is not a directory",
                root.display()
            )));
        }
        Ok(StaticFiles {
            shared: Arc::new(Shared {
                root,
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                revalidate: DEFAULT_REVALIDATE,
                opened: AtomicU64::new(0),
            }),
        })
    }

    /// How long a file, once resolved and opened, is served without looking at the
    /// file system again (default 1 s). Within it, a file changed, replaced or removed
    /// is still served as it was when last checked, from the descriptor kept open;
    /// after it, the path is resolved and `stat`ed again and the file reopened if it is
    /// not the same. `Duration::ZERO` keeps nothing: every request resolves, opens and
    /// reads its file.
    pub fn revalidate_after(self, period: Duration) -> StaticFiles {
        let s = &self.shared;
        StaticFiles {
            shared: Arc::new(Shared {
                root: s.root.clone(),
                id: s.id,
                revalidate: period,
                opened: AtomicU64::new(s.opened.load(Ordering::Relaxed)),
            }),
        }
    }

    /// How many times a file was opened, by every core: one per request with no
    /// period, else one per file per core and per change seen.
    pub fn opened(&self) -> u64 {
        self.shared.opened.load(Ordering::Relaxed)
    }

    /// Answers one request.
    pub async fn serve<B>(&self, req: &Request<B>) -> Response<Body> {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return r;
        }
        let file = match self.open(req.uri().path()).await {
            Ok(f) => f,
            Err(e) => return error_status(&e),
        };
        match respond(req, file) {
            Ok(r) => r,
            Err(e) => error_status(&e),
        }
    }

    /// The open file for a request path: the core's kept one while it is fresh, else
    /// resolved, checked and (if it changed) opened again.
    async fn open(&self, raw: &str) -> io::Result<Rc<OpenFile>> {
        let s = &*self.shared;
        let now = ringway::time::now();
        let kept = match cache::lookup(s.id, raw, now, s.revalidate) {
            Lookup::Fresh(f) => return Ok(f),
            Lookup::Stale(kept) => kept,
        };
        let found = self
            .resolve(raw)
            .ok_or(io::Error::from(io::ErrorKind::NotFound));
        let found = found.and_then(|path| {
            let meta = std::fs::metadata(&path)?;
            if meta.is_file() {
                Ok((path, Identity::of(&meta)))
            } else {
                Err(io::ErrorKind::NotFound.into())
            }
        });
        let (path, identity) = match found {
            Ok(v) => v,
            Err(e) => {
                if kept.is_some() {
                    cache::remove(s.id, raw);
                }
                return Err(e);
            }
        };
        if let Some(f) = kept.filter(|f| f.identity == identity && f.path == path) {
            cache::touch(s.id, raw, now);
            return Ok(f);
        }
        let f = Rc::new(self.open_file(path).await?);
        if !s.revalidate.is_zero() {
            cache::insert(s.id, raw, f.clone(), now, s.revalidate);
        }
        Ok(f)
    }

    /// Opens `path` and builds what its responses need from the open file's own
    /// metadata (the path may have been replaced since it was resolved).
    async fn open_file(&self, path: PathBuf) -> io::Result<OpenFile> {
        let file = File::open(&path).await?;
        self.shared.opened.fetch_add(1, Ordering::Relaxed);
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::ErrorKind::NotFound.into());
        }
        let len = meta.len();
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .unwrap_or_default();
        let etag = format!("\"{:x}-{:x}\"", len, mtime.as_nanos());
        let keep = !self.shared.revalidate.is_zero()
            && len <= cache::SMALL_FILE
            && cache::contents_fit(len);
        let contents = if keep {
            read_whole(&file, len).await
        } else {
            None
        };
        Ok(OpenFile {
            identity: Identity::of(&meta),
            len,
            mtime_secs: mtime.as_secs(),
            etag: HeaderValue::from_str(&etag).map_err(io::Error::other)?,
            last_modified: HeaderValue::from_bytes(&format_imf(mtime.as_secs()))
                .map_err(io::Error::other)?,
            content_type: HeaderValue::from_static(content_type(&path.to_string_lossy())),
            contents,
            file,
            path,
        })
    }

    /// Maps a request path to a file under the root, or `None` if it would leave it.
    fn resolve(&self, raw: &str) -> Option<PathBuf> {
        let root = &self.shared.root;
        let decoded = percent_decode(raw)?;
        let mut p = root.clone();
        for c in Path::new(&decoded).components() {
            match c {
                Component::RootDir => {}
                Component::Normal(s) => p.push(s),
                // `..`, `.` (after decoding) and prefixes: refused outright.
                _ => return None,
            }
        }
        if decoded.contains('\0') || decoded.contains('\\') {
            return None;
        }
        let mut real = std::fs::canonicalize(&p).ok()?;
        // A symlink may point outside: the real path must stay under the root.
        if !real.starts_with(root) {
            return None;
        }
        if real.is_dir() {
            real.push("index.html");
        }
        Some(real)
    }
}

/// The whole of a small file, or `None` if it did not read back at the length its
/// metadata gave (it changed meanwhile: it is then read per request).
async fn read_whole(file: &File, len: u64) -> Option<Bytes> {
    let mut buf = Vec::with_capacity(len as usize);
    while (buf.len() as u64) < len {
        let at = buf.len() as u64;
        let (r, b) = file.read_at(buf, at).await;
        buf = b;
        match r {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
    }
    (buf.len() as u64 == len).then(|| Bytes::from(buf))
}

/// The response for `file`: 200, 206, 304 or 416, per the request's conditions.
fn respond<B>(req: &Request<B>, file: Rc<OpenFile>) -> io::Result<Response<Body>> {
    let len = file.len;
    let mut r = Response::builder()
        .header(header::ETAG, file.etag.clone())
        .header(header::LAST_MODIFIED, file.last_modified.clone())
        .header(header::ACCEPT_RANGES, "bytes");
    let h = req.headers();
    let etag = file.etag.as_bytes();
    let not_modified = match h.get(header::IF_NONE_MATCH) {
        Some(v) => v
            .as_bytes()
            .split(|&b| b == b',')
            .map(crate::token::trim_ows)
            .any(|t| t == b"*" || t == etag || t.strip_prefix(b"W/") == Some(etag)),
        None => h
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| parse_imf(v.as_bytes()))
            .is_some_and(|since| file.mtime_secs <= since),
    };
    if not_modified {
        return r
            .status(StatusCode::NOT_MODIFIED)
            .body(Body::empty())
            .map_err(io::Error::other);
    }
    r = r.header(header::CONTENT_TYPE, file.content_type.clone());
    let if_range_ok = h.get(header::IF_RANGE).map_or(true, |v| {
        v.as_bytes() == etag || v.as_bytes() == file.last_modified.as_bytes()
    });
    let range = match h.get(header::RANGE) {
        Some(v) if if_range_ok => parse_range(v.as_bytes(), len),
        _ => RangeReq::Full,
    };
    let (start, end) = match range {
        RangeReq::Full => (0, len),
        RangeReq::Unsatisfiable => {
            return r
                .status(StatusCode::RANGE_NOT_SATISFIABLE)
                .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                .body(Body::empty())
                .map_err(io::Error::other);
        }
        RangeReq::Part(s, e) => {
            r = r
                .status(StatusCode::PARTIAL_CONTENT)
                .header(header::CONTENT_RANGE, format!("bytes {s}-{}/{len}", e - 1));
            (s, e)
        }
    };
    let body = if req.method() == Method::HEAD {
        Body::from_fn(Some(end - start), |_| Poll::Ready(None))
    } else if let Some(all) = &file.contents {
        Body::from(all.slice(start as usize..end as usize))
    } else {
        Body::from_stream(Some(end - start), FileStream::new(file, start, end))
    };
    r.body(body).map_err(io::Error::other)
}

fn error_status(e: &io::Error) -> Response<Body> {
    match e.kind() {
        io::ErrorKind::NotFound => status(StatusCode::NOT_FOUND),
        io::ErrorKind::PermissionDenied => status(StatusCode::FORBIDDEN),
        _ => status(StatusCode::INTERNAL_SERVER_ERROR),
    }
}

fn status(s: StatusCode) -> Response<Body> {
    let mut r = Response::new(Body::from(format!(
        "{}\n",
        s.canonical_reason().unwrap_or("Error")
    )));
    *r.status_mut() = s;
    r
}

/// The byte range asked for.
#[derive(Debug, PartialEq, Eq)]
enum RangeReq {
    Full,
    Part(u64, u64),
    Unsatisfiable,
}

/// One `bytes=` range; several ranges or a malformed header mean the whole file.
fn parse_range(v: &[u8], len: u64) -> RangeReq {
    let Some(spec) = v.strip_prefix(b"bytes=") else {
        return RangeReq::Full;
    };
    if spec.contains(&b',') {
        return RangeReq::Full;
    }
    let spec = crate::token::trim_ows(spec);
    let Some(dash) = spec.iter().position(|&b| b == b'-') else {
        return RangeReq::Full;
    };
    let num = |s: &[u8]| -> Option<u64> {
        if s.is_empty() || !s.iter().all(u8::is_ascii_digit) || s.len() > 19 {
            return None;
        }
        std::str::from_utf8(s).ok()?.parse().ok()
    };
    let (a, b) = (&spec[..dash], &spec[dash + 1..]);
    match (a.is_empty(), b.is_empty()) {
        (true, true) => RangeReq::Full,
        (true, false) => match num(b) {
            Some(0) => RangeReq::Unsatisfiable,
            Some(_) if len == 0 => RangeReq::Unsatisfiable,
            Some(n) => RangeReq::Part(len.saturating_sub(n), len),
            None => RangeReq::Full,
        },
        (false, _) => {
            let Some(s) = num(a) else {
                return RangeReq::Full;
            };
            let e = if b.is_empty() {
                Some(len.saturating_sub(1))
            } else {
                num(b)
            };
            match e {
                None => RangeReq::Full,
                Some(_) if s >= len => RangeReq::Unsatisfiable,
                Some(e) if e < s => RangeReq::Full,
                Some(e) => RangeReq::Part(s, e.min(len - 1) + 1),
            }
        }
    }
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) to Unix seconds.
fn parse_imf(v: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(v).ok()?;
    let mut it = s.split(' ');
    let (_wd, d, mo, y, t, z) = (
        it.next()?,
        it.next()?,
        it.next()?,
        it.next()?,
        it.next()?,
        it.next()?,
    );
    if z != "GMT" {
        return None;
    }
    const M: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mo = M.iter().position(|m| *m == mo)? as i64 + 1;
    let d: i64 = d.parse().ok()?;
    let y: i64 = y.parse().ok()?;
    let mut tp = t.split(':');
    let (h, mi, se): (i64, i64, i64) = (
        tp.next()?.parse().ok()?,
        tp.next()?.parse().ok()?,
        tp.next()?.parse().ok()?,
    );
    // Days from civil (the inverse of date.rs's conversion).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + h * 3600 + mi * 60 + se).ok()
}

/// Percent-decodes a path; `None` if malformed or not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

type ReadFut = ringway::net::ReadFuture<Vec<u8>>;

/// A file range read in chunks through the runtime.
struct FileStream {
    file: Rc<OpenFile>,
    pos: u64,
    end: u64,
    reading: Option<Pin<Box<ReadFut>>>,
}

impl FileStream {
    fn new(file: Rc<OpenFile>, pos: u64, end: u64) -> Self {
        FileStream {
            file,
            pos,
            end,
            reading: None,
        }
    }
}

impl BodyStream for FileStream {
    fn poll_chunk(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<Bytes>>> {
        let this = &mut *self;
        if this.pos >= this.end {
            return Poll::Ready(None);
        }
        if this.reading.is_none() {
            let want = (this.end - this.pos).min(CHUNK as u64) as usize;
            this.reading = Some(Box::pin(
                this.file.file.read_at(Vec::with_capacity(want), this.pos),
            ));
        }
        let fut = this.reading.as_mut().expect("read in flight");
        let (r, buf) = match fut.as_mut().poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(v) => v,
        };
        this.reading = None;
        match r {
            Ok(0) => Poll::Ready(Some(Err(io::ErrorKind::UnexpectedEof.into()))),
            Ok(n) => {
                this.pos += n as u64;
                Poll::Ready(Some(Ok(Bytes::from(buf))))
            }
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }

    fn file_region(&self) -> Option<(&File, u64, u64)> {
        // Not once a read is under way: its bytes would be sent twice.
        self.reading
            .is_none()
            .then_some((&self.file.file, self.pos, self.end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_range(b"bytes=0-9", 100), RangeReq::Part(0, 10));
        assert_eq!(parse_range(b"bytes=90-", 100), RangeReq::Part(90, 100));
        assert_eq!(parse_range(b"bytes=-10", 100), RangeReq::Part(90, 100));
        assert_eq!(parse_range(b"bytes=95-200", 100), RangeReq::Part(95, 100));
        assert_eq!(parse_range(b"bytes=100-", 100), RangeReq::Unsatisfiable);
        assert_eq!(parse_range(b"bytes=0-1,5-6", 100), RangeReq::Full);
        assert_eq!(parse_range(b"items=0-1", 100), RangeReq::Full);
    }

    #[test]
    fn imf_round_trip() {
        assert_eq!(
            parse_imf(b"Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_imf(&format_imf(1_700_000_000)), Some(1_700_000_000));
    }

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("/a%20b").as_deref(), Some("/a b"));
        assert_eq!(percent_decode("/%2e%2e/x").as_deref(), Some("/../x"));
        assert_eq!(percent_decode("/%zz"), None);
    }
}
