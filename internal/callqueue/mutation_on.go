//go:build prpcmutant

package callqueue

// mutation names the bug the reactor's mutation test has built in, or "" for none.
var mutation string

// SetMutation builds in the bug name names ("" for none), for the reactor's mutation test.
func SetMutation(name string) { mutation = name }
