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
