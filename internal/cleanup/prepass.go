package cleanup

import (
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Threshold is the Jaccard similarity of two stemmed token sets at or
// above which the pre-pass pairs two tasks (and a TODOS line matches an
// existing task). Seed 000's four "ambient AI" lines are 0.57 to 1 apart;
// two tasks that share one word out of three or four are 0.33 or less.
const Threshold = 0.5

// Containment is the share of a TODOS line's tokens that an existing
// task's tokens must hold for the line to match it although their Jaccard
// is lower: Call 1 merges duplicates into one canonical line, which is
// often a shorter form of a longer task ("Develop ambient AI solutions"
// inside "Developing and refining ambient AI solutions for various
// applications").
const Containment = 0.8

// Item is one text the pre-pass compares: a pending task or directive.
type Item struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// Groups proposes duplicate groups among items (issue 16 item 5, the
// deterministic pre-pass): texts are normalised (case, whitespace,
// punctuation), stemmed (Stem) and stripped of stop words, and every pair
// whose token sets have a Jaccard similarity of threshold or more is
// linked; a group is a connected set of two or more items. Exact Jaccard
// is cheap at board sizes (hundreds of short titles, pairs found through
// an inverted index), so MinHash's approximation buys nothing here. The
// groups never act alone: they order and narrow what Call 2 sees, and
// 'cra cleanup --dry-run' prints them. Groups keep the items' order;
// groups are ordered by their first item.
func Groups(items []Item, threshold float64) []Group {
	sets := make([]map[string]bool, len(items))
	index := map[string][]int{}
	for i, it := range items {
		sets[i] = tokenSet(it.Text)
		for tok := range sets[i] {
			index[tok] = append(index[tok], i)
		}
	}
	parent := make([]int, len(items))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	best := make([]float64, len(items))
	for i := range items {
		shared := map[int]int{}
		for tok := range sets[i] {
			for _, j := range index[tok] {
				if j > i {
					shared[j]++
				}
			}
		}
		for j, n := range shared {
			union := len(sets[i]) + len(sets[j]) - n
			s := float64(n) / float64(union)
			if s < threshold {
				continue
			}
			best[i], best[j] = max(best[i], s), max(best[j], s)
			if a, b := find(i), find(j); a != b {
				parent[max(a, b)] = min(a, b)
			}
		}
	}
	byRoot := map[int]*Group{}
	var roots []int
	for i, it := range items {
		r := find(i)
		g := byRoot[r]
		if g == nil {
			g = &Group{}
			byRoot[r] = g
			roots = append(roots, r)
		}
		g.IDs = append(g.IDs, it.ID)
		g.Texts = append(g.Texts, it.Text)
		g.Score = max(g.Score, best[i])
	}
	sort.Ints(roots)
	var out []Group
	for _, r := range roots {
		if g := byRoot[r]; len(g.IDs) > 1 {
			out = append(out, *g)
		}
	}
	return out
}

// Similarity is the Jaccard similarity of a's and b's stemmed token sets,
// stop words left out: 1 for the same words in any inflection, 0 for none
// shared. Two texts without tokens are 0 apart.
func Similarity(a, b string) float64 {
	sa, sb := tokenSet(a), tokenSet(b)
	n := 0
	for t := range sa {
		if sb[t] {
			n++
		}
	}
	union := len(sa) + len(sb) - n
	if union == 0 {
		return 0
	}
	return float64(n) / float64(union)
}

// Matches reports whether line says what text says: Similarity at least
// Threshold, or line's tokens (two or more) at least Containment inside
// text's.
func Matches(line, text string) bool {
	if Similarity(line, text) >= Threshold {
		return true
	}
	sl, st := tokenSet(line), tokenSet(text)
	if len(sl) < 2 {
		return false
	}
	n := 0
	for t := range sl {
		if st[t] {
			n++
		}
	}
	return float64(n)/float64(len(sl)) >= Containment
}

// Tokens returns text's normalised tokens, in order: lower case, split at
// anything but letters and digits, stemmed, stop words left out.
func Tokens(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if stopWords[w] {
			continue
		}
		out = append(out, Stem(w))
	}
	return out
}

func tokenSet(text string) map[string]bool {
	set := map[string]bool{}
	for _, t := range Tokens(text) {
		set[t] = true
	}
	return set
}

// stopWords are the function words that say nothing about a task's
// intent.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but nor of to in on at by for with from into onto
		as is are was were be been being it its this that these those there their them they
		we our us you your i me my he she his her so than then too very can could should would
		will shall may might must do does did done not no all any some each every such only own
		same other both few more most just also about over under up down out off again further
		once here when where why how what which who whom whose while if else via per etc`) {
		m[w] = true
	}
	return m
}()

// Stem strips the common English inflections from a lower-case word, so
// that "developing", "developed" and "develop" meet, and "solutions" and
// "solution", "refining" and "refine" (a light suffix stripper in the
// manner of Porter's step 1, not a full stemmer: it needs only to make
// the forms of one word equal, not to find its root).
func Stem(w string) string {
	if len(w) <= 3 || !isLetters(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "es") && len(w) > 4 && strings.ContainsAny(w[len(w)-3:len(w)-2], "xzh"):
		w = w[:len(w)-2] // fixes, boxes, matches
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	for _, suf := range []string{"ing", "ed"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 && hasVowel(w[:len(w)-len(suf)]) && !strings.HasSuffix(w, "eed") {
			w = w[:len(w)-len(suf)]
			if n := len(w); n >= 4 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouls", rune(w[n-1])) {
				w = w[:n-1] // running, mapped, committed
			}
			break
		}
	}
	switch {
	case strings.HasSuffix(w, "ation") && len(w) > 7:
		w = w[:len(w)-5] // configuration → configur
	case strings.HasSuffix(w, "ly") && len(w) > 5:
		w = w[:len(w)-2]
	}
	if strings.HasSuffix(w, "e") && len(w) > 3 {
		w = w[:len(w)-1] // refine → refin, like refining
	}
	if strings.HasSuffix(w, "y") && len(w) > 3 && !strings.ContainsRune("aeiou", rune(w[len(w)-2])) {
		w = w[:len(w)-1] + "i" // reply and replies, retry and retried
	}
	return w
}

func isLetters(w string) bool {
	return !strings.ContainsFunc(w, func(r rune) bool { return r < 'a' || r > 'z' })
}

func hasVowel(w string) bool { return strings.ContainsAny(w, "aeiouy") }

// groupedIDs returns the ids of every group, in order, each once.
func groupedIDs(groups []Group) []string {
	var out []string
	for _, g := range groups {
		for _, id := range g.IDs {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}
