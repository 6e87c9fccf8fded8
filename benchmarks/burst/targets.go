package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// The loop suite's targets: what each form of prpc's submission must reach against the
// hand-written pool, judged on the unpinned run. They are data, in targets.json, with where
// the reference figures come from; everything else the harness reports, it measures.

//go:embed targets.json
var targetsJSON []byte

// loopTargets are the bounds of the median ratio prpc ÷ pool that the loop suite judges.
type loopTargets struct {
	// GoCPUMax and GoCPUAim bound prpc-go's ratio of the loop thread's CPU time over the
	// submission: the target, and the aim within it.
	GoCPUMax float64 `json:"goCPUMax"`
	GoCPUAim float64 `json:"goCPUAim"`
	// OnSettledCPUMax bounds the same ratio for prpc-onsettled.
	OnSettledCPUMax float64 `json:"onSettledCPUMax"`
	// DeliveryMax bounds the ratio, every form ÷ pool, of the time from the start of the
	// submitting tick to the last outcome.
	DeliveryMax float64 `json:"deliveryMax"`
	// ThenCPUReference is, per burst size, the ratio prpc-then must not exceed; at other burst
	// sizes it has no target.
	ThenCPUReference map[int]float64 `json:"thenCPUReference"`
}

// targets is targets.json, read once: the bounds a run of the loop suite judges by
// (LoopResult.Targets).
var targets = func() loopTargets {
	t, err := parseTargets(targetsJSON)
	if err != nil {
		panic("burst: targets.json: " + err.Error())
	}
	return t
}()

