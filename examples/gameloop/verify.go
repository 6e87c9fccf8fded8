package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	pb "github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/examples/dataservice/networkpb/networkpbprpc"
	"github.com/trixnew/prpc/reactor"
)

// maxProblems is the number of verification problems the summary lists; more are counted.
const maxProblems = 5

// verifyResult is the outcome of reading every player back after the game stopped.
type verifyResult struct {
	err        error // the read-back could not run, or not to the end
	read       int   // players read back
	checked    int   // players compared with what the game expects
	unknown    int   // players that never joined: not compared
	mismatches int   // stored profiles that differ from what the game expects
	readErrors int   // failed GetPlayer and GetLeaderboard calls
	problems   []string
	top        []*pb.Player  // the leaderboard's top three
	calls      reactor.Stats // of the read-back reactor

	// From the game itself.
	savesFailed, staleLoads, versionSkips uint64
}

// verify reads every player back through a new reactor, ticked here until every reply has
// arrived, and compares the stored coins and level with the last save of the player that
// succeeded. It runs after the loop has returned, on the same goroutine, so it reads the
// world without locks. ctx bounds the whole read-back.
func verify(ctx context.Context, rcfg reactor.Config, budget time.Duration, w *world) *verifyResult {
	v := &verifyResult{savesFailed: w.c.savesFailed, staleLoads: w.c.staleLoads, versionSkips: w.c.versionSkips}
	r, err := reactor.New(rcfg)
	if err != nil {
		v.err = fmt.Errorf("creating the read-back reactor: %w", err)
		return v
	}

	data := networkpbprpc.NewDataServiceClient(r)
	remaining := 0
	for _, p := range w.players {
		remaining++
		data.GetPlayer(&pb.GetPlayerRequest{Xuid: p.xuid}, nil).
			Then(func(resp *pb.GetPlayerResponse) { v.check(p, resp) }).
			OnError(func(err error) {
				v.readErrors++
				v.problem("reading %s back: %v", p.name, err)
			}).
			Always(func() { remaining-- })
	}
	remaining++
	data.GetLeaderboard(&pb.GetLeaderboardRequest{Limit: 3}, nil).
		Then(func(resp *pb.GetLeaderboardResponse) { v.top = resp.GetPlayers() }).
		OnError(func(err error) {
			v.readErrors++
			v.problem("reading the leaderboard: %v", err)
		}).
		Always(func() { remaining-- })

	// Tick until every callback has run, waking on Ready; the ticker is only a backstop.
	tk := time.NewTicker(10 * time.Millisecond)
	defer tk.Stop()
	for remaining > 0 && ctx.Err() == nil {
		select {
		case <-r.Ready():
		case <-tk.C:
		case <-ctx.Done():
		}
		r.Tick(budget)
	}
	if ctx.Err() != nil {
		v.err = fmt.Errorf("read-back stopped with %d replies missing: %w", remaining, ctx.Err())
	}
	// Close runs the callbacks of calls still pending (none, unless ctx expired).
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := r.Close(cctx); err != nil && v.err == nil {
		v.err = fmt.Errorf("closing the read-back reactor: %w", err)
	}
	v.calls = r.Stats()
	return v
}

// check compares the stored profile of p with what the game expects.
func (v *verifyResult) check(p *player, resp *pb.GetPlayerResponse) {
	v.read++
	got := snapshot{coins: resp.GetPlayer().GetCoins(), level: resp.GetPlayer().GetLevel()}
	switch p.expect {
	case expectUnknown:
		v.unknown++
		return
	case expectAbsent:
		if resp.GetFound() {
			v.mismatches++
			v.problem("%s is stored (coins %d level %d) but no save of it succeeded", p.name, got.coins, got.level)
		}
	case expectPresent:
		switch {
		case !resp.GetFound():
			v.mismatches++
			v.problem("%s is not stored, but its save of coins %d level %d succeeded", p.name, p.saved.coins, p.saved.level)
		case got != p.saved:
			v.mismatches++
			v.problem("%s is stored with coins %d level %d, but its last successful save was coins %d level %d",
				p.name, got.coins, got.level, p.saved.coins, p.saved.level)
		}
	}
	v.checked++
}

// problem records one problem, keeping the first maxProblems descriptions.
func (v *verifyResult) problem(format string, a ...any) {
	if len(v.problems) < maxProblems {
		v.problems = append(v.problems, fmt.Sprintf(format, a...))
	}
}

// passed reports whether the read-back matched everything and no save failed.
func (v *verifyResult) passed() bool {
	return v.err == nil && v.mismatches == 0 && v.readErrors == 0 &&
		v.savesFailed == 0 && v.staleLoads == 0 && v.versionSkips == 0
}

// reason says why the verification failed.
func (v *verifyResult) reason() string {
	var r []string
	if v.err != nil {
		r = append(r, v.err.Error())
	}
	if v.readErrors > 0 {
		r = append(r, fmt.Sprintf("%d read-back calls failed", v.readErrors))
	}
	if v.mismatches > 0 {
		r = append(r, fmt.Sprintf("%d of %d players differ from their last successful save", v.mismatches, v.checked))
	}
	if v.savesFailed > 0 {
		r = append(r, fmt.Sprintf("%d saves failed", v.savesFailed))
	}
	if v.staleLoads > 0 {
		r = append(r, fmt.Sprintf("%d joins loaded something other than the last save", v.staleLoads))
	}
	if v.versionSkips > 0 {
		r = append(r, fmt.Sprintf("%d saves got an out-of-sequence version", v.versionSkips))
	}
	if len(v.problems) > 0 {
		r = append(r, "first: "+v.problems[0])
	}
	return strings.Join(r, "; ")
}

// print writes the verification lines of the summary.
func (v *verifyResult) print(out io.Writer) {
	if len(v.top) > 0 {
		parts := make([]string, len(v.top))
		for i, p := range v.top {
			parts[i] = fmt.Sprintf("%d. %s %d coins, level %d", i+1, p.GetName(), p.GetCoins(), p.GetLevel())
		}
		fmt.Fprintf(out, "top        %s\n", strings.Join(parts, "; "))
	}
	if v.passed() {
		fmt.Fprintf(out, "verification passed: %d players read back through a fresh reactor; %d match their last successful save",
			v.read, v.checked)
		if v.unknown > 0 {
			fmt.Fprintf(out, ", %d never joined", v.unknown)
		}
		fmt.Fprintln(out, "; no save failed; every rejoin loaded the last save; versions in sequence")
		return
	}
	fmt.Fprintf(out, "verification FAILED: %s\n", v.reason())
	for _, p := range v.problems {
		fmt.Fprintf(out, "  %s\n", p)
	}
	if n := v.mismatches + v.readErrors - len(v.problems); n > 0 {
		fmt.Fprintf(out, "  … and %d more\n", n)
	}
}
