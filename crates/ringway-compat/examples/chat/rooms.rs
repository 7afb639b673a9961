//! The rooms, spread over the cores. Each room belongs to one core, its *owner* (picked
//! by hashing the room's name), which numbers the room's messages and keeps its
//! history; each core keeps its own subscribers (WebSocket sessions, long polls) per
//! room. The cores talk only through their inboxes, one `ringway::sync::mpsc` channel
//! each (lock-free, `Send`): a post goes to the room's owner, which numbers it and sends
//! it to every core's inbox, and each core hands it to its own subscribers. Every map
//! is its core's own (`thread_local!`, `RefCell`): no lock on the way, and one order
//! per room on every core (the owner sends each core the room's messages in order).
//!
//! At shutdown, [`Rooms::close`] ends the subscriptions on every core (the WebSocket
//! sessions send their clients a close frame) and waits for the sessions to end;
//! [`Rooms::persist`] then has each owner write its rooms' histories with
//! `ringway::fs` (`--data DIR`), which [`Rooms::start`] reads back.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use ringway::sync::{mpsc, oneshot, Notify, TrySendError};
use ringway_compat::ws::Utf8Bytes;
use serde::{Deserialize, Serialize};

/// Messages a subscriber may have queued before it is dropped as too slow.
const SUBSCRIBER_QUEUE: usize = 256;

/// A room's name: 1 to 32 of `a-z`, `0-9`, `-`, `_` (so it is also a file name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RoomName(String);

impl RoomName {
    pub(crate) fn parse(name: &str) -> Result<RoomName, String> {
        let ok = (1..=32).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if ok {
            Ok(RoomName(name.to_string()))
        } else {
            Err(format!(
                "a room's name is 1 to 32 of a-z, 0-9, '-' and '_', not {name:?}"
            ))
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The core that owns the room: FNV-1a of the name (stable across runs, so a saved
    /// room is loaded by the core that will own it).
    fn owner(&self, cores: usize) -> usize {
        let hash = self.0.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        (hash % cores as u64) as usize
    }
}

impl fmt::Display for RoomName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A posted message, as clients and the history files see it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Record {
    /// 1, 2, ... within its room.
    pub(crate) seq: u64,
    pub(crate) room: String,
    pub(crate) from: String,
    /// After the worker's filter.
    pub(crate) text: String,
    /// Milliseconds since the Unix epoch.
    pub(crate) at_ms: u64,
}

/// A posted message and its JSON, made once by the owner and shared by every core and
/// subscriber (`Utf8Bytes` is reference counted: a WebSocket frame of it copies nothing).
#[derive(Debug)]
pub(crate) struct Posted {
    room: RoomName,
    pub(crate) record: Record,
    pub(crate) json: Utf8Bytes,
}

impl Posted {
    fn new(room: RoomName, record: Record) -> Arc<Posted> {
        let json = serde_json::to_string(&record).expect("a record serialises");
        Arc::new(Posted {
            room,
            record,
            json: json.into(),
        })
    }
}

/// What one core asks of another.
enum Command {
    /// To the room's owner: number it, keep it, send it to every core.
    Post {
        room: RoomName,
        from: String,
        text: String,
        reply: oneshot::Sender<Arc<Posted>>,
    },
    /// To every core: hand it to the room's subscribers here.
    Deliver(Arc<Posted>),
    /// To the room's owner: its messages after `since`.
    History {
        room: RoomName,
        since: u64,
        reply: oneshot::Sender<Vec<Arc<Posted>>>,
    },
    /// Shutdown, to every core: end the subscriptions, wait for the sessions.
    Close {
        drain: Duration,
        done: oneshot::Sender<usize>,
    },
    /// Shutdown, to every core: write the rooms it owns.
    Persist {
        done: oneshot::Sender<io::Result<usize>>,
    },
    /// End the core's hub.
    Exit,
}

/// The rooms, as any core sees them: every core's inbox. Cheap to clone; `Send` and
/// `Sync`, so it can be axum state.
#[derive(Clone)]
pub(crate) struct Rooms {
    inboxes: Arc<[mpsc::UnboundedSender<Command>]>,
}

impl fmt::Debug for Rooms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rooms")
            .field("cores", &self.inboxes.len())
            .finish()
    }
}

/// The rooms' side of a core that is shutting down (or gone).
#[derive(Debug)]
pub(crate) struct Closing;

impl Rooms {
    /// Starts a hub on every core of `handle` (loading the rooms each owns from `data`,
    /// if given) and returns once all are ready, with their join handles.
    pub(crate) async fn start(
        handle: &ringway::Handle,
        history: usize,
        data: Option<PathBuf>,
    ) -> io::Result<(Rooms, Vec<ringway::JoinHandle<()>>)> {
        let cores = handle.cores();
        let (senders, receivers): (Vec<_>, Vec<_>) =
            (0..cores).map(|_| mpsc::unbounded_channel()).unzip();
        let rooms = Rooms {
            inboxes: senders.into(),
        };
        let mut hubs = Vec::with_capacity(cores);
        let mut ready = Vec::with_capacity(cores);
        for (core, inbox) in receivers.into_iter().enumerate() {
            let (loaded, is_ready) = oneshot::channel();
            ready.push(is_ready);
            let (rooms, data) = (rooms.clone(), data.clone());
            hubs.push(handle.spawn_on(core, move || async move {
                let local = Rc::new(Local::new(core, cores, history));
                match local.load(data.as_deref()).await {
                    Ok(n) => {
                        if LOCAL.with(|l| l.set(local.clone())).is_err() {
                            panic!("one rooms hub per core");
                        }
                        let _ = loaded.send(Ok(n));
                    }
                    Err(e) => {
                        let _ = loaded.send(Err(e));
                        return;
                    }
                }
                hub(local, inbox, rooms, data).await
            }));
        }
        let mut failed = None;
        for r in ready {
            match r.await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => failed = failed.or(Some(e)),
                Err(_) => failed = failed.or(Some(io::Error::other("a hub failed to start"))),
            }
        }
        if let Some(e) = failed {
            rooms.exit(hubs).await;
            return Err(e);
        }
        Ok((rooms, hubs))
    }