// parseTargets reads loop targets as targets.json holds them and checks that every bound is
// there and above 0, that the aim is within its bound, and that thenCPUReference has a ratio
// at each of loopSizes, so that a key left out fails here, naming it, rather than reading as 0
// and failing every verdict.
func parseTargets(data []byte) (loopTargets, error) {
	// JSON has no NaN: a bound still NaN once decoded was not in data (or was null).
	nan := math.NaN()
	t := loopTargets{GoCPUMax: nan, GoCPUAim: nan, OnSettledCPUMax: nan, DeliveryMax: nan}
	if err := json.Unmarshal(data, &t); err != nil {
		return loopTargets{}, err
	}
	for _, b := range []struct {
		key   string
		bound float64
	}{
		{"goCPUMax", t.GoCPUMax},
		{"goCPUAim", t.GoCPUAim},
		{"onSettledCPUMax", t.OnSettledCPUMax},
		{"deliveryMax", t.DeliveryMax},
	} {
		switch {
		case math.IsNaN(b.bound):
			return loopTargets{}, fmt.Errorf("%s missing", b.key)
		case b.bound <= 0:
			return loopTargets{}, fmt.Errorf("%s is %v, want a ratio above 0", b.key, b.bound)
		}
	}
	if t.GoCPUAim > t.GoCPUMax {
		return loopTargets{}, fmt.Errorf("goCPUAim %v is above goCPUMax %v", t.GoCPUAim, t.GoCPUMax)
	}
	if t.ThenCPUReference == nil {
		return loopTargets{}, errors.New("thenCPUReference missing")
	}
	for _, n := range loopSizes {
		if _, ok := t.ThenCPUReference[n]; !ok {
			return loopTargets{}, fmt.Errorf("thenCPUReference missing burst size %d", n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(t.ThenCPUReference)) {
		if r := t.ThenCPUReference[n]; r <= 0 {
			return loopTargets{}, fmt.Errorf("thenCPUReference at burst size %d is %v, want a ratio above 0", n, r)
		}
	}
	return t, nil
}

// cpu returns the target in tg of form's loop-thread CPU ratio at a burst of calls calls: the
// greatest median ratio that meets it, the aim within it (0 for none), and false if form has
// no target at that size.
func (tg loopTargets) cpu(form string, calls int) (bound, aim float64, ok bool) {
	switch form {
	case clientGo:
		return tg.GoCPUMax, tg.GoCPUAim, true
	case clientOnSettled:
		return tg.OnSettledCPUMax, 0, true
	case clientThen:
		r, ok := tg.ThenCPUReference[calls]
		return r, 0, ok
	}
	return 0, 0, false
}

// cpuText describes form's loop-thread CPU target in tg over every burst size, for the
// summary's table of targets.
func (tg loopTargets) cpuText(form string) string {
	if form == clientThen {
		sizes := make([]int, 0, len(tg.ThenCPUReference))
		for n := range tg.ThenCPUReference {
			sizes = append(sizes, n)
		}
		slices.Sort(sizes)
		var parts []string
		for _, n := range sizes {
			parts = append(parts, fmt.Sprintf("%.2f× at %s calls", tg.ThenCPUReference[n], thousands(n)))
		}
		return "≤ the report before requests were encoded on the lanes: " + strings.Join(parts, ", ")
	}
	bound, aim, _ := tg.cpu(form, 0)
	return boundText(bound, aim)
}

// boundText formats a ratio bound and its aim, if any: "≤ 1.5× (aim 1.2×)".
func boundText(bound, aim float64) string {
	s := "≤ " + trimRatio(bound) + "×"
	if aim > 0 {
		s += " (aim " + trimRatio(aim) + "×)"
	}
	return s
}

// trimRatio formats a ratio bound with as many decimals as it has, at least one and at most
// two: 1.5, 2.0, 1.05, 2.81.
func trimRatio(x float64) string {
	if shown(x) == math.Round(x*10)/10 {
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// shown returns x as the reports show a ratio, rounded to two decimals. Targets judge the
// ratio shown, so that a verdict never contradicts the figure beside it.
func shown(x float64) float64 { return math.Round(x*100) / 100 }

// overloadTargets are the policies suite's overload scenario's targets, with each backend:
// the goodput during the overload of the default Config and of AdaptiveLimit{}, each a bound
// and an aim within it, in calls a second; the calls submitted after the load drops that
// succeed with either, in percent of them; and the backend's executions for calls already
// given up with AdaptiveLimit{}, in percent of its executions. The report states them in the
// scenario's sentence.
type overloadTargets struct {
	DefaultGoodputMin    float64 `json:"defaultGoodputMin"`
	DefaultGoodputAim    float64 `json:"defaultGoodputAim"`
	AdaptiveGoodputMin   float64 `json:"adaptiveGoodputMin"`
	AdaptiveGoodputAim   float64 `json:"adaptiveGoodputAim"`
	RecoveredMinPct      float64 `json:"recoveredMinPct"`
	AdaptiveWastedMaxPct float64 `json:"adaptiveWastedMaxPct"`
}

// overloadGoals is targets.json's overload targets, read once.
var overloadGoals = func() overloadTargets {
	t, err := parseOverloadTargets(targetsJSON)
	if err != nil {
		panic("burst: targets.json: " + err.Error())
	}
	return t
}()

// parseOverloadTargets reads the overload targets as targets.json holds them, under
// "overload", and checks that every one is there and above 0, that each aim is within its
// bound, and that the percentages are at most 100.
func parseOverloadTargets(data []byte) (overloadTargets, error) {
	nan := math.NaN()
	var file struct {
		Overload *overloadTargets `json:"overload"`
	}
	file.Overload = &overloadTargets{nan, nan, nan, nan, nan, nan}
	if err := json.Unmarshal(data, &file); err != nil {
		return overloadTargets{}, err
	}
	t := file.Overload
	if t == nil {
		return overloadTargets{}, errors.New("overload missing")
	}
	for _, b := range []struct {
		key   string
		v     float64
		limit float64 // the greatest value it may take
	}{
		{"defaultGoodputMin", t.DefaultGoodputMin, math.Inf(1)},
		{"defaultGoodputAim", t.DefaultGoodputAim, math.Inf(1)},
		{"adaptiveGoodputMin", t.AdaptiveGoodputMin, math.Inf(1)},
		{"adaptiveGoodputAim", t.AdaptiveGoodputAim, math.Inf(1)},
		{"recoveredMinPct", t.RecoveredMinPct, 100},
		{"adaptiveWastedMaxPct", t.AdaptiveWastedMaxPct, 100},
	} {
		switch {
		case math.IsNaN(b.v):
			return overloadTargets{}, fmt.Errorf("overload.%s missing", b.key)
		case b.v <= 0 || b.v > b.limit:
			return overloadTargets{}, fmt.Errorf("overload.%s is %v, want above 0 and at most %v", b.key, b.v, b.limit)
		}
	}
	if t.DefaultGoodputAim < t.DefaultGoodputMin {
		return overloadTargets{}, fmt.Errorf("overload.defaultGoodputAim %v is below defaultGoodputMin %v", t.DefaultGoodputAim, t.DefaultGoodputMin)
	}
	if t.AdaptiveGoodputAim < t.AdaptiveGoodputMin {
		return overloadTargets{}, fmt.Errorf("overload.adaptiveGoodputAim %v is below adaptiveGoodputMin %v", t.AdaptiveGoodputAim, t.AdaptiveGoodputMin)
	}
	return *t, nil
}

// text states the targets for a scenario whose load, once it drops, submits recovery calls.
func (t overloadTargets) text(recovery int) string {
	return fmt.Sprintf("Targets, with each backend: the default Config at least %g calls/s during the overload (aim %g), AdaptiveLimit{} at least %g/s (aim %g); "+
		"with either, at least %s of the %s calls submitted after the load drops OK; with AdaptiveLimit{}, at most %g %% of the backend's executions for calls already given up.",
		t.DefaultGoodputMin, t.DefaultGoodputAim, t.AdaptiveGoodputMin, t.AdaptiveGoodputAim,
		thousands(int(math.Ceil(float64(recovery)*t.RecoveredMinPct/100-1e-9))), thousands(recovery), t.AdaptiveWastedMaxPct)
}
