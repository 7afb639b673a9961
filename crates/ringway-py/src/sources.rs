//! Who a completion belongs to: the loop's table of I/O sources (transports and
//! listeners) and the 64-bit token every operation carries.
//!
//! A token packs the source's slot index, the slot's generation and the kind of
//! operation (`gen << 32 | index << 4 | kind`), so a late completion for a source that
//! has gone, or whose slot was reused, is recognised as stale and dropped.

/// What an operation was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A transport's multishot receive.
    Recv = 1,
    /// A transport's vectored send (io_uring).
    Send = 2,
    /// A transport waiting for room to send (epoll).
    SendReady = 3,
    /// A listener's multishot accept.
    Accept = 4,
    /// `add_reader`'s readiness poll; the index is the fd.
    WatchRead = 5,
    /// `add_writer`'s readiness poll; the index is the fd.
    WatchWrite = 6,
    /// A transport's readiness poll for a direct read (large messages: see
    /// `stream::receive`).
    RecvReady = 7,
}

impl Kind {
    fn from_bits(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Recv,
            2 => Kind::Send,
            3 => Kind::SendReady,
            4 => Kind::Accept,
            5 => Kind::WatchRead,
            6 => Kind::WatchWrite,
            7 => Kind::RecvReady,
            _ => return None,
        })
    }
}

/// A slot index and its generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SourceId {
    /// The slot in the table (28 bits).
    pub index: u32,
    /// The slot's generation when this source took it (each reuse takes the next).
    pub gen: u32,
}

/// Packs a token.
pub fn token(id: SourceId, kind: Kind) -> u64 {
    debug_assert!(id.index < (1 << 28));
    ((id.gen as u64) << 32) | ((id.index as u64) << 4) | kind as u64
}

/// Unpacks a token; `None` for a token this crate did not make.
pub fn untoken(t: u64) -> Option<(SourceId, Kind)> {
    let kind = Kind::from_bits((t & 0xf) as u8)?;
    Some((
        SourceId {
            index: ((t >> 4) & 0x0fff_ffff) as u32,
            gen: (t >> 32) as u32,
        },
        kind,
    ))
}

struct Slot<T> {
    gen: u32,
    value: Option<T>,
}

/// A slab with generations.
pub struct Sources<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> std::fmt::Debug for Sources<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources")
            .field("live", &self.live)
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl<T> Default for Sources<T> {
    fn default() -> Self {
        Sources {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<T> Sources<T> {
    /// Stores `value`; returns its id.
    pub fn insert(&mut self, value: T) -> SourceId {
        self.live += 1;
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.gen = slot.gen.wrapping_add(1);
            slot.value = Some(value);
            return SourceId {
                index,
                gen: slot.gen,
            };
        }
        let index = self.slots.len() as u32;
        self.slots.push(Slot {
            gen: 1,
            value: Some(value),
        });
        SourceId { index, gen: 1 }
    }

    /// The value of a live id.
    pub fn get(&self, id: SourceId) -> Option<&T> {
        let slot = self.slots.get(id.index as usize)?;
        if slot.gen != id.gen {
            return None;
        }
        slot.value.as_ref()
    }

    /// Removes a live id's value.
    pub fn remove(&mut self, id: SourceId) -> Option<T> {
        let slot = self.slots.get_mut(id.index as usize)?;
        if slot.gen != id.gen {
            return None;
        }
        let v = slot.value.take()?;
        self.free.push(id.index);
        self.live -= 1;
        Some(v)
    }

    /// Live values.
    pub fn len(&self) -> usize {
        self.live
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Removes every value.
    pub fn drain(&mut self) -> Vec<T> {
        let mut out = Vec::new();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if let Some(v) = slot.value.take() {
                out.push(v);
                self.free.push(i as u32);
            }
        }
        self.live = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        for kind in [
            Kind::Recv,
            Kind::Send,
            Kind::SendReady,
            Kind::Accept,
            Kind::WatchRead,
            Kind::WatchWrite,
            Kind::RecvReady,
        ] {
            let id = SourceId {
                index: 0x0abc_def1,
                gen: 0xdead_beef,
            };
            assert_eq!(untoken(token(id, kind)), Some((id, kind)));
        }
        assert_eq!(untoken(0), None);
    }

    #[test]
    fn stale_ids_miss_reused_slots() {
        let mut s = Sources::default();
        let a = s.insert("a");
        assert_eq!(s.remove(a), Some("a"));
        let b = s.insert("b");
        assert_eq!(a.index, b.index);
        assert!(s.get(a).is_none() && s.remove(a).is_none());
        assert_eq!(s.get(b), Some(&"b"));
        assert_eq!(s.len(), 1);
        assert_eq!(s.drain(), vec!["b"]);
        assert!(s.is_empty());
    }
}
