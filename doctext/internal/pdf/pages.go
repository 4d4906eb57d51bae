package pdf

const (
	maxPages     = 1 << 17 // pages collected from the page tree
	maxTreeDepth = 64
)

// page is one leaf of the page tree with the resources it inherits.
type page struct {
	d   dict
	res dict
}

// loadPages walks the page tree once, in order, refusing cycles. It reads
// the page dictionaries only, not their contents.
func (d *Doc) loadPages() error {
	root := d.dictOf(d.trailer["Root"])
	if root == nil {
		return malformed("no document catalog")
	}
	seen := map[ref]bool{}
	var walk func(o object, inherited dict, depth int) error
	walk = func(o object, inherited dict, depth int) error {
		if depth > maxTreeDepth {
			return malformed("page tree too deep")
		}
		// Each node may decode an object stream: the deadline and the
		// budget are looked at for every one.
		if err := d.stopped(); err != nil {
			return err
		}
		if r, ok := o.(ref); ok {
			if seen[r] {
				return nil // a cycle, or a page listed twice
			}
			seen[r] = true
		}
		n := d.dictOf(o)
		if n == nil || len(d.pages) >= maxPages {
			return nil
		}
		res := inherited
		if r := d.dictOf(n["Resources"]); r != nil {
			res = r
		}
		kids, isNode := d.resolve(n["Kids"]).(array)
		if t, _ := n["Type"].(name); t == "Page" || !isNode {
			d.pages = append(d.pages, page{d: n, res: res})
			return nil
		}
		for _, k := range kids {
			if err := walk(k, res, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root["Pages"], nil, 0); err != nil {
		return err
	}
	if len(d.pages) == 0 {
		return malformed("no pages")
	}
	return nil
}
