//! The [`Key`] that names an item in a [`DelayQueue`](super::DelayQueue),
//! and the keys kept valid across [`compact`](super::DelayQueue::compact),
//! which moves items to new places in the queue's wheel.
//!
//! A key is the item's wheel id when it was inserted. `compact` gives a
//! moved item a new id and records the rename both ways: the key its owner
//! holds → the id now, to find the item, and the id → the key, to hand the
//! key back when the item comes out. Until the first `compact` both maps
//! are empty, and a key is its id. A stale key cannot be mistaken for a
//! renamed item: wheel ids are generational, and the new ids are ones no
//! key was ever made from (see [`wheel_core::Wheel::compact`]).

use std::collections::HashMap;

use wheel_core::TimerId;

/// Names an item in a [`DelayQueue`](super::DelayQueue), as
/// `tokio_util::time::Key` does. Once the item has expired or been removed
/// the key names nothing, even if the queue reuses the place for a new
/// item; [`compact`](super::DelayQueue::compact) keeps keys valid.
///
/// # Examples
/// ```
/// use std::time::Duration;
///
/// let timers = wheel_sync::TimerService::new();
/// let mut queue = wheel_sync::DelayQueue::with_service(&timers);
/// let key = queue.insert("session 7", Duration::from_secs(30));
/// assert_eq!(queue.remove(&key).into_inner(), "session 7");
/// assert!(queue.try_remove(&key).is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key(pub(super) TimerId);

/// The renames `compact` made, for the items still in the queue.
#[derive(Default)]
pub(super) struct Renames {
    /// The key an owner holds → the item's id now.
    ids: HashMap<Key, TimerId>,
    /// The item's id now → the key its owner holds.
    keys: HashMap<TimerId, Key>,
}

impl Renames {
    /// The id of the item `key` names (if any still does).
    #[inline]
    pub(super) fn id(&self, key: &Key) -> TimerId {
        if self.ids.is_empty() {
            return key.0;
        }
        self.ids.get(key).copied().unwrap_or(key.0)
    }

    /// The key of the item whose id is `id`.
    #[inline]
    pub(super) fn key(&self, id: TimerId) -> Key {
        if self.keys.is_empty() {
            return Key(id);
        }
        self.keys.get(&id).copied().unwrap_or(Key(id))
    }

    /// The item whose id was `old` is now at `new`.
    pub(super) fn moved(&mut self, old: TimerId, new: TimerId) {
        let key = self.keys.remove(&old).unwrap_or(Key(old));
        self.ids.insert(key, new);
        self.keys.insert(new, key);
    }

    /// The item whose id is `id` left the queue.
    #[inline]
    pub(super) fn forget(&mut self, id: TimerId) {
        if self.keys.is_empty() {
            return;
        }
        if let Some(key) = self.keys.remove(&id) {
            self.ids.remove(&key);
        }
    }

    /// Every item left the queue.
    pub(super) fn clear(&mut self) {
        self.ids.clear();
        self.keys.clear();
    }

    /// Gives back what the maps no longer need.
    pub(super) fn shrink_to_fit(&mut self) {
        self.ids.shrink_to_fit();
        self.keys.shrink_to_fit();
    }
}
