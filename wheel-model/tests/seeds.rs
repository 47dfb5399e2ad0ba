//! The fuzz targets' seed corpus, written as op lists rather than bytes.
//!
//! Each seed here is encoded into the bytes `arbitrary` decodes back into the
//! same ops, and compared with its committed file
//! `fuzz/corpus/<target>/seed-<name>`; every seed is also run. After changing
//! the op types or the seeds, rewrite the files with
//! `UPDATE_SEEDS=1 cargo test -p wheel-model --test seeds`.

use std::fs;
use std::path::Path;

use arbitrary::Unstructured;
use wheel_model::queue_ops::{self, QueueOp};
use wheel_model::waker_queue_ops::{self, At, Call, Ticks, WakerKind};
use wheel_model::wheel_ops::{Case, Drive, Empty, Op, Pick, Start, Step, When};
use wheel_model::{run_bytes, Target, FIXED_CAPACITIES, GEOMETRIES};

#[path = "seeds/encode.rs"]
mod encode;

use encode::{bytes, Encode};

/// Ops that touch every part of the API once.
fn tour() -> Vec<Op> {
    vec![
        Op::Insert(When::Near(5)),
        Op::InsertMany {
            first: When::Near(60),
            spread: 1,
            count: 6,
        },
        Op::Insert(When::Far {
            shift: 20,
            value: 3,
        }),
        Op::Insert(When::Max),
        Op::Insert(When::Past(0)),
        Op::Insert(When::Now),
        Op::Query(Pick::Live(1)),
        Op::Touch(Pick::Live(2)),
        Op::Reschedule(Pick::Live(0), When::Near(0)),
        Op::Advance(Step::Zero),
        Op::Cancel(Pick::Any(3)),
        Op::Advance(Step::Small(6)),
        Op::Cancel(Pick::Any(0)),
        Op::Insert(When::Near(1)),
        Op::Drive(Drive::Next(0)),
        Op::Advance(Step::Backward(3)),
        Op::Empty(Empty::Drain(1)),
        Op::Audit,
    ]
}

/// Timers on each side of slot boundaries, several levels up, then driven out.
fn boundaries() -> Vec<Op> {
    let mut ops = Vec::new();
    for level in 0..12 {
        for offset in [-1, 0, 1] {
            ops.push(Op::Insert(When::Boundary { level, offset }));
        }
    }
    ops.extend([Op::Audit, Op::Drive(Drive::All), Op::Audit]);
    ops
}

