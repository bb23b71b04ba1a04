package option

import "strings"

// Closest returns the choice nearest to s by edit distance (letters
// inserted, deleted, replaced or swapped, ignoring case, with '-' and '_'
// alike), or "" when none is near enough to be a likely misspelling: at
// most one edit for short names, two from six letters, three from
// twelve.
func Closest(s string, choices []string) string {
	norm := func(x string) string { return strings.ReplaceAll(strings.ToLower(x), "-", "_") }
	ns := norm(s)
	best, bestD := "", -1
	for _, c := range choices {
		if c == s {
			continue
		}
		d := distance(ns, norm(c))
		if d < bestD || bestD < 0 {
			best, bestD = c, d
		}
	}
	limit := 1
	switch {
	case len(ns) >= 12:
		limit = 3
	case len(ns) >= 6:
		limit = 2
	}
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

// distance is the optimal string alignment distance between a and b:
// Levenshtein's insert, delete and replace plus a swap of two neighbours.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
