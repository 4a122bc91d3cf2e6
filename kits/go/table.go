package mammamia

import (
	"context"
	"log/slog"
	"sync"

	pb "mammamia/v1"
)

// table is a ladder bot's place on one server for match after match: one
// PlayMatches call, each seat taken with a `sit` (its token, where to resume, the
// name and client seed Join would carry) instead of a Join and a Play call of its
// own. Under load a new call waits in the server's queue before it is taken up, so
// a call kept open lets a busy server start the bot's matches at once.
type table struct {
	conn *Conn

	mu          sync.Mutex
	busy        bool // a seat is being played on the call
	unsupported bool // the server answered UNIMPLEMENTED: no PlayMatches there
	stream      playStream
	cancel      context.CancelFunc
}

// take reserves the table for one seat; false when it is busy with another match
// or the server has no PlayMatches.
func (t *table) take() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.busy || t.unsupported {
		return false
	}
	t.busy = true
	return true
}

// release frees the table for the next seat.
func (t *table) release() {
	t.mu.Lock()
	t.busy = false
	t.mu.Unlock()
}

// markUnsupported makes every later seat of this server go on Play.
func (t *table) markUnsupported() {
	t.mu.Lock()
	t.unsupported = true
	t.mu.Unlock()
}

// play plays a seat on the call (opened on first use under callCtx, which it then
// lives as long as) and returns its match's end; nil and the call's error when the
// call broke (nil error: it closed before the end), the call then dropped so that
// the next seat opens a new one. The caller holds the table (take).
func (t *table) play(callCtx, ctx context.Context, token string, o SeatOptions, log *slog.Logger, progress *Progress) (*Result, error) {
	if t.stream == nil {
		streamCtx, cancel := context.WithCancel(callCtx)
		stream, err := t.conn.Seat.PlayMatches(streamCtx)
		if err != nil {
			cancel()
			return nil, err
		}
		t.stream, t.cancel = stream, cancel
		log.Info("table_opened", "server", t.conn.Address)
	}
	first := &pb.PlayRequest{Message: &pb.PlayRequest_Sit{Sit: &pb.SitRequest{
		SeatToken: token, AfterSequence: progress.LastSequence, Name: o.Name,
		ClientSeed: progress.ClientSeed, BatchMs: BatchMS,
	}}}
	log.Info("seat_taken", "call", "PlayMatches", "after_sequence", progress.LastSequence)
	result, err := follow(ctx, t.stream, first, o, log, progress)
	if result == nil {
		t.drop()
	}
	return result, err
}

// drop cancels the call, if open: the next seat opens a new one.
func (t *table) drop() {
	if t.cancel != nil {
		t.cancel()
	}
	t.stream, t.cancel = nil, nil
}
