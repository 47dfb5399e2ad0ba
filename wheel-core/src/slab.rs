//! Timer storage: a slab of entries addressed by `u32` index, each with a
//! generation so that a stale [`TimerId`] can never touch a newer timer.
//!
//! The slab does not care whether its entries live in a `Vec` or an array:
//! that is the [`Storage`] type parameter, so one wheel implementation serves
//! both [`Wheel`](crate::Wheel) and [`FixedWheel`](crate::FixedWheel).

use crate::Expired;

/// The "no entry" index: ends lists and the free list.
pub(crate) const NIL: u32 = u32::MAX;

pub use crate::timer_id::TimerId;

mod sealed {
    /// Where a timer is: its deadline and its links in a slot list. Kept
    /// apart from the values so that cascades and unlinks, which touch only
    /// links, walk 16 bytes per timer (16 MB for a million), not whole entries.
    #[derive(Clone, Copy)]
    pub struct Link {
        pub(crate) deadline: u64,
        pub(crate) prev: u32,
        pub(crate) next: u32,
    }

    impl Link {
        pub(crate) const UNUSED: Self = Self {
            deadline: 0,
            prev: super::NIL,
            next: super::NIL,
        };
    }

    /// One slab entry. Public only inside this private module, so users can
    /// name [`Storage`](super::Storage) but never implement or call into it.
    /// The generation lives in both variants so it shares the tag's padding:
    /// even a 16-byte-aligned value costs no more than 32 bytes of overhead.
    pub enum Entry<T> {
        Vacant { generation: u32, next_free: u32 },
        Occupied { generation: u32, value: T },
    }

    pub trait Sealed<T> {
        /// The heads of a slot's lists in a wheel over this storage: how
        /// many lists a slot has (see `level::Heads`).
        type Heads: crate::level::Heads;
        fn links(&self) -> &[Link];
        fn links_mut(&mut self) -> &mut [Link];
        /// The link at `index`, which the slab keeps below the entries'
        /// length.
        fn link(&self, index: usize) -> &Link;
        /// The link at `index`, mutably.
        fn link_mut(&mut self, index: usize) -> &mut Link;
        fn entries(&self) -> &[Entry<T>];
        fn entries_mut(&mut self) -> &mut [Entry<T>];
        /// Appends a timer's link and its entry, or hands the value back
        /// when there is no room; returns the generation the entry got.
        fn try_push(&mut self, link: Link, value: T) -> Result<u32, T>;
        /// How many entries fit without reallocating.
        fn capacity(&self) -> usize;
    }
}
use sealed::Entry;
pub(crate) use sealed::{Link, Sealed};

/// Where a wheel keeps its entries: [`VecStorage`] (grows) or
/// [`ArrayStorage`] (fixed, never allocates). Sealed.
///
/// # Examples
/// ```
/// use wheel_core::{ArrayStorage, Storage, TimerWheel};
///
/// fn pending<T, S: Storage<T>>(wheel: &TimerWheel<T, S>) -> usize {
///     wheel.len()
/// }
/// let wheel: TimerWheel<u8, ArrayStorage<u8, 4>> = TimerWheel::with_geometry(0);
/// assert_eq!(pending(&wheel), 0);
/// ```
pub trait Storage<T>: sealed::Sealed<T> {}

/// Growable storage: `Vec`s of entries and links. Backs [`Wheel`](crate::Wheel).
///
/// # Examples
/// ```
/// use wheel_core::{TimerWheel, VecStorage};
///
/// let mut wheel: TimerWheel<&str, VecStorage<&str>, 16, 16> = TimerWheel::with_geometry(0);
/// wheel.try_insert(300, "a").unwrap();
/// assert_eq!(wheel.next_expiration(), Some(256)); // a level-2 slot starts there
/// ```
#[cfg(feature = "alloc")]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub struct VecStorage<T> {
    links: alloc::vec::Vec<Link>,
    entries: alloc::vec::Vec<Entry<T>>,
    /// The generation a brand-new entry starts at: past every generation
    /// of the entries a shrink dropped, so their stale ids stay inert.
    fresh_generation: u32,
}

#[cfg(feature = "alloc")]
impl<T> Default for VecStorage<T> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

#[cfg(feature = "alloc")]
impl<T> VecStorage<T> {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            links: alloc::vec::Vec::with_capacity(capacity),
            entries: alloc::vec::Vec::with_capacity(capacity),
            fresh_generation: 0,
        }
    }

    pub(crate) fn reserve(&mut self, additional: usize) {
        self.links.reserve(additional);
        self.entries.reserve(additional);
    }
}

