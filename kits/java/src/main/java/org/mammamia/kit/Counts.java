package org.mammamia.kit;

import org.mammamia.v1.IngredientCounts;

/** Ingredient counts by kind: a hand, the table, the cards an option adds. Immutable. */
public final class Counts {
  /** No card of any kind. */
  public static final Counts NONE = new Counts(new int[Ingredient.ALL.size()]);

  private final int[] counts;

  private Counts(int[] counts) {
    this.counts = counts;
  }

  /** Returns the counts of a wire IngredientCounts. */
  public static Counts of(IngredientCounts wire) {
    return new Counts(
        new int[] {
          wire.getSalami(), wire.getPineapple(), wire.getMushroom(), wire.getPepper(), wire.getOlive()
        });
  }

  /** Returns counts from five numbers in canonical order (salami first). */
  public static Counts of(int... values) {
    if (values.length != Ingredient.ALL.size()) {
      throw new IllegalArgumentException("five counts are needed, not " + values.length);
    }
    return new Counts(values.clone());
  }

  /** Returns how many cards of {@code kind} there are. */
  public int get(Ingredient kind) {
    return counts[kind.ordinal()];
  }

  /** Returns these counts with {@code n} more cards of {@code kind} (n may be negative). */
  public Counts plus(Ingredient kind, int n) {
    int[] copy = counts.clone();
    copy[kind.ordinal()] += n;
    return new Counts(copy);
  }

  /** Returns these counts less {@code other}'s, kind by kind. */
  public Counts minus(Counts other) {
    int[] copy = counts.clone();
    for (int i = 0; i < copy.length; i++) {
      copy[i] -= other.counts[i];
    }
    return new Counts(copy);
  }

  /** Returns true when every kind holds at least {@code other}'s count. */
  public boolean covers(Counts other) {
    for (int i = 0; i < counts.length; i++) {
      if (counts[i] < other.counts[i]) {
        return false;
      }
    }
    return true;
  }

  /** Returns the number of cards of all kinds. */
  public int total() {
    int sum = 0;
    for (int n : counts) {
      sum += n;
    }
    return sum;
  }

  /** Returns the first kind with the most cards (canonical order breaks ties). */
  public Ingredient mostPlentiful() {
    Ingredient best = Ingredient.SALAMI;
    for (Ingredient kind : Ingredient.ALL) {
      if (get(kind) > get(best)) {
        best = kind;
      }
    }
    return best;
  }

  @Override
  public String toString() {
    StringBuilder text = new StringBuilder();
    for (Ingredient kind : Ingredient.ALL) {
      if (get(kind) > 0) {
        text.append(text.length() == 0 ? "" : " + ").append(get(kind)).append(' ').append(kind);
      }
    }
    return text.length() == 0 ? "nothing" : text.toString();
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof Counts that && java.util.Arrays.equals(counts, that.counts);
  }

  @Override
  public int hashCode() {
    return java.util.Arrays.hashCode(counts);
  }
}
