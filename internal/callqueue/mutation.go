//go:build !prpcmutant

package callqueue

// mutation names a bug built in on purpose, for the reactor's simulation mutation test (build
// tag prpcmutant). Without the tag it is this empty constant, and every check of it compiles
// away.
const mutation = ""
