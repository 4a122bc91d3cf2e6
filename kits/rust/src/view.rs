//! The typed view of a seat and of its options: what the wire's `View`,
//! `DecisionRequest` and `Action` say, as Rust types, with the decision's deadline
//! and time bank as instants on this machine's clock.

use std::time::{Duration, Instant};

use crate::pb;
use crate::recipes::{Counts, Ingredient};

/// Returns wire ingredient counts as `Counts` (zero for an absent message).
pub fn counts_of(counts: Option<&pb::IngredientCounts>) -> Counts {
    counts.map_or_else(Counts::default, |c| Counts([c.salami, c.pineapple, c.mushroom, c.pepper, c.olive]))
}

/// Returns `Counts` as wire ingredient counts.
pub fn wire_counts(counts: &Counts) -> pb::IngredientCounts {
    let [salami, pineapple, mushroom, pepper, olive] = counts.0;
    pb::IngredientCounts { salami, pineapple, mushroom, pepper, olive }
}

/// The phase of the game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// A player takes a turn (R-TURN-*).
    Turn,
    /// The oven is being resolved and an order's owner decides (R-RES-8).
    Resolve,
    /// The third resolution is over (R-END-1).
    Over,
    /// A value this kit does not know (a newer server).
    Unknown,
}

/// Where a refill draws from (R-TURN-4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draw {
    /// The face-down supply.
    Supply,
    /// The player's own waiter deck of orders.
    Waiter,
}

/// The public facts about one seat (R-VIEW-1, R-TURN-9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeatInfo {
    pub seat: u32,
    pub colour: String,
    pub name: String,
    pub hand_size: u32,
    pub orders_in_hand: u32,
    pub waiter_size: u32,
    /// Orders delivered (baked), in delivery order.
    pub delivered: Vec<String>,
    /// Deadlines missed in a row; at 3 the seat is on autopilot.
    pub strikes: u32,
    pub autopilot: bool,
}

/// The game as the seat sees it (R-VIEW-1..4); see `View` in arena.proto.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// The viewer's seat; `None` for a spectator.
    pub seat: Option<u32>,
    pub players: u32,
    /// Round 1, 2 or 3.
    pub round: u32,
    pub phase: Phase,
    /// The seat asked now; `None` once the game is over.
    pub to_act: Option<u32>,
    /// The order being resolved while its owner decides; empty otherwise.
    pub deciding: String,
    pub supply_size: u32,
    /// The oven pile of this round, first played first.
    pub oven: Vec<String>,
    /// During resolution, how many cards of `oven` are turned over.
    pub revealed: u32,
    /// The face-up ingredients on the table.
    pub table: Counts,
    /// The used pile of the round, oldest first.
    pub used: Vec<String>,
    pub mamma_mia_holder: Option<u32>,
    /// Every seat's public facts, in seat order.
    pub seats: Vec<SeatInfo>,
    /// The viewer's own ingredient cards.
    pub hand: Counts,
    /// The viewer's own order cards in hand, sorted.
    pub hand_orders: Vec<String>,
    /// The viewer's orders still in its waiter, sorted.
    pub waiter: Vec<String>,
    /// The winning seats once the game is over.
    pub winners: Vec<u32>,
}

impl View {
    /// Returns the typed view of a wire view (an empty one for `None`).
    pub fn from_wire(view: Option<&pb::View>) -> View {
        let default = pb::View::default();
        let view = view.unwrap_or(&default);
        View {
            seat: view.seat,
            players: view.players,
            round: view.round,
            phase: match view.phase() {
                pb::Phase::Turn => Phase::Turn,
                pb::Phase::Resolve => Phase::Resolve,
                pb::Phase::Over => Phase::Over,
                pb::Phase::Unspecified => Phase::Unknown,
            },
            to_act: view.to_act,
            deciding: view.deciding.clone(),
            supply_size: view.supply_size,
            oven: view.oven.clone(),
            revealed: view.revealed,
            table: counts_of(view.table.as_ref()),
            used: view.used.clone(),
            mamma_mia_holder: view.mamma_mia_holder,
            seats: view
                .seats
                .iter()
                .map(|s| SeatInfo {
                    seat: s.seat,
                    colour: s.colour.clone(),
                    name: s.name.clone(),
                    hand_size: s.hand_size,
                    orders_in_hand: s.orders_in_hand,
                    waiter_size: s.waiter_size,
                    delivered: s.delivered.clone(),
                    strikes: s.strikes,
                    autopilot: s.autopilot,
                })
                .collect(),
            hand: counts_of(view.hand.as_ref()),
            hand_orders: view.hand_orders.clone(),
            waiter: view.waiter.clone(),
            winners: view.winners.clone(),
        }
    }

    /// Returns the viewer's own seat facts, if the viewer has a seat.
    pub fn me(&self) -> Option<&SeatInfo> {
        self.seat.and_then(|seat| self.seats.iter().find(|s| s.seat == seat))
    }
}

/// A turn (R-TURN-1..5): ingredients played (or a pass), maybe an order, the refill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Turn {
    pub pass: bool,
    /// The kind played; `None` for a pass.
    pub ingredient: Option<Ingredient>,
    /// How many cards of `ingredient`; 0 for a pass.
    pub count: u32,
    /// The order card played on top, if any.
    pub order: Option<String>,
    /// The refill source; `None` when the hand then holds 7 cards.
    pub draw: Option<Draw>,
}