fn wheel_seeds() -> Vec<(&'static str, Case)> {
    let same_tick = vec![
        Op::Insert(When::Near(9)),
        Op::Insert(When::Near(9)),
        Op::Insert(When::Near(3)),
        Op::Insert(When::Far { shift: 8, value: 1 }),
        Op::Insert(When::Past(4)),
        Op::AdvancePartial(Step::Small(12), 2),
        Op::Insert(When::Past(0)),
        Op::AdvancePartial(Step::Earliest { offset: 0 }, 1),
        Op::Advance(Step::Jump { shift: 8, value: 1 }),
    ];
    let stale = vec![
        Op::Insert(When::Near(1)),
        Op::Cancel(Pick::Live(0)),
        Op::Insert(When::Near(2)),
        Op::Cancel(Pick::Any(0)),
        Op::Reschedule(Pick::Any(0), When::Now),
        Op::Touch(Pick::Any(0)),
        Op::Query(Pick::Any(0)),
        Op::Advance(Step::Small(2)),
        Op::Cancel(Pick::Any(1)),
        Op::Insert(When::Now),
        Op::Audit,
    ];
    let jumps = vec![
        Op::Insert(When::Far {
            shift: 40,
            value: 7,
        }),
        Op::Insert(When::Far {
            shift: 63,
            value: 1,
        }),
        Op::Insert(When::Absolute(1 << 33)),
        Op::Advance(Step::Earliest { offset: -1 }),
        Op::Advance(Step::Earliest { offset: 0 }),
        Op::Advance(Step::Jump {
            shift: 41,
            value: 3,
        }),
        Op::Advance(Step::Backward(100)),
        Op::Advance(Step::Absolute(0)),
        Op::Advance(Step::Max),
    ];
    let top = vec![
        Op::Insert(When::Max),
        Op::Insert(When::Past(1000)),
        Op::Insert(When::Near(0)),
        Op::Drive(Drive::Next(0)),
        Op::Insert(When::Boundary {
            level: 10,
            offset: 0,
        }),
        Op::AdvancePartial(Step::Max, 0),
        Op::Insert(When::Max),
        Op::Drive(Drive::All),
    ];
    let mut crowd = Vec::new();
    for shift in [0, 6, 12, 18, 30, 45, 60] {
        crowd.push(Op::InsertMany {
            first: When::Far { shift, value: 1 },
            spread: 37,
            count: 16,
        });
    }
    crowd.extend([
        Op::Reschedule(Pick::Live(40), When::Past(2)),
        Op::AdvancePartial(
            Step::Jump {
                shift: 12,
                value: 1,
            },
            20,
        ),
        Op::Drive(Drive::Next(15)),
        Op::AdvancePartial(
            Step::Boundary {
                level: 3,
                offset: 0,
            },
            5,
        ),
        Op::Cancel(Pick::Live(7)),
        Op::Audit,
        Op::Drive(Drive::All),
    ]);
    // Slots filed ahead in part and in whole, then changed under the
    // staging: cancels and reschedules of staged timers, inserts into the
    // staged slot, partial advances across its start.
    let mut ahead = Vec::new();
    for shift in [7, 13, 19] {
        ahead.push(Op::InsertMany {
            first: When::Far { shift, value: 1 },
            spread: 3,
            count: 30,
        });
    }
    ahead.extend([
        Op::Insert(When::Boundary {
            level: 2,
            offset: 0,
        }),
        Op::CascadeAhead(7),
        Op::Cancel(Pick::Live(2)),
        Op::Reschedule(Pick::Live(5), When::Near(3)),
        Op::CascadeAhead(1000),
        Op::InsertMany {
            first: When::Far {
                shift: 13,
                value: 1,
            },
            spread: 1,
            count: 4,
        },
        Op::Cancel(Pick::Live(30)),
        Op::Audit,
        Op::AdvancePartial(Step::Earliest { offset: 0 }, 3),
        Op::CascadeAhead(5),
        Op::Drive(Drive::Next(4)),
        Op::CascadeAhead(1000),
        Op::Advance(Step::Jump {
            shift: 13,
            value: 1,
        }),
        Op::CascadeAhead(2),
        Op::Empty(Empty::Drain(3)),
        Op::Insert(When::Far {
            shift: 14,
            value: 2,
        }),
        Op::CascadeAhead(1),
        Op::Drive(Drive::All),
    ]);
    vec![
        (
            "cascade-ahead",
            Case {
                start: Start::At(1 << 20),
                ops: ahead,
            },
        ),
        (
            "crowd",
            Case {
                start: Start::At(1 << 20),
                ops: crowd,
            },
        ),
        (
            "tour",
            Case {
                start: Start::Zero,
                ops: tour(),
            },
        ),
        (
            "boundaries",
            Case {
                start: Start::At(12_345),
                ops: boundaries(),
            },
        ),
        (
            "same-tick",
            Case {
                start: Start::Zero,
                ops: same_tick,
            },
        ),
        (
            "stale",
            Case {
                start: Start::At(99),
                ops: stale,
            },
        ),
        (
            "jumps",
            Case {
                start: Start::Zero,
                ops: jumps,
            },
        ),
        (
            "top",
            Case {
                start: Start::NearMax(3),
                ops: top,
            },
        ),
    ]
}

