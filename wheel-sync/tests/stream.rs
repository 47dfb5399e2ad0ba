//! `DelayQueue` as a `futures_core::Stream` (the `stream` feature): it
//! yields `Expired` items by deadline, says `Ready(None)` whenever it is
//! empty and yields again after an insert (not fused), sizes itself by its
//! length, and drives `StreamExt` combinators under an executor.
#![cfg(all(feature = "stream", not(loom)))]

use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use futures::{Stream, StreamExt};
use wheel_sync::{DelayQueue, TimerService};

mod common;
use common::{assert_in_deadline_order, counting_waker, manual, ms, within_patience};

/// One `poll_next`.
fn poll_next<T>(queue: &mut DelayQueue<T>, cx: &mut Context<'_>) -> Poll<Option<T>> {
    Pin::new(queue)
        .poll_next(cx)
        .map(|item| item.map(|expired| expired.into_inner()))
}

#[test]
fn poll_next_is_poll_expired_ends_when_empty_and_resumes_after_an_insert() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let (count, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    assert_eq!(poll_next(&mut queue, &mut cx), Poll::Ready(None));

    // The task that saw it end is woken by the insert that resumes it.
    let b = queue.insert('b', ms(20));
    assert_eq!(count.count(), 1, "the insert woke the task");
    queue.insert('a', ms(10));
    assert_eq!(queue.size_hint(), (2, Some(2)));
    assert_eq!(poll_next(&mut queue, &mut cx), Poll::Pending);
    timers.advance(ms(10)).unwrap();
    assert_eq!(count.count(), 2, "the earliest deadline woke the task");
    assert_eq!(poll_next(&mut queue, &mut cx), Poll::Ready(Some('a')));
    assert_eq!(queue.size_hint(), (1, Some(1)));
    assert_eq!(poll_next(&mut queue, &mut cx), Poll::Pending);
    timers.advance(ms(10)).unwrap();
    let Poll::Ready(Some(expired)) = Pin::new(&mut queue).poll_next(&mut cx) else {
        panic!("b did not come out when due");
    };
    assert_eq!((expired.key(), expired.deadline()), (b, timers.now()));
    assert_eq!(poll_next(&mut queue, &mut cx), Poll::Ready(None));
    assert_eq!(queue.size_hint(), (0, Some(0)));

    // Ended, but not for good.
    queue.insert('c', ms(5));
    assert_eq!(poll_next(&mut queue, &mut cx), Poll::Pending);
    timers.advance(ms(5)).unwrap();
    assert_eq!(poll_next(&mut queue, &mut cx), Poll::Ready(Some('c')));
    assert_eq!(poll_next(&mut queue, &mut cx), Poll::Ready(None));
}

#[test]
fn a_removed_item_never_comes_out_of_the_stream() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let gone = queue.insert("gone", ms(5));
    queue.insert("kept", ms(10));
    assert_eq!(queue.remove(&gone).into_inner(), "gone");
    assert_eq!(queue.size_hint(), (1, Some(1)));
    timers.advance(ms(10)).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(poll_next(&mut queue, &mut cx), Poll::Ready(Some("kept")));
    assert_eq!(poll_next(&mut queue, &mut cx), Poll::Ready(None));
}

#[test]
fn stream_ext_collects_by_deadline_on_the_real_clock_never_early() {
    within_patience(|| {
        let timers = TimerService::new();
        let mut queue = DelayQueue::with_service(&timers);
        let start = Instant::now();
        for n in [3u32, 1, 5, 2, 4] {
            queue.insert(n, ms(2 * u64::from(n)));
        }
        let out: Vec<(u32, Instant, Instant)> = futures::executor::block_on(
            queue
                .by_ref()
                .map(|expired| (*expired.get_ref(), expired.deadline(), Instant::now()))
                .collect(),
        );
        assert_eq!(out.len(), 5, "items were lost");
        let times: Vec<_> = out
            .iter()
            .map(|&(_, deadline, at)| (deadline, at))
            .collect();
        assert_in_deadline_order(&times);
        assert!(start.elapsed() >= ms(10));
        assert!(queue.is_empty());
        drop(queue);
        assert_eq!(timers.pending(), 0);
    });
}

#[test]
fn stream_ext_next_takes_items_one_at_a_time_across_inserts() {
    within_patience(|| {
        let timers = TimerService::new();
        let mut queue = DelayQueue::with_service(&timers);
        smol::block_on(async {
            queue.insert("first", ms(2));
            let start = Instant::now();
            let first = queue.next().await.expect("an item");
            assert!(start.elapsed() >= ms(2));
            assert_eq!(first.into_inner(), "first");
            assert!(queue.next().await.is_none(), "empty: the stream ends");
            queue.insert("second", ms(1));
            let taken: Vec<_> = (&mut queue).take(1).map(|e| e.into_inner()).collect().await;
            assert_eq!(taken, ["second"]);
        });
    });
}
