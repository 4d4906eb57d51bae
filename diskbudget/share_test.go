package diskbudget_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/botd-dev/botd/diskbudget"
)

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		name         string
		max          int64
		groups       int
		fixed, floor int64
		want         int64
	}{
		{"an equal part", 1000, 4, 0, 10, 250},
		{"never below the floor", 1000, 400, 0, 10, 10},
		{"the configured share wins", 1000, 4, 600, 10, 600},
		{"no groups is one", 1000, 0, 0, 0, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := diskbudget.New(tc.max, nil, nil)
			b.SetShares(tc.groups, tc.fixed, tc.floor)
			if got := b.Share(); got != tc.want {
				t.Errorf("share = %d, want %d", got, tc.want)
			}
		})
	}
}

// soleSpec is an area of one group whose files all exist nowhere else.
func (a area) soleSpec(group string) diskbudget.Area {
	s := a.spec()
	s.Group = group
	s.Sole = func(string) bool { return true }
	return s
}

// A group's upload that puts the budget over never costs another group
// its only copies: the sweep evicts what can be fetched again, and a
// group's own sole copies only while it is past its share.
func TestSweepKeepsAnotherGroupsSoleCopies(t *testing.T) {
	for _, tc := range []struct {
		name string
		// sizes of the files, oldest first within each area; the
		// owner's are older than everything else.
		owner, guest, cache []int
		wantOwner           []bool // which of the owner's files stay
		wantGuest           []bool
		wantCache           []bool
	}{
		{
			name:  "the cache makes room",
			owner: []int{200, 200}, guest: []int{300}, cache: []int{200, 200},
			wantOwner: []bool{true, true}, wantGuest: []bool{true}, wantCache: []bool{false, true},
		},
		{
			name:  "nothing else to evict: the owner's copies stay, over budget",
			owner: []int{300, 300}, guest: []int{400}, cache: nil,
			wantOwner: []bool{true, true}, wantGuest: []bool{true},
		},
		{
			name:  "the group past its share loses its own oldest copy",
			owner: []int{200, 200}, guest: []int{300, 350}, cache: nil,
			wantOwner: []bool{true, true}, wantGuest: []bool{false, true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owner, guest, cache := newArea(t, "owner"), newArea(t, "guest"), newArea(t, "cache")
			b := diskbudget.New(1000, []diskbudget.Area{cache.spec(), owner.soleSpec("owner"), guest.soleSpec("guest")}, nil)
			b.SetShares(2, 0, 0) // 500 each
			i := 0
			put := func(a area, sizes []int) {
				for j, n := range sizes {
					a.put(t, fmt.Sprintf("f%d", j), n, at(i))
					i++
				}
			}
			put(owner, tc.owner)
			put(cache, tc.cache)
			put(guest, tc.guest)
			if _, err := b.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				a    area
				want []bool
			}{{owner, tc.wantOwner}, {guest, tc.wantGuest}, {cache, tc.wantCache}} {
				for j, want := range c.want {
					if got := c.a.has(fmt.Sprintf("f%d", j)); got != want {
						t.Errorf("%s/f%d kept = %t, want %t", c.a.name, j, got, want)
					}
				}
			}
		})
	}
}

func TestGroupUseCountsSoleCopies(t *testing.T) {
	owner, web := newArea(t, "owner"), newArea(t, "web")
	webSpec := web.spec()
	// One area for several groups, a file's group its folder; the .meta
	// files are not sole copies.
	webSpec.GroupOf = func(rel string) string {
		switch {
		case len(rel) > 8 && rel[:8] == "media/a/":
			return "alpha"
		case len(rel) > 8 && rel[:8] == "media/b/":
			return "beta"
		}
		return ""
	}
	webSpec.Sole = func(rel string) bool { return rel[len(rel)-5:] != ".meta" }
	b := diskbudget.New(1000, []diskbudget.Area{owner.soleSpec("alpha"), webSpec}, nil)
	b.SetShares(2, 0, 0)
	owner.put(t, "x", 100, at(0))
	web.put(t, "a/1", 30, at(1))
	web.put(t, "a/1.meta", 7, at(1))
	web.put(t, "b/1", 50, at(2))
	for group, want := range map[string]int64{"alpha": 130, "beta": 50, "gamma": 0} {
		gu, err := b.GroupUse(context.Background(), group)
		if err != nil {
			t.Fatal(err)
		}
		if gu.Sole != want || gu.Share != 500 || gu.Free() != 500-want {
			t.Errorf("%s: %+v (free %d), want %d sole of a 500 share", group, gu, gu.Free(), want)
		}
	}
}
