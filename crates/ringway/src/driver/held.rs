//! What the driver keeps of an operation nobody awaits, until its final completion.
//!
//! An operation whose future was dropped, or that was submitted detached (a background
//! send), still owns buffers the kernel may be using: the driver keeps them, and may
//! have to tell someone how the operation ended. That is a [`Held`] value, stored in
//! the operation's slot. Small values (a buffer handle, a length and a reference to its
//! socket's state) are stored inline, so a background send costs no allocation; larger
//! ones are boxed. Inline values move when the slot table grows, which is safe for the
//! same reason moving an owned buffer is: `IoBuf::stable_ptr` points at memory that
//! does not move with the handle.

use std::marker::PhantomData;
use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};

/// Something the driver keeps until an operation's final completion.
pub(crate) trait Held: 'static {
    /// Called once, with the final result, instead of dropping `self` (it is dropped
    /// after).
    fn finished(self, result: i32);
}

/// Resources that only have to stay alive (a dropped future's buffers).
pub(crate) struct KeptUntilDone<T>(pub T);

impl<T: 'static> Held for KeptUntilDone<T> {
    fn finished(self, _result: i32) {}
}

/// Words of inline storage: enough for a buffer handle, a length and an `Arc`.
const WORDS: usize = 6;
type Storage = MaybeUninit<[usize; WORDS]>;

/// How to finish or drop the value in a [`HeldValue`].
struct VTable {
    finished: unsafe fn(*mut Storage, i32),
    drop: unsafe fn(*mut Storage),
}

/// A [`Held`] value of any type: inline when it fits, boxed otherwise.
pub(crate) struct HeldValue {
    data: Storage,
    vtable: &'static VTable,
    /// The value may be `!Send` (an `Rc`): so is this.
    _not_send: PhantomData<*const ()>,
}

/// `T` stored inline.
struct Inline<T>(PhantomData<T>);
/// `T` stored as a `Box<T>`.
struct Boxed<T>(PhantomData<T>);

impl<T: Held> Inline<T> {
    const VTABLE: VTable = VTable {
        finished: |data, result| {
            // SAFETY: `data` holds a `T` written by `HeldValue::new`; it is taken once.
            let value = unsafe { data.cast::<T>().read() };
            value.finished(result)
        },
        drop: |data| {
            // SAFETY: `data` holds a `T` written by `HeldValue::new`; dropped once.
            unsafe { data.cast::<T>().drop_in_place() }
        },
    };
}

impl<T: Held> Boxed<T> {
    const VTABLE: VTable = VTable {
        finished: |data, result| {
            // SAFETY: `data` holds a `Box<T>` written by `HeldValue::new`; taken once.
            let value = unsafe { data.cast::<Box<T>>().read() };
            value.finished(result)
        },
        drop: |data| {
            // SAFETY: `data` holds a `Box<T>` written by `HeldValue::new`; dropped once.
            unsafe { data.cast::<Box<T>>().drop_in_place() }
        },
    };
}

impl HeldValue {
    /// Stores `value`, inline if it fits.
    pub(crate) fn new<T: Held>(value: T) -> Self {
        let mut data = Storage::uninit();
        let vtable =
            if size_of::<T>() <= size_of::<Storage>() && align_of::<T>() <= align_of::<Storage>() {
                // SAFETY: `T` fits in `data`, in size and alignment, which is uninitialised.
                unsafe { data.as_mut_ptr().cast::<T>().write(value) };
                &Inline::<T>::VTABLE
            } else {
                // SAFETY: a `Box` is one pointer, which fits.
                unsafe { data.as_mut_ptr().cast::<Box<T>>().write(Box::new(value)) };
                &Boxed::<T>::VTABLE
            };
        HeldValue {
            data,
            vtable,
            _not_send: PhantomData,
        }
    }

    /// [`new`](Self::new) of the value `make` returns, built straight into `place`
    /// (not on the stack, then copied over). `place` must be empty (`None`): a value
    /// there would be forgotten, not dropped (leaked; the place is not checked).
    #[inline]
    pub(crate) fn put<T: Held>(place: &mut Option<HeldValue>, make: impl FnOnce() -> T) {
        /// Empties the place again if `make` panics, before the value is written: a
        /// husk with a vtable and no value must never be dropped.
        struct Unfilled<'a>(&'a mut Option<HeldValue>);
        impl Drop for Unfilled<'_> {
            fn drop(&mut self) {
                std::mem::forget(self.0.take());
            }
        }
        debug_assert!(place.is_none(), "put into an occupied place");
        let inline =
            size_of::<T>() <= size_of::<Storage>() && align_of::<T>() <= align_of::<Storage>();
        let vtable = if inline {
            &Inline::<T>::VTABLE
        } else {
            &Boxed::<T>::VTABLE
        };
        // Not `Option::insert`, which checks for an old value to drop: there is none.
        std::mem::forget(place.replace(HeldValue {
            data: Storage::uninit(),
            vtable,
            _not_send: PhantomData,
        }));
        let unfilled = Unfilled(place);
        let Some(held) = unfilled.0.as_mut() else {
            unreachable!("just put")
        };
        let data = held.data.as_mut_ptr();
        if inline {
            // SAFETY: `T` fits in `data`, in size and alignment, which is uninitialised.
            unsafe { data.cast::<T>().write(make()) };
        } else {
            // SAFETY: a `Box` is one pointer, which fits.
            unsafe { data.cast::<Box<T>>().write(Box::new(make())) };
        }
        std::mem::forget(unfilled);
    }

    /// Tells the value the operation's final result; it is dropped afterwards.
    pub(crate) fn finished(self, result: i32) {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: the value is taken out exactly once: `this` is never dropped.
        unsafe { (this.vtable.finished)(&mut this.data, result) }
    }
}

