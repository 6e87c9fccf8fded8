package main

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// TestParseTargets checks that targets.json is read as the targets, and that a file with a
// bound missing or not above 0, an aim past its bound, or prpc-then's reference missing at
// one of the loop suite's burst sizes is rejected with an error naming what is wrong.
func TestParseTargets(t *testing.T) {
	// edit returns targets.json with f applied to its keys and values.
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(targetsJSON, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	without := func(key string) []byte { return edit(func(m map[string]any) { delete(m, key) }) }
	set := func(key string, v any) []byte { return edit(func(m map[string]any) { m[key] = v }) }
	// then returns targets.json with f applied to thenCPUReference.
	then := func(f func(ref map[string]any)) []byte {
		return edit(func(m map[string]any) {
			ref := maps.Clone(m["thenCPUReference"].(map[string]any))
			f(ref)
			m["thenCPUReference"] = ref
		})
	}
	for _, c := range []struct {
		name    string
		data    []byte
		wantErr string // "" for none
	}{
		{name: "targets.json", data: targetsJSON},
		{name: "goCPUMax missing", data: without("goCPUMax"), wantErr: "goCPUMax missing"},
		{name: "goCPUAim missing", data: without("goCPUAim"), wantErr: "goCPUAim missing"},
		{name: "onSettledCPUMax missing", data: without("onSettledCPUMax"), wantErr: "onSettledCPUMax missing"},
		{name: "deliveryMax missing", data: without("deliveryMax"), wantErr: "deliveryMax missing"},
		{name: "thenCPUReference missing", data: without("thenCPUReference"), wantErr: "thenCPUReference missing"},
		{name: "a bound null", data: set("deliveryMax", nil), wantErr: "deliveryMax missing"},
		{name: "a bound 0", data: set("onSettledCPUMax", 0), wantErr: "onSettledCPUMax is 0, want a ratio above 0"},
		{name: "a bound below 0", data: set("goCPUMax", -1.5), wantErr: "goCPUMax is -1.5, want a ratio above 0"},
		{name: "the aim past its bound", data: set("goCPUAim", 9), wantErr: "goCPUAim 9 is above goCPUMax"},
		{
			name:    "a burst size missing from thenCPUReference",
			data:    then(func(ref map[string]any) { delete(ref, "5000") }),
			wantErr: "thenCPUReference missing burst size 5000",
		},
		{
			name:    "a reference of 0",
			data:    then(func(ref map[string]any) { ref["20000"] = 0 }),
			wantErr: "thenCPUReference at burst size 20000 is 0, want a ratio above 0",
		},
		{
			name: "a reference at another burst size too",
			data: then(func(ref map[string]any) { ref["1000"] = 2.5 }),
		},
		{name: "not JSON", data: []byte("goCPUMax: 1.5"), wantErr: "invalid character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseTargets(c.data)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.wantErr != "" && err == nil:
				t.Fatalf("targets %+v, want an error with %q", got, c.wantErr)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Fatalf("error %q, want one with %q", err, c.wantErr)
			}
		})
	}
}

// TestParseOverloadTargets checks that targets.json's overload targets are read, and that a
// file with one missing, not above 0, a percentage above 100 or an aim below its bound is
// rejected with an error naming what is wrong.
func TestParseOverloadTargets(t *testing.T) {
	// edit returns targets.json with f applied to the overload targets' keys and values.
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(targetsJSON, &m); err != nil {
			t.Fatal(err)
		}
		o := maps.Clone(m["overload"].(map[string]any))
		f(o)
		m["overload"] = o
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	set := func(key string, v any) []byte { return edit(func(m map[string]any) { m[key] = v }) }
	for _, c := range []struct {
		name    string
		data    []byte
		wantErr string // "" for none
	}{
		{name: "targets.json", data: targetsJSON},
		{name: "overload missing", data: []byte(`{"goCPUMax": 1.5}`), wantErr: "overload.defaultGoodputMin missing"},
		{name: "overload null", data: []byte(`{"overload": null}`), wantErr: "overload missing"},
		{name: "a target missing", data: edit(func(m map[string]any) { delete(m, "recoveredMinPct") }), wantErr: "overload.recoveredMinPct missing"},
		{name: "a target 0", data: set("adaptiveGoodputMin", 0), wantErr: "overload.adaptiveGoodputMin is 0, want above 0"},
		{name: "a percentage above 100", data: set("adaptiveWastedMaxPct", 120), wantErr: "overload.adaptiveWastedMaxPct is 120, want above 0 and at most 100"},
		{name: "the default's aim below its bound", data: set("defaultGoodputAim", 100), wantErr: "overload.defaultGoodputAim 100 is below defaultGoodputMin 120"},
		{name: "the adaptive aim below its bound", data: set("adaptiveGoodputAim", 150), wantErr: "overload.adaptiveGoodputAim 150 is below adaptiveGoodputMin 160"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseOverloadTargets(c.data)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.wantErr != "" && err == nil:
				t.Fatalf("targets %+v, want an error with %q", got, c.wantErr)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Fatalf("error %q, want one with %q", err, c.wantErr)
			}
		})
	}
}

// TestOverloadTargetsText checks the sentence that states the targets, the calls after the
// load drops rounded up to a whole call.
func TestOverloadTargetsText(t *testing.T) {
	tg := overloadTargets{DefaultGoodputMin: 120, DefaultGoodputAim: 160, AdaptiveGoodputMin: 160, AdaptiveGoodputAim: 180, RecoveredMinPct: 99, AdaptiveWastedMaxPct: 10}
	want := "Targets, with each backend: the default Config at least 120 calls/s during the overload (aim 160), AdaptiveLimit{} at least 160/s (aim 180); " +
		"with either, at least 396 of the 400 calls submitted after the load drops OK; with AdaptiveLimit{}, at most 10 % of the backend's executions for calls already given up."
	if got := tg.text(400); got != want {
		t.Errorf("text(400):\n%s\nwant\n%s", got, want)
	}
	if got := tg.text(20); !strings.Contains(got, "at least 20 of the 20 calls") {
		t.Errorf("text(20) = %q, want 99 %% of 20 rounded up, 20", got)
	}
	if tg != overloadGoals {
		t.Errorf("targets.json's overload targets %+v, want %+v", overloadGoals, tg)
	}
}
