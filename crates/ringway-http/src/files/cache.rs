//! The per-core cache of open files behind [`StaticFiles`](super::StaticFiles).
//!
//! Without it every request for a file pays, on the serving core, for resolving its
//! path (`canonicalize`: a `readlink` per component, then a `stat` for the directory
//! check), opening it, `fstat`, reading it, and formatting its `ETag` and
//! `Last-Modified`; the same popular file is asked for thousands of times a second.
//! With it, a path asked for again within the revalidation period costs a hash lookup:
//! the file stays open, its validators and type are kept as header values, and a small
//! file's contents are kept whole, so its response is sent from memory.
//!
//! The trade is nginx's `open_file_cache`: a file replaced, changed or removed is seen
//! at the next revalidation (at most one period later), not at once. Revalidating
//! resolves the path and `stat`s it again; the entry is kept only if it still names the
//! same file (device, inode) with the same length and modification time.
//!
//! One cache per thread (a serving core is a thread), so no lock: entries are shared
//! by the requests of one core through `Rc`. Bounded: at most [`MAX_ENTRIES`] paths and
//! [`CONTENTS_BUDGET`] bytes of kept contents per core.

use std::cell::RefCell;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::HeaderValue;
use ringway::fs::File;

use crate::prepared::PreparedResponse;

/// Paths kept per core; when full, the entries past their period go, then all.
pub(super) const MAX_ENTRIES: usize = 1024;
/// Files up to this size have their contents kept whole.
pub(super) const SMALL_FILE: u64 = 64 * 1024;
/// Bytes of kept contents per core (each kept file counts twice: its bytes and its
/// prepared response); past it, files are read per request.
pub(super) const CONTENTS_BUDGET: usize = 8 << 20;

/// What a file system object is, for revalidation: the same path naming another file,
/// or this file changed, makes a new entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

impl Identity {
    pub(super) fn of(meta: &Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }
}

/// An open file with what its responses need, built once per (re)open.
#[derive(Debug)]
pub(super) struct OpenFile {
    pub(super) file: File,
    /// The resolved path, checked again at revalidation.
    pub(super) path: PathBuf,
    pub(super) identity: Identity,
    pub(super) len: u64,
    /// Modification time, whole seconds since the Unix epoch (`If-Modified-Since`).
    pub(super) mtime_secs: u64,
    pub(super) etag: HeaderValue,
    pub(super) last_modified: HeaderValue,
    pub(super) content_type: HeaderValue,
    /// The whole file, when it is small and the core's budget allowed it.
    pub(super) contents: Option<Bytes>,
    /// With `contents`: the whole-file 200 rendered (fields and body), for the view API.
    pub(super) whole: Option<PreparedResponse>,
}

/// What [`lookup`] found.
pub(super) enum Lookup {
    /// Checked within the period: serve it.
    Fresh(Rc<OpenFile>),
    /// Older than the period (revalidate, then [`touch`] or replace), or absent.
    Stale(Option<Rc<OpenFile>>),
}

struct Entry {
    file: Rc<OpenFile>,
    checked: Instant,
}

/// The paths of one `StaticFiles` (keyed by `&str`, so a hit allocates nothing). Hashed
/// with foldhash, seeded per process: a request's path is hashed on every hit (SipHash,
/// std's default, was 340 instructions of a new connection's 7,000 here), and the map
/// holds only paths that exist, at most [`MAX_ENTRIES`].
type Paths = HashMap<Box<str>, Entry>;

type HashMap<K, V> = foldhash::HashMap<K, V>;

#[derive(Default)]
struct Cache {
    /// Per `StaticFiles` (its number): two roots on one core never share entries.
    owners: HashMap<u64, Paths>,
    entries: usize,
    contents_bytes: usize,
}

impl Cache {
    fn get(&self, owner: u64, path: &str) -> Option<&Entry> {
        self.owners.get(&owner)?.get(path)
    }

    fn take(&mut self, owner: u64, path: &str) {
        if let Some(old) = self.owners.get_mut(&owner).and_then(|p| p.remove(path)) {
            self.entries -= 1;
            self.contents_bytes -= kept(&old.file);
        }
    }

    /// Room for one more: the entries past their period go first, then all.
    fn make_room(&mut self, now: Instant, period: Duration) {
        if self.entries < MAX_ENTRIES {
            return;
        }
        for paths in self.owners.values_mut() {
            paths.retain(|_, e| now.saturating_duration_since(e.checked) < period);
        }
        if self.owners.values().map(HashMap::len).sum::<usize>() >= MAX_ENTRIES {
            self.owners.clear();
        }
        self.entries = self.owners.values().map(HashMap::len).sum();
        self.contents_bytes = self
            .owners
            .values()
            .flat_map(HashMap::values)
            .map(|e| kept(&e.file))
            .sum();
    }
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// The entry for `path` under the `StaticFiles` numbered `owner`.
pub(super) fn lookup(owner: u64, path: &str, now: Instant, period: Duration) -> Lookup {
    CACHE.with_borrow(|c| match c.get(owner, path) {
        Some(e) if now.saturating_duration_since(e.checked) < period => {
            Lookup::Fresh(e.file.clone())
        }
        Some(e) => Lookup::Stale(Some(e.file.clone())),
        None => Lookup::Stale(None),
    })
}

/// Marks `path`'s entry as checked at `now` (revalidation found it unchanged).
pub(super) fn touch(owner: u64, path: &str, now: Instant) {
    CACHE.with_borrow_mut(|c| {
        if let Some(e) = c.owners.get_mut(&owner).and_then(|p| p.get_mut(path)) {
            e.checked = now;
        }
    });
}

/// Whether `bytes` more of kept contents fit in this core's budget.
pub(super) fn contents_fit(bytes: u64) -> bool {
    CACHE.with_borrow(|c| c.contents_bytes as u64 + bytes <= CONTENTS_BUDGET as u64)
}

/// Keeps `file` for `path`, checked at `now`; makes room first when full.
pub(super) fn insert(owner: u64, path: &str, file: Rc<OpenFile>, now: Instant, period: Duration) {
    CACHE.with_borrow_mut(|c| {
        c.take(owner, path);
        c.make_room(now, period);
        c.entries += 1;
        c.contents_bytes += kept(&file);
        c.owners
            .entry(owner)
            .or_default()
            .insert(path.into(), Entry { file, checked: now });
    });
}

/// Forgets `path` (it no longer resolves to a file).
pub(super) fn remove(owner: u64, path: &str) {
    CACHE.with_borrow_mut(|c| c.take(owner, path));
}

/// Bytes of file contents `f` holds: the kept copy and the prepared response's.
fn kept(f: &OpenFile) -> usize {
    f.contents.as_ref().map_or(0, Bytes::len) + f.whole.as_ref().map_or(0, |w| w.body.len())
}
