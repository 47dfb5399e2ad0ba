use super::*;
use crate::action::Callback;

fn message(tick: u64) -> (EntryRef, EntryRef) {
    let (owner, message) = EntryRef::new(tick, Callback::new(|| ()));
    (owner.erase(), message)
}

#[test]
fn park_refuse_retract_and_sweep_hand_each_reference_over_once() {
    let spots = Spots::new();
    let (a, a_msg) = message(1);
    let (b, b_msg) = message(2);
    assert!(spots.park(3, a_msg, 0).is_ok());
    assert!(spots.any_parked(u64::MAX));
    // Fill the spot's other places: then it refuses.
    let others: Vec<EntryRef> = (1..PLACES)
        .map(|i| {
            let (owner, msg) = message(10 + i as u64);
            assert!(spots.park(3, msg, 0).is_ok(), "place {i} is free");
            owner
        })
        .collect();
    let refused = spots.park(3, b_msg, 0).expect_err("spot 3 is full");
    assert_eq!(refused.as_ptr(), b.as_ptr());
    assert!(!spots.retract(3, &b), "b was never parked");
    assert!(!spots.retract(4, &a), "a is parked in spot 3");
    assert!(spots.retract(3, &a));
    assert!(!spots.retract(3, &a), "taken back once");
    // a's place is free again, and only it.
    let (c, c_msg) = message(3);
    assert!(spots.park(3, c_msg, 0).is_ok());
    assert!(spots.retract(3, &c));
    for other in &others {
        assert!(spots.retract(3, other));
    }
    assert!(!spots.any_parked(u64::MAX));
    assert!(spots.park(5, refused, 0).is_ok());
    let mut swept = Vec::new();
    assert_eq!(spots.sweep(u64::MAX, |m| swept.push(m)).0, 1);
    assert_eq!(swept[0].as_ptr(), b.as_ptr());
    assert_eq!(spots.sweep(u64::MAX, drop).0, 0);
}

#[test]
fn a_sweep_takes_every_place_of_every_spot() {
    let spots = Spots::new();
    let owners: Vec<EntryRef> = (0..PLACES + 1)
        .map(|i| {
            let (owner, msg) = message(i as u64);
            // The last one goes to another spot: this one is full.
            let spot = if i < PLACES { 7 } else { 8 };
            assert!(spots.park(spot, msg, 0).is_ok());
            owner
        })
        .collect();
    let mut swept = Vec::new();
    assert_eq!(
        spots.sweep(u64::MAX, |m| swept.push(m.as_ptr())).0,
        PLACES + 1
    );
    let mut expected: Vec<_> = owners.iter().map(EntryRef::as_ptr).collect();
    expected.sort();
    swept.sort();
    assert_eq!(swept, expected);
    assert!(!spots.any_parked(u64::MAX));
}

/// Where each place of spot `index` points.
fn places(spots: &Spots, index: usize) -> Vec<*mut Entry> {
    let spot = spots.spot(index);
    spot.places
        .iter()
        .map(|p| p.load(Ordering::Relaxed))
        .collect()
}

#[test]
fn a_park_starts_at_the_place_a_cancel_emptied_and_a_cancel_finds_the_place_recorded() {
    let spots = Spots::new();
    let (a, a_msg) = message(1);
    let (b, b_msg) = message(2);
    let (c, c_msg) = message(3);
    let (d, d_msg) = message(4);
    assert!(spots.park(4, a_msg, 0).is_ok());
    assert!(spots.park(4, b_msg, 0).is_ok());
    assert!(spots.retract(4, &a));
    // Place 0 is free again, and the cancel left the cursor there: the
    // next park takes it, whatever order requests are answered in.
    assert!(spots.park(4, c_msg, 0).is_ok());
    // The one after goes after c's place, to the first free one.
    assert!(spots.park(4, d_msg, 0).is_ok());
    assert_eq!(places(&spots, 4)[..3], [c.as_ptr(), b.as_ptr(), d.as_ptr()]);
    assert!(spots.retract(4, &d));
    assert!(spots.retract(4, &c), "found where it was parked");
    assert!(spots.retract(4, &b));
    assert!(!spots.any_parked(u64::MAX));
}

// Under miri a spot is one line: no place lies past the line a park
// looks at.
#[cfg(not(miri))]
#[test]
fn a_park_looks_at_a_line_of_places_from_the_cursor_then_gives_up() {
    let spots = Spots::new();
    let owners: Vec<EntryRef> = (0..PLACES)
        .map(|i| {
            let (owner, msg) = message(i as u64);
            assert!(spots.park(6, msg, 0).is_ok(), "place {i} is free");
            owner
        })
        .collect();
    // Two places emptied; the last cancel leaves the cursor on its own
    // (place 0), where the next park goes, and the cursor moves past.
    assert!(spots.retract(6, &owners[PROBES + 1]));
    assert!(spots.retract(6, &owners[0]));
    let (d, d_msg) = message(100);
    assert!(spots.park(6, d_msg, 0).is_ok());
    assert_eq!(places(&spots, 6)[0], d.as_ptr());
    // Place PROBES + 1 is free, but past the line from the cursor (1): a
    // park does not look that far.
    let (e, e_msg) = message(101);
    let refused = spots
        .park(6, e_msg, 0)
        .expect_err("no place free in the line");
    assert_eq!(refused.as_ptr(), e.as_ptr());
    // One free within the line: taken.
    assert!(spots.retract(6, &owners[PROBES - 1]));
    assert!(spots.park(6, refused, 0).is_ok());
    assert_eq!(places(&spots, 6)[PROBES - 1], e.as_ptr());
    assert_eq!(spots.sweep(u64::MAX, drop).0, PLACES - 1);
}