    fn owner(&self, room: &RoomName) -> &mpsc::UnboundedSender<Command> {
        &self.inboxes[room.owner(self.inboxes.len())]
    }

    /// Posts `text` (already filtered) to `room`, from `from`: the numbered message.
    pub(crate) async fn post(
        &self,
        room: &RoomName,
        from: &str,
        text: String,
    ) -> Result<Arc<Posted>, Closing> {
        let (reply, posted) = oneshot::channel();
        let command = Command::Post {
            room: room.clone(),
            from: from.to_string(),
            text,
            reply,
        };
        self.owner(room).send(command).map_err(|_| Closing)?;
        posted.await.map_err(|_| Closing)
    }

    /// The messages of `room` after `since` (as many as its owner keeps).
    pub(crate) async fn history(
        &self,
        room: &RoomName,
        since: u64,
    ) -> Result<Vec<Arc<Posted>>, Closing> {
        let (reply, answer) = oneshot::channel();
        let command = Command::History {
            room: room.clone(),
            since,
            reply,
        };
        self.owner(room).send(command).map_err(|_| Closing)?;
        answer.await.map_err(|_| Closing)
    }

    /// Subscribes to `room`'s new messages on this core.
    pub(crate) fn subscribe(&self, room: &RoomName) -> Result<Subscription, Closing> {
        with_local(|local| {
            if local.closing.get() {
                return Err(Closing);
            }
            let (tx, rx) = mpsc::channel(SUBSCRIBER_QUEUE);
            let id = local.next_id.get();
            local.next_id.set(id + 1);
            local
                .subscribers
                .borrow_mut()
                .entry(room.clone())
                .or_default()
                .insert(id, tx);
            Ok(Subscription {
                room: room.clone(),
                id,
                rx,
            })
        })
    }

    /// Counts a WebSocket session on this core until the guard drops; `Closing` once
    /// the core is shutting down.
    pub(crate) fn session(&self) -> Result<SessionGuard, Closing> {
        with_local(|local| {
            if local.closing.get() {
                return Err(Closing);
            }
            local.sessions.set(local.sessions.get() + 1);
            Ok(SessionGuard { _private: () })
        })
    }

    /// Whether this core is shutting down.
    pub(crate) fn is_closing(&self) -> bool {
        with_local(|local| local.closing.get())
    }

    /// Shutdown, first step: on every core, ends the subscriptions (each WebSocket
    /// session then closes with its client) and waits, at most `drain`, for the
    /// sessions to end. The number of sessions there were.
    pub(crate) async fn close(&self, drain: Duration) -> usize {
        let mut waits = Vec::new();
        for inbox in self.inboxes.iter() {
            let (done, closed) = oneshot::channel();
            if inbox.send(Command::Close { drain, done }).is_ok() {
                waits.push(closed);
            }
        }
        let mut sessions = 0;
        for w in waits {
            sessions += w.await.unwrap_or(0);
        }
        sessions
    }

