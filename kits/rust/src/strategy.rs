//! How a bot chooses: the `Strategy` trait and the starter bot's `Starter`.

use crate::pb;
use crate::recipes::oven_suffices;
use crate::view::{Choice, Decision, DecisionKind, Draw, Resolve, Turn};

/// An answer: the index of the option chosen, and a private note on why (kept
/// beside the answer for the bot's owner alone: `ActRequest.note`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub option: usize,
    pub note: String,
}

impl Answer {
    /// Returns an answer with the option `option` and the note `note`.
    pub fn new(option: usize, note: impl Into<String>) -> Answer {
        Answer { option, note: note.into() }
    }
}

/// A bot's mind. One value plays one seat: the ladder clones it for each match.
///
/// `decide` is called on the runtime's thread as each decision arrives; it should
/// answer well within `decision.time_left()` (a strategy that searches should
/// watch the clock). An index out of range is replaced by 0, and after a refusal
/// that leaves the decision open the seat answers with an option not tried yet.
pub trait Strategy: Send {
    /// Returns the answer to `decision` (an index into `decision.options`).
    fn decide(&mut self, decision: &Decision) -> Answer;

    /// Sees every event of the seat's stream, in order (the snapshot's history
    /// included), for a strategy that follows the game; the default ignores them.
    fn observe(&mut self, _event: &pb::SeatEvent) {}
}

/// The starter bot's choice: simple, not random, always one of the options.
///
/// A turn plays an order when the public oven suffices for it (the orders already
/// in the oven resolved first), spending as few cards as it can; otherwise it plays
/// all its cards of its most plentiful ingredient and keeps its orders. It refills
/// from the waiter while fewer than two order cards would be left in hand, else
/// from the supply, so that it keeps two orders in hand. A resolution bakes
/// whenever an option bakes, adding the fewest cards from hand, and declines
/// otherwise.
#[derive(Clone, Copy, Debug, Default)]
pub struct Starter;

impl Strategy for Starter {
    fn decide(&mut self, decision: &Decision) -> Answer {
        match decision.kind {
            DecisionKind::Resolve => choose_resolve(decision),
            DecisionKind::Turn => choose_turn(decision),
        }
    }
}

/// Returns the index of the first item with the smallest key.
fn first_best<T, K: Ord>(items: &[(usize, T)], key: impl Fn(&T) -> K) -> Option<&(usize, T)> {
    let mut best: Option<(&(usize, T), K)> = None;
    for item in items {
        let k = key(&item.1);
        if best.as_ref().is_none_or(|(_, best_key)| k < *best_key) {
            best = Some((item, k));
        }
    }
    best.map(|(item, _)| item)
}

/// The order cards a turn keeps in hand: the refill comes from the waiter while
/// fewer would be left.
pub const KEEP_ORDERS: usize = 2;

/// Returns the starter's answer to a turn (R-TURN-*).
pub fn choose_turn(decision: &Decision) -> Answer {
    let view = &decision.view;
    let turns: Vec<(usize, &Turn)> = decision
        .options
        .iter()
        .enumerate()
        .filter_map(|(index, choice)| match choice {
            Choice::Turn(turn) => Some((index, turn)),
            _ => None,
        })
        .collect();
    if turns.is_empty() {
        return Answer::new(0, "no turn among the options");
    }
    let orders_in_hand = view.hand_orders.len();
    // The refill wanted: the waiter while fewer than KEEP_ORDERS would be left in hand.
    let draw_rank = |turn: &Turn| {
        let left = orders_in_hand - usize::from(turn.order.is_some());
        let wanted = if left >= KEEP_ORDERS { Draw::Supply } else { Draw::Waiter };
        u8::from(turn.draw.is_some_and(|draw| draw != wanted))
    };

    let playable: Vec<(usize, &Turn)> = turns
        .iter()
        .copied()
        .filter(|(_, turn)| {
            let ingredient = if turn.pass { None } else { turn.ingredient };
            turn.order
                .as_deref()
                .is_some_and(|order| oven_suffices(&view.oven, order, ingredient, turn.count))
        })
        .collect();
    if let Some((index, turn)) = first_best(&playable, |turn| (turn.count, draw_rank(turn))) {
        let order = turn.order.as_deref().unwrap_or_default();
        return Answer::new(*index, format!("oven suffices for {order}"));
    }

    let plentiful = view.hand.most_plentiful();
    let feeding: Vec<(usize, &Turn)> = turns
        .iter()
        .copied()
        .filter(|(_, turn)| turn.order.is_none() && !turn.pass && turn.ingredient == Some(plentiful))
        .collect();
    if let Some((index, _)) = first_best(&feeding, |turn| (std::cmp::Reverse(turn.count), draw_rank(turn))) {
        return Answer::new(*index, format!("most plentiful ingredient is {plentiful}"));
    }
    let passes: Vec<(usize, &Turn)> = turns.iter().copied().filter(|(_, turn)| turn.pass).collect();
    if let Some((index, _)) = first_best(&passes, |turn| draw_rank(turn)) {
        return Answer::new(*index, "no ingredient in hand");
    }
    Answer::new(turns[0].0, "first option")
}

