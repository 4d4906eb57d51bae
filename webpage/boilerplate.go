package webpage

import (
	"regexp"
	"strings"

	"golang.org/x/net/html"
)

// The extractor leaves out what looks unlikely on its first pass, but
// when a page has little text it tries again with everything, and a
// cookie wall or the site's menu comes back as the page's "text". What
// is boilerplate by its very markup is removed before it looks at all.

// noticeMark matches one id or class name of a cookie or consent notice,
// in the words the common consent managers and themes use for them, and
// not a page about cookies (a recipe's "cookie-list" stays) nor a
// comment form's consent box ("comment-form-cookies-consent").
var noticeMark = regexp.MustCompile(`(?i)^((cookies?|consent|gdpr)([-_]?(banner|bar|notice|notification|popup|modal|wall|law|consent|dialog|overlay|message|box|container))?|(cookiebot|onetrust)[-_a-z0-9]*|cc[-_](banner|window))$`)

// chromeRoles are the ARIA roles of a page's own chrome: its menus, its
// site-wide header and footer, its dialogs.
var chromeRoles = map[string]bool{
	"navigation": true, "menu": true, "menubar": true, "banner": true, "contentinfo": true,
	"dialog": true, "alertdialog": true,
}

// stripChrome removes from doc the navigation, cookie and consent
// notices, dialogs and the page-level footer (a <footer> outside any
// article, section, aside or main: the site's, not the article's).
func stripChrome(doc *html.Node) {
	var doomed []*html.Node
	// Iterative: the tree is the parser's, at most 512 deep, but a
	// walk that does not recurse does not depend on that.
	type item struct {
		n         *html.Node
		sectioned bool // inside article, section, aside or main
	}
	stack := []item{{doc, false}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n, sectioned := it.n, it.sectioned
		if n.Type == html.ElementNode {
			if isChrome(n, sectioned) {
				doomed = append(doomed, n)
				continue
			}
			switch n.Data {
			case "article", "section", "aside", "main":
				sectioned = true
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, item{c, sectioned})
		}
	}
	for _, n := range doomed {
		n.Parent.RemoveChild(n)
	}
}

func isChrome(n *html.Node, sectioned bool) bool {
	switch n.Data {
	case "nav", "dialog":
		return true
	case "footer":
		if !sectioned {
			return true
		}
	case "html", "body", "main", "article":
		// A consent manager's class on <body> ("cookie-consent-open")
		// says nothing of the body's text.
		return false
	}
	for _, a := range n.Attr {
		switch a.Key {
		case "role":
			if chromeRoles[strings.ToLower(strings.TrimSpace(a.Val))] {
				return true
			}
		case "id", "class":
			for _, name := range strings.Fields(a.Val) {
				if noticeMark.MatchString(name) {
					return true
				}
			}
		case "aria-modal":
			if a.Val == "true" {
				return true
			}
		}
	}
	return false
}
