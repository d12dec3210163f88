package challenge

import (
	"fmt"
	"testing"
	"time"
)

// A burst from one address raises its difficulty and no one else's; the
// next window starts at the base again; the table stays bounded.
func TestAdaptiveBurst(t *testing.T) {
	t.Parallel()
	a := &Adaptive{Window: time.Minute, Free: 10, MaxFactor: 64, MaxAddrs: 100}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const base, maxD = 50_000, 5_000_000
	var got []int64
	for i := range 80 {
		got = append(got, a.Next("198.51.100.7", base, maxD, now.Add(time.Duration(i)*time.Millisecond)))
	}
	for i, d := range got {
		var want int64 = base
		switch {
		case i < 10:
		case i < 20:
			want = 2 * base
		case i < 30:
			want = 4 * base
		case i < 40:
			want = 8 * base
		case i < 50:
			want = 16 * base
		case i < 60:
			want = 32 * base
		default:
			want = 64 * base
		}
		if want > maxD {
			want = maxD
		}
		if d != want {
			t.Fatalf("challenge %d of the burst: difficulty %d, want %d (all: %v)", i+1, d, want, got)
		}
	}
	if d := a.Next("203.0.113.9", base, maxD, now.Add(time.Second)); d != base {
		t.Fatalf("another address during the burst: %d, want the base %d", d, base)
	}
	if f := a.Factor("198.51.100.7", now.Add(time.Minute)); f != 1 {
		t.Fatalf("after the window: factor %d, want 1", f)
	}
	if d := a.Next("198.51.100.7", base, maxD, now.Add(time.Minute)); d != base {
		t.Fatalf("next window: %d, want the base", d)
	}
	for i := range 1000 {
		a.Next(fmt.Sprintf("10.0.%d.%d", i/256, i%256), base, maxD, now.Add(2*time.Minute))
	}
	if n := a.Len(); n > 100 {
		t.Fatalf("%d addresses counted, bound is 100", n)
	}
}

func TestAdaptiveOverflow(t *testing.T) {
	t.Parallel()
	a := NewAdaptive()
	now := time.Now()
	for range 200 {
		if d := a.Next("x", 1<<60, 1<<62, now); d <= 0 || d > 1<<62 {
			t.Fatalf("difficulty %d out of bounds", d)
		}
	}
}

// The bound forgets the least recently counted address: an address that
// keeps asking keeps its count (and its raise) through a flood of new
// addresses, and the table never holds more than MaxAddrs.
func TestAdaptiveForgetsTheLeastRecent(t *testing.T) {
	t.Parallel()
	a := &Adaptive{Window: time.Hour, Free: 10, MaxFactor: 64, MaxAddrs: 2}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 60 {
		a.Next("2001:db8:1:2::/64", 1000, 1<<40, now)
		a.Next(fmt.Sprintf("198.51.100.%d", i), 1000, 1<<40, now)
		if n := a.Len(); n > 2 {
			t.Fatalf("%d addresses counted, bound 2", n)
		}
	}
	if f := a.Factor("2001:db8:1:2::/64", now); f != 32 {
		t.Fatalf("the bursting address's raise after 60 challenges among a flood: %d, want 32", f)
	}
	if f := a.Factor("198.51.100.0", now); f != 1 {
		t.Fatalf("an address asked once, long forgotten: %d", f)
	}
}
