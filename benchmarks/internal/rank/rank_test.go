package rank

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	seq := func(n int) []time.Duration {
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(i + 1)
		}
		return s
	}
	for _, c := range []struct {
		n    int
		q    float64
		want time.Duration
	}{
		{1000, 50, 500}, {1000, 95, 950}, {1000, 99, 990}, {1000, 100, 1000},
		{20000, 99, 19800}, {101, 50, 51}, {3, 50, 2}, {3, 99, 3}, {1, 99, 1}, {0, 99, 0},
		{10, 0.1, 1}, {7, 95, 7},
	} {
		if got := Percentile(seq(c.n), c.q); got != c.want {
			t.Errorf("p%v of 1…%d = %d, want %d", c.q, c.n, got, c.want)
		}
	}
}
