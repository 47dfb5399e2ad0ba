//! Differential testing of `wheel-core` and the `wheel-sync` queue against
//! plain std reference models.
//!
//! One generator and one checker serve three callers: the quickcheck tests
//! in `tests/quick.rs`, the cargo-fuzz targets in `fuzz/`, and the replay of
//! committed fuzz findings in `tests/replay.rs`, which runs on stable. Every
//! fuzz target is `run_bytes(Target::X, data)`, so a crash input replays
//! through exactly the code that found it.
//!
//! ```
//! use wheel_model::{run_bytes, Target};
//!
//! for target in Target::ALL {
//!     run_bytes(target, b"any bytes decode to some ops");
//! }
//! ```

pub mod bucket_ops;
pub mod queue_ops;
pub mod waker_queue_ops;
pub mod wheel_ops;

use arbitrary::{Arbitrary, Unstructured};
use wheel_core::{BucketWheel, FixedWheel, Wheel};

use crate::wheel_ops::{run, Case};

/// A fuzz target: what the input bytes drive.
///
/// # Examples
/// ```
/// use wheel_model::Target;
///
/// assert_eq!(Target::from_name("queue_ops"), Some(Target::QueueOps));
/// assert_eq!(Target::Geometry.name(), "geometry");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The default `Wheel<u64>` (64 slots × 11 levels).
    WheelOps,
    /// A small `FixedWheel`, so inserts hit `Full`.
    FixedWheelOps,
    /// The same ops over every geometry, from 2 slots × 64 levels to 64 × 11.
    Geometry,
    /// The MPSC submission queue, single-threaded, against a `VecDeque`.
    QueueOps,
    /// A `BucketWheel<u64>`, with the ops it has, against a `BTreeSet`.
    BucketOps,
    /// A `WakerQueue` of a few sizes, against a map of task to deadline.
    WakerQueueOps,
}

impl Target {
    /// Every target, in a fixed order.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(wheel_model::Target::ALL.len(), 6);
    /// ```
    pub const ALL: [Target; 6] = [
        Target::WheelOps,
        Target::FixedWheelOps,
        Target::Geometry,
        Target::QueueOps,
        Target::BucketOps,
        Target::WakerQueueOps,
    ];

    /// The fuzz target's name, which is also its corpus and regression
    /// directory's name.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(wheel_model::Target::WheelOps.name(), "wheel_ops");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Target::WheelOps => "wheel_ops",
            Target::FixedWheelOps => "fixed_wheel_ops",
            Target::Geometry => "geometry",
            Target::QueueOps => "queue_ops",
            Target::BucketOps => "bucket_ops",
            Target::WakerQueueOps => "waker_queue_ops",
        }
    }

    /// The target with this [`name`](Self::name).
    ///
    /// # Examples
    /// ```
    /// assert_eq!(wheel_model::Target::from_name("nope"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|target| target.name() == name)
    }
}

/// Capacities the `fixed_wheel_ops` target picks from: none at all, one,
/// and a few, so `Full` comes quickly.
pub const FIXED_CAPACITIES: [usize; 4] = [0, 1, 3, 8];

/// The wheels the `geometry` target picks from, by index: growable wheels
/// of every geometry, then two small fixed ones.
pub const GEOMETRIES: [&str; 8] = [
    "Wheel<u64, 2, 64>",
    "Wheel<u64, 4, 32>",
    "Wheel<u64, 8, 22>",
    "Wheel<u64, 16, 16>",
    "Wheel<u64, 32, 13>",
    "Wheel<u64, 64, 11>",
    "FixedWheel<u64, 4, 2, 64>",
    "FixedWheel<u64, 6, 8, 22>",
];