impl HeldValue {
    /// [`finished`](Self::finished) for a value left where it is kept, which is `None`
    /// afterwards: the value is not moved out first.
    #[inline]
    pub(crate) fn finish_in_place(held: &mut Option<HeldValue>, result: i32) {
        /// Forgets the husk once the value is consumed, even if `finished` panics.
        struct Husk<'a>(&'a mut Option<HeldValue>);
        impl Drop for Husk<'_> {
            fn drop(&mut self) {
                std::mem::forget(self.0.take());
            }
        }
        if held.is_none() {
            return;
        }
        // The pointer is derived from the husk's reference, not from `held` before the
        // husk took it: moving `held` into the husk would invalidate a pointer made
        // from it earlier (Miri's Stacked Borrows reports the read as undefined).
        let husk = Husk(held);
        let Some(value) = husk.0.as_mut() else {
            unreachable!("checked above")
        };
        let (finished, data): (_, *mut Storage) = (value.vtable.finished, &mut value.data);
        // SAFETY: the value is taken out exactly once, here; the husk left behind is
        // forgotten, never dropped. `data` stays valid: nothing touches the place
        // until the husk drops, after this call.
        unsafe { finished(data, result) }
    }
}

impl Drop for HeldValue {
    fn drop(&mut self) {
        // SAFETY: the value is still there (`finished` consumes without dropping).
        unsafe { (self.vtable.drop)(&mut self.data) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    struct Probe {
        log: Rc<Cell<(i32, u32)>>,
        _pad: [u64; 2],
    }

    impl Held for Probe {
        fn finished(self, result: i32) {
            let (_, drops) = self.log.get();
            self.log.set((result, drops));
        }
    }

    impl Drop for Probe {
        fn drop(&mut self) {
            let (r, drops) = self.log.get();
            self.log.set((r, drops + 1));
        }
    }

    struct Big {
        inner: Probe,
        _pad: [u64; 16],
    }

    impl Held for Big {
        fn finished(self, result: i32) {
            let Big { inner, .. } = self;
            inner.finished(result);
        }
    }

    #[test]
    fn inline_and_boxed_values_finish_or_drop_exactly_once() {
        let log = Rc::new(Cell::new((0, 0)));
        let probe = || Probe {
            log: log.clone(),
            _pad: [0; 2],
        };
        HeldValue::new(probe()).finished(7);
        assert_eq!(
            log.get(),
            (7, 1),
            "finished with its result, then dropped once"
        );
        drop(HeldValue::new(probe()));
        assert_eq!(log.get(), (7, 2), "dropped unfinished: dropped once");
        let big = || Big {
            inner: probe(),
            _pad: [0; 16],
        };
        assert!(size_of::<Big>() > size_of::<Storage>(), "this one is boxed");
        HeldValue::new(big()).finished(-5);
        assert_eq!(log.get(), (-5, 3));
        drop(HeldValue::new(big()));
        assert_eq!(log.get(), (-5, 4));
        // Moving the holder (the slot table grows) keeps the value intact.
        let v = vec![HeldValue::new(probe())];
        let mut moved = Vec::with_capacity(64);
        moved.extend(v);
        moved.pop().unwrap().finished(1);
        assert_eq!(log.get(), (1, 5));
        // Finished where it is kept: once, dropped once, and the place is left empty.
        let mut kept = Some(HeldValue::new(probe()));
        HeldValue::finish_in_place(&mut kept, 9);
        assert!(kept.is_none());
        assert_eq!(log.get(), (9, 6));
        let mut kept = Some(HeldValue::new(big()));
        HeldValue::finish_in_place(&mut kept, 10);
        assert!(kept.is_none());
        assert_eq!(log.get(), (10, 7));
        HeldValue::finish_in_place(&mut kept, 11);
        assert_eq!(log.get(), (10, 7), "nothing kept: nothing to finish");
        // Built in place, inline and boxed: finished and dropped once each.
        HeldValue::put(&mut kept, probe);
        HeldValue::finish_in_place(&mut kept, 12);
        assert_eq!(log.get(), (12, 8));
        HeldValue::put(&mut kept, big);
        drop(kept.take());
        assert_eq!(log.get(), (12, 9));
        // A maker that panics leaves the place empty (nothing to drop later).
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            HeldValue::put(&mut kept, || -> Probe { panic!("no value") })
        }));
        assert!(panicked.is_err());
        assert!(kept.is_none(), "a failed put leaves the place empty");
        assert_eq!(log.get(), (12, 9), "nothing finished or dropped");
    }
}
