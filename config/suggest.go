package config

import "slices"

// suggest returns " (did you mean X?)" for the known key closest to key, if
// one is close enough to be a typo, else "".
func suggest(key string, known []string) string {
	slices.Sort(known) // ties go to the first in order, so the hint is stable
	best, bestDist := "", len(key)/2+1
	if bestDist > 3 {
		bestDist = 3
	}
	for _, k := range known {
		if d := editDistance(key, k); d <= bestDist && (best == "" || d < editDistance(key, best)) {
			best = k
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
