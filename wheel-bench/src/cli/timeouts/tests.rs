use super::*;

/// A request kept in flight past half its timeout fails the run rather
/// than let the row measure timeouts firing.
#[test]
fn a_request_in_flight_past_half_its_timeout_fails_the_run() {
    let (stop, published) = (AtomicBool::new(false), AtomicU64::new(0));
    let lane = Lane {
        stop: &stop,
        published: &published,
        any_order: false,
    };
    // 2 ms a start: the first request is 0.5 s old after 250 of them,
    // the clock is read again at the 256th, and the 300th ends it. (A
    // run without the check stops at the 512th, `Ok`.)
    let mut starts = 0;
    let slow = in_flight(
        &lane,
        300,
        || {
            thread::sleep(Duration::from_millis(2));
            starts += 1;
            stop.store(starts >= 2 * BATCH, Ordering::Relaxed);
            Ok(())
        },
        |()| Ok(()),
    );
    stop.store(false, Ordering::Relaxed);
    published.store(0, Ordering::Relaxed);
    assert!(matches!(slow, Err(RunError::Io(_))), "{slow:?}");
    let mut ended = 0;
    let quick = in_flight(
        &lane,
        3,
        || {
            stop.store(
                published.load(Ordering::Relaxed) >= 2 * BATCH,
                Ordering::Relaxed,
            );
            Ok(())
        },
        |()| {
            ended += 1;
            Ok(())
        },
    );
    let ops = quick.expect("requests ended at once are fine");
    assert_eq!(ended, ops, "each request started is ended once");
}

/// The oldest ends first, unless `any_order`: then each of those in
/// flight may, and every request still ends once.
#[test]
fn requests_end_oldest_first_or_in_any_order() {
    for any_order in [false, true] {
        let (stop, published) = (AtomicBool::new(false), AtomicU64::new(0));
        let lane = Lane {
            stop: &stop,
            published: &published,
            any_order,
        };
        let (mut next, mut ended) = (0u64, Vec::new());
        let ops = in_flight(
            &lane,
            8,
            || {
                next += 1;
                stop.store(next >= BATCH, Ordering::Relaxed);
                Ok(next)
            },
            |id| {
                ended.push(id);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(ended.len() as u64, ops);
        let mut sorted = ended.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (1..=ops).collect::<Vec<_>>(), "each once");
        // The first `ops - 7` ended in the loop; the rest at the stop.
        let in_loop = &ended[..ended.len() - 7];
        let oldest_first = in_loop.windows(2).all(|w| w[0] < w[1]);
        assert_eq!(oldest_first, !any_order, "any_order {any_order}");
    }
}
