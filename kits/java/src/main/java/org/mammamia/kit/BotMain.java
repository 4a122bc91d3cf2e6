package org.mammamia.kit;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;

/**
 * The command line every kit's bot shares, for any {@link Strategy}:
 *
 * <pre>
 *   BOT --server HOST:PORT --token TOKEN [--tls-ca FILE]
 *   BOT --server HOST:PORT --ladder --name NAME --key-file FILE [--version V] [--tls-ca FILE]
 * </pre>
 *
 * <p>The first plays one seat to the end of its match; the second enters the ladder (after
 * registering NAME and writing its key to FILE, mode 0600, when FILE does not exist yet)
 * and plays until stopped. SIGTERM or SIGINT ends the bot at once with status 0.
 */
public final class BotMain {
  private static final String USAGE =
      String.join(
          "\n",
          "usage: BOT --server HOST:PORT --token TOKEN [--tls-ca FILE] [options]",
          "       BOT --server HOST:PORT --ladder --name NAME --key-file FILE [--version V]"
              + " [--tls-ca FILE] [options]",
          "",
          "Plays Mamma Mia! on an arena server: one seat of one match (--token), or every",
          "match the ladder assigns (--ladder). One line per decision goes to stderr.",
          "",
          "options:",
          "  --server HOST:PORT  the server (env MAMMAMIA_SERVER)",
          "  --token TOKEN       the seat token of one match (env MAMMAMIA_SEAT_TOKEN)",
          "  --tls-ca FILE       connect with TLS, trusting the PEM certificates in FILE",
          "  --name NAME         the bot's name (the ladder name with --ladder)",
          "  --ladder            enter the ladder and play each assigned match until stopped",
          "  --key-file FILE     with --ladder: the bot's secret key; when FILE does not",
          "                      exist, NAME is registered and its new key written there",
          "  --version V         with --ladder: the version that enters, rated apart from",
          "                      the name's others (default: 12 hex digits of the jar's hash)",
          "  --retry-for SEC     give up after SEC seconds without the server (default 60)",
          "  -h, --help          show this help and exit",
          "",
          "exit status: 0 when the match finished (with --ladder: when stopped, or replaced",
          "by a newer entry of the name), 1 when the server refused the bot, stayed away or",
          "aborted the match, 2 for a bad command line; 0 on SIGTERM or SIGINT.");

  private static final Set<String> VALUED =
      Set.of("server", "token", "tls-ca", "name", "key-file", "version", "retry-for");
  private static final Set<String> FLAGS = Set.of("ladder", "help");
  private static final Pattern VERSION = Pattern.compile("[A-Za-z0-9._+-]{0,32}");

  private BotMain() {}

  /** A bad command line: printed with the usage's first lines, exit status 2. */
  private static final class UsageError extends Exception {
    private static final long serialVersionUID = 1L;

    UsageError(String message) {
      super(message);
    }
  }

  /**
   * Plays as the command line {@code args} says, deciding with {@code strategy}, and
   * returns the exit status (it never calls System.exit itself). {@code program} names
   * the bot in messages; {@code defaultName} is the seat's name without --name.
   */
  public static int run(String program, String defaultName, String[] args, Strategy strategy) {
    Map<String, String> options;
    try {
      options = parse(args);
    } catch (UsageError e) {
      System.err.println(program + ": " + e.getMessage());
      System.err.println(USAGE.split("\n\n")[0].replace("BOT", program));
      return 2;
    }
    if (options.containsKey("help")) {
      System.out.println(USAGE.replace("BOT", program));
      return 0;
    }
    try {
      return play(program, defaultName, options, strategy);
    } catch (UsageError e) {
      System.err.println(program + ": " + e.getMessage());
      System.err.println(USAGE.split("\n\n")[0].replace("BOT", program));
      return 2;
    }
  }

