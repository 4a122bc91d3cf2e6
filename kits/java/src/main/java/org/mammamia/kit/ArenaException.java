package org.mammamia.kit;

import io.grpc.Status;

/**
 * The server refused the bot for good (a status no retry can change: a wrong token or
 * key, an unknown match, a suspended bot), or stayed unreachable longer than the
 * retry budget. {@link #code()} is the gRPC status code, or null for the latter.
 */
public final class ArenaException extends Exception {
  private static final long serialVersionUID = 1L;
  private final Status.Code code;

  /** An error saying {@code message}, from status {@code code} (null: none). */
  public ArenaException(String message, Status.Code code) {
    super(message);
    this.code = code;
  }

  /** Returns the gRPC status code that ended the call, or null when none did. */
  public Status.Code code() {
    return code;
  }

  /** Returns a refusal by {@code status}, its message prefixed by {@code what}. */
  static ArenaException refused(String what, Status status) {
    String detail = status.getDescription() == null ? "" : ": " + status.getDescription();
    return new ArenaException(what + status.getCode() + detail, status.getCode());
  }
}
