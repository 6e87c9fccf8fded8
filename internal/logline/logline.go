// Package logline renders one log/slog record as the standard text and JSON handlers write
// it, without its time, so that tests can compare what a slog.LogValuer logs with the text
// they expect.
package logline

import (
	"bytes"
	"log/slog"
)

// noTime drops the record's time, the one attribute that differs from run to run.
var noTime = &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}}

// Text returns the line slog.NewTextHandler writes for an Info record of msg and args.
func Text(msg string, args ...any) string {
	var b bytes.Buffer
	slog.New(slog.NewTextHandler(&b, noTime)).Info(msg, args...)
	return b.String()
}

// JSON returns the line slog.NewJSONHandler writes for an Info record of msg and args.
func JSON(msg string, args ...any) string {
	var b bytes.Buffer
	slog.New(slog.NewJSONHandler(&b, noTime)).Info(msg, args...)
	return b.String()
}
