package logline_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/logline"
)

func TestLines(t *testing.T) {
	require.Equal(t, "level=INFO msg=m n=1\n", logline.Text("m", "n", 1))
	require.Equal(t, `{"level":"INFO","msg":"m","n":1}`+"\n", logline.JSON("m", "n", 1))
}
