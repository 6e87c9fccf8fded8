package reactor

// Resolve exposes the check New makes of cfg and the Config it resolves, every default filled
// in, for tests.
func Resolve(cfg Config) (Config, error) { return cfg.resolve() }
