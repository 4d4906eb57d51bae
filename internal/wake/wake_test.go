package wake

import "testing"

func TestSignal(t *testing.T) {
	tests := []struct {
		name  string
		pokes int
		want  int // receives available before the channel is empty
	}{
		{"no poke", 0, 0},
		{"one poke", 1, 1},
		{"pokes coalesce", 5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			for range tt.pokes {
				s.Wake() // must never block, or the test hangs here
			}
			got := 0
			for {
				select {
				case <-s.C():
					got++
					continue
				default:
				}
				break
			}
			if got != tt.want {
				t.Fatalf("received %d wakes after %d pokes, want %d", got, tt.pokes, tt.want)
			}
		})
	}
}

func TestZeroSignalDropsPokes(t *testing.T) {
	var s Signal
	s.Wake() // a nil channel: the default case, never a block
	select {
	case <-s.C():
		t.Fatal("a zero Signal received a wake")
	default:
	}
}