#[cfg(feature = "alloc")]
impl<T> sealed::Sealed<T> for VecStorage<T> {
    /// Four lists a slot: a growable wheel can outgrow the cache, and its
    /// cascades then walk four chains of misses at once.
    type Heads = [u32; 4];
    #[inline]
    fn links(&self) -> &[Link] {
        &self.links
    }
    #[inline]
    fn links_mut(&mut self) -> &mut [Link] {
        &mut self.links
    }
    // Indexed: a `Wheel` is not among the types promised panic-free, and
    // its hot paths keep the plain bounds check.
    #[inline(always)]
    fn link(&self, index: usize) -> &Link {
        &self.links[index]
    }
    #[inline(always)]
    fn link_mut(&mut self, index: usize) -> &mut Link {
        &mut self.links[index]
    }
    #[inline]
    fn entries(&self) -> &[Entry<T>] {
        &self.entries
    }
    #[inline]
    fn entries_mut(&mut self) -> &mut [Entry<T>] {
        &mut self.entries
    }
    #[inline]
    fn try_push(&mut self, link: Link, value: T) -> Result<u32, T> {
        // NIL is reserved, and u32::MAX - 1 too (see `TimerId::to_bits`).
        if self.entries.len() >= (NIL - 1) as usize {
            return Err(value);
        }
        let generation = self.fresh_generation;
        self.links.push(link);
        self.entries.push(Entry::Occupied { generation, value });
        Ok(generation)
    }
    fn capacity(&self) -> usize {
        self.entries.capacity().min((NIL - 1) as usize)
    }
}

#[cfg(feature = "alloc")]
impl<T> Storage<T> for VecStorage<T> {}

/// Fixed storage for exactly `N` timers, inline, never allocating. Backs
/// [`FixedWheel`](crate::FixedWheel).
///
/// # Examples
/// ```
/// use wheel_core::FixedWheel;
///
/// let mut wheel: FixedWheel<u32, 2> = FixedWheel::new();
/// assert!(wheel.try_insert(1, 1).is_ok());
/// assert!(wheel.try_insert(2, 2).is_ok());
/// assert!(wheel.try_insert(3, 3).is_err());
/// ```
pub struct ArrayStorage<T, const N: usize> {
    links: [Link; N],
    entries: [Entry<T>; N],
    used: usize,
    /// Where a write to a link past the array would go: never happens, but
    /// lets `link_mut` answer every index without a panic path.
    spare: Link,
}

impl<T, const N: usize> ArrayStorage<T, N> {
    /// Room for `N` timers, none used; `const` so that a wheel can be a `static`.
    pub(crate) const fn new() -> Self {
        const {
            assert!(
                N < (NIL - 1) as usize,
                "FixedWheel capacity must be below u32::MAX - 1"
            )
        };
        Self {
            links: [Link::UNUSED; N],
            entries: [const {
                Entry::Vacant {
                    generation: 0,
                    next_free: NIL,
                }
            }; N],
            used: 0,
            spare: Link::UNUSED,
        }
    }
}

impl<T, const N: usize> Default for ArrayStorage<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> sealed::Sealed<T> for ArrayStorage<T, N> {
    /// One list a slot: a fixed wheel is small, or on a core without a
    /// cache, so a slot is one head, a quarter of the tables.
    type Heads = [u32; 1];
    // `used` never passes `N`; `get` says so without a panic path.
    #[inline]
    fn links(&self) -> &[Link] {
        self.links.get(..self.used).unwrap_or_default()
    }
    #[inline]
    fn links_mut(&mut self) -> &mut [Link] {
        self.links.get_mut(..self.used).unwrap_or_default()
    }
    // Past the array (never reached), an unused link to read and a spare
    // one to write: a lookup without a panic path.
    #[inline(always)]
    fn link(&self, index: usize) -> &Link {
        self.links.get(index).unwrap_or(&Link::UNUSED)
    }
    #[inline(always)]
    fn link_mut(&mut self, index: usize) -> &mut Link {
        match self.links.get_mut(index) {
            Some(link) => link,
            None => &mut self.spare,
        }
    }
    #[inline]
    fn entries(&self) -> &[Entry<T>] {
        self.entries.get(..self.used).unwrap_or_default()
    }
    #[inline]
    fn entries_mut(&mut self) -> &mut [Entry<T>] {
        self.entries.get_mut(..self.used).unwrap_or_default()
    }
    #[inline]
    fn try_push(&mut self, link: Link, value: T) -> Result<u32, T> {
        let (Some(free_link), Some(free_entry)) = (
            self.links.get_mut(self.used),
            self.entries.get_mut(self.used),
        ) else {
            return Err(value);
        };
        *free_link = link;
        *free_entry = Entry::Occupied {
            generation: 0,
            value,
        };
        self.used += 1;
        Ok(0)
    }
    fn capacity(&self) -> usize {
        N
    }
}

