//! The cards and recipes of the game (docs/rules.md R-COMP-*), and a prediction of
//! how the oven resolves from its public cards alone (R-RES-*).
//!
//! Card ids are the wire's stable strings (R-COMP-5): an ingredient is its kind's
//! name (`salami`), an order is `<colour>-<name>` (`red-pineapple`, `red-mixed`,
//! `red-bombastica`, `red-minimale`, `red-monotoni`).

use std::fmt;

/// An ingredient kind, in the canonical order (R-COMP-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ingredient {
    Salami,
    Pineapple,
    Mushroom,
    Pepper,
    Olive,
}

impl Ingredient {
    /// Every kind, in the canonical order.
    pub const ALL: [Ingredient; 5] = [
        Ingredient::Salami,
        Ingredient::Pineapple,
        Ingredient::Mushroom,
        Ingredient::Pepper,
        Ingredient::Olive,
    ];

    /// Returns the kind's card id (`salami`, ...).
    pub fn id(self) -> &'static str {
        match self {
            Ingredient::Salami => "salami",
            Ingredient::Pineapple => "pineapple",
            Ingredient::Mushroom => "mushroom",
            Ingredient::Pepper => "pepper",
            Ingredient::Olive => "olive",
        }
    }

    /// Returns the kind a card id names, or `None` for any other card.
    pub fn from_id(id: &str) -> Option<Ingredient> {
        Ingredient::ALL.into_iter().find(|kind| kind.id() == id)
    }

    /// Returns the kind's place in the canonical order (0 for salami).
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Ingredient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// Returns the personal ingredient of a seat colour (R-COMP-2), or `None` for an
/// unknown colour.
pub fn personal_of(colour: &str) -> Option<Ingredient> {
    match colour {
        "red" => Some(Ingredient::Salami),
        "yellow" => Some(Ingredient::Pineapple),
        "brown" => Some(Ingredient::Mushroom),
        "green" => Some(Ingredient::Pepper),
        "purple" => Some(Ingredient::Olive),
        _ => None,
    }
}

/// Cards counted by ingredient kind, indexed by `Ingredient::index`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counts(pub [u32; 5]);

impl Counts {
    /// Returns the count of one kind.
    pub fn get(&self, kind: Ingredient) -> u32 {
        self.0[kind.index()]
    }

    /// Returns a mutable reference to the count of one kind.
    pub fn get_mut(&mut self, kind: Ingredient) -> &mut u32 {
        &mut self.0[kind.index()]
    }

    /// Returns the number of cards of every kind together.
    pub fn total(&self) -> u32 {
        self.0.iter().sum()
    }

    /// Returns the kind with the most cards (the first in canonical order on a tie).
    pub fn most_plentiful(&self) -> Ingredient {
        let mut best = Ingredient::Salami;
        for kind in Ingredient::ALL {
            if self.get(kind) > self.get(best) {
                best = kind;
            }
        }
        best
    }

    /// Returns true when every kind here is at least as many in `other`.
    pub fn within(&self, other: &Counts) -> bool {
        Ingredient::ALL.into_iter().all(|kind| self.get(kind) <= other.get(kind))
    }
}

/// What an order needs (R-RES-4..7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recipe {
    /// Fixed counts: `<colour>-<x>` is one personal and four `x`; `<colour>-mixed`
    /// one of each kind.
    Standard(Counts),
    /// At least 15 ingredient cards of any kinds.
    Bombastica,
    /// One personal and three of the least plentiful other kind present ("?").
    Minimale(Ingredient),
    /// One personal and six of one other kind ("J").
    Monotoni(Ingredient),
}

/// The ingredient cards a Bombastica needs (R-RES-5).
pub const BOMBASTICA_SIZE: u32 = 15;

/// Returns the recipe of an order card id, or `None` for a card that is no order.
pub fn recipe_of(order: &str) -> Option<Recipe> {
    let (colour, name) = order.split_once('-')?;
    let personal = personal_of(colour)?;
    match name {
        "mixed" => Some(Recipe::Standard(Counts([1; 5]))),
        "bombastica" => Some(Recipe::Bombastica),
        "minimale" => Some(Recipe::Minimale(personal)),
        "monotoni" => Some(Recipe::Monotoni(personal)),
        other => {
            let kind = Ingredient::from_id(other).filter(|&kind| kind != personal)?;
            let mut needs = Counts::default();
            *needs.get_mut(personal) = 1;
            *needs.get_mut(kind) = 4;
            Some(Recipe::Standard(needs))
        }
    }
}