/// Returns the starter's answer to a resolution decision (R-RES-8).
pub fn choose_resolve(decision: &Decision) -> Answer {
    let resolves: Vec<(usize, &Resolve)> = decision
        .options
        .iter()
        .enumerate()
        .filter_map(|(index, choice)| match choice {
            Choice::Resolve(resolve) => Some((index, resolve)),
            _ => None,
        })
        .collect();
    let deciding = &decision.view.deciding;
    let bakes: Vec<(usize, &Resolve)> = resolves.iter().copied().filter(|(_, r)| r.bake).collect();
    if let Some((index, _)) = first_best(&bakes, |r| r.hand.total()) {
        return Answer::new(*index, format!("bake {deciding}"));
    }
    let decline = resolves.iter().find(|(_, r)| !r.bake).map_or(0, |(index, _)| *index);
    Answer::new(decline, format!("cannot bake {deciding}"))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::pb;

    fn turn(ingredient: &str, count: u32, order: &str, draw: Option<pb::DrawSource>) -> pb::Action {
        let turn = pb::TurnAction {
            pass: ingredient.is_empty(),
            ingredient: ingredient.into(),
            count,
            order: order.into(),
            draw: draw.map(|d| d as i32),
        };
        pb::Action { kind: Some(pb::action::Kind::Turn(turn)) }
    }

    fn resolve(bake: bool, hand: [u32; 5]) -> pb::Action {
        let [salami, pineapple, mushroom, pepper, olive] = hand;
        let hand = pb::IngredientCounts { salami, pineapple, mushroom, pepper, olive };
        let resolve = pb::ResolveAction { bake, ingredient: String::new(), hand: Some(hand) };
        pb::Action { kind: Some(pb::action::Kind::Resolve(resolve)) }
    }

    fn decision(kind: pb::DecisionKind, view: pb::View, options: Vec<pb::Action>) -> Decision {
        let request = pb::DecisionRequest {
            decision_id: "d1".into(),
            kind: kind as i32,
            view: Some(view),
            options,
            deadline_ms: 5000,
            default_in_ms: 5000,
            ..Default::default()
        };
        Decision::from_wire(&request, Instant::now())
    }

    fn view(oven: &[&str], hand: [u32; 5], orders: &[&str]) -> pb::View {
        let [salami, pineapple, mushroom, pepper, olive] = hand;
        pb::View {
            seat: Some(0),
            players: 2,
            round: 1,
            oven: oven.iter().map(|c| c.to_string()).collect(),
            hand: Some(pb::IngredientCounts { salami, pineapple, mushroom, pepper, olive }),
            hand_orders: orders.iter().map(|c| c.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_turn_plays_an_order_the_oven_suffices_for_with_the_fewest_cards() {
        use pb::DrawSource::{Supply, Waiter};
        let options = vec![
            turn("pineapple", 1, "", Some(Supply)),
            turn("pineapple", 2, "", Some(Supply)),
            turn("pineapple", 2, "red-pineapple", Some(Waiter)),
            turn("pineapple", 2, "red-pineapple", Some(Supply)),
            turn("pineapple", 1, "red-pineapple", Some(Supply)),
        ];
        let oven = ["salami", "pineapple", "pineapple"];
        let d = decision(
            pb::DecisionKind::Turn,
            view(&oven, [0, 2, 0, 0, 0], &["red-mixed", "red-pineapple"]),
            options,
        );
        // One more pineapple does not make four; two do, and with one order left in
        // hand the refill comes from the waiter.
        assert_eq!(Starter.decide(&d), Answer::new(2, "oven suffices for red-pineapple"));
    }

    #[test]
    fn without_a_ready_order_a_turn_feeds_the_most_plentiful_and_keeps_an_order_in_hand() {
        use pb::DrawSource::{Supply, Waiter};
        let options = vec![
            turn("salami", 1, "", Some(Supply)),
            turn("olive", 1, "", Some(Supply)),
            turn("olive", 3, "", Some(Supply)),
            turn("olive", 3, "", Some(Waiter)),
            turn("olive", 3, "red-mixed", Some(Waiter)),
        ];
        let d = decision(pb::DecisionKind::Turn, view(&[], [1, 0, 0, 0, 3], &[]), options);
        // No order card in hand: the refill comes from the waiter.
        assert_eq!(Starter.decide(&d).option, 3);
    }

    #[test]
    fn a_resolution_bakes_adding_the_fewest_cards_else_declines() {
        let bakes =
            vec![resolve(true, [2, 1, 0, 0, 0]), resolve(true, [0, 1, 0, 0, 0]), resolve(false, [0; 5])];
        let d = decision(pb::DecisionKind::Resolve, view(&[], [2, 1, 0, 0, 0], &[]), bakes);
        assert_eq!(Starter.decide(&d).option, 1);
        let declines = vec![resolve(false, [0; 5])];
        let d = decision(pb::DecisionKind::Resolve, view(&[], [0; 5], &[]), declines);
        assert_eq!(Starter.decide(&d).option, 0);
    }
}
