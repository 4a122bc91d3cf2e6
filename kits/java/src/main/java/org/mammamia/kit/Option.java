package org.mammamia.kit;

import org.mammamia.v1.Action;
import org.mammamia.v1.DrawSource;
import org.mammamia.v1.ResolveAction;
import org.mammamia.v1.TurnAction;

/**
 * One legal option of a decision, typed: a turn (play {@code count} cards of {@code
 * ingredient}, or pass; maybe an order on top; a refill) or a resolution (bake, with
 * the "?"/"J" kind and the cards added from hand, or decline). {@link #index()} is what
 * the answer sends.
 */
public record Option(int index, Action action) {

  /** Where a turn's refill comes from. */
  public enum Draw {
    /** No refill: the hand then holds 7 cards. */
    NONE,
    /** The face-down supply. */
    SUPPLY,
    /** The player's own waiter deck of orders. */
    WAITER
  }

  /** Returns true for a turn, false for a resolution decision. */
  public boolean isTurn() {
    return action.hasTurn();
  }

  /** Returns true for a turn that passes (plays no ingredient and no order). */
  public boolean isPass() {
    return isTurn() && action.getTurn().getPass();
  }

  /** Returns the ingredient a turn plays, or null for a pass or a resolution. */
  public Ingredient ingredient() {
    return isTurn() ? Ingredient.fromId(action.getTurn().getIngredient()) : null;
  }

  /** Returns how many ingredient cards a turn plays (0 for a pass or a resolution). */
  public int count() {
    return isTurn() ? action.getTurn().getCount() : 0;
  }

  /** Returns the order card a turn plays on top, or null for none. */
  public String order() {
    String order = isTurn() ? action.getTurn().getOrder() : "";
    return order.isEmpty() ? null : order;
  }

  /** Returns a turn's refill source ({@link Draw#NONE} for none, and for a resolution). */
  public Draw draw() {
    if (!isTurn() || !action.getTurn().hasDraw()) {
      return Draw.NONE;
    }
    return action.getTurn().getDraw() == DrawSource.DRAW_SOURCE_WAITER ? Draw.WAITER : Draw.SUPPLY;
  }

  /** Returns true for a resolution that bakes the order. */
  public boolean bakes() {
    return action.hasResolve() && action.getResolve().getBake();
  }

  /** Returns the "?"/"J" kind a bake chooses, or null when it chooses none. */
  public Ingredient bakeIngredient() {
    return action.hasResolve() ? Ingredient.fromId(action.getResolve().getIngredient()) : null;
  }

  /** Returns the cards a bake adds from hand (none for other options). */
  public Counts fromHand() {
    return action.hasResolve() ? Counts.of(action.getResolve().getHand()) : Counts.NONE;
  }

  /** Returns a short description for logs: `play 2 salami, order red-mixed, draw supply`. */
  public String describe() {
    if (action.hasTurn()) {
      TurnAction turn = action.getTurn();
      StringBuilder text = new StringBuilder();
      text.append(turn.getPass() ? "pass" : "play " + turn.getCount() + " " + turn.getIngredient());
      if (order() != null) {
        text.append(", order ").append(order());
      }
      if (draw() != Draw.NONE) {
        text.append(", draw ").append(draw().name().toLowerCase(java.util.Locale.ROOT));
      }
      return text.toString();
    }
    if (action.hasResolve()) {
      ResolveAction resolve = action.getResolve();
      if (!resolve.getBake()) {
        return "decline";
      }
      StringBuilder text = new StringBuilder("bake");
      if (!resolve.getIngredient().isEmpty()) {
        text.append(" as ").append(resolve.getIngredient());
      }
      if (fromHand().total() > 0) {
        text.append(", adding ").append(fromHand());
      }
      return text.toString();
    }
    return "unknown action";
  }
}