impl<T, const N: usize> Storage<T> for ArrayStorage<T, N> {}

/// The entries and links plus a free list threaded through the vacant entries.
pub(crate) struct Slab<T, S> {
    storage: S,
    free_head: u32,
    len: u32,
    _marker: core::marker::PhantomData<T>,
}

impl<T, S> Slab<T, S> {
    pub(crate) const fn new(storage: S) -> Self {
        Self {
            storage,
            free_head: NIL,
            len: 0,
            _marker: core::marker::PhantomData,
        }
    }
}

impl<T, S: Storage<T>> Slab<T, S> {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    #[inline]
    pub(crate) fn storage(&self) -> &S {
        &self.storage
    }

    #[cfg(feature = "alloc")]
    #[inline]
    pub(crate) fn storage_mut(&mut self) -> &mut S {
        &mut self.storage
    }

    /// How many entries exist (occupied or vacant): indexes below this are valid.
    #[inline]
    pub(crate) fn entries_len(&self) -> usize {
        self.storage.entries().len()
    }

    /// Stores a timer due at `deadline` (unlinked), or hands `value` back
    /// when storage is full.
    #[inline]
    pub(crate) fn insert(&mut self, deadline: u64, value: T) -> Result<TimerId, T> {
        let link = Link {
            deadline,
            prev: NIL,
            next: NIL,
        };
        if self.free_head != NIL {
            let index = self.free_head;
            // The free list holds only vacant entries, so this always
            // matches; a broken one would report the wheel full.
            let Some(entry) = self.storage.entries_mut().get_mut(index as usize) else {
                return Err(value);
            };
            let Entry::Vacant {
                generation,
                next_free,
            } = *entry
            else {
                return Err(value);
            };
            *entry = Entry::Occupied { generation, value };
            self.free_head = next_free;
            *self.link_mut(index) = link;
            self.len += 1;
            return Ok(TimerId { index, generation });
        }
        let index = self.entries_len() as u32;
        let generation = self.storage.try_push(link, value)?;
        self.len += 1;
        Ok(TimerId { index, generation })
    }

    /// The index of `id`'s entry if `id` is live.
    #[inline]
    pub(crate) fn index_of(&self, id: TimerId) -> Option<u32> {
        match self.storage.entries().get(id.index as usize) {
            Some(Entry::Occupied { generation, .. }) if *generation == id.generation => {
                Some(id.index)
            }
            _ => None,
        }
    }

    /// The id of the pending timer stored at `index`, if there is one.
    #[inline]
    pub(crate) fn id_at(&self, index: u32) -> Option<TimerId> {
        match self.storage.entries().get(index as usize) {
            Some(Entry::Occupied { generation, .. }) => Some(TimerId {
                index,
                generation: *generation,
            }),
            _ => None,
        }
    }

    /// The value pending at `index`, whichever timer it is.
    #[inline]
    pub(crate) fn value_at(&self, index: u32) -> Option<&T> {
        match self.storage.entries().get(index as usize) {
            Some(Entry::Occupied { value, .. }) => Some(value),
            _ => None,
        }
    }

    /// The link at `index` (any index below `entries_len`).
    #[inline(always)]
    pub(crate) fn link(&self, index: u32) -> &Link {
        self.storage.link(index as usize)
    }

    /// The link at `index`, mutably.
    #[inline(always)]
    pub(crate) fn link_mut(&mut self, index: u32) -> &mut Link {
        self.storage.link_mut(index as usize)
    }

    /// The value of `id`'s timer if `id` is live.
    #[inline]
    pub(crate) fn get(&self, id: TimerId) -> Option<&T> {
        match self.storage.entries().get(id.index as usize) {
            Some(Entry::Occupied { generation, value }) if *generation == id.generation => {
                Some(value)
            }
            _ => None,
        }
    }

    /// The value of `id`'s timer if `id` is live, mutably.
    #[inline]
    pub(crate) fn get_mut(&mut self, id: TimerId) -> Option<&mut T> {
        match self.storage.entries_mut().get_mut(id.index as usize) {
            Some(Entry::Occupied { generation, value }) if *generation == id.generation => {
                Some(value)
            }
            _ => None,
        }
    }

    /// Whether the entry at `index` is occupied.
    #[inline]
    pub(crate) fn is_occupied(&self, index: usize) -> bool {
        matches!(
            self.storage.entries().get(index),
            Some(Entry::Occupied { .. })
        )
    }