/// `(name, capacity index, case)` for the fixed wheel.
fn fixed_seeds() -> Vec<(&'static str, u8, Case)> {
    let fill = |n: usize| vec![Op::Insert(When::Near(4)); n];
    let mut full = fill(9);
    full.extend([
        Op::Cancel(Pick::Live(3)),
        Op::Insert(When::Max),
        Op::Insert(When::Max),
        Op::AdvancePartial(Step::Small(5), 3),
        Op::Insert(When::Now),
        Op::Empty(Empty::Drain(2)),
        Op::Insert(When::Past(1)),
    ]);
    full.extend(fill(9));
    let mut one = vec![Op::Insert(When::Near(0)), Op::Insert(When::Near(1))];
    one.extend([
        Op::Advance(Step::One),
        Op::Insert(When::Near(1)),
        Op::Cancel(Pick::Any(0)),
        Op::Reschedule(Pick::Live(0), When::Max),
        Op::Drive(Drive::All),
        Op::Insert(When::Now),
    ]);
    let index = |capacity| {
        let index = FIXED_CAPACITIES.iter().position(|&c| c == capacity);
        u8::try_from(index.expect("a listed capacity")).expect("few capacities")
    };
    vec![
        (
            "full",
            index(8),
            Case {
                start: Start::Zero,
                ops: full,
            },
        ),
        (
            "one",
            index(1),
            Case {
                start: Start::At(1 << 40),
                ops: one,
            },
        ),
        (
            "none",
            index(0),
            Case {
                start: Start::Zero,
                ops: tour(),
            },
        ),
        (
            "three",
            index(3),
            Case {
                start: Start::Zero,
                ops: boundaries(),
            },
        ),
    ]
}

/// `(name, capacity index, case)` for the waker queue.
fn waker_queue_seeds() -> Vec<(&'static str, u8, waker_queue_ops::Case)> {
    let ticks = |value: u64| Ticks { bits: 44, value };
    // More tasks than 24 entries, each due later than the last: past the
    // near cells into the wheel, then full, then fired one by one.
    let mut fill: Vec<Call> = (0..32)
        .map(|task| Call::Schedule {
            task,
            at: At::Ahead(ticks(100 + u64::from(task) * 97)),
        })
        .collect();
    fill.extend((0..40).map(|_| Call::Expire { by: ticks(97) }));
    // 40 ticks short of `u64::MAX`: each task asks 5 000 and 3 000 ticks on
    // (both saturate to `u64::MAX`), then 1 on; four new tasks at
    // `u64::MAX` then overfill 16 entries; a burst of 24, already due, comes
    // round the 24 tasks again, and those not pending each wake one early.
    let mut again: Vec<Call> = (0..16)
        .flat_map(|task| {
            [5_000, 3_000, 1].map(|ahead| Call::Schedule {
                task,
                at: At::Ahead(ticks(ahead)),
            })
        })
        .collect();
    again.extend((16..20).map(|task| Call::Schedule {
        task,
        at: At::Never,
    }));
    again.push(Call::Burst {
        task: 20,
        count: 24,
        first: At::Behind(ticks(1_000)),
        spread: 3,
    });
    again.push(Call::Expire {
        by: ticks(u64::MAX),
    });
    // Each with std's wakers, and again with wakers whose clones are not
    // the waker they came from.
    vec![
        (
            "fill-and-fire",
            5,
            waker_queue_ops::Case {
                start: Start::Zero,
                wakers: WakerKind::Std,
                calls: fill.clone(),
            },
        ),
        (
            "fill-and-fire-clones-moved",
            5,
            waker_queue_ops::Case {
                start: Start::Zero,
                wakers: WakerKind::AnotherData,
                calls: fill,
            },
        ),
        (
            "ask-again-near-max",
            3,
            waker_queue_ops::Case {
                start: Start::NearMax(40),
                wakers: WakerKind::Std,
                calls: again.clone(),
            },
        ),
        (
            "ask-again-near-max-another-vtable",
            3,
            waker_queue_ops::Case {
                start: Start::NearMax(40),
                wakers: WakerKind::AnotherVtable,
                calls: again,
            },
        ),
    ]
}