/// A resolution decision (R-RES-4..8) for the order being resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolve {
    /// True to bake, false to decline.
    pub bake: bool,
    /// The "?" of a Minimale or the "J" of a Monotoni, when the owner chooses it.
    pub ingredient: Option<Ingredient>,
    /// The cards added from hand.
    pub hand: Counts,
}

/// One option of a decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    Turn(Turn),
    Resolve(Resolve),
    /// An action this kit cannot read (a newer server); still a legal answer.
    Unknown,
}

impl Choice {
    /// Returns the typed form of a wire action.
    pub fn from_wire(action: &pb::Action) -> Choice {
        match &action.kind {
            Some(pb::action::Kind::Turn(turn)) => Choice::Turn(Turn {
                pass: turn.pass,
                ingredient: Ingredient::from_id(&turn.ingredient),
                count: turn.count,
                order: (!turn.order.is_empty()).then(|| turn.order.clone()),
                draw: match turn.draw.map(|_| turn.draw()) {
                    Some(pb::DrawSource::Supply) => Some(Draw::Supply),
                    Some(pb::DrawSource::Waiter) => Some(Draw::Waiter),
                    _ => None,
                },
            }),
            Some(pb::action::Kind::Resolve(resolve)) => Choice::Resolve(Resolve {
                bake: resolve.bake,
                ingredient: Ingredient::from_id(&resolve.ingredient),
                hand: counts_of(resolve.hand.as_ref()),
            }),
            None => Choice::Unknown,
        }
    }

    /// Returns a short description for a log line ("play 2 salami, order red-mixed, draw supply").
    pub fn describe(&self) -> String {
        match self {
            Choice::Turn(t) => {
                let mut parts = vec![match t.ingredient {
                    Some(kind) if !t.pass => format!("play {} {kind}", t.count),
                    _ => "pass".to_string(),
                }];
                if let Some(order) = &t.order {
                    parts.push(format!("order {order}"));
                }
                match t.draw {
                    Some(Draw::Supply) => parts.push("draw supply".into()),
                    Some(Draw::Waiter) => parts.push("draw waiter".into()),
                    None => {}
                }
                parts.join(", ")
            }
            Choice::Resolve(r) if !r.bake => "decline".into(),
            Choice::Resolve(r) => {
                let mut text = "bake".to_string();
                if let Some(kind) = r.ingredient {
                    text.push_str(&format!(" as {kind}"));
                }
                let added: Vec<String> = Ingredient::ALL
                    .into_iter()
                    .filter(|&kind| r.hand.get(kind) > 0)
                    .map(|kind| format!("{} {kind}", r.hand.get(kind)))
                    .collect();
                if !added.is_empty() {
                    text.push_str(&format!(", adding {}", added.join(" + ")));
                }
                text
            }
            Choice::Unknown => "unknown action".into(),
        }
    }
}

/// The kind of decision asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecisionKind {
    /// Take a turn.
    Turn,
    /// Decide how a revealed order of yours is resolved.
    Resolve,
}

/// A decision the seat is asked: its view, its options, and its time.
///
/// The times count from when this process received the request (the server's
/// `*_ms` fields, not its clock, so the two clocks need not agree).
#[derive(Clone, Debug)]
pub struct Decision {
    /// The id to answer with.
    pub id: String,
    pub kind: DecisionKind,
    /// The seat's view when asked.
    pub view: View,
    /// Every legal option, in the canonical order; answer with an index into it.
    pub options: Vec<Choice>,
    received: Instant,
    deadline_ms: u32,
    time_bank_ms: u32,
    default_in_ms: u32,
    /// The request as it came (for fields this kit does not type).
    pub wire: pb::DecisionRequest,
}

impl Decision {
    /// Returns the typed decision of a request received at `received`.
    pub fn from_wire(request: &pb::DecisionRequest, received: Instant) -> Decision {
        Decision {
            id: request.decision_id.clone(),
            kind: match request.kind() {
                pb::DecisionKind::Resolve => DecisionKind::Resolve,
                _ => DecisionKind::Turn,
            },
            view: View::from_wire(request.view.as_ref()),
            options: request.options.iter().map(Choice::from_wire).collect(),
            received,
            deadline_ms: request.deadline_ms,
            time_bank_ms: request.time_bank_ms,
            default_in_ms: request.default_in_ms,
            wire: request.clone(),
        }
    }

    /// Returns the end of the decision's own time: an answer by then costs nothing.
    pub fn deadline(&self) -> Instant {
        self.received + Duration::from_millis(u64::from(self.deadline_ms))
    }

    /// Returns the seat's time bank as it was when asked (zero without one): past
    /// the deadline an answer is charged to it by how late it came.
    pub fn time_bank(&self) -> Duration {
        Duration::from_millis(u64::from(self.time_bank_ms))
    }

    /// Returns when the server stops waiting and applies the default (the deadline
    /// plus the bank); answer before it, less the network's delay.
    pub fn default_at(&self) -> Instant {
        self.received + Duration::from_millis(u64::from(self.default_in_ms))
    }

    /// Returns the time left until the deadline now (zero once it has passed).
    pub fn time_left(&self) -> Duration {
        self.deadline().saturating_duration_since(Instant::now())
    }
}
