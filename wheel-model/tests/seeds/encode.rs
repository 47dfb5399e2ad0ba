//! The seeds' encoder: the inverse of `arbitrary`'s decoding, for the
//! types the seeds use.

use wheel_model::queue_ops::QueueOp;
use wheel_model::waker_queue_ops::{self, At, Call, Ticks, WakerKind};
use wheel_model::wheel_ops::{Case, Drive, Empty, Op, Pick, Start, Step, When};

/// The inverse of `arbitrary`'s decoding, for the types seeds use.
pub trait Encode {
    fn encode(&self, out: &mut Vec<u8>);
}

/// A derived enum reads a `u32` tag and picks variant `(tag * count) >> 32`.
fn variant(out: &mut Vec<u8>, index: u64, count: u64) -> &mut Vec<u8> {
    let tag = u32::try_from((index << 32).div_ceil(count)).expect("index < count");
    out.extend(tag.to_le_bytes());
    out
}

macro_rules! encode_le {
    ($($ty:ty),*) => {$(
        impl Encode for $ty {
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend(self.to_le_bytes());
            }
        }
    )*};
}
encode_le!(u8, i8, u16, u64);

impl Encode for When {
    fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            When::Now => {
                variant(out, 0, 7);
            }
            When::Near(n) => n.encode(variant(out, 1, 7)),
            When::Far { shift, value } => {
                let out = variant(out, 2, 7);
                shift.encode(out);
                value.encode(out);
            }
            When::Boundary { level, offset } => {
                let out = variant(out, 3, 7);
                level.encode(out);
                offset.encode(out);
            }
            When::Past(n) => n.encode(variant(out, 4, 7)),
            When::Absolute(tick) => tick.encode(variant(out, 5, 7)),
            When::Max => {
                variant(out, 6, 7);
            }
        }
    }
}

impl Encode for Step {
    fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Step::Zero => {
                variant(out, 0, 9);
            }
            Step::One => {
                variant(out, 1, 9);
            }
            Step::Small(n) => n.encode(variant(out, 2, 9)),
            Step::Jump { shift, value } => {
                let out = variant(out, 3, 9);
                shift.encode(out);
                value.encode(out);
            }
            Step::Boundary { level, offset } => {
                let out = variant(out, 4, 9);
                level.encode(out);
                offset.encode(out);
            }
            Step::Earliest { offset } => offset.encode(variant(out, 5, 9)),
            Step::Backward(n) => n.encode(variant(out, 6, 9)),
            Step::Absolute(tick) => tick.encode(variant(out, 7, 9)),
            Step::Max => {
                variant(out, 8, 9);
            }
        }
    }
}

impl Encode for Pick {
    fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Pick::Live(n) => n.encode(variant(out, 0, 2)),
            Pick::Any(n) => n.encode(variant(out, 1, 2)),
        }
    }
}

impl Encode for Op {
    fn encode(&self, out: &mut Vec<u8>) {
        const N: u64 = 12;
        match *self {
            Op::Insert(when) => when.encode(variant(out, 0, N)),
            Op::InsertMany {
                first,
                spread,
                count,
            } => {
                let out = variant(out, 1, N);
                first.encode(out);
                spread.encode(out);
                count.encode(out);
            }
            Op::Cancel(pick) => pick.encode(variant(out, 2, N)),
            Op::Reschedule(pick, when) => {
                let out = variant(out, 3, N);
                pick.encode(out);
                when.encode(out);
            }
            Op::Query(pick) => pick.encode(variant(out, 4, N)),
            Op::Touch(pick) => pick.encode(variant(out, 5, N)),
            Op::Advance(step) => step.encode(variant(out, 6, N)),
            Op::AdvancePartial(step, take) => {
                let out = variant(out, 7, N);
                step.encode(out);
                take.encode(out);
            }
            Op::Drive(Drive::Next(calls)) => calls.encode(variant(variant(out, 8, N), 0, 2)),
            Op::Drive(Drive::All) => {
                variant(variant(out, 8, N), 1, 2);
            }
            Op::Empty(Empty::Drain(take)) => take.encode(variant(variant(out, 9, N), 0, 2)),
            Op::Empty(Empty::Clear) => {
                variant(variant(out, 9, N), 1, 2);
            }
            Op::Audit => {
                variant(out, 10, N);
            }
            Op::CascadeAhead(max) => max.encode(variant(out, 11, N)),
        }
    }
}

impl Encode for Start {
    fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Start::Zero => {
                variant(out, 0, 3);
            }
            Start::NearMax(n) => n.encode(variant(out, 1, 3)),
            Start::At(tick) => tick.encode(variant(out, 2, 3)),
        }
    }
}

impl Encode for Case {
    fn encode(&self, out: &mut Vec<u8>) {
        self.start.encode(out);
        self.ops.iter().for_each(|op| op.encode(out));
    }
}

impl Encode for QueueOp {
    fn encode(&self, out: &mut Vec<u8>) {
        const N: u64 = 8;
        match *self {
            QueueOp::Push(n) => n.encode(variant(out, 0, N)),
            QueueOp::PushMany { producer, count } => {
                let out = variant(out, 1, N);
                producer.encode(out);
                count.encode(out);
            }
            QueueOp::Pop => {
                variant(out, 2, N);
            }
            QueueOp::PopMany(n) => n.encode(variant(out, 3, N)),
            QueueOp::Clone(n) => n.encode(variant(out, 4, N)),
            QueueOp::DropProducer(n) => n.encode(variant(out, 5, N)),
            QueueOp::DropConsumer => {
                variant(out, 6, N);
            }
            QueueOp::Restart => {
                variant(out, 7, N);
            }
        }
    }
}

impl Encode for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
}

impl Encode for Ticks {
    fn encode(&self, out: &mut Vec<u8>) {
        self.bits.encode(out);
        self.value.encode(out);
    }
}

impl Encode for At {
    fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            At::Ahead(by) => by.encode(variant(out, 0, 3)),
            At::Behind(by) => by.encode(variant(out, 1, 3)),
            At::Never => {
                variant(out, 2, 3);
            }
        }
    }
}

impl Encode for Call {
    fn encode(&self, out: &mut Vec<u8>) {
        const N: u64 = 4;
        match *self {
            Call::Schedule { task, at } => {
                let out = variant(out, 0, N);
                task.encode(out);
                at.encode(out);
            }
            Call::Burst {
                task,
                count,
                first,
                spread,
            } => {
                let out = variant(out, 1, N);
                task.encode(out);
                count.encode(out);
                first.encode(out);
                spread.encode(out);
            }
            Call::Expire { by } => by.encode(variant(out, 2, N)),
            Call::Panics { task, on } => {
                let out = variant(out, 3, N);
                task.encode(out);
                on.encode(out);
            }
        }
    }
}

impl Encode for WakerKind {
    fn encode(&self, out: &mut Vec<u8>) {
        let index = WakerKind::ALL.iter().position(|kind| kind == self);
        variant(out, index.expect("every kind is listed") as u64, 3);
    }
}

impl Encode for waker_queue_ops::Case {
    fn encode(&self, out: &mut Vec<u8>) {
        self.start.encode(out);
        self.wakers.encode(out);
        self.calls.iter().for_each(|call| call.encode(out));
    }
}

pub fn bytes(value: &impl Encode) -> Vec<u8> {
    let mut out = Vec::new();
    value.encode(&mut out);
    out
}
