package mammamia

import (
	"strings"

	pb "mammamia/v1"
)

// Ingredients are the ingredient kinds in the canonical order (R-COMP-1); a Counts
// holds one count per kind in this order.
var Ingredients = [5]string{"salami", "pineapple", "mushroom", "pepper", "olive"}

// Personal is each colour's personal ingredient (R-COMP-2).
var Personal = map[string]string{
	"red": "salami", "yellow": "pineapple", "brown": "mushroom", "green": "pepper", "purple": "olive",
}

// BombasticaSize is the least number of ingredient cards a Bombastica takes (R-RES-5).
const BombasticaSize = 15

// Counts are ingredient cards by kind, in the order of Ingredients.
type Counts [5]int

// CountsOf returns the wire's IngredientCounts (nil counts as none) as Counts.
func CountsOf(c *pb.IngredientCounts) Counts {
	return Counts{int(c.GetSalami()), int(c.GetPineapple()), int(c.GetMushroom()), int(c.GetPepper()), int(c.GetOlive())}
}

// Total returns the number of cards counted.
func (c Counts) Total() int {
	return c[0] + c[1] + c[2] + c[3] + c[4]
}

// Kind returns the index of an ingredient card id in Ingredients, or -1 for a card
// that is no ingredient.
func Kind(card string) int {
	for i, name := range Ingredients {
		if name == card {
			return i
		}
	}
	return -1
}

// RecipeKind says how an order is baked.
type RecipeKind int

const (
	// NoRecipe: the card is no order.
	NoRecipe RecipeKind = iota
	// Standard: fixed counts (1 personal + 4 of a kind, or 1 of each for mixed).
	Standard
	// Bombastica: at least BombasticaSize cards of any kinds.
	Bombastica
	// Minimale: 1 personal + 3 of the least plentiful other kind present (its "?").
	Minimale
	// Monotoni: 1 personal + 6 of the most plentiful other kind (its "J").
	Monotoni
)

// Recipe is what an order needs.
type Recipe struct {
	Kind RecipeKind
	// Needs are a standard order's counts.
	Needs Counts
	// Personal is the kind index of the colour's personal ingredient.
	Personal int
}

// RecipeOf returns the recipe of an order card id (`<colour>-<x>`); its Kind is
// NoRecipe for a card that is no order.
func RecipeOf(order string) Recipe {
	colour, name, ok := strings.Cut(order, "-")
	personal, known := Personal[colour]
	if !ok || !known {
		return Recipe{}
	}
	p := Kind(personal)
	switch name {
	case "mixed":
		return Recipe{Kind: Standard, Needs: Counts{1, 1, 1, 1, 1}, Personal: p}
	case "bombastica":
		return Recipe{Kind: Bombastica, Personal: p}
	case "minimale":
		return Recipe{Kind: Minimale, Personal: p}
	case "monotoni":
		return Recipe{Kind: Monotoni, Personal: p}
	}
	if k := Kind(name); k >= 0 && k != p {
		var needs Counts
		needs[p] = 1
		needs[k] = 4
		return Recipe{Kind: Standard, Needs: needs, Personal: p}
	}
	return Recipe{}
}

// TakenBy returns the cards order takes from table when the table alone covers it,
// and false when it does not. Where the owner would choose a kind, it picks one: the
// Minimale's "?" is the first of the least plentiful non-zero other kinds (R-RES-6),
// the Monotoni's "J" the first of the most plentiful other kinds (R-RES-7).
func TakenBy(order string, table Counts) (Counts, bool) {
	recipe := RecipeOf(order)
	switch recipe.Kind {
	case Standard:
		for k := range table {
			if table[k] < recipe.Needs[k] {
				return Counts{}, false
			}
		}
		return recipe.Needs, true
	case Bombastica:
		return table, table.Total() >= BombasticaSize
	case Minimale, Monotoni:
		if table[recipe.Personal] < 1 {
			return Counts{}, false
		}
		chosen := -1
		for k := range table {
			if k == recipe.Personal {
				continue
			}
			if recipe.Kind == Minimale && table[k] > 0 && (chosen < 0 || table[k] < table[chosen]) {
				chosen = k
			}
			if recipe.Kind == Monotoni && (chosen < 0 || table[k] > table[chosen]) {
				chosen = k
			}
		}
		need := 3
		if recipe.Kind == Monotoni {
			need = 6
		}
		if chosen < 0 || table[chosen] < need {
			return Counts{}, false
		}
		var taken Counts
		taken[recipe.Personal] = 1
		taken[chosen] = need
		return taken, true
	}
	return Counts{}, false
}

// TableAfter returns the table left after revealing oven (card ids, first played
// first) as R-RES-1..3 do, assuming no owner adds cards from hand: an ingredient
// joins the table, an order takes its ingredients when the table covers it then and
// otherwise fails and takes nothing.
func TableAfter(oven []string) Counts {
	var table Counts
	for _, card := range oven {
		if k := Kind(card); k >= 0 {
			table[k]++
			continue
		}
		if taken, ok := TakenBy(card, table); ok {
			for k := range table {
				table[k] -= taken[k]
			}
		}
	}
	return table
}

// OvenSuffices reports whether the public oven covers order played on top of it
// after count cards of ingredient ("" for none): the orders already in the oven are
// resolved first, then what is left of the table must cover the recipe.
func OvenSuffices(oven []string, order, ingredient string, count int) bool {
	cards := append([]string(nil), oven...)
	for range count {
		cards = append(cards, ingredient)
	}
	_, ok := TakenBy(order, TableAfter(cards))
	return ok
}
