package org.mammamia.kit;

import java.io.PrintStream;
import java.time.Instant;

/**
 * One line per event on stderr: the time, the level, the event's name, then {@code
 * key=value} pairs (values with spaces or quotes are quoted). A log may carry fields of
 * its own ({@link #with}), e.g. the match and seat of every line of a seat.
 */
public final class Log {
  private static final Object LOCK = new Object();
  private final PrintStream out;
  private final Object[] context;

  private Log(PrintStream out, Object[] context) {
    this.out = out;
    this.context = context;
  }

  /** Returns a log to stderr whose lines carry the pairs {@code context} (key, value, ...). */
  public static Log stderr(Object... context) {
    return new Log(System.err, context.clone());
  }

  /** Returns a log whose lines carry this log's fields and the pairs {@code more}. */
  public Log with(Object... more) {
    Object[] all = new Object[context.length + more.length];
    System.arraycopy(context, 0, all, 0, context.length);
    System.arraycopy(more, 0, all, context.length, more.length);
    return new Log(out, all);
  }

  /** Writes an info line: {@code event} then the pairs {@code fields} (key, value, ...). */
  public void info(String event, Object... fields) {
    write("info", event, fields);
  }

  /** Writes a warning line. */
  public void warn(String event, Object... fields) {
    write("warn", event, fields);
  }

  /** Writes an error line. */
  public void error(String event, Object... fields) {
    write("error", event, fields);
  }

  private void write(String level, String event, Object[] fields) {
    StringBuilder line = new StringBuilder();
    line.append(Instant.now()).append(' ').append(level).append(' ').append(event);
    append(line, context);
    append(line, fields);
    synchronized (LOCK) {
      out.println(line);
      out.flush();
    }
  }

  private static void append(StringBuilder line, Object[] pairs) {
    for (int i = 0; i + 1 < pairs.length; i += 2) {
      if (pairs[i + 1] == null) {
        continue;
      }
      line.append(' ').append(pairs[i]).append('=').append(quoted(String.valueOf(pairs[i + 1])));
    }
  }

  private static String quoted(String value) {
    if (!value.isEmpty() && value.chars().noneMatch(c -> c == ' ' || c == '"' || c == '=' || c < 32)) {
      return value;
    }
    StringBuilder text = new StringBuilder("\"");
    for (char c : value.toCharArray()) {
      if (c == '"' || c == '\\') {
        text.append('\\').append(c);
      } else if (c < 32) {
        text.append(String.format("\\u%04x", (int) c));
      } else {
        text.append(c);
      }
    }
    return text.append('"').toString();
  }
}
