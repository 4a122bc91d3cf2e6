package org.mammamia.kit;

/**
 * What a bot decides: for each decision, the option to answer with. The kit calls it on
 * the seat's own thread, one decision at a time; a strategy shared by several seats (a
 * ladder bot plays its matches concurrently) must be safe to call from several threads.
 */
@FunctionalInterface
public interface Strategy {

  /**
   * Returns the choice for {@code decision}: an index into {@code decision.options()}
   * and why. An exception, or an index out of range, is answered with the first option
   * (and logged).
   */
  Choice choose(Decision decision);

  /** An answer: the option's index, and why (sent as the answer's private note). */
  record Choice(int index, String reason) {

    /** Returns the choice of {@code option}, for {@code reason}. */
    public static Choice of(Option option, String reason) {
      return new Choice(option.index(), reason);
    }
  }
}
