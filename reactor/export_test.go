package reactor

// ServiceConfigOf exposes the service config prpc generates, for tests.
func ServiceConfigOf(cfg Config) (string, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return "", err
	}
	return cfg.serviceConfig(0), nil
}
