// Package benchmarks holds prpc's Go micro-benchmarks; run them with
//
//	go test -run '^$' -bench . -benchmem ./benchmarks/
//
// Figures belong in benchmarks and in the burst suite, never in timed unit tests.
package benchmarks