/// Returns the ingredients `order` takes from `table` when the table alone covers
/// it, or `None` when it does not (or `order` is no order).
///
/// Where the owner would choose a kind this picks one: the Minimale's "?" is the
/// first of the least plentiful non-zero other kinds (R-RES-6), the Monotoni's
/// "J" the first of the most plentiful other kinds (R-RES-7).
pub fn taken_by(order: &str, table: &Counts) -> Option<Counts> {
    match recipe_of(order)? {
        Recipe::Standard(needs) => needs.within(table).then_some(needs),
        Recipe::Bombastica => (table.total() >= BOMBASTICA_SIZE).then_some(*table),
        Recipe::Minimale(personal) | Recipe::Monotoni(personal) => {
            let minimale = matches!(recipe_of(order), Some(Recipe::Minimale(_)));
            if table.get(personal) < 1 {
                return None;
            }
            let mut chosen: Option<Ingredient> = None;
            for kind in Ingredient::ALL.into_iter().filter(|&kind| kind != personal) {
                let have = table.get(kind);
                let better = match chosen {
                    None => !minimale || have > 0,
                    Some(best) if minimale => have > 0 && have < table.get(best),
                    Some(best) => have > table.get(best),
                };
                if better {
                    chosen = Some(kind);
                }
            }
            let chosen = chosen?;
            let need = if minimale { 3 } else { 6 };
            if table.get(chosen) < need {
                return None;
            }
            let mut taken = Counts::default();
            *taken.get_mut(personal) = 1;
            *taken.get_mut(chosen) = need;
            Some(taken)
        }
    }
}

/// Returns the table left once `oven` (card ids, first played first) is revealed
/// as R-RES-1..3 do, assuming no owner adds cards from hand: each order revealed
/// takes its ingredients when the table then covers it, else fails and takes none.
pub fn table_after<'a>(oven: impl IntoIterator<Item = &'a str>) -> Counts {
    let mut table = Counts::default();
    for card in oven {
        if let Some(kind) = Ingredient::from_id(card) {
            *table.get_mut(kind) += 1;
        } else if let Some(taken) = taken_by(card, &table) {
            for kind in Ingredient::ALL {
                *table.get_mut(kind) -= taken.get(kind);
            }
        }
    }
    table
}

/// Returns true when the public oven suffices for `order` played on top of it
/// now, after `count` cards of `ingredient` (none for `None`): the orders already
/// in the oven resolve first, then what is left must cover the recipe.
pub fn oven_suffices(oven: &[String], order: &str, ingredient: Option<Ingredient>, count: u32) -> bool {
    let played = ingredient.map(|kind| kind.id()).into_iter().cycle().take(count as usize);
    let table = table_after(oven.iter().map(String::as_str).chain(played));
    taken_by(order, &table).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oven(cards: &[&str]) -> Vec<String> {
        cards.iter().map(|card| card.to_string()).collect()
    }

    #[test]
    fn a_standard_order_needs_its_personal_and_four() {
        let recipe = recipe_of("red-pineapple");
        assert_eq!(recipe, Some(Recipe::Standard(Counts([1, 4, 0, 0, 0]))));
        assert_eq!(recipe_of("red-salami"), None);
        assert_eq!(recipe_of("salami"), None);
    }

    #[test]
    fn an_order_already_in_the_oven_takes_its_share_first() {
        let cards = oven(&["salami", "pineapple", "pineapple", "pineapple", "pineapple"]);
        assert!(oven_suffices(&cards, "red-pineapple", None, 0));
        let mut taken = cards.clone();
        taken.push("red-pineapple".into());
        assert!(!oven_suffices(&taken, "red-pineapple", None, 0));
    }

    #[test]
    fn played_cards_count_before_the_order() {
        let cards = oven(&["salami", "pineapple"]);
        assert!(oven_suffices(&cards, "red-pineapple", Some(Ingredient::Pineapple), 3));
        assert!(!oven_suffices(&cards, "red-pineapple", Some(Ingredient::Pineapple), 2));
    }

    #[test]
    fn minimale_takes_three_of_the_scarcest_kind_present() {
        let table = Counts([1, 5, 3, 0, 0]);
        assert_eq!(taken_by("red-minimale", &table), Some(Counts([1, 0, 3, 0, 0])));
        assert_eq!(taken_by("red-minimale", &Counts([1, 5, 2, 0, 0])), None);
        assert_eq!(taken_by("red-monotoni", &Counts([1, 6, 0, 0, 0])), Some(Counts([1, 6, 0, 0, 0])));
        assert_eq!(taken_by("red-bombastica", &Counts([3, 3, 3, 3, 2])), None);
    }
}
