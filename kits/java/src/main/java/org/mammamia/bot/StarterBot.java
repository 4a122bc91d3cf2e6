package org.mammamia.bot;

import org.mammamia.kit.BotMain;

/**
 * The starter bot: the kit's command line ({@link BotMain}) with the reference choice.
 *
 * <pre>
 *   java -jar kits/java/target/mammamia-bot.jar --server HOST:PORT --token TOKEN
 *   java -jar kits/java/target/mammamia-bot.jar --server HOST:PORT --ladder --name NAME --key-file FILE
 * </pre>
 */
public final class StarterBot {
  private StarterBot() {}

  /** Plays as the command line says and exits with its status (see {@code --help}). */
  public static void main(String[] args) {
    BotMain.main("java-bot", "java-bot", args, new ReferenceStrategy());
  }
}
