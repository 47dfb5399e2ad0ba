//! Quickcheck model tests: random op sequences on several wheels and on the
//! submission queue, each checked against its std model after every op.
//!
//! The ops come from the same `arbitrary` decoder the fuzz targets use, fed
//! with quickcheck's random bytes, so both explore one input space.

use arbitrary::Unstructured;
use quickcheck::{Arbitrary, Gen, QuickCheck};
use wheel_core::{BucketWheel, FixedWheel, Wheel};
use wheel_model::bucket_ops;
use wheel_model::queue_ops::{self, QueueOp};
use wheel_model::waker_queue_ops;
use wheel_model::wheel_ops::{run, Case, Start};

/// Cases per property: enough to reach deep states, few enough that the
/// file runs in seconds.
const TESTS: u64 = 1000;
/// Up to `8 * SIZE` random bytes per case: roughly 20–120 ops.
const SIZE: usize = 128;

fn random_bytes(g: &mut Gen) -> Vec<u8> {
    let len = usize::arbitrary(g) % (8 * g.size() + 1);
    (0..len).map(|_| u8::arbitrary(g)).collect()
}

/// Shorter lists to try when a list of ops fails: each half, then each
/// list with one op left out.
fn shorter<T: Clone>(ops: &[T]) -> Vec<Vec<T>> {
    let mut shorter = Vec::new();
    if ops.len() > 1 {
        let half = ops.len() / 2;
        shorter.push(ops[..half].to_vec());
        shorter.push(ops[half..].to_vec());
    }
    for skip in 0..ops.len() {
        let mut fewer = ops.to_vec();
        fewer.remove(skip);
        shorter.push(fewer);
    }
    shorter
}

#[derive(Clone, Debug)]
struct WheelCase(Case);

