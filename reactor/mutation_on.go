//go:build prpcmutant

package reactor

// mutation names the bug the mutation test has built in: one of mutations, or "" for none.
var mutation string