    /// Frees a live index, staling its id; returns the timer (`None` if
    /// `index` is vacant, which callers rule out).
    #[inline]
    pub(crate) fn remove(&mut self, index: u32) -> Option<Expired<T>> {
        let free_head = self.free_head;
        let entry = self.storage.entries_mut().get_mut(index as usize)?;
        let Entry::Occupied { generation, .. } = *entry else {
            return None;
        };
        let vacant = Entry::Vacant {
            generation: generation.wrapping_add(1),
            next_free: free_head,
        };
        let Entry::Occupied { value, .. } = core::mem::replace(entry, vacant) else {
            return None;
        };
        let id = TimerId { index, generation };
        self.free_head = index;
        self.len -= 1;
        Some(Expired {
            id,
            deadline: self.link(index).deadline,
            value,
        })
    }

    /// Counts the free list, for invariant checks.
    pub(crate) fn free_count(&self) -> usize {
        let mut count = 0;
        let mut index = self.free_head;
        while index != NIL {
            count += 1;
            match self.storage.entries()[index as usize] {
                Entry::Vacant { next_free, .. } => index = next_free,
                Entry::Occupied { .. } => panic!("free list reaches occupied entry {index}"),
            }
        }
        count
    }
}

#[cfg(feature = "alloc")]
impl<T> Slab<T, VecStorage<T>> {
    /// Drops the vacant entries past the last occupied one, if they are at
    /// least half of the entries, and gives the spare memory back; the free
    /// list is then threaded again lowest index first, so that what is
    /// inserted next keeps the storage short. That threading is O(entries),
    /// so a shorter vacant tail stays: a shrink tried again and again as
    /// timers scattered over the storage drain costs O(tail) each time, and
    /// the O(entries) pass is paid only with as many entries given back.
    pub(crate) fn shrink_to_fit(&mut self) {
        let keep = self.occupied_len();
        if 2 * keep > self.storage.entries.len() {
            self.storage.entries.shrink_to_fit();
            self.storage.links.shrink_to_fit();
            return;
        }
        self.truncate(keep);
    }

    /// One past the last occupied entry.
    pub(crate) fn occupied_len(&self) -> usize {
        self.storage
            .entries
            .iter()
            .rposition(|e| matches!(e, Entry::Occupied { .. }))
            .map_or(0, |last| last + 1)
    }

    /// Drops the entries from `keep` on, all vacant, gives the memory
    /// back, and threads the free list again, lowest index first, through
    /// what is left: so that what is inserted next keeps the storage short,
    /// and so that a free list left stale by [`Self::move_entry`] is whole
    /// again. O(entries).
    pub(crate) fn truncate(&mut self, keep: usize) {
        let entries = &mut self.storage.entries;
        let keep = keep.min(entries.len());
        for entry in &entries[keep..] {
            debug_assert!(matches!(entry, Entry::Vacant { .. }), "truncating a timer");
            if let Entry::Vacant { generation, .. } = *entry {
                // A vacant entry holds the generation its next use gets.
                let fresh = &mut self.storage.fresh_generation;
                *fresh = (*fresh).max(generation);
            }
        }
        entries.truncate(keep);
        entries.shrink_to_fit();
        self.storage.links.truncate(keep);
        self.storage.links.shrink_to_fit();
        let mut free_head = NIL;
        for (index, entry) in entries.iter_mut().enumerate().rev() {
            if let Entry::Vacant { next_free, .. } = entry {
                *next_free = free_head;
                free_head = index as u32;
            }
        }
        self.free_head = free_head;
    }

    /// Moves the timer at `from` into the vacant entry `to`, with its
    /// deadline (not its list links); returns its old id and its new one.
    /// `None`, moving nothing, unless `from` is occupied and `to` vacant.
    /// The free list is stale afterwards, still holding `to`: only
    /// [`Self::truncate`] may follow.
    pub(crate) fn move_entry(&mut self, from: u32, to: u32) -> Option<(TimerId, TimerId)> {
        let entries = &mut self.storage.entries;
        let (
            Some(Entry::Occupied { generation, .. }),
            Some(&Entry::Vacant {
                generation: new, ..
            }),
        ) = (entries.get(from as usize), entries.get(to as usize))
        else {
            return None;
        };
        let old = TimerId {
            index: from,
            generation: *generation,
        };
        let vacant = Entry::Vacant {
            generation: old.generation.wrapping_add(1),
            next_free: NIL,
        };
        let Entry::Occupied { value, .. } = core::mem::replace(&mut entries[from as usize], vacant)
        else {
            return None;
        };
        entries[to as usize] = Entry::Occupied {
            generation: new,
            value,
        };
        let deadline = self.link(from).deadline;
        self.link_mut(to).deadline = deadline;
        Some((
            old,
            TimerId {
                index: to,
                generation: new,
            },
        ))
    }
}
