//go:build !prpcmutant

package reactor

// mutation names a bug built in on purpose, for the simulation's mutation test (build tag
// prpcmutant, sim_mutation_internal_test.go), which shows that the simulation catches it.
// Without the tag it is this empty constant, and every check of it compiles away.
const mutation = ""
