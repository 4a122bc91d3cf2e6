package org.mammamia.kit;

import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.AbstractStub;
import io.grpc.stub.MetadataUtils;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A connection to an arena server: plaintext, or TLS trusting the PEM certificates of a
 * CA file. One channel per host: a ladder may assign a match on another host of the
 * same ladder ({@code Assignment.host_address}), reached with the same credentials.
 */
public final class Arena implements AutoCloseable {
  private static final Metadata.Key<String> SEAT_TOKEN =
      Metadata.Key.of("seat-token", Metadata.ASCII_STRING_MARSHALLER);
  private static final Metadata.Key<String> BOT_KEY =
      Metadata.Key.of("bot-key", Metadata.ASCII_STRING_MARSHALLER);

  private final String target;
  private final ChannelCredentials credentials;
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();

  private Arena(String target, ChannelCredentials credentials) {
    this.target = target;
    this.credentials = credentials;
  }

  /**
   * Returns a connection to {@code target} (HOST:PORT): TLS trusting the certificates in
   * {@code caFile} when it is given, else plaintext. Channels connect lazily: a server
   * that is down shows as UNAVAILABLE on the first call.
   *
   * @throws IOException when the CA file cannot be read
   */
  public static Arena connect(String target, Path caFile) throws IOException {
    ChannelCredentials credentials =
        caFile == null
            ? InsecureChannelCredentials.create()
            : TlsChannelCredentials.newBuilder().trustManager(caFile.toFile()).build();
    return new Arena(target, credentials);
  }

  /** Returns the address this connection was made to. */
  public String target() {
    return target;
  }

  /** Returns the channel to {@code host} (HOST:PORT; null or empty: the target). */
  public ManagedChannel channel(String host) {
    String where = host == null || host.isEmpty() ? target : host;
    return channels.computeIfAbsent(where, h -> Grpc.newChannelBuilder(h, credentials).build());
  }

  /** Returns {@code stub} sending the `seat-token` metadata {@code token} on every call. */
  public static <S extends AbstractStub<S>> S withSeatToken(S stub, String token) {
    return withHeader(stub, SEAT_TOKEN, token);
  }

  /** Returns {@code stub} sending the `bot-key` metadata {@code key} on every call. */
  public static <S extends AbstractStub<S>> S withBotKey(S stub, String key) {
    return withHeader(stub, BOT_KEY, key);
  }

  private static <S extends AbstractStub<S>> S withHeader(
      S stub, Metadata.Key<String> key, String value) {
    Metadata headers = new Metadata();
    headers.put(key, value);
    return stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
  }

  /** Closes every channel, cancelling the calls still open on them. */
  @Override
  public void close() {
    for (ManagedChannel channel : channels.values()) {
      channel.shutdownNow();
    }
    for (ManagedChannel channel : channels.values()) {
      try {
        channel.awaitTermination(2, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