  /**
   * Runs the bot as {@link #run} does and exits the process with its status. SIGTERM and
   * SIGINT end it at once with status 0 (matches in progress are left to the server's
   * deadlines; a ladder entry ends with the connection).
   */
  public static void main(String program, String defaultName, String[] args, Strategy strategy) {
    AtomicBoolean exiting = new AtomicBoolean();
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  // A shutdown the bot did not start itself is a signal: stop now, status 0.
                  if (!exiting.get()) {
                    System.err.println(program + ": stopping on a signal");
                    System.err.flush();
                    Runtime.getRuntime().halt(0);
                  }
                },
                "mammamia-stop"));
    int status = run(program, defaultName, args, strategy);
    exiting.set(true);
    System.exit(status);
  }

  private static int play(
      String program, String defaultName, Map<String, String> options, Strategy strategy)
      throws UsageError {
    String server = options.getOrDefault("server", System.getenv("MAMMAMIA_SERVER"));
    if (server == null || server.isEmpty()) {
      throw new UsageError("--server HOST:PORT is required (or MAMMAMIA_SERVER)");
    }
    Path ca = options.containsKey("tls-ca") ? Path.of(options.get("tls-ca")) : null;
    if (ca != null && !Files.isReadable(ca)) {
      throw new UsageError("--tls-ca " + ca + ": no such file");
    }
    Duration retryFor = Duration.ofSeconds(number("--retry-for", options.get("retry-for"), 60));
    boolean ladder = options.containsKey("ladder");
    String name = options.get("name");
    String token = options.getOrDefault("token", System.getenv("MAMMAMIA_SEAT_TOKEN"));
    Path keyFile = options.containsKey("key-file") ? Path.of(options.get("key-file")) : null;
    String version = options.get("version");
    if (ladder) {
      if (name == null || name.isEmpty()) {
        throw new UsageError("--ladder needs --name NAME");
      }
      if (keyFile == null) {
        throw new UsageError("--ladder needs --key-file FILE");
      }
      if (version != null && !VERSION.matcher(version).matches()) {
        throw new UsageError(
            "--version must be up to 32 letters, digits, '-', '_', '.' or '+', not " + version);
      }
      if (version == null) {
        version = codeVersion();
      }
    } else {
      if (token == null || token.isEmpty()) {
        throw new UsageError("--token TOKEN is required (or --ladder)");
      }
      if (keyFile != null || version != null) {
        throw new UsageError("--key-file and --version go with --ladder");
      }
      if (name == null) {
        name = defaultName;
      }
    }

    Log log = Log.stderr("bot", name);
    Arena arena;
    try {
      arena = Arena.connect(server, ca);
    } catch (IOException | IllegalArgumentException e) {
      System.err.println(program + ": cannot use --tls-ca " + ca + ": " + e.getMessage());
      return 1;
    }
    try {
      if (!ladder) {
        MatchEnd end = new SeatPlayer(arena, strategy, retryFor).play(null, token, name, log);
        return end.finished() ? 0 : 1;
      }
      LadderPlayer player = new LadderPlayer(arena, strategy, retryFor);
      String key = keyFor(player, name, keyFile, log);
      player.play(name, key, version, log);
      return 0;
    } catch (ArenaException e) {
      System.err.println(program + ": " + e.getMessage());
      return 1;
    } catch (IOException e) {
      System.err.println(program + ": key file " + keyFile + ": " + e.getMessage());
      return 1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 0;
    } finally {
      arena.close();
    }
  }

  /**
   * Returns the key in {@code keyFile}, or registers {@code name} and writes its new key
   * there (mode 0600) when the file does not exist.
   */
  private static String keyFor(LadderPlayer player, String name, Path keyFile, Log log)
      throws ArenaException, IOException {
    if (Files.exists(keyFile)) {
      String key = Files.readString(keyFile, StandardCharsets.UTF_8).trim();
      if (key.isEmpty()) {
        throw new IOException("it is empty (delete it to register the name again)");
      }
      return key;
    }
    String key = player.register(name);
    try {
      Files.createFile(
          keyFile, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    } catch (FileAlreadyExistsException e) {
      throw new IOException("it appeared while the name was registered; the new key is lost");
    } catch (UnsupportedOperationException e) {
      Files.createFile(keyFile);
    }
    Files.writeString(keyFile, key + "\n", StandardCharsets.UTF_8);
    log.info("registered", "key_file", keyFile);
    return key;
  }

  /** Returns the options of {@code args} by name (a flag maps to ""); throws UsageError. */
  private static Map<String, String> parse(String[] args) throws UsageError {
    Map<String, String> options = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (arg.equals("-h")) {
        arg = "--help";
      }
      if (!arg.startsWith("--")) {
        throw new UsageError("unexpected argument " + arg);
      }
      String option = arg.substring(2);
      String value = null;
      int equals = option.indexOf('=');
      if (equals >= 0) {
        value = option.substring(equals + 1);
        option = option.substring(0, equals);
      }
      if (FLAGS.contains(option) && value == null) {
        options.put(option, "");
      } else if (VALUED.contains(option)) {
        if (value == null) {
          // Seat tokens and keys are URL-safe text that may begin with '-': the next
          // argument is the value, whatever it looks like.
          if (i + 1 >= args.length) {
            throw new UsageError(arg + " needs a value");
          }
          value = args[++i];
        }
        options.put(option, value);
      } else {
        throw new UsageError("unknown option " + arg);
      }
    }
    return options;
  }

  private static long number(String option, String text, long fallback) throws UsageError {
    if (text == null) {
      return fallback;
    }
    try {
      long value = Long.parseLong(text);
      if (value >= 0) {
        return value;
      }
    } catch (NumberFormatException e) {
      // Reported below.
    }
    throw new UsageError(option + " must be a non-negative whole number, not " + text);
  }

  /**
   * Returns the bot's default ladder version: the first 12 hex digits of the SHA-256 of the
   * jar it runs from (the build is reproducible, so the same code gives the same version),
   * or "" (the default version) when it runs from classes.
   */
  static String codeVersion() {
    try {
      Path code = Path.of(BotMain.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (!Files.isRegularFile(code)) {
        return "";
      }
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      try (InputStream in = new DigestInputStream(Files.newInputStream(code), sha)) {
        in.transferTo(java.io.OutputStream.nullOutputStream());
      }
      return HexFormat.of().formatHex(sha.digest()).substring(0, 12);
    } catch (IOException | NoSuchAlgorithmException | java.net.URISyntaxException | SecurityException e) {
      return "";
    }
  }
}