fn queue_seeds() -> Vec<(&'static str, Vec<QueueOp>)> {
    vec![
        (
            "producers",
            vec![
                QueueOp::Clone(0),
                QueueOp::Clone(1),
                QueueOp::Push(0),
                QueueOp::Push(1),
                QueueOp::Push(2),
                QueueOp::Pop,
                QueueOp::DropProducer(0),
                QueueOp::PushMany {
                    producer: 1,
                    count: 300,
                },
                QueueOp::PopMany(290),
                QueueOp::Pop,
            ],
        ),
        (
            "drop-inside",
            vec![
                QueueOp::PushMany {
                    producer: 0,
                    count: 257,
                },
                QueueOp::PopMany(1),
                QueueOp::Restart,
                QueueOp::PushMany {
                    producer: 0,
                    count: 255,
                },
                QueueOp::Push(0),
                QueueOp::Clone(0),
                QueueOp::DropConsumer,
                QueueOp::Push(1),
                QueueOp::DropProducer(0),
                QueueOp::DropProducer(0),
                QueueOp::Push(0),
            ],
        ),
        (
            "consumer-last",
            vec![
                QueueOp::PushMany {
                    producer: 0,
                    count: 300,
                },
                QueueOp::DropProducer(0),
                QueueOp::PopMany(20),
                QueueOp::Pop,
                QueueOp::DropConsumer,
                QueueOp::Pop,
            ],
        ),
    ]
}

/// Every seed as `(target, file name, bytes)`.
fn seeds() -> Vec<(Target, String, Vec<u8>)> {
    let mut seeds = Vec::new();
    for (name, case) in wheel_seeds() {
        seeds.push((Target::WheelOps, format!("seed-{name}"), bytes(&case)));
        // The same cases suit the bucket wheel, which skips the id ops.
        seeds.push((Target::BucketOps, format!("seed-{name}"), bytes(&case)));
    }
    for (name, capacity, case) in fixed_seeds() {
        let mut data = vec![capacity];
        case.encode(&mut data);
        seeds.push((Target::FixedWheelOps, format!("seed-{name}"), data));
    }
    for geometry in 0..GEOMETRIES.len() {
        let case = Case {
            start: Start::At(3 << 20),
            ops: boundaries(),
        };
        let mut data = vec![u8::try_from(geometry).expect("few geometries")];
        case.encode(&mut data);
        seeds.push((
            Target::Geometry,
            format!("seed-boundaries-{geometry}"),
            data,
        ));
    }
    for (name, ops) in queue_seeds() {
        let mut data = Vec::new();
        ops.iter().for_each(|op| op.encode(&mut data));
        seeds.push((Target::QueueOps, format!("seed-{name}"), data));
    }
    for (name, capacity, case) in waker_queue_seeds() {
        let mut data = vec![capacity];
        case.encode(&mut data);
        seeds.push((Target::WakerQueueOps, format!("seed-{name}"), data));
    }
    seeds
}

#[test]
fn seeds_decode_to_what_they_say() {
    for (name, case) in wheel_seeds() {
        assert_eq!(
            Case::decode(&mut Unstructured::new(&bytes(&case))),
            case,
            "{name}"
        );
    }
    for (name, ops) in queue_seeds() {
        let mut data = Vec::new();
        ops.iter().for_each(|op| op.encode(&mut data));
        assert_eq!(
            queue_ops::decode_ops(&mut Unstructured::new(&data)),
            ops,
            "{name}"
        );
    }
    for (name, capacity, case) in waker_queue_seeds() {
        assert!(
            usize::from(capacity) < waker_queue_ops::CAPACITIES.len(),
            "{name}"
        );
        assert_eq!(
            waker_queue_ops::Case::decode(&mut Unstructured::new(&bytes(&case))),
            case,
            "{name}"
        );
    }
}

#[test]
fn seed_files_are_current_and_pass() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let update = std::env::var_os("UPDATE_SEEDS").is_some();
    for (target, name, data) in seeds() {
        let path = corpus.join(target.name()).join(&name);
        if update {
            fs::create_dir_all(path.parent().expect("a corpus directory")).expect("mkdir");
            fs::write(&path, &data).expect("write seed");
        }
        let committed = fs::read(&path).unwrap_or_default();
        assert!(
            committed == data,
            "{} is stale: rerun with UPDATE_SEEDS=1",
            path.display()
        );
        run_bytes(target, &data);
    }
}
