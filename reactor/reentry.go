package reactor

import (
	"reflect"
	"runtime"
	"sync"
)

// refusedEntry returns the message of the panic of a Tick, Shutdown or Close (what) that found
// another of them holding the host role.
//
// The usual cause is a promise callback calling back into its reactor. That panic is
// isolated like any callback's, so it reaches only Config.OnCallbackPanic or the log, and
// the program goes on: the message has to say what the refused call did not do, above all
// that a refused Close left the reactor open. Telling a callback from another goroutine takes
// the calling goroutine's stack, which only this misuse pays for: enterHost stays a single
// compare-and-swap.
//
// The stack shows that the caller is inside a callback run by some reactor's Tick or Close,
// not by which reactor's: a callback of one reactor that calls Tick or Close of a second one,
// which another goroutine is ticking, is described as a callback of the second. What the
// message says the refused call did (nothing) stays true.
func refusedEntry(what string) string {
	outer, inCallback := hostCallbackOnStack()
	switch {
	case !inCallback:
		return "prpc: " + what + " called concurrently with Tick or Close on another goroutine, and refused: call Tick and Close from one goroutine"
	case outer == "":
		return "prpc: " + what + " called from inside a promise callback, and refused: call Tick and Close on the host goroutine, outside callbacks"
	case what != "Tick" && outer == "Tick":
		return "prpc: " + what + " called from inside a promise callback; the reactor is still open: call " + what + " on the host goroutine after Tick returns"
	default:
		return "prpc: " + what + " called from inside a promise callback run by " + outer + ", and refused; the outer " + outer + " goes on"
	}
}

// hostCallbackOnStack reports whether the calling goroutine is inside a promise callback that
// a reactor's Tick, Shutdown or Close runs (its stack holds tick), and which of them runs it:
// outer is "Tick", "Shutdown" or "Close", or empty if none is found outside tick.
func hostCallbackOnStack() (outer string, inCallback bool) {
	names := hostFuncNames()
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(1, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	frames := runtime.CallersFrames(pcs)
	for more := true; more; {
		var f runtime.Frame
		f, more = frames.Next()
		switch {
		case f.Function == names.tick:
			inCallback = true
		case !inCallback:
			// The refused Tick or Close itself, and the callback's own frames.
		case f.Function == names.Tick:
			return "Tick", true
		case f.Function == names.Shutdown:
			return "Shutdown", true
		case f.Function == names.Close:
			return "Close", true
		}
	}
	return "", inCallback
}

// hostFuncNames returns the runtime names of the functions hostCallbackOnStack looks for.
func hostFuncNames() hostFuncs {
	hostFuncsOnce.Do(func() {
		name := func(f any) string { return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name() }
		hostFuncsNamed = hostFuncs{
			tick:     name((*Reactor).tick),
			Tick:     name((*Reactor).Tick),
			Shutdown: name((*Reactor).Shutdown),
			Close:    name((*Reactor).Close),
		}
	})
	return hostFuncsNamed
}

// hostFuncs are the names of Tick, Shutdown, Close and tick, set once by hostFuncNames (a
// variable initialised with them would depend on itself, through Close and enterHost).
type hostFuncs struct{ tick, Tick, Shutdown, Close string }

var (
	hostFuncsOnce  sync.Once
	hostFuncsNamed hostFuncs
)
