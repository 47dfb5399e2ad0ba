//! The `wheel-sync` submission queue driven from one thread against a
//! `VecDeque`, with items that record their own drops so a leak or a double
//! drop is caught even without a sanitizer (and under ASan, a use after free
//! of the boxed payload too).

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use arbitrary::{Arbitrary, Unstructured};
use wheel_sync::__private::queue::{channel, Consumer, Producer};

/// Most ops decoded from one input.
pub const MAX_OPS: usize = 256;

/// Most items one [`QueueOp::PushMany`] pushes or [`QueueOp::PopMany`]
/// pops: more than the queue's 256-slot block, so one burst crosses a block
/// boundary.
pub const MAX_BURST: usize = 300;

/// One operation on the queue's handles.
///
/// # Examples
/// ```
/// use wheel_model::queue_ops::{run, QueueOp};
///
/// run(&[QueueOp::Clone(0), QueueOp::Push(1), QueueOp::DropConsumer, QueueOp::Push(0)]);
/// ```
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueOp {
    /// Push one item from the n-th live producer (mod their number).
    Push(u8),
    /// Push `count % (MAX_BURST + 1)` items from the n-th live producer.
    PushMany {
        /// Which producer.
        producer: u8,
        /// How many items, mod `MAX_BURST + 1`.
        count: u16,
    },
    /// Pop one item; `None` exactly when the model is empty.
    Pop,
    /// Pop `n % (MAX_BURST + 1)` times.
    PopMany(u16),
    /// Clone the n-th live producer.
    Clone(u8),
    /// Drop the n-th live producer.
    DropProducer(u8),
    /// Drop the consumer: pushes go on, the items wait for the last producer.
    DropConsumer,
    /// Drop every handle with the items inside, then start a new channel.
    Restart,
}

/// Decodes up to [`MAX_OPS`] ops, stopping quietly when the data runs out.
///
/// # Examples
/// ```
/// use arbitrary::Unstructured;
///
/// let ops = wheel_model::queue_ops::decode_ops(&mut Unstructured::new(&[7; 40]));
/// assert!(!ops.is_empty());
/// ```
pub fn decode_ops(u: &mut Unstructured<'_>) -> Vec<QueueOp> {
    crate::decode_up_to(u, MAX_OPS)
}

/// Runs `ops` on a fresh channel and a `VecDeque`, checking every sequence
/// number, popped item and length, and that every item is dropped exactly
/// once: by its popper, or with the last handle.
///
/// # Panics
/// On the first disagreement, naming it.
///
/// # Examples
/// ```
/// use wheel_model::queue_ops::{run, QueueOp};
///
/// let ops = [
///     QueueOp::PushMany { producer: 0, count: 300 },
///     QueueOp::PopMany(257),
///     QueueOp::Restart, // 43 items inside
///     QueueOp::Push(0),
///     QueueOp::Pop,
/// ];
/// run(&ops);
/// ```
pub fn run(ops: &[QueueOp]) {
    let mut state = State::new();
    for (step, op) in ops.iter().enumerate() {
        state.apply(*op, step);
        state.check(step);
    }
    state.restart(ops.len());
}

/// Ids of the items not yet dropped.
type Ledger = Arc<Mutex<BTreeSet<u64>>>;

/// An item that removes itself from the ledger when dropped.
struct Tracked {
    id: u64,
    seq: u64,
    /// A heap allocation of its own, so ASan sees any use after free.
    payload: Box<u64>,
    ledger: Ledger,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        assert_eq!(*self.payload, !self.id, "item {} corrupted", self.id);
        let removed = self
            .ledger
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
        assert!(removed, "item {} dropped twice", self.id);
    }
}

struct State {
    producers: Vec<Producer<Tracked>>,
    consumer: Option<Consumer<Tracked>>,
    ledger: Ledger,
    /// `(id, seq)` of each item inside, oldest first.
    model: VecDeque<(u64, u64)>,
    next_seq: u64,
    next_id: u64,
}

impl State {
    fn new() -> Self {
        let (producer, consumer) = channel();
        State {
            producers: vec![producer],
            consumer: Some(consumer),
            ledger: Arc::default(),
            model: VecDeque::new(),
            next_seq: 0,
            next_id: 0,
        }
    }

    fn apply(&mut self, op: QueueOp, step: usize) {
        match op {
            QueueOp::Push(producer) => self.push(producer, 1, step),
            QueueOp::PushMany { producer, count } => {
                self.push(producer, usize::from(count) % (MAX_BURST + 1), step);
            }
            QueueOp::Pop => self.pop(step),
            QueueOp::PopMany(count) => {
                for _ in 0..usize::from(count) % (MAX_BURST + 1) {
                    self.pop(step);
                }
            }
            QueueOp::Clone(n) => {
                if let Some(producer) = self.producer(n) {
                    let clone = producer.clone();
                    self.producers.push(clone);
                }
            }
            QueueOp::DropProducer(n) => {
                if let Some(i) = self.index(n) {
                    self.producers.swap_remove(i);
                    self.restart_if_gone(step);
                }
            }
            QueueOp::DropConsumer => {
                self.consumer = None;
                self.restart_if_gone(step);
            }
            QueueOp::Restart => self.restart(step),
        }
    }

    /// Which live producer `n` picks; `None` when there is none.
    fn index(&self, n: u8) -> Option<usize> {
        (!self.producers.is_empty()).then(|| usize::from(n) % self.producers.len())
    }

    fn producer(&self, n: u8) -> Option<&Producer<Tracked>> {
        self.index(n).map(|i| &self.producers[i])
    }

    fn push(&mut self, producer: u8, count: usize, step: usize) {
        let Some(producer) = self.index(producer) else {
            return;
        };
        for _ in 0..count {
            let id = self.next_id;
            self.next_id += 1;
            let item = Tracked {
                id,
                seq: self.next_seq,
                payload: Box::new(!id),
                ledger: Arc::clone(&self.ledger),
            };
            self.ledger
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id);
            let seq = self.producers[producer]
                .push(item)
                .expect("the model never closes its queue");
            assert_eq!(seq, self.next_seq, "op {step}: push of item {id}");
            self.model.push_back((id, seq));
            self.next_seq += 1;
        }
    }

    fn pop(&mut self, step: usize) {
        let Some(consumer) = &mut self.consumer else {
            return;
        };
        let popped = consumer.pop().map(|item| (item.id, item.seq));
        assert_eq!(popped, self.model.pop_front(), "op {step}: pop");
    }

    /// Once no handle is left the channel must have dropped every item inside;
    /// then a new channel takes its place.
    fn restart_if_gone(&mut self, step: usize) {
        if self.producers.is_empty() && self.consumer.is_none() {
            self.restart(step);
        }
    }

    fn restart(&mut self, step: usize) {
        self.producers.clear();
        self.consumer = None;
        let leaked = self
            .ledger
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        assert!(
            leaked.is_empty(),
            "op {step}: items {leaked:?} outlived every handle"
        );
        *self = State::new();
    }

    fn check(&self, step: usize) {
        let expected = self.model.len();
        let alive = self
            .ledger
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        assert_eq!(
            alive, expected,
            "op {step}: {alive} items alive, {expected} inside"
        );
        for producer in &self.producers {
            assert_eq!(producer.len(), expected, "op {step}: Producer::len");
            assert_eq!(producer.is_empty(), expected == 0, "op {step}: is_empty");
        }
        if let Some(consumer) = &self.consumer {
            assert_eq!(consumer.len(), expected, "op {step}: Consumer::len");
            assert_eq!(consumer.is_empty(), expected == 0, "op {step}: is_empty");
        }
    }
}
