//! The queue's unit tests: order, length and exactly-once drops, across blocks and producers.

use super::*;
use crate::sync::atomic::AtomicUsize;
use crate::sync::thread;
use crate::sync::Arc;

/// Counts its own drops, to prove each item is dropped exactly once.
struct Counted {
    id: usize,
    drops: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

fn counted(id: usize, drops: &Arc<AtomicUsize>) -> Counted {
    Counted {
        id,
        drops: Arc::clone(drops),
    }
}

#[test]
fn fifo_single_producer() {
    let (producer, mut consumer) = channel();
    for i in 0..10u32 {
        assert_eq!(producer.push(i).unwrap(), u64::from(i));
    }
    let popped: Vec<u32> = core::iter::from_fn(|| consumer.pop()).collect();
    assert_eq!(popped, (0..10).collect::<Vec<_>>());
    assert_eq!(consumer.pop(), None);
}

#[test]
fn interleaved_push_pop_across_blocks() {
    let n = 5 * BLOCK_CAP + 3;
    let (producer, mut consumer) = channel();
    let mut expected = 0;
    for i in 0..n {
        assert_eq!(producer.push(i).unwrap(), i as u64);
        // Pop every other push so the consumer trails and blocks are freed mid-run.
        if i % 2 == 1 {
            assert_eq!(consumer.pop(), Some(expected));
            expected += 1;
        }
    }
    while let Some(v) = consumer.pop() {
        assert_eq!(v, expected);
        expected += 1;
    }
    assert_eq!(expected, n);
    // The queue keeps working after it has drained past several blocks.
    assert_eq!(producer.push(99).unwrap(), n as u64);
    assert_eq!(consumer.pop(), Some(99));
}

#[test]
fn len_tracks_pushes_and_pops() {
    let (producer, mut consumer) = channel();
    assert!(producer.is_empty() && consumer.is_empty());
    for i in 0..(2 * BLOCK_CAP + 1) {
        producer.push(i).unwrap();
        assert_eq!(producer.len(), i + 1);
    }
    for left in (0..(2 * BLOCK_CAP + 1)).rev() {
        consumer.pop();
        assert_eq!(consumer.len(), left);
        assert_eq!(producer.len(), left);
    }
    assert!(producer.is_empty() && consumer.is_empty());
    assert_eq!(consumer.pop(), None);
    assert_eq!(consumer.len(), 0);
}

#[test]
fn drop_with_items_inside_drops_each_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let pushed = 3 * BLOCK_CAP + 5;
    let popped = BLOCK_CAP + 2;
    let (producer, mut consumer) = channel();
    for id in 0..pushed {
        producer.push(counted(id, &drops)).unwrap();
    }
    for id in 0..popped {
        assert_eq!(consumer.pop().map(|item| item.id), Some(id));
    }
    assert_eq!(drops.load(Ordering::Relaxed), popped);
    drop(consumer);
    // The producer still owns the queue: nothing more is dropped yet.
    assert_eq!(drops.load(Ordering::Relaxed), popped);
    producer.push(counted(pushed, &drops)).unwrap();
    drop(producer);
    assert_eq!(drops.load(Ordering::Relaxed), pushed + 1);
}

#[test]
fn drop_consumer_last_drops_remaining() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (producer, consumer) = channel();
    for id in 0..BLOCK_CAP {
        producer.push(counted(id, &drops)).unwrap();
    }
    drop(producer);
    assert_eq!(drops.load(Ordering::Relaxed), 0);
    drop(consumer);
    assert_eq!(drops.load(Ordering::Relaxed), BLOCK_CAP);
}

#[test]
fn multi_producer_every_item_once_in_producer_order() {
    const PRODUCERS: usize = 4;
    let per_producer: usize = if cfg!(miri) { 40 } else { 10_000 };
    let drops = Arc::new(AtomicUsize::new(0));
    let (producer, mut consumer) = channel::<(usize, usize, Counted)>();
    let handles: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let producer = producer.clone();
            let drops = Arc::clone(&drops);
            thread::spawn(move || {
                let mut seqs = Vec::with_capacity(per_producer);
                for i in 0..per_producer {
                    seqs.push(
                        producer
                            .push((p, i, counted(p * per_producer + i, &drops)))
                            .unwrap(),
                    );
                }
                seqs
            })
        })
        .collect();
    drop(producer);

    let total = PRODUCERS * per_producer;
    let mut next_index = [0usize; PRODUCERS];
    let mut order = Vec::with_capacity(total);
    while order.len() < total {
        match consumer.pop() {
            Some((p, i, item)) => {
                assert_eq!(i, next_index[p], "producer {p} out of order");
                assert_eq!(item.id, p * per_producer + i);
                next_index[p] += 1;
                order.push((p, i));
            }
            None => std::thread::yield_now(),
        }
    }
    assert_eq!(consumer.pop().map(|(p, i, _)| (p, i)), None);
    assert_eq!(next_index, [per_producer; PRODUCERS]);

    // The consumer saw items in sequence-number order: item k had sequence k.
    for (p, handle) in handles.into_iter().enumerate() {
        let seqs = handle.join().expect("producer thread panicked");
        assert!(seqs.windows(2).all(|w| w[0] < w[1]));
        for (i, seq) in seqs.into_iter().enumerate() {
            assert_eq!(order[seq as usize], (p, i));
        }
    }
    assert_eq!(drops.load(Ordering::Relaxed), total);
}

/// Whether a push has made the queue's first block.
fn has_block<T>(producer: &Producer<T>) -> bool {
    !producer
        .channel
        .tail
        .first
        .load(Ordering::Acquire)
        .is_null()
}

#[test]
fn a_queue_never_pushed_to_holds_no_block() {
    let (producer, mut consumer) = channel::<u32>();
    assert!(!has_block(&producer));
    assert!(!consumer.has_ready());
    assert_eq!(consumer.pop(), None);
    assert!(consumer.is_empty());
    consumer.close();
    assert_eq!(producer.push(1).map_err(|refused| refused.0), Err(1));
    // Refused before it claimed a place: still no block.
    assert!(!has_block(&producer));
}

/// A first push racing the close: either it lands and is popped, or it is
/// refused; whichever, a first block it made is freed with the queue (miri
/// reports a leak otherwise).
#[test]
fn a_first_push_racing_the_close_is_taken_or_refused_and_leaks_nothing() {
    let rounds = if cfg!(miri) { 8 } else { 200 };
    for _ in 0..rounds {
        let (producer, mut consumer) = channel();
        let drops = Arc::new(AtomicUsize::new(0));
        let pushing = {
            let drops = Arc::clone(&drops);
            thread::spawn(move || producer.push(counted(0, &drops)).is_ok())
        };
        consumer.close();
        let landed = pushing.join().unwrap();
        let mut popped = 0;
        while !consumer.is_empty() {
            if consumer.pop().is_some() {
                popped += 1;
            }
        }
        assert_eq!(popped, usize::from(landed));
        drop(consumer);
        assert_eq!(drops.load(Ordering::Relaxed), 1);
    }
}
