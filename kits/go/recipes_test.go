package mammamia

import "testing"

func TestRecipeOfReadsEveryKindOfOrder(t *testing.T) {
	cases := map[string]Recipe{
		"green-salami":      {Kind: Standard, Needs: Counts{4, 0, 0, 1, 0}, Personal: 3},
		"red-mixed":         {Kind: Standard, Needs: Counts{1, 1, 1, 1, 1}, Personal: 0},
		"yellow-bombastica": {Kind: Bombastica, Personal: 1},
		"brown-minimale":    {Kind: Minimale, Personal: 2},
		"purple-monotoni":   {Kind: Monotoni, Personal: 4},
		"red-salami":        {},
		"salami":            {},
		"mamma-mia":         {},
	}
	for order, want := range cases {
		if got := RecipeOf(order); got != want {
			t.Errorf("RecipeOf(%q) = %+v, want %+v", order, got, want)
		}
	}
}

func TestTableAfterResolvesTheOvenInOrder(t *testing.T) {
	// green-salami fails on the two salami before it (it needs 4 salami and a pepper),
	// then takes nothing; red-mixed after five kinds takes one of each.
	oven := []string{"salami", "salami", "green-salami", "pineapple", "mushroom", "pepper", "olive", "red-mixed"}
	if got, want := TableAfter(oven), (Counts{1, 0, 0, 0, 0}); got != want {
		t.Errorf("TableAfter = %v, want %v", got, want)
	}
}

func TestTakenByChoosesTheMinimalesAndMonotonisKind(t *testing.T) {
	// The Minimale's "?" is the first least plentiful non-zero other kind.
	taken, ok := TakenBy("red-minimale", Counts{1, 5, 3, 3, 0})
	if !ok || taken != (Counts{1, 0, 3, 0, 0}) {
		t.Errorf("minimale took %v (%v)", taken, ok)
	}
	// Too few of the least plentiful kind: it fails even though another kind has 3.
	if _, ok := TakenBy("red-minimale", Counts{1, 2, 3, 0, 0}); ok {
		t.Error("minimale with 2 of its kind baked")
	}
	// The Monotoni's "J" is the first most plentiful other kind.
	taken, ok = TakenBy("red-monotoni", Counts{1, 6, 6, 0, 0})
	if !ok || taken != (Counts{1, 6, 0, 0, 0}) {
		t.Errorf("monotoni took %v (%v)", taken, ok)
	}
	if _, ok := TakenBy("red-monotoni", Counts{0, 9, 0, 0, 0}); ok {
		t.Error("monotoni without its personal ingredient baked")
	}
	if _, ok := TakenBy("red-bombastica", Counts{3, 3, 3, 3, 2}); ok {
		t.Error("bombastica with 14 cards baked")
	}
}

func TestOvenSufficesCountsTheCardsPlayedWithTheOrder(t *testing.T) {
	oven := []string{"salami", "salami", "salami", "pepper"}
	if OvenSuffices(oven, "green-salami", "", 0) {
		t.Error("3 salami sufficed for green-salami")
	}
	if !OvenSuffices(oven, "green-salami", "salami", 1) {
		t.Error("4 salami and a pepper did not suffice for green-salami")
	}
}