    /// Shutdown, second step (once nothing posts any more): each owner writes its rooms
    /// to the data directory. The number of rooms written.
    pub(crate) async fn persist(&self) -> io::Result<usize> {
        let mut waits = Vec::new();
        for inbox in self.inboxes.iter() {
            let (done, written) = oneshot::channel();
            if inbox.send(Command::Persist { done }).is_ok() {
                waits.push(written);
            }
        }
        let mut rooms = 0;
        for w in waits {
            rooms += w
                .await
                .map_err(|_| io::Error::other("a core's hub is gone"))??;
        }
        Ok(rooms)
    }

    /// Ends every core's hub and waits for them.
    pub(crate) async fn exit(&self, hubs: Vec<ringway::JoinHandle<()>>) {
        for inbox in self.inboxes.iter() {
            let _ = inbox.send(Command::Exit);
        }
        for h in hubs {
            let _ = h.await;
        }
    }
}

/// New messages of one room, on this core. Dropping it unsubscribes.
pub(crate) struct Subscription {
    room: RoomName,
    id: u64,
    rx: mpsc::Receiver<Arc<Posted>>,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("room", &self.room)
            .field("id", &self.id)
            .finish()
    }
}

impl Subscription {
    /// The next message; `None` once the subscription was ended: shutdown
    /// ([`Rooms::is_closing`]), or this subscriber fell `SUBSCRIBER_QUEUE` messages
    /// behind.
    pub(crate) async fn next(&mut self) -> Option<Arc<Posted>> {
        self.rx.recv().await
    }

    /// Poll form of [`next`](Self::next).
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Arc<Posted>>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|l| {
            if let Some(local) = l.get() {
                let mut subs = local.subscribers.borrow_mut();
                if let Some(room) = subs.get_mut(&self.room) {
                    room.remove(&self.id);
                    if room.is_empty() {
                        subs.remove(&self.room);
                    }
                }
            }
        });
    }
}

/// A WebSocket session counted on its core (see [`Rooms::session`]).
#[derive(Debug)]
pub(crate) struct SessionGuard {
    _private: (),
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|l| {
            if let Some(local) = l.get() {
                local.sessions.set(local.sessions.get() - 1);
                if local.sessions.get() == 0 {
                    local.sessions_gone.notify_waiters();
                }
            }
        });
    }
}

thread_local! {
    /// This core's part of the rooms, set by its hub.
    static LOCAL: OnceCell<Rc<Local>> = const { OnceCell::new() };
}

fn with_local<R>(f: impl FnOnce(&Local) -> R) -> R {
    LOCAL.with(|l| {
        f(l.get()
            .expect("the rooms' hub runs on every core of the server"))
    })
}

/// One core's part: the rooms it owns, its subscribers, its sessions.
struct Local {
    core: usize,
    cores: usize,
    history: usize,
    owned: RefCell<HashMap<RoomName, Room>>,
    subscribers: RefCell<HashMap<RoomName, Subscribers>>,
    next_id: Cell<u64>,
    sessions: Cell<usize>,
    sessions_gone: Notify,
    closing: Cell<bool>,
}

/// One room's subscribers on one core, by id.
type Subscribers = HashMap<u64, mpsc::Sender<Arc<Posted>>>;

/// A room, on its owner.
#[derive(Default)]
struct Room {
    last_seq: u64,
    kept: VecDeque<Arc<Posted>>,
}

impl Local {
    fn new(core: usize, cores: usize, history: usize) -> Local {
        Local {
            core,
            cores,
            history,
            owned: RefCell::default(),
            subscribers: RefCell::default(),
            next_id: Cell::new(0),
            sessions: Cell::new(0),
            sessions_gone: Notify::new(),
            closing: Cell::new(false),
        }
    }

    /// Numbers and keeps a message of a room this core owns.
    fn append(&self, room: RoomName, from: String, text: String) -> Arc<Posted> {
        let mut owned = self.owned.borrow_mut();
        let r = owned.entry(room.clone()).or_default();
        r.last_seq += 1;
        let at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let posted = Posted::new(
            room.clone(),
            Record {
                seq: r.last_seq,
                room: room.0,
                from,
                text,
                at_ms,
            },
        );
        r.kept.push_back(posted.clone());
        if r.kept.len() > self.history {
            r.kept.pop_front();
        }
        posted
    }

    /// Hands a message to this core's subscribers of its room. One that has fallen
    /// `SUBSCRIBER_QUEUE` behind is dropped (its session tells its client), so a slow
    /// client never holds the others up or grows the server's memory.
    fn deliver(&self, posted: &Arc<Posted>) {
        let mut subs = self.subscribers.borrow_mut();
        if let Some(room_subs) = subs.get_mut(&posted.room) {
            room_subs.retain(|_, tx| match tx.try_send(posted.clone()) {
                Ok(()) => true,
                Err(TrySendError::Full(_) | TrySendError::Closed(_)) => false,
            });
        }
    }