impl Arbitrary for WheelCase {
    fn arbitrary(g: &mut Gen) -> Self {
        WheelCase(Case::decode(&mut Unstructured::new(&random_bytes(g))))
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Self>> {
        let Case { start, ops } = &self.0;
        let mut cases = Vec::new();
        if *start != Start::Zero {
            cases.push(Case {
                start: Start::Zero,
                ops: ops.clone(),
            });
        }
        cases.extend(
            shorter(ops)
                .into_iter()
                .map(|ops| Case { start: *start, ops }),
        );
        Box::new(cases.into_iter().map(WheelCase))
    }
}

#[derive(Clone, Debug)]
struct QueueCase(Vec<QueueOp>);

impl Arbitrary for QueueCase {
    fn arbitrary(g: &mut Gen) -> Self {
        QueueCase(queue_ops::decode_ops(&mut Unstructured::new(
            &random_bytes(g),
        )))
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Self>> {
        Box::new(shorter(&self.0).into_iter().map(QueueCase))
    }
}

#[derive(Clone, Debug)]
struct WakerQueueCase(waker_queue_ops::Case);

impl Arbitrary for WakerQueueCase {
    fn arbitrary(g: &mut Gen) -> Self {
        let bytes = random_bytes(g);
        WakerQueueCase(waker_queue_ops::Case::decode(&mut Unstructured::new(
            &bytes,
        )))
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Self>> {
        let (start, wakers) = (self.0.start, self.0.wakers);
        Box::new(shorter(&self.0.calls).into_iter().map(move |calls| {
            WakerQueueCase(waker_queue_ops::Case {
                start,
                wakers,
                calls,
            })
        }))
    }
}

fn quickcheck<A: Arbitrary + std::fmt::Debug>(property: fn(A)) {
    QuickCheck::new()
        .rng(Gen::new(SIZE))
        .tests(TESTS)
        .max_tests(TESTS)
        .quickcheck(property);
}

#[test]
fn wheel_matches_model() {
    quickcheck(|WheelCase(case)| {
        run(
            &mut Wheel::<u64>::starting_at(case.start.tick()),
            &case.ops,
            None,
        );
    });
}

#[test]
fn fixed_wheel_matches_model() {
    quickcheck(|WheelCase(case)| {
        let mut wheel = FixedWheel::<u64, 8>::starting_at(case.start.tick());
        run(&mut wheel, &case.ops, Some(8));
    });
}

#[test]
fn two_slot_wheel_matches_model() {
    quickcheck(|WheelCase(case)| {
        let mut wheel = Wheel::<u64, 2, 64>::with_geometry(case.start.tick());
        run(&mut wheel, &case.ops, None);
    });
}

#[test]
fn eight_slot_wheel_matches_model() {
    quickcheck(|WheelCase(case)| {
        let mut wheel = Wheel::<u64, 8, 22>::with_geometry(case.start.tick());
        run(&mut wheel, &case.ops, None);
    });
}

#[test]
fn bucket_wheel_matches_model() {
    quickcheck(|WheelCase(case)| {
        bucket_ops::run(&mut BucketWheel::starting_at(case.start.tick()), &case.ops);
    });
}

#[test]
fn queue_matches_model() {
    quickcheck(|QueueCase(ops)| queue_ops::run(&ops));
}

/// Every capacity on each case, wakers that panic included; cases four
/// times as long as the others' and a sixteenth as many (each runs seven
/// times, and bursts keep up to 64 pending), so that a debug build takes
/// about as long as for the other properties. Then the cases must have
/// reached what they are for: a full queue at every capacity, and past the
/// 16 near cells with each kind of waker, an early wake that panics from a
/// queue with entries past its near cells, and an expiry that panics.
#[test]
fn waker_queue_matches_model() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    const SIZES: usize = waker_queue_ops::CAPACITIES.len();
    static WOKEN_EARLY: [AtomicUsize; SIZES] = [const { AtomicUsize::new(0) }; SIZES];
    static UNWOUND_SCHEDULING_PAST_NEAR: AtomicUsize = AtomicUsize::new(0);
    static UNWOUND_EXPIRING: AtomicUsize = AtomicUsize::new(0);
    const KINDS: usize = waker_queue_ops::WakerKind::ALL.len();
    static FULL_BY_KIND: [AtomicUsize; KINDS] = [const { AtomicUsize::new(0) }; KINDS];
    QuickCheck::new()
        .rng(Gen::new(4 * SIZE))
        .tests(TESTS / 16)
        .max_tests(TESTS / 16)
        .quickcheck(
            (|WakerQueueCase(case)| {
                let kind = (waker_queue_ops::WakerKind::ALL.iter())
                    .position(|&kind| kind == case.wakers)
                    .unwrap();
                for (k, capacity) in waker_queue_ops::CAPACITIES.into_iter().enumerate() {
                    let reached = waker_queue_ops::run(capacity, &case, true);
                    WOKEN_EARLY[k].fetch_add(reached.woken_early, Ordering::Relaxed);
                    if capacity > 16 {
                        FULL_BY_KIND[kind].fetch_add(reached.woken_early, Ordering::Relaxed);
                        UNWOUND_SCHEDULING_PAST_NEAR
                            .fetch_add(reached.unwound_scheduling, Ordering::Relaxed);
                    }
                    UNWOUND_EXPIRING.fetch_add(reached.unwound_expiring, Ordering::Relaxed);
                }
            }) as fn(WakerQueueCase),
        );
    for (k, capacity) in waker_queue_ops::CAPACITIES.into_iter().enumerate() {
        let early = WOKEN_EARLY[k].load(Ordering::Relaxed);
        assert!(early > 0, "capacity {capacity}: never full");
    }
    for (k, kind) in waker_queue_ops::WakerKind::ALL.into_iter().enumerate() {
        let full = FULL_BY_KIND[k].load(Ordering::Relaxed);
        assert!(full > 0, "{kind:?}: no queue full past its near cells");
    }
    let scheduling = UNWOUND_SCHEDULING_PAST_NEAR.load(Ordering::Relaxed);
    assert!(scheduling > 0, "no early wake past the near cells unwound");
    assert!(
        UNWOUND_EXPIRING.load(Ordering::Relaxed) > 0,
        "no expiry unwound"
    );
}
