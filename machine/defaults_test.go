package machine

import (
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	n, neg, set := 0, -3, 7
	d, f := time.Duration(0), 0.0
	Default(&n, 5)
	Default(&neg, 5)
	Default(&set, 5)
	Default(&d, time.Second)
	Default(&f, 0.5)
	if n != 5 || neg != 5 || set != 7 || d != time.Second || f != 0.5 {
		t.Errorf("got %d %d %d %v %v; want 5 5 7 1s 0.5", n, neg, set, d, f)
	}
}