#[test]
fn a_cancel_whose_place_now_holds_another_message_takes_nothing() {
    let spots = Spots::new();
    let (x, x_msg) = message(1);
    let (a, a_msg) = message(2);
    assert!(spots.park(5, x_msg, 0).is_ok());
    assert!(spots.park(5, a_msg, 0).is_ok());
    // The driver takes both: a's record still names place 1.
    assert_eq!(spots.sweep(u64::MAX, drop).0, 2);
    let others: Vec<EntryRef> = (0..PLACES)
        .map(|i| {
            let (owner, msg) = message(10 + i as u64);
            assert!(spots.park(5, msg, 0).is_ok());
            owner
        })
        .collect();
    // Round from place 2: the last one took place 1.
    assert_eq!(places(&spots, 5)[1], others[PLACES - 1].as_ptr());
    assert!(!spots.retract(5, &a), "place 1 holds another message");
    assert_eq!(places(&spots, 5)[1], others[PLACES - 1].as_ptr());
    assert_eq!(spots.sweep(u64::MAX, drop).0, PLACES);
    drop(x);
}

#[test]
fn a_closed_spot_gives_up_what_it_held_and_takes_nothing_after() {
    let spots = Spots::new();
    let (a, a_msg) = message(1);
    let (b, b_msg) = message(2);
    assert!(spots.park(2, a_msg, 0).is_ok());
    let mut closed_on = Vec::new();
    spots.close(|m| closed_on.push(m));
    assert_eq!(closed_on.len(), 1, "the parked message, once");
    // Every place of spot 2 is closed, not only the one a was in.
    assert_eq!(closed_on[0].as_ptr(), a.as_ptr());
    assert!(!spots.any_parked(u64::MAX));
    let refused = spots.park(2, b_msg, 0).expect_err("spot 2 is closed");
    assert_eq!(refused.as_ptr(), b.as_ptr());
    assert!(spots.park(9, refused, 0).is_err(), "every spot is closed");
    assert!(!spots.retract(2, &a));
    assert_eq!(
        spots.sweep(u64::MAX, drop).0,
        0,
        "a sweep neither takes nor reopens"
    );
    spots.close(|_| panic!("closed twice: nothing to take"));
}

#[test]
fn dropping_the_spots_releases_what_is_parked() {
    let spots = Spots::new();
    let (a, a_msg) = message(1);
    assert!(spots.park(0, a_msg, 0).is_ok());
    drop(spots);
    // `a` is now the last reference: dropping it frees the entry (miri
    // reports a leak or a double free otherwise).
    drop(a);
}

#[test]
fn the_service_is_unowned_once_every_spot_has_counted_its_owners_out() {
    let spots = Spots::new();
    spots.own(0);
    spots.own(5);
    spots.own(5);
    assert!(!spots.disown(5));
    assert!(!spots.disown(5), "spot 0 still counts one");
    spots.own(7);
    assert!(!spots.disown(0), "spot 7 counts one");
    assert!(spots.disown(7));
}

#[test]
fn counts_sum_across_spots() {
    let spots = Spots::new();
    spots.count(0, Count::Scheduled, 1);
    spots.count(1, Count::Scheduled, 1);
    assert_eq!(spots.live(), 2);
    spots.count(2, Count::Cancelled, 1);
    assert_eq!(spots.live(), 1, "counted out on another spot");
    spots.count(0, Count::Released, 1);
    assert_eq!(spots.live(), 0);
    spots.count(0, Count::Scheduled, -1);
    assert_eq!(spots.live(), 0, "never below zero");
    assert_eq!(spots.total(Count::Scheduled), 1);
    assert_eq!(spots.total(Count::Cancelled), 1);
}

/// A sweep takes only what is parked due by its horizon, and says whether
/// it left any; the look before a sleep asks the same. A move's lowering of
/// a parked message's tick lets the next sweep take it; once the message
/// has left its place, a lowering touches nothing.
#[test]
fn a_sweep_leaves_what_is_due_later_until_its_tick_is_lowered() {
    let spots = Spots::new();
    let (near, near_msg) = message(10);
    let (far, far_msg) = message(1_000);
    assert!(spots.park(7, near_msg, 10).is_ok());
    assert!(spots.park(7, far_msg, 1_000).is_ok());
    assert!(!spots.any_parked(9));
    assert!(spots.any_parked(10));
    let mut swept = Vec::new();
    assert_eq!(spots.sweep(100, |m| swept.push(m.as_ptr())), (1, true));
    assert_eq!(swept, [near.as_ptr()]);
    assert!(!spots.any_parked(999));
    assert!(spots.any_parked(u64::MAX));
    // Lowered on the wrong spot: not there, nothing moves.
    spots.lower(8, &far, 50);
    assert_eq!(spots.sweep(100, drop), (0, true));
    spots.lower(7, &far, 50);
    assert!(spots.any_parked(100));
    assert_eq!(spots.sweep(100, |m| swept.push(m.as_ptr())), (1, false));
    assert_eq!(swept, [near.as_ptr(), far.as_ptr()]);
    // A message parked since keeps its own tick.
    let (next, next_msg) = message(2_000);
    assert!(spots.park(7, next_msg, 2_000).is_ok());
    spots.lower(7, &far, 0);
    assert_eq!(spots.sweep(1_999, drop), (0, true));
    assert!(spots.retract(7, &next));
}
