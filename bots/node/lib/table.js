'use strict';
/**
 * The ladder bot's place on one server for match after match: one PlayMatches
 * call, where each seat is taken with a `sit` (its token, where to resume, the
 * name and client seed Join would carry) instead of a Join and a Play call of
 * its own. Under load a new call waits in the server's queue before it is taken
 * up, so a call kept open lets a busy server start the bot's matches at once.
 */

const { BATCH_MS, followCall } = require('./seat');

/**
 * One PlayMatches call to `target`, opened on first use, playing one seat at a
 * time (`busy` meanwhile); dropped after a failure and opened again for the next
 * seat. `unsupported` is for the ladder to set once the server has answered
 * UNIMPLEMENTED (a server older than PlayMatches).
 */
class Table {
  constructor({ arena, target, credentials, log }) {
    this.arena = arena;
    this.target = target;
    this.credentials = credentials;
    this.log = log;
    this.client = null;
    this.call = null;
    this.busy = false;
    this.unsupported = false;
  }

  /**
   * Returns the end of the seat's match (as followCall's), or null when the call
   * closed before the end or `signal` aborted (the call is dropped then); rejects
   * with the call's status error (the call dropped) when it broke. `progress` (from
   * seatProgress) says where to resume and keeps what the call saw, so that a
   * Play call can resume the match from there.
   */
  async play({ token, name, progress, log, signal, trace, chooser }) {
    this.busy = true;
    try {
      const call = this.open();
      const first = {
        sit: {
          seat_token: token, after_sequence: progress.lastSequence, name,
          client_seed: progress.clientSeed, batch_ms: BATCH_MS,
        },
      };
      log.info('seat_taken', { call: 'PlayMatches', after_sequence: progress.lastSequence });
      const end = await followCall({
        call, first, closeAtEnd: false, progress, log, signal, trace, chooser,
      });
      if (end === null) this.drop();
      return end;
    } catch (error) {
      this.drop();
      throw error;
    } finally {
      this.busy = false;
    }
  }

  /** Returns the open PlayMatches call, opening one when there is none. */
  open() {
    if (this.call !== null) return this.call;
    this.client ??= new this.arena.Seat(this.target, this.credentials);
    const call = this.client.PlayMatches();
    // Between matches no follower listens: a call that fails or ends then is
    // forgotten here, and the next seat opens a new one. (An 'error' without a
    // listener would be thrown.)
    const forget = () => {
      if (this.call === call) this.call = null;
    };
    call.on('error', forget);
    call.on('end', forget);
    this.call = call;
    this.log.info('table_opened', { server: this.target });
    return call;
  }

  /** Cancels the call, if open: the next seat opens a new one. */
  drop() {
    const { call } = this;
    this.call = null;
    if (call !== null) call.cancel();
  }

  /** Drops the call and closes the connection. */
  close() {
    this.drop();
    if (this.client !== null) this.client.close();
    this.client = null;
  }
}

module.exports = { Table };