/// Decodes `data` for `target` and runs it, panicking on any disagreement
/// with the model. Any bytes are valid input.
///
/// The layout: `wheel_ops` reads a [`Case`]; `fixed_wheel_ops` a byte that
/// picks from [`FIXED_CAPACITIES`], then a `Case`; `geometry` a byte that
/// picks from [`GEOMETRIES`], then a `Case`; `queue_ops` a list of
/// [`QueueOp`](queue_ops::QueueOp)s; `bucket_ops` a `Case`;
/// `waker_queue_ops` a byte that picks from
/// [`waker_queue_ops::CAPACITIES`], then a
/// [`waker_queue_ops::Case`], run with no waker panicking.
///
/// # Examples
/// ```
/// use wheel_model::{run_bytes, Target};
///
/// run_bytes(Target::FixedWheelOps, &[0; 32]);
/// run_bytes(Target::Geometry, &[]);
/// ```
pub fn run_bytes(target: Target, data: &[u8]) {
    let mut u = Unstructured::new(data);
    match target {
        Target::WheelOps => {
            let case = Case::decode(&mut u);
            run(&mut Wheel::starting_at(case.start.tick()), &case.ops, None);
        }
        Target::FixedWheelOps => {
            let pick = u.arbitrary::<u8>().unwrap_or(0);
            let capacity = FIXED_CAPACITIES[usize::from(pick) % FIXED_CAPACITIES.len()];
            let case = Case::decode(&mut u);
            run_fixed(capacity, &case);
        }
        Target::Geometry => {
            let pick = u.arbitrary::<u8>().unwrap_or(0);
            let case = Case::decode(&mut u);
            run_geometry(usize::from(pick) % GEOMETRIES.len(), &case);
        }
        Target::QueueOps => queue_ops::run(&queue_ops::decode_ops(&mut u)),
        Target::BucketOps => {
            let case = Case::decode(&mut u);
            bucket_ops::run(&mut BucketWheel::starting_at(case.start.tick()), &case.ops);
        }
        Target::WakerQueueOps => {
            let pick = u.arbitrary::<u8>().unwrap_or(0);
            let capacities = waker_queue_ops::CAPACITIES;
            let capacity = capacities[usize::from(pick) % capacities.len()];
            let case = waker_queue_ops::Case::decode(&mut u);
            waker_queue_ops::run(capacity, &case, false);
        }
    }
}

/// Runs `case` on a `FixedWheel<u64, capacity>`; `capacity` is one of
/// [`FIXED_CAPACITIES`].
///
/// # Examples
/// ```
/// use wheel_model::wheel_ops::{Case, Op, Start, When};
///
/// let case = Case { start: Start::Zero, ops: vec![Op::Insert(When::Near(1)); 4] };
/// wheel_model::run_fixed(3, &case); // the fourth insert is Full
/// ```
///
/// # Panics
/// On a disagreement with the model, or a capacity not in the list.
pub fn run_fixed(capacity: usize, case: &Case) {
    fn fixed<const N: usize>(case: &Case) {
        let mut wheel = FixedWheel::<u64, N>::starting_at(case.start.tick());
        run(&mut wheel, &case.ops, Some(N));
    }
    match capacity {
        0 => fixed::<0>(case),
        1 => fixed::<1>(case),
        3 => fixed::<3>(case),
        8 => fixed::<8>(case),
        other => panic!("no FixedWheel of capacity {other} here: pick from {FIXED_CAPACITIES:?}"),
    }
}

/// Runs `case` on the wheel `GEOMETRIES[index]`.
///
/// # Examples
/// ```
/// use wheel_model::wheel_ops::{Case, Drive, Op, Start, When};
///
/// let case = Case {
///     start: Start::At(3),
///     ops: vec![Op::Insert(When::Boundary { level: 5, offset: -1 }), Op::Drive(Drive::All)],
/// };
/// for index in 0..wheel_model::GEOMETRIES.len() {
///     wheel_model::run_geometry(index, &case);
/// }
/// ```
///
/// # Panics
/// On a disagreement with the model, or an index out of range.
pub fn run_geometry(index: usize, case: &Case) {
    let start = case.start.tick();
    let ops = &case.ops;
    match index {
        0 => run(&mut Wheel::<u64, 2, 64>::with_geometry(start), ops, None),
        1 => run(&mut Wheel::<u64, 4, 32>::with_geometry(start), ops, None),
        2 => run(&mut Wheel::<u64, 8, 22>::with_geometry(start), ops, None),
        3 => run(&mut Wheel::<u64, 16, 16>::with_geometry(start), ops, None),
        4 => run(&mut Wheel::<u64, 32, 13>::with_geometry(start), ops, None),
        5 => run(&mut Wheel::<u64, 64, 11>::with_geometry(start), ops, None),
        6 => run(
            &mut FixedWheel::<u64, 4, 2, 64>::with_geometry(start),
            ops,
            Some(4),
        ),
        7 => run(
            &mut FixedWheel::<u64, 6, 8, 22>::with_geometry(start),
            ops,
            Some(6),
        ),
        other => panic!("no geometry {other}: there are {}", GEOMETRIES.len()),
    }
}

/// Decodes up to `max` values, stopping quietly when the data runs out or
/// stops decoding: the shared loop of the op decoders.
///
/// # Examples
/// ```
/// use arbitrary::Unstructured;
///
/// let bytes: Vec<u8> = wheel_model::decode_up_to(&mut Unstructured::new(&[1, 2, 3]), 2);
/// assert_eq!(bytes, [1, 2]);
/// ```
pub fn decode_up_to<'a, T: Arbitrary<'a>>(u: &mut Unstructured<'a>, max: usize) -> Vec<T> {
    let mut values = Vec::new();
    while values.len() < max && !u.is_empty() {
        match u.arbitrary() {
            Ok(value) => values.push(value),
            Err(_) => break,
        }
    }
    values
}
