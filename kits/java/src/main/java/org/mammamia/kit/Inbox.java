package org.mammamia.kit;

import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * The receiving side of one streaming call, turned into a queue that the seat's (or the
 * ladder's) own thread reads in order: each message, then the call's end (its status,
 * OK included). For a call with a sending side ({@code Req}), {@link #send} writes on
 * it from any thread.
 */
final class Inbox<Req, Resp> implements ClientResponseObserver<Req, Resp> {
  /** What the queue holds after the last message: how the call ended. */
  record End(Status status) {}

  private final BlockingQueue<Object> queue = new LinkedBlockingQueue<>();
  private volatile ClientCallStreamObserver<Req> requests;
  private volatile boolean ended;

  @Override
  public void beforeStart(ClientCallStreamObserver<Req> requestStream) {
    this.requests = requestStream;
  }

  @Override
  public void onNext(Resp message) {
    queue.add(message);
  }

  @Override
  public void onError(Throwable error) {
    ended = true;
    queue.add(new End(Status.fromThrowable(error)));
  }

  @Override
  public void onCompleted() {
    ended = true;
    queue.add(new End(Status.OK));
  }

  /** Returns true once the call has ended (its End may still wait in the queue). */
  boolean ended() {
    return ended;
  }

  /**
   * Returns the next message (a {@code Resp}) or the call's {@link End}, waiting for it.
   *
   * @throws InterruptedException when the thread is interrupted while it waits
   */
  Object take() throws InterruptedException {
    return queue.take();
  }

  /** Sends {@code message} on the call. */
  synchronized void send(Req message) {
    requests.onNext(message);
  }

  /** Closes the sending side: the client sends nothing more. */
  synchronized void halfClose() {
    try {
      requests.onCompleted();
    } catch (IllegalStateException alreadyEnded) {
      // The call has ended already: there is nothing left to close.
    }
  }

  /** Cancels the call (a no-op once it has ended). */
  void cancel(String why) {
    ClientCallStreamObserver<Req> call = requests;
    if (call != null) {
      call.cancel(why, null);
    }
  }
}
