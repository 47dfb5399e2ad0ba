//! The driver's ends of the spots' queues: a queue per spot, so that a
//! thread's pushes write a tail that only the threads of its spot write
//! (see `shared`, rule 2), and the driver takes from all of them.

use crate::queue::Consumer;
use crate::shared::Message;

/// The consuming ends of every spot's queue.
pub(crate) struct Inbox {
    queues: Box<[Consumer<Message>]>,
    /// The queue `pop` takes from next.
    at: usize,
}

impl Inbox {
    pub(crate) fn new(queues: Vec<Consumer<Message>>) -> Self {
        Self {
            queues: queues.into_boxed_slice(),
            at: 0,
        }
    }

    /// Starts a round's popping one queue further on than the last round
    /// ended, so that a flood on one spot keeps no other spot's messages
    /// waiting more than a round.
    pub(crate) fn next_round(&mut self) {
        self.turn();
    }

    /// The next message: from the queue it popped from last, else from
    /// the next in turn. Each queue keeps its order: a place claimed and
    /// not yet written holds up its own queue alone.
    pub(crate) fn pop(&mut self) -> Option<Message> {
        for _ in 0..self.queues.len() {
            if let Some(message) = self.queues[self.at].pop() {
                return Some(message);
            }
            self.turn();
        }
        None
    }

    /// On to the next queue.
    fn turn(&mut self) {
        self.at += 1;
        if self.at == self.queues.len() {
            self.at = 0;
        }
    }

    /// Whether no place is claimed in any queue and not yet taken.
    pub(crate) fn is_empty(&self) -> bool {
        self.queues.iter().all(Consumer::is_empty)
    }

    /// Whether some queue's next place is written: what `pop` takes now.
    pub(crate) fn has_ready(&self) -> bool {
        self.queues.iter().any(Consumer::has_ready)
    }

    /// Closes every queue (see `shared`, rule 7).
    pub(crate) fn close(&mut self) {
        self.queues.iter_mut().for_each(Consumer::close);
    }
}
