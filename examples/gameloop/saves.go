package main

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/trixnew/prpc/examples/dataservice/networkpb"
)

// The calls below go through w.data, the DataService client protoc-gen-prpc generated from
// network.proto (package networkpbprpc): joins with a promise and its callbacks, saves with the
// callback form. They return at once: the client queues each call for the reactor, and the
// callbacks run later on the loop goroutine, inside the loop's Tick (or, for calls cut off at
// shutdown, the reactor's Close).

// join loads a player's profile. Until the reply arrives the player is joining, and is not
// played, saved or joined again.
func (w *world) join(p *player) {
	p.phase = joining
	w.c.joins++
	w.data.GetPlayer(&pb.GetPlayerRequest{Xuid: p.xuid}, nil).
		Then(func(resp *pb.GetPlayerResponse) { w.joined(p, resp) }).
		OnError(func(err error) {
			w.c.joinsFailed++
			w.log.printf("%s could not join: %v", p.name, err)
			p.phase = offline
			p.rejoinAt = w.now + w.randTicks(time.Second, 2*time.Second) // try again
		})
}

// joined puts a player whose profile arrived into the game: the stored profile if there is
// one, a new one (level 1, no coins) otherwise.
func (w *world) joined(p *player, resp *pb.GetPlayerResponse) {
	if w.stopping { // too late to play; nothing has changed, so nothing to save
		p.phase = offline
		w.c.joinsAbandoned++
		return
	}
	if resp.GetFound() {
		got := resp.GetPlayer()
		loaded := snapshot{coins: got.GetCoins(), level: got.GetLevel()}
		if p.expect == expectAbsent || p.expect == expectPresent && loaded != p.saved {
			w.c.staleLoads++
			w.log.printf("%s loaded coins %d level %d, but its last save was coins %d level %d",
				p.name, loaded.coins, loaded.level, p.saved.coins, p.saved.level)
		}
		p.coins, p.level = loaded.coins, loaded.level
		p.playTicks = got.GetPlaytimeSeconds() * int64(w.tps)
		p.expect, p.saved, p.version = expectPresent, loaded, got.GetVersion()
		p.dirty = false
		w.c.joinsFound++
	} else {
		if p.expect == expectPresent {
			w.c.staleLoads++
			w.log.printf("%s was not found, but its last save (coins %d level %d) succeeded",
				p.name, p.saved.coins, p.saved.level)
		}
		p.coins, p.level, p.playTicks = 0, 1, 0
		p.expect, p.version = expectAbsent, 0
		p.dirty = true // a new profile: the first autosave stores it
		w.c.joinsNew++
	}
	w.enter(p)
}

// save submits a SavePlayer of p's current profile. The caller makes sure no other save of p
// is in flight. If p leaves while this one is in flight, its callback submits the final save.
func (w *world) save(p *player, final bool) {
	snap := snapshot{coins: p.coins, level: p.level}
	p.saving = true
	p.dirty = false
	if final {
		w.c.finalSaves++
	} else {
		w.c.autosaves++
	}
	req := &pb.SavePlayerRequest{Player: &pb.Player{
		Xuid:            p.xuid,
		Name:            p.name,
		Level:           p.level,
		Coins:           p.coins,
		LastSeen:        timestamppb.Now(),
		PlaytimeSeconds: p.playTicks / int64(w.tps),
	}}
	// The callback form: one callback for either outcome, and no promise to allocate. The
	// request is new for every save: the call owns it until the callback runs.
	_ = w.data.GoSavePlayer(req, nil, func(resp *pb.SavePlayerResponse, err error) {
		if err == nil {
			w.c.savesOK++
			if p.expect != expectUnknown && resp.GetVersion() != p.version+1 {
				// One writer, one save in flight at a time: versions must follow on.
				w.c.versionSkips++
				w.log.printf("%s saved as version %d after version %d", p.name, resp.GetVersion(), p.version)
			}
			p.expect, p.saved, p.version = expectPresent, snap, resp.GetVersion()
		} else {
			w.c.savesFailed++
			w.log.printf("saving %s failed: %v", p.name, err)
			if p.phase == online {
				p.dirty = true // the next autosave tries again
			}
		}
		p.saving = false
		if p.finalQueued {
			p.finalQueued = false
			w.save(p, true)
		}
	})
}
