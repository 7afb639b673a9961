//! Field maps reused across requests, per core: the map of a response a handler built
//! becomes the map of a later request, so the `http`-types API does not allocate one
//! per request in the steady state.

use std::cell::RefCell;

use http::HeaderMap;

/// Maps kept per core, at most.
const KEEP: usize = 64;
/// Maps that grew beyond this many fields are dropped, not kept.
const KEEP_UP_TO: usize = 64;

thread_local! {
    static FREE: RefCell<Vec<HeaderMap>> = const { RefCell::new(Vec::new()) };
}

/// A reused empty map, if the core has one.
#[inline]
pub(crate) fn take() -> Option<HeaderMap> {
    FREE.try_with(|f| f.borrow_mut().pop()).ok().flatten()
}

/// Keeps `map` (emptied) for a later [`take`].
pub(crate) fn give(mut map: HeaderMap) {
    if map.capacity() == 0 || map.capacity() > KEEP_UP_TO {
        return;
    }
    map.clear();
    let _ = FREE.try_with(|f| {
        let mut f = f.borrow_mut();
        if f.len() < KEEP {
            f.push(map);
        }
    });
}
