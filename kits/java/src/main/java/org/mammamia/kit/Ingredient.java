package org.mammamia.kit;

import java.util.List;

/** The five ingredient kinds, in the game's canonical order (R-COMP-1). */
public enum Ingredient {
  SALAMI("salami"),
  PINEAPPLE("pineapple"),
  MUSHROOM("mushroom"),
  PEPPER("pepper"),
  OLIVE("olive");

  /** Every kind in canonical order. */
  public static final List<Ingredient> ALL = List.of(values());

  private final String id;

  Ingredient(String id) {
    this.id = id;
  }

  /** Returns the kind's card id on the wire (`salami`, ...). */
  public String id() {
    return id;
  }

  /** Returns the kind whose card id is {@code id}, or null when it is no ingredient card. */
  public static Ingredient fromId(String id) {
    for (Ingredient kind : ALL) {
      if (kind.id.equals(id)) {
        return kind;
      }
    }
    return null;
  }

  @Override
  public String toString() {
    return id;
  }
}
