package org.mammamia.kit;

import java.util.List;
import java.util.Map;

/**
 * What the rules say about orders (docs/rules.md R-COMP-*, R-RES-*): each order's recipe,
 * and a prediction of how the oven resolves from its public cards alone.
 */
public final class Recipes {
  /** Each colour's personal ingredient (R-COMP-2). */
  public static final Map<String, Ingredient> PERSONAL =
      Map.of(
          "red", Ingredient.SALAMI,
          "yellow", Ingredient.PINEAPPLE,
          "brown", Ingredient.MUSHROOM,
          "green", Ingredient.PEPPER,
          "purple", Ingredient.OLIVE);

  /** A Bombastica's size: at least this many ingredient cards of any kinds (R-RES-5). */
  public static final int BOMBASTICA_SIZE = 15;

  /** The kinds of order. */
  public enum Kind {
    /** Fixed counts: one personal and four of a kind, or one of each (mixed). */
    STANDARD,
    /** One personal and three of the least plentiful other kind on the table ("?"). */
    MINIMALE,
    /** One personal and six of the most plentiful other kind on the table ("J"). */
    MONOTONI,
    /** The whole table, at least 15 cards. */
    BOMBASTICA
  }

  /** An order's recipe: its kind, its owner's personal ingredient, a standard one's needs. */
  public record Recipe(Kind kind, Ingredient personal, Counts needs) {}

  private Recipes() {}

  /** Returns the recipe of an order card id (`red-mixed`, ...), or null for no order. */
  public static Recipe of(String order) {
    int dash = order.indexOf('-');
    if (dash <= 0) {
      return null;
    }
    Ingredient personal = PERSONAL.get(order.substring(0, dash));
    if (personal == null) {
      return null;
    }
    String name = order.substring(dash + 1);
    Ingredient kind = Ingredient.fromId(name);
    if (name.equals("mixed")) {
      return new Recipe(Kind.STANDARD, personal, Counts.of(1, 1, 1, 1, 1));
    }
    if (kind != null && kind != personal) {
      return new Recipe(Kind.STANDARD, personal, Counts.NONE.plus(personal, 1).plus(kind, 4));
    }
    return switch (name) {
      case "bombastica" -> new Recipe(Kind.BOMBASTICA, personal, Counts.NONE);
      case "minimale" -> new Recipe(Kind.MINIMALE, personal, Counts.NONE);
      case "monotoni" -> new Recipe(Kind.MONOTONI, personal, Counts.NONE);
      default -> null;
    };
  }

  /**
   * Returns the ingredients {@code order} takes from {@code table} when the table alone
   * covers it, or null when it does not. Where the owner would choose a kind this picks
   * one: the Minimale's "?" is the first of the least plentiful non-zero other kinds
   * (R-RES-6), the Monotoni's "J" the first of the most plentiful other kinds (R-RES-7).
   */
  public static Counts takenBy(String order, Counts table) {
    Recipe recipe = of(order);
    if (recipe == null) {
      return null;
    }
    switch (recipe.kind()) {
      case STANDARD:
        return table.covers(recipe.needs()) ? recipe.needs() : null;
      case BOMBASTICA:
        return table.total() >= BOMBASTICA_SIZE ? table : null;
      default:
        break;
    }
    if (table.get(recipe.personal()) < 1) {
      return null;
    }
    Ingredient chosen = null;
    for (Ingredient kind : Ingredient.ALL) {
      if (kind == recipe.personal()) {
        continue;
      }
      if (recipe.kind() == Kind.MINIMALE) {
        if (table.get(kind) > 0 && (chosen == null || table.get(kind) < table.get(chosen))) {
          chosen = kind;
        }
      } else if (chosen == null || table.get(kind) > table.get(chosen)) {
        chosen = kind;
      }
    }
    int need = recipe.kind() == Kind.MINIMALE ? 3 : 6;
    if (chosen == null || table.get(chosen) < need) {
      return null;
    }
    return Counts.NONE.plus(recipe.personal(), 1).plus(chosen, need);
  }

  /**
   * Returns the table left after revealing {@code oven} (card ids, first played first) as
   * R-RES-1..3 do, assuming no owner adds cards from hand: each order revealed takes its
   * ingredients when the table at that moment covers it, else fails and takes nothing.
   */
  public static Counts tableAfter(List<String> oven) {
    Counts table = Counts.NONE;
    for (String card : oven) {
      Ingredient kind = Ingredient.fromId(card);
      if (kind != null) {
        table = table.plus(kind, 1);
        continue;
      }
      Counts taken = takenBy(card, table);
      if (taken != null) {
        table = table.minus(taken);
      }
    }
    return table;
  }

  /**
   * Returns true when the public oven suffices for {@code order} played on top of it now,
   * after {@code count} cards of {@code ingredient} (null for none): the orders already in
   * the oven are resolved first, then the rest of the table must cover the recipe.
   */
  public static boolean ovenSuffices(List<String> oven, String order, Ingredient ingredient, int count) {
    Counts table = tableAfter(oven);
    if (ingredient != null) {
      table = table.plus(ingredient, count);
    }
    return takenBy(order, table) != null;
  }
}
