package org.mammamia.kit;

import io.grpc.StatusRuntimeException;
import org.mammamia.v1.PlayRequest;
import org.mammamia.v1.SeatEvents;
import org.mammamia.v1.SeatGrpc;
import org.mammamia.v1.SitRequest;

/**
 * A ladder bot's place on one server for match after match: one {@code PlayMatches}
 * call, where each seat is taken with a {@code sit} (its token, where to resume, the
 * name and client seed Join would carry) instead of a Join and a Play call of its own.
 * Under load a new call waits in the server's queue before it is taken up, so a call
 * kept open lets a busy server start the bot's matches at once. One match at a time;
 * the call is dropped after a failure and opened again for the next seat.
 */
final class Table {
  private final Arena arena;
  private final String host;
  private Inbox<PlayRequest, SeatEvents> call;
  private boolean busy;
  private volatile boolean unsupported;

  /** The table on {@code host} (null or empty: the arena's target). */
  Table(Arena arena, String host) {
    this.arena = arena;
    this.host = host;
  }

  /** Returns true, and takes the table, when it is free and the server has PlayMatches. */
  synchronized boolean take() {
    if (busy || unsupported) {
      return false;
    }
    busy = true;
    return true;
  }

  /** Notes that the server answered UNIMPLEMENTED: Join and Play for every later match. */
  void unsupported() {
    unsupported = true;
  }

  /**
   * Returns the end of the seat {@code token}'s match played on the table (which the
   * caller has taken), or null when the call closed before the end (it is dropped then).
   * {@code progress} says where to resume and keeps what the call saw, so that a Play call
   * can resume the match from there. The table is free again when this returns.
   *
   * @throws StatusRuntimeException when the call broke (it is dropped)
   * @throws InterruptedException when the thread is interrupted (it is dropped)
   */
  MatchEnd play(
      SeatPlayer player, String token, String name, SeatPlayer.Progress progress, Retry retry, Log log)
      throws InterruptedException {
    try {
      Inbox<PlayRequest, SeatEvents> open = open(log);
      PlayRequest sit =
          PlayRequest.newBuilder()
              .setSit(
                  SitRequest.newBuilder()
                      .setSeatToken(token)
                      .setAfterSequence(progress.lastSequence)
                      .setName(name)
                      .setClientSeed(progress.clientSeed)
                      .setBatchMs(SeatPlayer.BATCH_MS))
              .build();
      log.info("seat_taken", "call", "PlayMatches", "after_sequence", progress.lastSequence);
      MatchEnd end = player.follow(open, sit, false, progress, retry, log);
      if (end == null) {
        drop();
      }
      return end;
    } catch (RuntimeException | InterruptedException e) {
      drop();
      throw e;
    } finally {
      synchronized (this) {
        busy = false;
      }
    }
  }

  /** Returns the open call, opening one when there is none or it has ended. */
  private synchronized Inbox<PlayRequest, SeatEvents> open(Log log) {
    if (call != null && !call.ended()) {
      return call;
    }
    call = new Inbox<>();
    SeatGrpc.newStub(arena.channel(host)).playMatches(call);
    log.info("table_opened", "server", host == null || host.isEmpty() ? arena.target() : host);
    return call;
  }

  /** Cancels the call, if open: the next seat opens a new one. */
  synchronized void drop() {
    if (call != null) {
      call.cancel("dropped");
      call = null;
    }
  }
}
