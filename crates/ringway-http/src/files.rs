//! Static files: GET/HEAD under one root directory, with MIME types, `ETag` and
//! `Last-Modified` (304 on `If-None-Match`/`If-Modified-Since`), single `Range`
//! requests (206, 416), and traversal refused (no `..`, no escaping symlinks).
//!
//! Files are kept open per core with their validators built (see `cache.rs`), and
//! re-checked against the file system once per [`StaticFiles::revalidate_after`]
//! period (1 s unless set). Small files are sent from memory; larger ones are read
//! through the runtime (io_uring reads at offsets) in 64 KiB chunks, or spliced.

mod answer;
mod cache;
mod stream;

use std::io;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use ringway::fs::File;

use crate::body::Body;
use crate::date::format_imf;
use crate::handler::ViewHandler;
use crate::mime::content_type;
use crate::prepared::PreparedResponse;
use crate::response::{Responder, Written};
use crate::view::RequestView;
use answer::Conditions;
use cache::{Identity, Lookup, OpenFile};

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
                id: next_id(),
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
    /// reads its file. The result is a configuration of its own: its own kept files and
    /// its own count of [`opened`](Self::opened).
    pub fn revalidate_after(self, period: Duration) -> StaticFiles {
        let s = &self.shared;
        StaticFiles {
            shared: Arc::new(Shared {
                root: s.root.clone(),
                // Its own entries: a clone with another period must not share them.
                id: next_id(),
                revalidate: period,
                opened: AtomicU64::new(0),
            }),
        }
    }

    /// How many times a file was opened, by every core: one per request with no
    /// period, else one per file per core and per change seen.
    pub fn opened(&self) -> u64 {
        self.shared.opened.load(Ordering::Relaxed)
    }

    /// Answers one request given as `http` types (the [`Handler`](crate::Handler) API).
    /// Served with [`Server::start_view`](crate::Server::start_view) instead,
    /// `StaticFiles` is a [`ViewHandler`]: the same answers, written straight into the
    /// connection's output without building `http` types.
    pub async fn serve<B>(&self, req: &Request<B>) -> Response<Body> {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return answer::error_http(StatusCode::METHOD_NOT_ALLOWED);
        }
        let file = match self.open(req.uri().path()).await {
            Ok(f) => f,
            Err(e) => return answer::error_http(answer::error_code(&e)),
        };
        let h = req.headers();
        let field = |name| h.get(name).map(HeaderValue::as_bytes);
        let conditions = Conditions {
            if_none_match: field(header::IF_NONE_MATCH),
            if_modified_since: field(header::IF_MODIFIED_SINCE),
            if_range: field(header::IF_RANGE),
            range: field(header::RANGE),
        };
        answer::to_http(&file, answer::plan(&file, &conditions))
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
            && cache::contents_fit(2 * len);
        let contents = if keep {
            read_whole(&file, len).await
        } else {
            None
        };
        let etag = HeaderValue::from_str(&etag).map_err(io::Error::other)?;
        let last_modified =
            HeaderValue::from_bytes(&format_imf(mtime.as_secs())).map_err(io::Error::other)?;
        let content_type = HeaderValue::from_static(content_type(&path.to_string_lossy()));
        let whole = contents.as_ref().map(|bytes| {
            let fields = answer::file_fields(&etag, &last_modified, &content_type);
            PreparedResponse::new(StatusCode::OK, &fields, bytes)
        });
        Ok(OpenFile {
            identity: Identity::of(&meta),
            len,
            mtime_secs: mtime.as_secs(),
            etag,
            last_modified,
            content_type,
            contents,
            whole,
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

/// A number for a new configuration's entries in the per-core caches.
fn next_id() -> u64 {
    static NEXT_ID: AtomicU64 = AtomicU64::new(0);
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

impl ViewHandler for StaticFiles {
    async fn call<'a>(&'a self, req: RequestView<'a>, res: Responder<'a>) -> Written {
        if !matches!(req.method(), "GET" | "HEAD") {
            return answer::error_view(res, StatusCode::METHOD_NOT_ALLOWED);
        }
        let file = match self.open(req.path()).await {
            Ok(f) => f,
            Err(e) => return answer::error_view(res, answer::error_code(&e)),
        };
        let conditions = Conditions::of_view(&req);
        answer::to_view(res, &file, answer::plan(&file, &conditions))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("/a%20b").as_deref(), Some("/a b"));
        assert_eq!(percent_decode("/%2e%2e/x").as_deref(), Some("/../x"));
        assert_eq!(percent_decode("/%zz"), None);
    }
}
