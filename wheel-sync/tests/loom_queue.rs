//! Loom models of the submission queue: across every interleaving of a few producers and
//! the consumer (within the preemption bound), no item is lost, duplicated, reordered or
//! leaked, and items come out in the order of the sequence numbers their pushes returned.
//!
//! Under loom a block holds 2 places, so any model with 3 pushes crosses a block boundary.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p wheel-sync --release --test loom_queue`.
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use wheel_sync::__private::queue::{channel, Consumer};

/// Runs `f` in every interleaving loom explores; `LOOM_MAX_PREEMPTIONS` overrides the
/// default bound of 3 preemptions, which keeps each model to seconds.
fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(3);
    builder.check(f);
}

/// An item that counts its drops, to prove each is dropped exactly once.
struct Item {
    producer: usize,
    index: usize,
    drops: Arc<AtomicUsize>,
}

impl Drop for Item {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

/// What one model run saw.
struct Run {
    /// `(producer, index)` of each popped item, in pop order.
    popped: Vec<(usize, usize)>,
    /// The sequence numbers each producer's pushes returned, in push order.
    seqs: Vec<Vec<u64>>,
    drops: Arc<AtomicUsize>,
}

/// Starts one thread per entry of `pushes`, thread `p` pushing `pushes[p]` items, while
/// the consumer tries `concurrent_pops` pops; then joins the producers. The consumer is
/// returned so the caller decides whether to drain it or drop it with items inside.
fn run_producers(pushes: &[usize], concurrent_pops: usize) -> (Consumer<Item>, Run) {
    let drops = Arc::new(AtomicUsize::new(0));
    let (producer, mut consumer) = channel::<Item>();
    let handles: Vec<_> = pushes
        .iter()
        .enumerate()
        .map(|(p, &count)| {
            let producer = producer.clone();
            let drops = Arc::clone(&drops);
            thread::spawn(move || {
                (0..count)
                    .map(|index| {
                        producer
                            .push(Item {
                                producer: p,
                                index,
                                drops: Arc::clone(&drops),
                            })
                            .expect("no one closes this queue")
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    drop(producer);

    let mut popped = Vec::new();
    for _ in 0..concurrent_pops {
        if let Some(item) = consumer.pop() {
            popped.push((item.producer, item.index));
        }
    }
    let seqs = handles
        .into_iter()
        .map(|h| h.join().expect("producer panicked"))
        .collect();
    let run = Run {
        popped,
        seqs,
        drops,
    };
    (consumer, run)
}

/// Pushes concurrently with some pops, then drains everything after the joins.
fn run_and_drain(pushes: &[usize], concurrent_pops: usize) -> Run {
    let (mut consumer, mut run) = run_producers(pushes, concurrent_pops);
    while let Some(item) = consumer.pop() {
        run.popped.push((item.producer, item.index));
    }
    drop(consumer);
    run
}

/// Every pushed item was popped once, in sequence-number order (hence FIFO per producer),
/// and dropped once.
fn check(run: &Run, pushes: &[usize]) {
    let total: usize = pushes.iter().sum();
    assert_eq!(run.popped.len(), total, "popped {:?}", run.popped);
    for (p, seqs) in run.seqs.iter().enumerate() {
        assert_eq!(seqs.len(), pushes[p]);
        for (index, &seq) in seqs.iter().enumerate() {
            let at = usize::try_from(seq).expect("sequence number fits usize");
            assert_eq!(
                run.popped.get(at),
                Some(&(p, index)),
                "item {index} of producer {p} had seq {seq}; popped {:?}",
                run.popped
            );
        }
    }
    assert_eq!(run.drops.load(Ordering::Relaxed), total);
}

#[test]
fn two_producers_and_a_concurrent_consumer() {
    model(|| {
        let pushes = [1, 1];
        check(&run_and_drain(&pushes, 2), &pushes);
    });
}

#[test]
fn three_producers_one_item_each() {
    model(|| {
        let pushes = [1, 1, 1];
        check(&run_and_drain(&pushes, 2), &pushes);
    });
}

#[test]
fn fifo_per_producer_across_a_block_boundary() {
    model(|| {
        // Four pushes fill two blocks and install a third, with the consumer racing along.
        let pushes = [2, 2];
        check(&run_and_drain(&pushes, 4), &pushes);
    });
}

#[test]
fn dropping_the_queue_with_items_inside_drops_each_once() {
    model(|| {
        let pushes = [2, 1];
        let (consumer, run) = run_producers(&pushes, 1);
        // Sequence numbers are a permutation of 0..3 even when nothing drains the queue.
        let mut all: Vec<u64> = run.seqs.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, [0, 1, 2]);
        // The one early pop, if it got an item, got sequence number 0.
        if let Some(&(p, index)) = run.popped.first() {
            assert_eq!(run.seqs[p][index], 0);
        }
        assert_eq!(run.drops.load(Ordering::Relaxed), run.popped.len());
        drop(consumer);
        assert_eq!(run.drops.load(Ordering::Relaxed), 3);
    });
}

#[test]
fn consumer_dropped_while_producers_push() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (producer, consumer) = channel::<Item>();
        let handles: Vec<_> = (0..2)
            .map(|p| {
                let producer = producer.clone();
                let drops = Arc::clone(&drops);
                thread::spawn(move || {
                    for index in 0..2 - p {
                        producer
                            .push(Item {
                                producer: p,
                                index,
                                drops: Arc::clone(&drops),
                            })
                            .expect("no one closes this queue");
                    }
                })
            })
            .collect();
        drop(producer);
        // Whichever handle goes last, the consumer's or a producer's, frees the queue.
        drop(consumer);
        for handle in handles {
            handle.join().expect("producer panicked");
        }
        assert_eq!(drops.load(Ordering::Relaxed), 3);
    });
}

/// The consumer closes the queue while two producers push across a block boundary: each
/// push is either refused, its item given back, or popped once after the close, when the
/// queue's length reads zero. A close that set its bit while a block was being installed
/// would be undone by the install's store of `tail`: a push after it would be accepted and
/// never popped.
#[test]
fn a_close_racing_pushes_refuses_each_or_delivers_it() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (producer, mut consumer) = channel::<Item>();
        let handles: Vec<_> = (0..2)
            .map(|p| {
                let producer = producer.clone();
                let drops = Arc::clone(&drops);
                thread::spawn(move || {
                    let mut accepted = Vec::new();
                    for index in 0..2 - p {
                        let item = Item {
                            producer: p,
                            index,
                            drops: Arc::clone(&drops),
                        };
                        if producer.push(item).is_ok() {
                            accepted.push((p, index));
                        }
                    }
                    accepted
                })
            })
            .collect();
        drop(producer);
        let mut popped = Vec::new();
        // A place already claimed before the close is written however late: wait for it.
        while let Some(item) = consumer.pop() {
            popped.push((item.producer, item.index));
        }
        consumer.close();
        while !consumer.is_empty() {
            match consumer.pop() {
                Some(item) => popped.push((item.producer, item.index)),
                None => thread::yield_now(),
            }
        }
        let mut accepted: Vec<_> = handles
            .into_iter()
            .flat_map(|h| h.join().expect("producer panicked"))
            .collect();
        // Nothing pushed after the close is waiting in the queue.
        assert!(consumer.pop().is_none());
        accepted.sort_unstable();
        popped.sort_unstable();
        assert_eq!(popped, accepted);
        drop(consumer);
        assert_eq!(drops.load(Ordering::Relaxed), 3);
    });
}
