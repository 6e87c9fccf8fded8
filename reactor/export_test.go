package reactor

// ServiceConfigOf exposes the service config prpc generates for a connection it dials, for
// tests: its balancer reports to a table of id 0.
func ServiceConfigOf(cfg Config) (string, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return "", err
	}
	return cfg.serviceConfig(&subconnTable{}), nil
}