    fn history(&self, room: &RoomName, since: u64) -> Vec<Arc<Posted>> {
        self.owned.borrow().get(room).map_or_else(Vec::new, |r| {
            r.kept
                .iter()
                .filter(|p| p.record.seq > since)
                .cloned()
                .collect()
        })
    }

    /// Loads the rooms this core owns from `dir` (`ROOM.json` files; a directory that
    /// is not there yet holds none). A file that cannot be read is an error: the
    /// service would otherwise write over it at shutdown.
    async fn load(&self, dir: Option<&Path>) -> io::Result<usize> {
        let Some(dir) = dir else { return Ok(0) };
        let mut entries = match ringway::fs::read_dir(dir).await {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("--data {}: {e}", dir.display()),
                ))
            }
        };
        let mut loaded = 0;
        while let Some(entry) = entries.next_entry().await? {
            let file = entry.file_name();
            let Some(room) = file.to_str().and_then(|f| f.strip_suffix(".json")) else {
                continue;
            };
            let Ok(room) = RoomName::parse(room) else {
                continue;
            };
            if room.owner(self.cores) != self.core {
                continue;
            }
            let path = entry.path();
            let bad = |e: &dyn fmt::Display| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e} (move it away to start without it)", path.display()),
                )
            };
            let bytes = ringway::fs::read(&path).await.map_err(|e| bad(&e))?;
            let records: Vec<Record> = serde_json::from_slice(&bytes).map_err(|e| bad(&e))?;
            let last_seq = records.last().map_or(0, |r| r.seq);
            let kept = records
                .into_iter()
                .rev()
                .take(self.history)
                .rev()
                .map(|r| Posted::new(room.clone(), r))
                .collect();
            self.owned
                .borrow_mut()
                .insert(room, Room { last_seq, kept });
            loaded += 1;
        }
        Ok(loaded)
    }

    /// Writes every room this core owns to `dir/ROOM.json` (a new file renamed over
    /// the old, so a crash mid-write leaves the old one whole).
    async fn persist(&self, dir: Option<&Path>) -> io::Result<usize> {
        let Some(dir) = dir else { return Ok(0) };
        let rooms: Vec<(RoomName, Vec<Record>)> = self
            .owned
            .borrow()
            .iter()
            .map(|(name, r)| {
                (
                    name.clone(),
                    r.kept.iter().map(|p| p.record.clone()).collect(),
                )
            })
            .collect();
        if rooms.is_empty() {
            return Ok(0);
        }
        ringway::fs::create_dir_all(dir).await?;
        for (name, records) in &rooms {
            let path = dir.join(format!("{name}.json"));
            let fresh = dir.join(format!(".{name}.json.new"));
            let json = serde_json::to_vec_pretty(records).map_err(io::Error::other)?;
            ringway::fs::write(&fresh, json).await?;
            ringway::fs::rename(&fresh, &path).await?;
        }
        Ok(rooms.len())
    }

    /// Waits until no session is left on this core.
    async fn sessions_ended(&self) {
        while self.sessions.get() > 0 {
            self.sessions_gone.notified().await;
        }
    }
}

/// One core's hub: answers its inbox until told to exit.
async fn hub(
    local: Rc<Local>,
    mut inbox: mpsc::UnboundedReceiver<Command>,
    rooms: Rooms,
    data: Option<PathBuf>,
) {
    while let Some(command) = inbox.recv().await {
        match command {
            Command::Post {
                room,
                from,
                text,
                reply,
            } => {
                let posted = local.append(room, from, text);
                for inbox in rooms.inboxes.iter() {
                    let _ = inbox.send(Command::Deliver(posted.clone()));
                }
                let _ = reply.send(posted);
            }
            Command::Deliver(posted) => local.deliver(&posted),
            Command::History { room, since, reply } => {
                let _ = reply.send(local.history(&room, since));
            }
            Command::Close { drain, done } => {
                local.closing.set(true);
                // Dropping the senders ends every subscription here.
                local.subscribers.borrow_mut().clear();
                // Wait in a task of its own: this hub goes on answering posts and
                // history requests (a session finishing its post waits for one).
                let local = local.clone();
                ringway::spawn(async move {
                    let sessions = local.sessions.get();
                    let _ = ringway::time::timeout(drain, local.sessions_ended()).await;
                    let _ = done.send(sessions);
                })
                .detach();
            }
            Command::Persist { done } => {
                let _ = done.send(local.persist(data.as_deref()).await);
            }
            Command::Exit => break,
        }
    }
}
